// HLSL compute (glslang's HLSL front end): a blur with a division by the weight sum, a printf and asserts.
#include "blackbox.hlsl"

RWTexture2D<float4> output : register(u0);
Texture2D<float4> input : register(t1);
cbuffer Params : register(b2) {
    float radius;
    uint width;
};

[numthreads(8, 8, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    float4 sum = 0;
    float weights = 0;
    for (int dx = -2; dx <= 2; ++dx) {
        float w = exp(-float(dx * dx) / (radius * radius)); // expect: nan-op division
        sum += input.Load(int3(id.xy + int2(dx, 0), 0)) * w;
        weights += w;
    }
    BB_ASSERT1(weights > 0.0, 71, weights); // expect: assert 71
    if (id.x == 0 && id.y == 0) {
        printf("weights %f", weights); // expect: printf
    }
    output[id.xy] = sum / weights; // expect: nan-output image store
}
