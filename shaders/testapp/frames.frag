#version 450
// bb-testapp `frames`: the picture of each presented frame, a gradient that drifts slowly from frame to
// frame. In frame pc.bad_frame one pixel, pc.bad_pixel, makes a NaN (normalize of a zero vector), unless
// pc.flash is set: then a rectangle pc.flash_rect is white in that frame alone, with no NaN anywhere.

layout(push_constant) uniform Push {
    uint frame;
    uint bad_frame;
    uint flash;
    uint unused;
    uvec2 bad_pixel;
    uvec2 size;
    uvec4 flash_rect; // x0, y0, x1, y1 (exclusive)
} pc;

layout(location = 0) out vec4 out_color;

void main() {
    uvec2 pixel = uvec2(gl_FragCoord.xy);
    vec2 uv = vec2(pixel) / vec2(pc.size);
    float drift = 0.05 * sin(float(pc.frame) * 0.1);
    vec3 color = vec3(0.2 + 0.3 * uv.x, 0.25 + drift, 0.2 + 0.3 * uv.y);
    float scale = 1.0;
    if (pc.frame == pc.bad_frame) {
        if (pc.flash != 0u) {
            if (all(greaterThanEqual(pixel, pc.flash_rect.xy)) && all(lessThan(pixel, pc.flash_rect.zw))) {
                color = vec3(1.0);
            }
        } else if (pixel == pc.bad_pixel) {
            scale = 0.0;
        }
    }
    vec3 direction = normalize(color * scale); // NAN-SITE normalize
    out_color = vec4(direction * length(color), 1.0); // NAN-STORE
}
