// Loops of every shape glslang's HLSL front end writes, for the loop-budget pass: for, while, do-while,
// nested loops, continue and break, a loop in a function. Each `loop` marker is on the line of a loop's
// header (a do-while's is its `while` line).
// bb-envs: vulkan1.0 vulkan1.1 (glslang 11 decorates structured buffers BufferBlock, which SPIR-V 1.4 and later reject)
RWStructuredBuffer<int> data : register(u0);
cbuffer Params : register(b1) {
    int n;
};

int sum_to(int m) {
    int s = 0;
    for (int k = 0; k < m; ++k) { // expect: loop
        s += k;
    }
    return s;
}

[numthreads(64, 1, 1)]
void main(uint3 id : SV_DispatchThreadID) {
    int acc = 0;
    [loop] for (int j = 0; j < n; ++j) { // expect: loop
        if (j == 3) {
            continue;
        }
        acc += j;
        if (acc > 1000) {
            break;
        }
    }
    int k = 0;
    while (k < n) { // expect: loop
        k += 2;
    }
    do {
        acc -= 1;
    } while (acc > 10); // expect: loop
    for (int a = 0; a < 4; ++a) { // expect: loop
        for (int b = 0; b < n; ++b) { // expect: loop
            acc += a * b;
        }
    }
    data[id.x] = acc + k + sum_to(int(id.x));
}
