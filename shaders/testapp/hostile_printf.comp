#version 450
// bb-testapp `hostile-strings`: one invocation prints, through %c, the characters a hostile app's printf
// output can hold (values from a buffer the host fills, so nothing is folded): ESC [ 3 1 m (a colour),
// NUL, CR, LF, U+009B (a C1 CSI) and U+202E (right-to-left override). Expected text, unescaped:
//   bb-hostile <ESC>[31m|<NUL>|<CR>|<LF>|<U+009B>|<U+202E> end
#extension GL_EXT_debug_printf : require

layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;

layout(std430, set = 0, binding = 0) readonly buffer Words {
    uint w[];
};

layout(std430, set = 0, binding = 1) writeonly buffer Results {
    uint results[];
};

void main() {
    debugPrintfEXT("bb-hostile %c%c%c%c%c|%c|%c|%c|%c|%c end", w[0], w[1], w[2], w[3], w[4], w[5], w[6],
                   w[7], w[8], w[9]);
    results[0] = w[0] + w[9];
}
