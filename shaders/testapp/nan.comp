#version 450
// bb-testapp `nan-compute`: the rare-flash story. 64x64 invocations per dispatch, many dispatches; each
// invocation reads its own vector (filled by the host, so nothing can be folded) and applies one operation,
// chosen by pc.op. The host makes exactly one input bad: dispatch 42, invocation (12,0,0), gets a zero
// vector (normalize -> NaN), x = -0.5 (pow -> NaN) or x = 0.0 (1.0 / x -> +Inf); every other input is safe.
// Each operation stands on its own line, marked `NAN-SITE <op>`: tests look the line up by that marker.
// Results go to the dispatch's own slice, so the NaN spreads nowhere.

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Inputs {
    vec4 inputs[]; // dispatch * 4096 + y * 64 + x
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    vec4 results[];
};

layout(push_constant) uniform Push {
    uint dispatch_index;
    uint op; // 0 normalize, 1 pow, 2 div
} pc;

void main() {
    uvec2 id = gl_GlobalInvocationID.xy;
    uint i = pc.dispatch_index * 4096u + id.y * 64u + id.x;
    vec4 v = inputs[i];
    vec4 r;
    if (pc.op == 0u) {
        r = vec4(normalize(v.xyz), v.w); // NAN-SITE normalize
    } else if (pc.op == 1u) {
        r = vec4(pow(v.x, 0.3), v.yzw); // NAN-SITE pow
    } else {
        r = vec4(1.0 / v.x, v.yzw); // NAN-SITE div
    }
    results[i] = r; // NAN-STORE
}
