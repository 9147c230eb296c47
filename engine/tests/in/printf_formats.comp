#version 450
// Every printf conversion the layer formats.
#extension GL_EXT_debug_printf : require
layout(local_size_x = 4) in;

layout(push_constant) uniform Push {
    float f;
    int i;
    uint u;
} pc;

void main() {
    uvec3 id = gl_GlobalInvocationID;
    debugPrintfEXT("d=%d i=%i u=%u x=%x X=%X o=%o", pc.i, pc.i, pc.u, pc.u, pc.u, pc.u); // expect: printf
    debugPrintfEXT("f=%f e=%e g=%g a=%a", pc.f, pc.f, pc.f, pc.f); // expect: printf
    debugPrintfEXT("width [%8.3f] [%-6d] [%06u] [%+d] %%", pc.f, pc.i, pc.u, pc.i);
    debugPrintfEXT("c=%c", 65u);
    debugPrintfEXT("v2=%v2f v3=%v3u v4=%v4d", vec2(pc.f, 2.0), id, ivec4(pc.i, 1, 2, 3));
    debugPrintfEXT("bool %u", uint(pc.u > 3u));
    debugPrintfEXT("no arguments");
}
