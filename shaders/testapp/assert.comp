#version 450
// bb-testapp `assert-compute`: a shader assert that fails on exactly one invocation. 64x64 invocations read
// a size each (filled by the host: small everywhere, 0.3 at invocation (12,34,0)) and assert size < 0.25,
// assert id 7, with the size and an int (x - y: -22 there) as values.
//
// The assert is written out in shaders/blackbox.glsl's form for an assert with its own message: a
// debugPrintf whose format starts with `[bb-assert %u]` and the id; the text after `]` is the message,
// formatted with the values. It runs without Blackbox too (the validation layers' DebugPrintf prints it).

#extension GL_EXT_debug_printf : require

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Sizes {
    float sizes[]; // y * 64 + x
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    float results[];
};

void main() {
    uvec2 id = gl_GlobalInvocationID.xy;
    uint i = id.y * 64u + id.x;
    float size = sizes[i];
    int delta = int(id.x) - int(id.y);
    if (!(size < 0.25)) debugPrintfEXT("[bb-assert %u] size %f too big, delta %d", 7u, size, delta); // ASSERT-SITE
    results[i] = size * 2.0 + float(delta);
}
