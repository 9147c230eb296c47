// HLSL pixel shader: lighting with pow and normalize, an assert with a vector value.
#include "blackbox.hlsl"

struct PSInput {
    float4 pos : SV_Position;
    float3 normal : NORMAL;
    float2 uv : TEXCOORD0;
};

cbuffer Light : register(b0) {
    float3 direction;
    float power;
};

float4 main(PSInput input) : SV_Target {
    float3 n = normalize(input.normal); // expect: nan-op normalize
    BB_ASSERT1(abs(length(direction) - 1.0) < 0.01, 81, direction); // expect: assert 81
    float d = max(dot(n, -direction), 0.0);
    float s = pow(d, power); // expect: nan-op pow
    return float4(s, s, s, 1.0) / input.pos.w; // expect: nan-op division
}
