#version 450
// bb-testapp vertex shader for full-screen passes: one triangle covering the viewport, from gl_VertexIndex
// alone (no vertex buffer). Draw it with vkCmdDraw(3, 1, 0, 0).

void main() {
    vec2 corner = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
    gl_Position = vec4(corner * 2.0 - 1.0, 0.0, 1.0);
}
