#version 450
// bb-testapp `hang`, dispatch 3: a long dispatch. Each invocation does pc.iterations x 4 dependent
// multiply-adds (43,000 x 4 by default: about 0.65 s per 1000 workgroups on lavapipe). The loop count stays
// below lavapipe's cut at 65,535 iterations: the dispatch is long because of its many workgroups
// (--hang-groups), not because of a longer loop.
//
// Built a second time with -DBB_ITERATIONS_FROM_BUFFER for `hang --resubmit`: the loop count then comes from
// a host-visible buffer (binding 2) that the host changes between two submissions of the same command
// buffer, so that one recording runs short, then long.
//
// Built with -DBB_STOPPABLE (`hang`), and in the BB_ITERATIONS_FROM_BUFFER build, an invocation that starts
// once the host has set `stop` (binding 2) skips its loop: the app sets it when its wait reports the device
// lost, so that a loss injected by the fault layer while the dispatch still runs on lavapipe ends the
// dispatch within milliseconds instead of seconds (the fault layer waits for the real work before the
// app's teardown). The plain build (two buffers) is for the scenarios that crash with the dispatch running.

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Values {
    float values[]; // written by dispatches 1 and 2 (4096 floats)
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    float results[]; // one per invocation
};

#ifdef BB_ITERATIONS_FROM_BUFFER
#define BB_STOPPABLE
#endif

#ifdef BB_STOPPABLE
layout(std430, set = 0, binding = 2) readonly buffer Control {
    uint control_iterations;
    uint stop;
};
#endif

#ifdef BB_ITERATIONS_FROM_BUFFER
#define ITERATIONS control_iterations
#else
#define ITERATIONS pc.iterations
#endif

layout(push_constant) uniform Push {
    uint iterations;
    uint value_count;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    float seed = values[i % pc.value_count];
    float a = seed;
    float b = seed * 0.5 + 0.25;
    float c = seed * 0.25 + 0.5;
    float d = seed * 0.125 + 0.75;
#ifdef BB_STOPPABLE
    uint iterations = stop != 0u ? 0u : ITERATIONS;
#else
    uint iterations = ITERATIONS;
#endif
    for (uint k = 0u; k < iterations; ++k) {
        a = a * 0.999 + 0.0011;
        b = b * 0.998 + a * 0.002;
        c = c * 0.997 + b * 0.003;
        d = d * 0.996 + c * 0.004;
    }
    results[i] = a + b + c + d;
}
