#version 450
// Loops, nested control flow, functions, specialization constants, printf, asserts, image and struct
// stores, and the NaN-prone operations a particle update uses.
#extension GL_GOOGLE_include_directive : require
#include "blackbox.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const int STEPS = 4;
layout(constant_id = 2) const float DAMPING = 0.98;
layout(constant_id = 3) const bool VERBOSE = false;

struct Particle {
    vec4 pos;
    vec4 vel;
    float life;
    uint flags;
};

layout(std430, set = 0, binding = 0) buffer Particles {
    Particle particles[];
};

layout(std140, set = 0, binding = 1) uniform Params {
    vec3 attractor;
    float dt;
    uint count;
} params;

layout(set = 0, binding = 2, rgba32f) uniform writeonly image2D heat;

vec3 attraction(vec3 pos, vec3 target) {
    vec3 delta = target - pos;
    float dist2 = dot(delta, delta);
    float inv = inversesqrt(dist2 + 0.0001); // expect: nan-op inversesqrt
    return delta * inv * inv * inv;
}

float falloff(float d) {
    return pow(d, 1.5) / (1.0 + d); // expect: nan-op pow
}

void main() {
    uint index = gl_GlobalInvocationID.x;
    if (index >= params.count) {
        return;
    }
    Particle p = particles[index];
    BB_ASSERT2(p.life >= 0.0, 3, p.life, index); // expect: assert 3
    vec3 pos = p.pos.xyz;
    vec3 vel = p.vel.xyz;
    for (int s = 0; s < STEPS; ++s) {
        vec3 a = attraction(pos, params.attractor);
        if (length(a) > 10.0) {
            a = normalize(a) * 10.0; // expect: nan-op normalize
        } else if (s == 0) {
            a *= 0.5;
        }
        int k = 0;
        while (k < s) {
            if ((p.flags & (1u << uint(k))) != 0u) {
                a.y -= 0.1;
                break;
            }
            ++k;
        }
        vel = vel * DAMPING + a * params.dt;
        pos += vel * params.dt;
    }
    float speed = length(vel);
    float heatValue = falloff(speed);
    switch (p.flags & 3u) {
    case 0u:
        heatValue *= 2.0;
        break;
    case 1u:
        heatValue = sqrt(heatValue); // expect: nan-op sqrt
        break;
    default:
        heatValue = log2(1.0 + heatValue); // expect: nan-op log2
        break;
    }
    if (VERBOSE) {
        debugPrintfEXT("particle %u speed %f heat %f", index, speed, heatValue); // expect: printf
    }
    p.pos = vec4(pos, 1.0);
    p.vel = vec4(vel, 0.0);
    p.life -= params.dt / max(speed, 0.001); // expect: nan-op division
    particles[index] = p; // expect: nan-output storage buffer store
    imageStore(heat, ivec2(index % 64u, index / 64u), vec4(heatValue)); // expect: nan-output image store
}
