#version 450
// Loops of every shape glslang writes, for the loop-budget pass (VK_BLACKBOX_LOOPS): for, while, do-while,
// nested loops, continue and break, a switch inside a loop, a loop in a function, an endless loop left
// only by a return, a float induction variable. Each `loop` marker is on the line of a loop's header
// (a do-while's is its `while` line). spirv-opt -O turns them into loops with header phis, headers that
// are their own continue target, merge blocks with phis, and inlines the functions.
layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) buffer Data {
    int n;
    int v[];
} data;

int sum_to(int m) {
    int s = 0;
    for (int k = 0; k < m; ++k) { // expect: loop
        s += k;
    }
    return s;
}

int grow(int x) {
    while (true) { // expect: loop
        if (x > 100) {
            return x;
        }
        x = x * 2 + 1;
    }
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    int acc = 0;
    for (int j = 0; j < data.n; ++j) { // expect: loop
        if (j == 3) {
            continue;
        }
        acc += j;
        if (acc > 1000) {
            break;
        }
    }
    int k = 0;
    while (k < data.n) { // expect: loop
        k += 2;
    }
    do {
        acc -= 1;
    } while (acc > 10); // expect: loop
    for (int a = 0; a < 4; ++a) { // expect: loop
        for (int b = 0; b < data.n; ++b) { // expect: loop
            if (b == a) {
                continue;
            }
            acc += a * b;
        }
    }
    for (int s = 0; s < data.n; ++s) { // expect: loop
        switch (s & 3) {
        case 0:
            continue;
        case 1:
            acc += 3;
            break;
        default:
            acc ^= s;
        }
    }
    float t = 0.0;
    for (float f = 0.0; f < float(data.n); f += 0.5) { // expect: loop
        t += f;
    }
    data.v[i] = acc + sum_to(int(i)) + grow(acc) + int(t);
}
