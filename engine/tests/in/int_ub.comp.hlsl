// Integer operations whose result SPIR-V leaves undefined, through glslang's HLSL front end: division and
// remainder by zero or of INT_MIN by -1, shifts too far, a dynamic index into a vector and an array.
// bb-envs: vulkan1.0 vulkan1.1 (glslang 11 decorates structured buffers BufferBlock, which SPIR-V 1.4 and later reject)
struct Params {
    int a;
    int b;
    uint u;
    uint s;
    int index;
    int4 v4;
    int table[8];
};
StructuredBuffer<Params> params : register(t0);
RWStructuredBuffer<int> results : register(u1);

[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    Params p = params[0];
    int q = p.a / p.b; // expect: int-op SDiv
    int r = p.a % p.b; // expect: int-op SMod
    uint uq = p.u / p.s; // expect: int-op UDiv
    int left = p.a << p.s; // expect: int-op ShiftLeftLogical
    int arith = p.a >> p.b; // expect: int-op ShiftRightArithmetic
    int picked = (p.v4 * 2)[p.index]; // expect: index VectorExtractDynamic
    int element = params[0].table[p.index]; // expect: index AccessChain
    results[id.x] = q + r + int(uq) + left + arith + picked + element;
}
