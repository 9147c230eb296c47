#version 450
// Each invocation runs a long loop, then stores a NaN: a dispatch that lasts a few hundred milliseconds on
// lavapipe, its NaN records coming in as its invocations end (shader_errors.rs).
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Values { float v[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float x = v[i];
    for (int k = 0; k < 20000; k++) {
        x = sin(x) * 1.5 + 0.25;
    }
    v[i] = sqrt(-1.0 - abs(x));
}
