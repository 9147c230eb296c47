#version 450
// 16-bit storage without 16-bit arithmetic: f16 values exist only as loads, stores and conversions, so
// the NaN check of a stored f16vec4 widens it to f32 where it is stored.
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 32) in;

layout(std430, set = 0, binding = 0) buffer Packed {
    f16vec4 packed[];
};
layout(std430, set = 0, binding = 1) readonly buffer Source {
    vec4 source[];
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    vec4 v = source[i] / source[i].w; // expect: nan-op division
    packed[i] = f16vec4(v); // expect: nan-output storage buffer store
}
