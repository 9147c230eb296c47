#version 450
// Floats stored as integers, as taichi stores every f32: floatBitsToUint into a uint buffer, a uvec4 built
// from bitcasts, a 64-bit float's bits, and an r32ui image holding a float's bits.
#extension GL_ARB_gpu_shader_int64 : require
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Root {
    uint words[];
};
layout(std430, set = 0, binding = 1) buffer Packed {
    uvec4 packed[];
};
layout(std430, set = 0, binding = 2) buffer Wide {
    uint64_t wide[];
};
layout(set = 0, binding = 3, r32ui) uniform writeonly uimage2D bits;

void main() {
    uint i = gl_GlobalInvocationID.x;
    float x = uintBitsToFloat(words[i]);
    float y = sqrt(x) - 1.0;
    words[i] = floatBitsToUint(y); // expect: nan-output storage buffer store of a bitcast float
    vec4 v = vec4(x, y, x * y, x / y);
    packed[i] = uvec4(floatBitsToUint(v.x), floatBitsToUint(v.y), i, floatBitsToUint(v.w)); // expect: nan-output storage buffer store of a bitcast float
    wide[i] = doubleBitsToUint64(double(y) * 2.0lf); // expect: nan-output storage buffer store of a bitcast float
    imageStore(bits, ivec2(i, 0), uvec4(floatBitsToUint(y))); // expect: nan-output image store of a bitcast float
    words[i + 64u] = i;
}
