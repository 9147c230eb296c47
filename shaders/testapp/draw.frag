#version 450
// bb-testapp fragment shader: output depends on both varyings and the push constant, so every draw (its
// vertices, transform and tint) changes the pixels and therefore the checksum.

layout(location = 0) in vec3 v_color;
layout(location = 1) in vec2 v_local;

layout(push_constant) uniform Push {
    vec4 transform;
    vec4 tint;
} pc;

layout(location = 0) out vec4 out_color;

void main() {
    float ripple = 0.5 + 0.5 * sin(length(v_local) * 12.0 + pc.tint.w * 3.0);
    out_color = vec4(v_color * pc.tint.rgb * ripple, 0.75);
}
