#version 450
// Float atomics (GL_EXT_shader_atomic_float): a sum and an exchange on a float buffer; integer CAS of a
// float's bits, as shaders without float atomics emulate them.
#extension GL_EXT_shader_atomic_float : require
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Accum {
    float total;
    float last;
    uint emulated;
    float values[];
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = values[i] / float(i);
    atomicAdd(total, v); // expect: nan-output atomic float add
    atomicExchange(last, v); // expect: nan-output atomic float exchange
    uint old = emulated;
    uint seen;
    do {
        seen = old;
        old = atomicCompSwap(emulated, seen, floatBitsToUint(uintBitsToFloat(seen) + v)); // expect: nan-output atomic compare-exchange of a bitcast float
    } while (old != seen);
}
