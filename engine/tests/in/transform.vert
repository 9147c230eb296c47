#version 450
// A vertex shader: matrices, a normalize, a division by w, outputs including gl_Position.
#extension GL_GOOGLE_include_directive : require
#include "blackbox.glsl"

layout(location = 0) in vec3 inPos;
layout(location = 1) in vec3 inNormal;
layout(location = 0) out vec3 outNormal;
layout(location = 1) out vec2 outUV;

layout(set = 0, binding = 0) uniform Camera {
    mat4 view;
    mat4 proj;
    mat3 normalMatrix;
} camera;

void main() {
    vec4 world = camera.view * vec4(inPos, 1.0);
    vec4 clip = camera.proj * world;
    outNormal = normalize(camera.normalMatrix * inNormal); // expect: nan-op normalize
    outUV = clip.xy / clip.w; // expect: nan-op division
    BB_ASSERT1(clip.w != 0.0, 21, gl_VertexIndex); // expect: assert 21
    gl_Position = clip; // expect: nan-output output
}
