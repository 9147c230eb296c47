#version 450
// Tessellation control: per-patch levels from distances.
layout(vertices = 3) out;
layout(location = 0) in vec3 inPos[];
layout(location = 0) out vec3 outPos[];

layout(set = 0, binding = 0) uniform Params {
    vec3 eye;
    float detail;
} params;

float level(vec3 a, vec3 b) {
    float d = distance(params.eye, (a + b) * 0.5);
    return clamp(params.detail / d, 1.0, 64.0); // expect: nan-op division
}

void main() {
    outPos[gl_InvocationID] = inPos[gl_InvocationID];
    if (gl_InvocationID == 0) {
        gl_TessLevelOuter[0] = level(inPos[1], inPos[2]); // expect: nan-output output
        gl_TessLevelOuter[1] = level(inPos[2], inPos[0]);
        gl_TessLevelOuter[2] = level(inPos[0], inPos[1]);
        gl_TessLevelInner[0] = sqrt(gl_TessLevelOuter[0] * gl_TessLevelOuter[1]); // expect: nan-op sqrt
    }
    gl_out[gl_InvocationID].gl_Position = vec4(inPos[gl_InvocationID], 1.0);
}
