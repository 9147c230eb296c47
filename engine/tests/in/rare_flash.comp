#version 450
// The rare-flash story: one invocation (x == 12) of a 64-wide dispatch normalizes a zero vector.
// Instrumented at the `ops` level, exactly that invocation writes one NanOp record for `normalize`, with
// operand (0, 0, 0) and result (NaN, NaN, NaN); at the `outputs` level the store to `data.v` reports it.
// Every other invocation computes exactly what the uninstrumented shader computes.
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Data {
    vec4 v[];
} data;

void main() {
    uint i = gl_GlobalInvocationID.x;
    vec3 d = vec3(float(i), 1.0, 2.0);
    if (i == 12u) {
        d = vec3(0.0);
    }
    vec3 n = normalize(d); // expect: nan-op normalize
    data.v[i] = vec4(n, 1.0); // expect: nan-output storage buffer store
}
