// bb-testapp `shader-bench`: the ALU loop both benchmark shaders run. Floats, divisions, normalize, pow and
// sqrt on values kept in a bounded positive range, so that nothing is NaN or Inf at any iteration (a NaN
// check must find nothing, and every setting must produce the same bits), and one BB_ASSERT per iteration
// that never fails: what an assert in a hot loop costs when it holds.
//
// Built with BB_BENCH_CONDITION_ONLY (bb-testapp --shader-condition-only), the assert is replaced by its
// condition checked by hand: a flag set where it fails, read once at the end, as an app author would write
// it without a tool. Run without any layer, it is the reference for the "asserts only" row: without a
// layer the driver deletes the debugPrintf that BB_ASSERT becomes, and the condition with it. Not a floor:
// the driver's compiler is sensitive to the check's shape (see the README).

#include "../blackbox.glsl"

// p: every component in [0.25, 2.5] (it stays there). Returns the final p and the accumulator.
vec4 bench_math(vec3 p, uint iterations) {
    float acc = 1.0;
#ifdef BB_BENCH_CONDITION_ONLY
    bool held = true;
#endif
    for (uint k = 0u; k < iterations; ++k) {
        vec3 n = normalize(p);             // |p| >= 0.43: never the zero vector
        float s = sqrt(dot(p, p));         // > 0
        float q = pow(n.x + 1.5, 1.25);    // base in [1.5, 2.5]
        acc = acc * 0.5 + q / (s + 1.0);   // stays in (0, 5)
        p = abs(n * 1.3 + vec3(q, s, acc) / (s + 1.0)) * 0.5 + 0.25;
#ifdef BB_BENCH_CONDITION_ONLY
        if (!(acc > 0.0 && acc < 1000.0)) held = false;
#else
        BB_ASSERT(acc > 0.0 && acc < 1000.0, 1);
#endif
    }
#ifdef BB_BENCH_CONDITION_ONLY
    // Never taken (the condition always holds): the same bits as the assert's build.
    if (!held) acc = -1.0;
#endif
    return vec4(p, acc);
}
