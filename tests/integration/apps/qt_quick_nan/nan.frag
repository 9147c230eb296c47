VARYING vec2 uv;
void MAIN()
{
    // From the grid cell to the centre cell: zero in the centre cell itself.
    vec3 toward = vec3(floor(uv.x * 8.0) - 4.0, floor(uv.y * 8.0) - 4.0, 0.0);
    vec3 n = normalize(toward);
    FRAGCOLOR = vec4(0.5 + 0.5 * n, 1.0);
}
