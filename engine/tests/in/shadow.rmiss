#version 460
// bb-envs: vulkan1.2 vulkan1.3
// Shadow miss: nothing in the way.
#extension GL_EXT_ray_tracing : require
layout(location = 1) rayPayloadInEXT bool shadowed;

void main() {
    shadowed = false;
}
