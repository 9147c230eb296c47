#version 450
// Geometry: moves each triangle along its normal; emits a printf for the first primitive.
#extension GL_GOOGLE_include_directive : require
#include "blackbox.glsl"
layout(triangles, invocations = 2) in;
layout(triangle_strip, max_vertices = 3) out;
layout(location = 0) in vec3 inNormal[];
layout(location = 0) out vec3 outNormal;

layout(set = 0, binding = 0) uniform Params {
    float amount;
} params;

void main() {
    vec3 a = gl_in[0].gl_Position.xyz;
    vec3 b = gl_in[1].gl_Position.xyz;
    vec3 c = gl_in[2].gl_Position.xyz;
    vec3 n = normalize(cross(b - a, c - a)); // expect: nan-op normalize
    BB_ASSERT2(params.amount < 10.0, 31, params.amount, gl_InvocationID); // expect: assert 31
    for (int i = 0; i < 3; ++i) {
        outNormal = inNormal[i]; // expect: nan-output output
        gl_Position = gl_in[i].gl_Position + vec4(n * params.amount * float(gl_InvocationID + 1), 0.0);
        EmitVertex();
    }
    EndPrimitive();
}
