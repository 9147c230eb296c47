#version 450
// bb-testapp `flood`: floods Blackbox's error buffer. Every invocation fails assert 9 (ASSERT-SITE) and
// calls 16 debugPrintf sites with 64 values each (PRINTF-SITES): each site keeps at most 1024 records per
// drain, and 16 x 1024 records of 71 words overflow the 4 MiB record area, so records are dropped; the
// counts must stay exact all the same. (Few sites: llvmpipe's JIT time grows fast with their number.)

#extension GL_EXT_debug_printf : require

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Values {
    float values[];
};

#define P debugPrintfEXT("flood %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u %u", i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i);
#define P16 P P P P P P P P P P P P P P P P

void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = values[i];
    if (!(v < 0.0)) debugPrintfEXT("[bb-assert %u] value %f is not negative", 9u, v); // ASSERT-SITE
    P16 // PRINTF-SITES
    values[i] = v + 1.0;
}
