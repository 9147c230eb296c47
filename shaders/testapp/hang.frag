#version 450
// bb-testapp `hang-draw`, draw 2: a slow fragment shader over the whole target. Each fragment does
// pc.iterations x 4 dependent multiply-adds (21,000 x 4 by default: about 5 s for 1024x1024 pixels on
// lavapipe); the draw is long because of its many fragments (--hang-size), the loop staying below
// lavapipe's cut at 65,535 iterations. A fragment shaded once the host has set `stop` skips its loop (see
// hang.comp: the app sets it when its wait reports the device lost).

layout(push_constant) uniform Push {
    uint iterations;
} pc;

layout(std430, set = 0, binding = 0) readonly buffer Control {
    uint stop;
};

layout(location = 0) out vec4 out_color;

void main() {
    vec2 p = gl_FragCoord.xy * (1.0 / 1024.0);
    float a = p.x;
    float b = p.y;
    float c = p.x * 0.5 + 0.25;
    float d = p.y * 0.5 + 0.25;
    uint iterations = stop != 0u ? 0u : pc.iterations;
    for (uint k = 0u; k < iterations; ++k) {
        a = a * 0.999 + 0.0011;
        b = b * 0.998 + a * 0.002;
        c = c * 0.997 + b * 0.003;
        d = d * 0.996 + c * 0.004;
    }
    out_color = vec4(fract(a), fract(b), fract(c + d), 1.0);
}
