#version 460
// bb-envs: vulkan1.2 vulkan1.3
// Closest hit: shading with a callable for the light and a shadow ray.
#extension GL_EXT_ray_tracing : require
#extension GL_EXT_debug_printf : require

layout(location = 0) rayPayloadInEXT vec3 color;
layout(location = 1) rayPayloadEXT bool shadowed;
layout(location = 0) callableDataEXT vec3 light;
hitAttributeEXT vec2 bary;

layout(set = 0, binding = 0) uniform accelerationStructureEXT scene;

void main() {
    vec3 b = vec3(1.0 - bary.x - bary.y, bary.x, bary.y);
    vec3 pos = gl_WorldRayOriginEXT + gl_WorldRayDirectionEXT * gl_HitTEXT;
    executeCallableEXT(0, 0);
    vec3 l = normalize(light - pos); // expect: nan-op normalize
    shadowed = true;
    traceRayEXT(scene, gl_RayFlagsTerminateOnFirstHitEXT | gl_RayFlagsSkipClosestHitShaderEXT, 0xff, 0, 0, 1,
                pos, 0.001, l, 100.0, 1);
    float atten = shadowed ? 0.3 : 1.0;
    color = b * atten / (gl_HitTEXT * gl_HitTEXT); // expect: nan-op division
    if (gl_LaunchIDEXT.x == 0u && gl_LaunchIDEXT.y == 0u) {
        debugPrintfEXT("hit t %f", gl_HitTEXT); // expect: printf
    }
}
