#version 450
// A fragment shader: asserts with values, pow of a possibly negative base, a division, a log, and outputs.
#extension GL_GOOGLE_include_directive : require
#include "blackbox.glsl"

layout(location = 0) in vec3 inNormal;
layout(location = 1) in vec2 inUV;
layout(location = 2) flat in int inMaterial;
layout(location = 0) out vec4 outColor;
layout(location = 1) out float outDepth;

layout(set = 0, binding = 0) uniform sampler2D albedo;
layout(set = 0, binding = 1) uniform Material {
    vec4 tint;
    float shininess;
    float exposure;
} material;

float specular(vec3 n, vec3 l, float shininess) {
    vec3 h = normalize(l + vec3(0.0, 0.0, 1.0)); // expect: nan-op normalize
    return pow(max(dot(n, h), 0.0), shininess);
}

void main() {
    vec3 n = normalize(inNormal); // expect: nan-op normalize
    BB_ASSERT1(inUV.x >= 0.0 && inUV.x <= 1.0, 11, inUV); // expect: assert 11
    BB_ASSERT(inMaterial < 16, 12); // expect: assert 12
    vec4 base = texture(albedo, inUV) * material.tint;
    float s = specular(n, vec3(0.3, 0.8, 0.5), material.shininess);
    float lum = dot(base.rgb, vec3(0.2126, 0.7152, 0.0722));
    float ev = log(lum) / material.exposure; // expect: nan-op log
    if (gl_FragCoord.x < 1.0 && gl_FragCoord.y < 1.0) {
        debugPrintfEXT("pixel %v2f lum %f ev %f", gl_FragCoord.xy, lum, ev); // expect: printf
    }
    if (base.a < 0.01) {
        discard;
    }
    outColor = vec4(base.rgb * (1.0 + s) / (1.0 + ev), base.a); // expect: nan-output output
    outDepth = pow(gl_FragCoord.z, 2.2); // expect: nan-op pow
}
