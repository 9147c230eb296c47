#version 460
// bb-envs: vulkan1.2 vulkan1.3
// Closest hit: shading written only into the incoming payload, with a callable for the light.
#extension GL_EXT_ray_tracing : require

struct Hit {
    vec3 color;
    float distance;
    float cone;
};

layout(location = 0) rayPayloadInEXT Hit hit;
layout(location = 1) callableDataEXT vec4 light;
hitAttributeEXT vec2 bary;

void main() {
    light = vec4(gl_WorldRayOriginEXT + gl_WorldRayDirectionEXT * gl_HitTEXT, hit.cone); // expect: nan-output callable data store
    executeCallableEXT(0, 1);
    float falloff = light.w / (gl_HitTEXT * gl_HitTEXT);
    hit.color = light.rgb * falloff * vec3(1.0 - bary.x - bary.y, bary); // expect: nan-output incoming ray payload store
    hit.distance = gl_HitTEXT;
}
