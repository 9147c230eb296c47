#version 450
// bb-testapp vertex shader: 2D positions scaled and offset by a push constant, colour passed through.

layout(location = 0) in vec2 in_pos;
layout(location = 1) in vec3 in_color;

layout(push_constant) uniform Push {
    vec4 transform; // xy: scale, zw: offset (clip space)
    vec4 tint;      // rgb: colour multiplier, w: ripple phase
} pc;

layout(location = 0) out vec3 v_color;
layout(location = 1) out vec2 v_local;

void main() {
    v_color = in_color;
    v_local = in_pos;
    gl_Position = vec4(in_pos * pc.transform.xy + pc.transform.zw, 0.0, 1.0);
}
