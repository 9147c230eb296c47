#version 450
// bb-testapp `shader-bench`, fragment part: a full-screen triangle over an RGBA32F target; each pixel runs
// bench_math for pc.iterations from its coordinates and writes the result.

#extension GL_GOOGLE_include_directive : require
#include "shader_bench.glsl"

layout(push_constant) uniform Push {
    uint iterations;
    float inv_size; // 1 / target width
} pc;

layout(location = 0) out vec4 out_color;

void main() {
    vec2 uv = gl_FragCoord.xy * pc.inv_size; // (0, 1)
    out_color = bench_math(vec3(0.25 + uv.x, 0.25 + uv.y, 1.0), pc.iterations);
}
