#version 450
// Integer operations whose result SPIR-V leaves undefined, for the integer pass (VK_BLACKBOX_INT): division
// and remainder by zero or of INT_MIN by -1, shifts by the bit width or more, and dynamic indices into a
// vector, a fixed-size array in a buffer and a local array. The operands come from the buffer, so each
// check stays; divisions and shifts by constants need none.
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Data {
    int a;
    int b;
    uint u;
    uint s;
    int index;
    ivec4 v4;
    int table[8];
    int results[];
} data;

void main() {
    uint i = gl_GlobalInvocationID.x;
    int a = data.a;
    int b = data.b;
    int q = a / b; // expect: int-op SDiv
    int r = a % b; // expect: int-op SMod
    uint uq = data.u / data.s; // expect: int-op UDiv
    uint ur = data.u % data.s; // expect: int-op UMod
    int left = a << data.s; // expect: int-op ShiftLeftLogical
    uint right = data.u >> data.s; // expect: int-op ShiftRightLogical
    int arith = a >> b; // expect: int-op ShiftRightArithmetic
    ivec4 vq = data.v4 / ivec4(b, 1, 2, 3); // expect: int-op SDiv
    int halved = a / 2 + (a << 3);
    int picked = (data.v4 * 2)[data.index]; // expect: index VectorExtractDynamic
    int element = data.table[data.index]; // expect: index AccessChain
    int component = data.v4[data.index & 7]; // expect: index AccessChain
    int local[4] = int[4](1, 2, 3, 4);
    local[data.index] = q; // expect: index AccessChain
    data.results[i] = q + r + int(uq + ur + right) + left + arith + vq.x + halved + picked + element +
        component + local[1];
}
