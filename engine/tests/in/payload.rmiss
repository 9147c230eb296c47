#version 460
// bb-envs: vulkan1.2 vulkan1.3
// Miss: the sky colour goes into the incoming payload, the only thing a miss shader writes.
#extension GL_EXT_ray_tracing : require

struct Hit {
    vec3 color;
    float distance;
    float cone;
};

layout(location = 0) rayPayloadInEXT Hit hit;

void main() {
    float t = 0.5 * (gl_WorldRayDirectionEXT.y / length(gl_WorldRayDirectionEXT) + 1.0);
    hit.color = mix(vec3(1.0), vec3(0.5, 0.7, 1.0), t); // expect: nan-output incoming ray payload store
}
