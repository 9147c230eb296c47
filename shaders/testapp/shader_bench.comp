#version 450
// bb-testapp `shader-bench`, compute part: pc.count invocations, each running bench_math for pc.iterations
// and writing its result. Workgroups are spread over x and y (x at most pc.groups_x), so that counts past
// 65,535 x 64 fit in one dispatch.

#extension GL_GOOGLE_include_directive : require
#include "shader_bench.glsl"

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(push_constant) uniform Push {
    uint count;
    uint iterations;
} pc;

layout(std430, set = 0, binding = 0) writeonly buffer Results {
    vec4 results[];
};

void main() {
    uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 64u + gl_LocalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    vec3 p = vec3(0.25 + fract(float(i) * 0.6180339), 0.5 + fract(float(i) * 0.4142135), 1.0);
    results[i] = bench_math(p, pc.iterations);
}
