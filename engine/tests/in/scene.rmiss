#version 460
// bb-envs: vulkan1.2 vulkan1.3
// Miss: a sky gradient with a pow.
#extension GL_EXT_ray_tracing : require
layout(location = 0) rayPayloadInEXT vec3 color;

void main() {
    float up = normalize(gl_WorldRayDirectionEXT).y; // expect: nan-op normalize
    color = mix(vec3(1.0), vec3(0.3, 0.5, 1.0), pow(max(up, 0.0), 0.4)); // expect: nan-op pow
}
