#version 450
// Blackbox's flash pass (VK_BLACKBOX_FLASH=on): the presented image, already copied into a buffer, is cut
// into a grid of cells (one workgroup each); each cell's mean luminance (Rec. 709 weights on the stored
// values) and its change since the previous frame's grid go into the grid buffer, which the layer reads a
// frame later. Built by layer/build.rs; layer/src/frames/flash.rs records it.

layout(local_size_x = 64) in;

layout(push_constant) uniform Push {
    uint width;
    uint height;
    uint format;      // 0 RGBA8, 1 BGRA8, 2 A2B10G10R10, 3 A2R10G10B10 (image.rs `Texels`)
    uint cells_x;     // grid columns (= the dispatch's x)
    uint cells_y;     // grid rows (= the dispatch's y)
    uint grid;        // word offset of this frame's grid: cells_x * cells_y luminances, then as many changes
    uint previous;    // word offset of the previous frame's grid
    uint has_previous;
} pc;

layout(set = 0, binding = 0) readonly buffer Image { uint texels[]; };
layout(set = 0, binding = 1) buffer Grid { float values[]; };

shared float partial[64];

vec3 rgb(uint w) {
    if (pc.format == 0u) {
        return vec3(w & 0xffu, (w >> 8) & 0xffu, (w >> 16) & 0xffu) / 255.0;
    } else if (pc.format == 1u) {
        return vec3((w >> 16) & 0xffu, (w >> 8) & 0xffu, w & 0xffu) / 255.0;
    } else if (pc.format == 2u) {
        return vec3(w & 0x3ffu, (w >> 10) & 0x3ffu, (w >> 20) & 0x3ffu) / 1023.0;
    }
    return vec3((w >> 20) & 0x3ffu, (w >> 10) & 0x3ffu, w & 0x3ffu) / 1023.0;
}

void main() {
    uvec2 cell = gl_WorkGroupID.xy;
    uint x0 = cell.x * pc.width / pc.cells_x;
    uint x1 = (cell.x + 1u) * pc.width / pc.cells_x;
    uint y0 = cell.y * pc.height / pc.cells_y;
    uint y1 = (cell.y + 1u) * pc.height / pc.cells_y;
    uint w = max(x1 - x0, 1u);
    uint count = w * max(y1 - y0, 1u);
    float sum = 0.0;
    for (uint i = gl_LocalInvocationIndex; i < count; i += 64u) {
        uint x = min(x0 + i % w, pc.width - 1u);
        uint y = min(y0 + i / w, pc.height - 1u);
        sum += dot(rgb(texels[y * pc.width + x]), vec3(0.2126, 0.7152, 0.0722));
    }
    partial[gl_LocalInvocationIndex] = sum;
    barrier();
    for (uint half_size = 32u; half_size > 0u; half_size >>= 1) {
        if (gl_LocalInvocationIndex < half_size) {
            partial[gl_LocalInvocationIndex] += partial[gl_LocalInvocationIndex + half_size];
        }
        barrier();
    }
    if (gl_LocalInvocationIndex == 0u) {
        uint index = cell.y * pc.cells_x + cell.x;
        uint cells = pc.cells_x * pc.cells_y;
        float mean = partial[0] / float(count);
        float before = pc.has_previous != 0u ? values[pc.previous + index] : mean;
        values[pc.grid + index] = mean;
        values[pc.grid + cells + index] = mean - before;
    }
}
