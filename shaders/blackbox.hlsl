// Blackbox shader asserts for HLSL (DXC -spirv, or glslang -D).
//
//   #include "blackbox.hlsl"
//
//   BB_ASSERT(size < 0.25, 7);                 // id 7, no values
//   BB_ASSERT1(size < 0.25, 7, size);          // id 7 and one value (any scalar or vector type)
//   BB_ASSERT2(i < n, 8, i, n);                // ... up to BB_ASSERT4
//
// The id must be an integer constant. Each macro expands to
//
//   if (!(cond)) printf("[bb-assert %u]", (uint)(id), values...); else
//
// so the shader still compiles and runs without Blackbox (and prints "[bb-assert 7]" under the validation
// layers' DebugPrintf). Under Blackbox the engine turns each call into a conditional record with the id,
// the values, the source line, the stage and the invocation. An assert with its own message is a printf
// whose format starts with the same prefix: printf("[bb-assert %u] size %f too big", 7u, size).
// Defining BB_DISABLE before the include compiles every assert away.
#ifndef BLACKBOX_HLSL
#define BLACKBOX_HLSL

#ifdef BB_DISABLE
#define BB_ASSERT(cond, id)
#define BB_ASSERT1(cond, id, a)
#define BB_ASSERT2(cond, id, a, b)
#define BB_ASSERT3(cond, id, a, b, c)
#define BB_ASSERT4(cond, id, a, b, c, d)
#else
#define BB_ASSERT(cond, id) if (!(cond)) printf("[bb-assert %u]", (uint)(id)); else
#define BB_ASSERT1(cond, id, a) if (!(cond)) printf("[bb-assert %u]", (uint)(id), a); else
#define BB_ASSERT2(cond, id, a, b) if (!(cond)) printf("[bb-assert %u]", (uint)(id), a, b); else
#define BB_ASSERT3(cond, id, a, b, c) if (!(cond)) printf("[bb-assert %u]", (uint)(id), a, b, c); else
#define BB_ASSERT4(cond, id, a, b, c, d) if (!(cond)) printf("[bb-assert %u]", (uint)(id), a, b, c, d); else
#endif

#endif // BLACKBOX_HLSL
