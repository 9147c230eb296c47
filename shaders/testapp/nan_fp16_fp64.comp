#version 450
// bb-testapp `nan-fp16-fp64`: NaN and Inf from 16-bit and 64-bit float operations. 64 invocations; the
// host makes invocation 12's input bad (as in nan.comp). The `pow` case is sqrt(-0.5) in both widths: GLSL
// has no pow for doubles, and lavapipe (Mesa 22.3, LLVM 15) crashes on a float16 pow (a JIT call through a
// null pointer). Each operation stands on its own line, marked `NAN-SITE <op><bits>`.

#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Inputs {
    vec4 inputs[];
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    vec4 half_results[64];   // the fp16 results, widened to fp32 for the store
    dvec4 double_results[64];
};

layout(push_constant) uniform Push {
    uint op; // 0 normalize, 1 pow (here: sqrt), 2 div
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    vec4 v = inputs[i];
    f16vec4 h = f16vec4(v);
    dvec4 d = dvec4(v);
    f16vec4 rh;
    dvec4 rd;
    if (pc.op == 0u) {
        rh = f16vec4(normalize(h.xyz), h.w); // NAN-SITE normalize16
        rd = dvec4(normalize(d.xyz), d.w); // NAN-SITE normalize64
    } else if (pc.op == 1u) {
        rh = f16vec4(sqrt(h.x), h.yzw); // NAN-SITE sqrt16
        rd = dvec4(sqrt(d.x), d.yzw); // NAN-SITE sqrt64
    } else {
        rh = f16vec4(float16_t(1.0) / h.x, h.yzw); // NAN-SITE div16
        rd = dvec4(1.0lf / d.x, d.yzw); // NAN-SITE div64
    }
    half_results[i] = vec4(rh);
    double_results[i] = rd;
}
