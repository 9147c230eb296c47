#version 450
// 16- and 64-bit floats and integers: NaN checks on f16 (widened) and f64 (bit-cast), matrix inverse,
// printf of 64-bit values.
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_debug_printf : require
layout(local_size_x = 16) in;

layout(std430, set = 0, binding = 0) buffer Halves {
    f16vec4 h[];
};
layout(std430, set = 0, binding = 1) buffer Doubles {
    dmat3 m;
    dvec4 d[];
};
layout(std430, set = 0, binding = 2) buffer Singles {
    mat4 transforms[];
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    f16vec3 a = h[i].xyz;
    f16vec3 na = normalize(a); // expect: nan-op normalize
    float16_t q = h[i].w / a.x; // expect: nan-op division
    h[i] = f16vec4(na, q); // expect: nan-output storage buffer store

    dvec4 v = d[i];
    double r = sqrt(v.x) / v.y; // expect: nan-op division
    dmat3 inv = inverse(m); // expect: nan-op inverse
    d[i] = dvec4(inv[0] * r, v.w); // expect: nan-output storage buffer store

    mat4 t = inverse(transforms[i]); // expect: nan-op inverse
    transforms[i] = t;

    uint64_t big = uint64_t(i) << 40;
    int64_t neg = -int64_t(i);
    debugPrintfEXT("big %lu neg %ld hex %lx r %f", big, neg, big, r); // expect: printf
    float16_t p = pow(a.y, float16_t(0.3)); // expect: nan-op pow
    debugPrintfEXT("half %f", p);
}
