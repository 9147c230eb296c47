#version 450
// bb-testapp `printf`: one invocation (pc.printer, 0) prints each debugPrintf format once, one call per
// format, on values read from a buffer the host fills (so nothing is folded). Expected text, per line:
//   bb-printf d=-7            bb-printf i=42              bb-printf u=4000000000
//   bb-printf x=ff            bb-printf X=BEEF            bb-printf o=777
//   bb-printf f=3.500000      bb-printf e=1.000000e-03    bb-printf g=0.001
//   bb-printf a=0x1.cp+1      bb-printf c=A               bb-printf prec=3.142
//   bb-printf v2f=1.500000, -2.000000   bb-printf v3u=1, 2, 3   bb-printf v4d=-1, 0, 1, 2
//   bb-printf mixed -7 42 3.500000 ff
// and, built with BB_PRINTF_INT64 (when the device has shaderInt64):
//   bb-printf lu=1099511627777   bb-printf lx=deadbeefcafe
// Every invocation also writes a word, for the checksum.

#extension GL_EXT_debug_printf : require
#ifdef BB_PRINTF_INT64
#extension GL_ARB_gpu_shader_int64 : require
#endif

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Words {
    uint w[]; // see printf.rs for the values
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    uint results[];
};

layout(push_constant) uniform Push {
    uint printer;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i == pc.printer) {
        debugPrintfEXT("bb-printf d=%d", int(w[0]));
        debugPrintfEXT("bb-printf i=%i", int(w[1]));
        debugPrintfEXT("bb-printf u=%u", w[2]);
        debugPrintfEXT("bb-printf x=%x", w[3]);
        debugPrintfEXT("bb-printf X=%X", w[4]);
        debugPrintfEXT("bb-printf o=%o", w[5]);
        debugPrintfEXT("bb-printf f=%f", uintBitsToFloat(w[6]));
        debugPrintfEXT("bb-printf e=%e", uintBitsToFloat(w[7]));
        debugPrintfEXT("bb-printf g=%g", uintBitsToFloat(w[7]));
        debugPrintfEXT("bb-printf a=%a", uintBitsToFloat(w[6]));
        debugPrintfEXT("bb-printf c=%c", w[8]);
        debugPrintfEXT("bb-printf prec=%.3f", uintBitsToFloat(w[9]));
        debugPrintfEXT("bb-printf v2f=%v2f", vec2(uintBitsToFloat(w[10]), uintBitsToFloat(w[11])));
        debugPrintfEXT("bb-printf v3u=%v3u", uvec3(w[12], w[13], w[14]));
        debugPrintfEXT("bb-printf v4d=%v4d", ivec4(int(w[15]), int(w[16]), int(w[17]), int(w[18])));
        debugPrintfEXT("bb-printf mixed %d %u %f %x", int(w[0]), w[1], uintBitsToFloat(w[6]), w[3]);
#ifdef BB_PRINTF_INT64
        debugPrintfEXT("bb-printf lu=%lu", packUint2x32(uvec2(w[19], w[20])));
        debugPrintfEXT("bb-printf lx=%lx", packUint2x32(uvec2(w[21], w[22])));
#endif
    }
    results[i] = w[i % 23u] ^ (i * 2654435761u);
}
