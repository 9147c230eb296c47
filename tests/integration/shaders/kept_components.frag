#version 450
// A fragment shader writing a vec4 with a NaN (0/0) in green, or in red with -DRED_NAN: for the tests of
// NaN `outputs` on the components an attachment keeps (`shader_errors.rs`, `scripts/gpu-check.sh`).
layout(location = 0) in vec2 uv;
layout(location = 0) out vec4 color;
void main() {
    float zero = uv.x * 0.0;
#ifdef RED_NAN
    color = vec4(zero / zero, uv.x, 0.5, 1.0);
#else
    color = vec4(uv.x, zero / zero, 0.5, 1.0);
#endif
}
