#version 450
// bb-testapp `int-div`: 4096 invocations divide a numerator by a divisor read from a buffer; the divisor of
// invocation 2345 is 0. The quotient is undefined there (the driver may give anything); Blackbox's integer
// checks (VK_BLACKBOX_INT=on) report the division, its operands and its line.

layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Divisors {
    int divisors[];
};

layout(std430, set = 0, binding = 1) writeonly buffer Quotients {
    int quotients[];
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    int numerator = int(i) * 7 + 3;
    quotients[i] = numerator / divisors[i];
}
