#version 450
// Tessellation evaluation: barycentric interpolation with a displacement.
#extension GL_EXT_debug_printf : require
layout(triangles, equal_spacing, cw) in;
layout(location = 0) in vec3 inPos[];
layout(location = 0) out vec3 outNormal;

void main() {
    vec3 p = gl_TessCoord.x * inPos[0] + gl_TessCoord.y * inPos[1] + gl_TessCoord.z * inPos[2];
    vec3 n = normalize(cross(inPos[1] - inPos[0], inPos[2] - inPos[0])); // expect: nan-op normalize
    float h = exp(-dot(p, p)); // expect: nan-op exp
    if (gl_PrimitiveID == 0 && gl_TessCoord.x > 0.99) {
        debugPrintfEXT("h %f", h); // expect: printf
    }
    outNormal = n;
    gl_Position = vec4(p + n * h, 1.0);
}
