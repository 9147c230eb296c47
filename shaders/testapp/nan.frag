#version 450
// bb-testapp `nan-fragment`: the rare-flash story in a fragment shader. A full-screen triangle over a
// 64x64 RGBA32F target; every pixel builds a safe vector from its coordinates, except the one pixel
// pc.bad_pixel (12,34), which takes pc.bad from the host: a zero vector (normalize -> NaN), x = -0.5
// (pow -> NaN) or x = 0.0 (1.0 / x -> +Inf). Each operation stands on its own line, marked `NAN-SITE <op>`.

layout(push_constant) uniform Push {
    uvec2 bad_pixel;
    uint op; // 0 normalize, 1 pow, 2 div
    uint discard_bad; // --nan-discard: the bad pixel discards itself after its NaN
    vec4 bad;
} pc;

layout(location = 0) out vec4 out_color;

void main() {
    uvec2 pixel = uvec2(gl_FragCoord.xy);
    vec4 v = vec4(vec2(pixel) * (1.0 / 64.0) + 0.25, 0.5, 1.0);
    if (pixel == pc.bad_pixel) {
        v = pc.bad;
    }
    vec4 r;
    if (pc.op == 0u) {
        r = vec4(normalize(v.xyz), v.w); // NAN-SITE normalize
    } else if (pc.op == 1u) {
        r = vec4(pow(v.x, 0.3), v.yzw); // NAN-SITE pow
    } else {
        r = vec4(1.0 / v.x, v.yzw); // NAN-SITE div
    }
    if (pixel == pc.bad_pixel && pc.discard_bad != 0u) {
        discard;
    }
    out_color = r; // NAN-STORE
}
