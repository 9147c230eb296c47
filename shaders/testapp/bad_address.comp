#version 450
// bb-testapp `bad-address`: every invocation writes one uint through a buffer device address taken from
// the push constants. Dispatches 1 and 3 get a real buffer's address; dispatch 2 gets a bad one
// (--bad-address, default 0xdead0000): a GPU page fault, on lavapipe a SIGSEGV in a driver thread.

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words {
    uint words[];
};

layout(push_constant) uniform Push {
    uvec2 address; // low, high 32 bits
    uint value;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    Words target = Words(pc.address);
    target.words[i] = pc.value * 64u + i;
}
