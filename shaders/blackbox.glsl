// Blackbox shader asserts for GLSL (Vulkan).
//
//   #extension GL_GOOGLE_include_directive : require
//   #include "blackbox.glsl"
//
//   BB_ASSERT(size < 0.25, 7);                 // id 7, no values
//   BB_ASSERT1(size < 0.25, 7, size);          // id 7 and one value (any scalar or vector type)
//   BB_ASSERT2(i < n, 8, i, n);                // ... up to BB_ASSERT4
//
// The id must be an integer constant; it names the assert in logs and reports. Each macro expands to
//
//   if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id), values...); else
//
// so a shader that includes this file still compiles and runs without Blackbox, and under the validation
// layers' DebugPrintf it prints "[bb-assert 7]" (the values after the id are not printed there). Under
// Blackbox the engine turns each call into a conditional record carrying the id, the values with their real
// types, the source line, the stage and the invocation; `VK_BLACKBOX_ASSERT` decides what happens next.
// The trailing `else` makes `BB_ASSERT(...);` one statement, safe inside an if/else without braces.
//
// An assert with its own message is a debugPrintfEXT whose format starts with the same prefix; the text
// after "]" is formatted with the values, as printf:
//
//   if (!(size < 0.25)) debugPrintfEXT("[bb-assert %u] size %f too big", 7u, size);
//
// Defining BB_DISABLE before the include compiles every assert away.
#ifndef BLACKBOX_GLSL
#define BLACKBOX_GLSL

#extension GL_EXT_debug_printf : enable

#ifdef BB_DISABLE
#define BB_ASSERT(cond, id)
#define BB_ASSERT1(cond, id, a)
#define BB_ASSERT2(cond, id, a, b)
#define BB_ASSERT3(cond, id, a, b, c)
#define BB_ASSERT4(cond, id, a, b, c, d)
#else
#define BB_ASSERT(cond, id) if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id)); else
#define BB_ASSERT1(cond, id, a) if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id), a); else
#define BB_ASSERT2(cond, id, a, b) if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id), a, b); else
#define BB_ASSERT3(cond, id, a, b, c) if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id), a, b, c); else
#define BB_ASSERT4(cond, id, a, b, c, d) \
    if (!(cond)) debugPrintfEXT("[bb-assert %u]", uint(id), a, b, c, d); else
#endif

#endif // BLACKBOX_GLSL
