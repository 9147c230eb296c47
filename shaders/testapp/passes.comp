#version 450
// bb-testapp `passes`: one pass of many, each its own pipeline and label, writing its own 64 floats.
// `--pass-fault` makes one of them go wrong: `nan` (invocation 7 takes the square root of a negative
// push constant) or `hang` (every workgroup runs a long loop; lavapipe cuts loops at 65,535 iterations,
// so the length comes from the number of workgroups). `crash` uses bad_address.comp instead.

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) buffer Data {
    float data[];
};

layout(push_constant) uniform Push {
    uint pass_index;
    uint mode; // 0 fine, 1 nan, 2 hang
    float negative; // -1.0, for mode 1
    uint iterations; // for mode 2
} pc;

void main() {
    uint lid = gl_LocalInvocationID.x;
    float s = (pc.mode == 1u && lid == 7u) ? pc.negative : float(lid + 1u);
    float acc = sqrt(s);
    if (pc.mode == 2u) {
        for (uint k = 0u; k < pc.iterations; ++k) {
            acc = acc * 0.999 + 0.001;
        }
    }
    // Only the first workgroup stores: the others' loops still run (nothing can prove acc unused).
    if (gl_WorkGroupID.x == 0u || acc == 12345.678) {
        data[pc.pass_index * 64u + lid] = acc;
    }
}
