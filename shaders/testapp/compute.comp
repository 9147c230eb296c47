#version 450
// bb-testapp compute shader: a read-modify-write of one float per invocation with real float math
// (integer hash, sin, sqrt), so that shader instrumentation (NaN guards, asserts) has operations to work on
// and the checksum depends on every dispatch. Each invocation touches only its own element, so a dispatch
// has no races inside itself; dispatches that follow each other need a buffer barrier.

layout(local_size_x = 8, local_size_y = 8, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) buffer Values {
    float values[];
};

layout(push_constant) uniform Push {
    uint pass;   // which dispatch of a sequence this is: changes the hash
    uint offset; // first element, relative to the bound range
    uint width;  // elements per row (invocations in x over the whole dispatch)
    float scale; // keeps values bounded across passes
} pc;

// A 32-bit integer hash (lowbias32) mapped to [0, 1).
float hash01(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return float(x >> 8) * (1.0 / 16777216.0);
}

void main() {
    uvec2 id = gl_GlobalInvocationID.xy;
    uint i = pc.offset + id.y * pc.width + id.x;

    float prev = values[i];
    float h = hash01(i * 747796405u + pc.pass * 2891336453u);
    float wave = sin(prev * 3.7 + h * 6.2831853) * 0.5 + 0.5;
    // prev*prev + wave >= 0, so sqrt never sees a negative operand: no NaN in normal runs.
    values[i] = sqrt(prev * prev + wave) * pc.scale + h;
}
