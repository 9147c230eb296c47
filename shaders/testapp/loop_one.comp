#version 450
// bb-testapp `loop-one`: 4096 invocations each run a loop whose count comes from a buffer: 10 iterations for
// all but invocation 1234, which runs 60,000 (below lavapipe's cut at 65,535). Each writes its count and a
// value computed in the loop, so the one whose loop Blackbox breaks (VK_BLACKBOX_LOOPS=break) shows it.
// On a GPU, `loop-forever` runs the same shader with invocation 1234's count at 0xffffffff and the loop
// condition read from the buffer every iteration, so that nothing can prove it ends.

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

// volatile: in loop-forever the host writes the word the loop condition reads while the loop runs.
layout(std430, set = 0, binding = 0) volatile buffer Counts {
    uint counts[]; // loop count per invocation; in loop-forever, 0 ends the loop (all others start at 0)
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    uvec2 results[]; // (iterations run, value) per invocation
};

layout(push_constant) uniform Push {
    uint forever; // loop-forever: keep looping while counts[i] != 0
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = counts[i];
    uint value = i;
    uint k = 0u;
    while (pc.forever != 0u ? counts[i] != 0u : k < n) {
        value = value * 1664525u + 1013904223u;
        k++;
    }
    results[i] = uvec2(k, value);
}
