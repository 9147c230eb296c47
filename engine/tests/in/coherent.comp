#version 450
// bb-envs: vulkan1.1 vulkan1.2 vulkan1.3
// The Vulkan memory model: the engine's atomics use queue-family scope here.
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
#extension GL_GOOGLE_include_directive : require
#include "blackbox.glsl"
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) coherent buffer Accum {
    uint total;
    float values[];
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = values[i];
    float r = sqrt(v); // expect: nan-op sqrt
    atomicAdd(total, 1u, gl_ScopeDevice, 0, gl_SemanticsRelaxed);
    BB_ASSERT1(r < 1000.0, 91, r); // expect: assert 91
    values[i] = r / float(i); // expect: nan-output storage buffer store
}
