#version 450
// bb-testapp `assert-fragment`: a shader assert that fails on exactly one pixel. A full-screen triangle
// over a 64x64 target; every pixel's size is small except at pc.bad_pixel (12,34), where it is pc.bad_size
// (0.3). Assert id 7, size < 0.25, with the size and an int (x - y: -22 there) as values.
//
// The assert is written out in shaders/blackbox.glsl's form for an assert with its own message: a
// debugPrintf whose format starts with `[bb-assert %u]` and the id; the text after `]` is the message,
// formatted with the values. It runs without Blackbox too.

#extension GL_EXT_debug_printf : require

layout(push_constant) uniform Push {
    uvec2 bad_pixel;
    float bad_size;
} pc;

layout(location = 0) out vec4 out_color;

void main() {
    uvec2 pixel = uvec2(gl_FragCoord.xy);
    float size = float(pixel.x + pixel.y) * (0.2 / 128.0);
    if (pixel == pc.bad_pixel) {
        size = pc.bad_size;
    }
    int delta = int(pixel.x) - int(pixel.y);
    if (!(size < 0.25)) debugPrintfEXT("[bb-assert %u] size %f too big, delta %d", 7u, size, delta); // ASSERT-SITE
    out_color = vec4(size, float(delta + 64) / 128.0, 0.5, 1.0);
}
