// HLSL vertex shader: a matrix transform with a perspective divide.
struct VSInput {
    float3 pos : POSITION;
    float3 normal : NORMAL;
};

struct VSOutput {
    float4 pos : SV_Position;
    float3 normal : NORMAL;
    float2 uv : TEXCOORD0;
};

cbuffer Camera : register(b0) {
    float4x4 viewProj;
};

VSOutput main(VSInput input, uint vertex : SV_VertexID) {
    VSOutput o;
    o.pos = mul(viewProj, float4(input.pos, 1.0));
    o.normal = normalize(input.normal); // expect: nan-op normalize
    o.uv = o.pos.xy / o.pos.w; // expect: nan-op division
    return o;
}
