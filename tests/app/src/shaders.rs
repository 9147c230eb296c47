//! SPIR-V compiled by build.rs from `shaders/testapp/*` (glslangValidator, Vulkan 1.2 target).

pub const COMPUTE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/compute.comp.spv"));
pub const DRAW_VERT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/draw.vert.spv"));
pub const DRAW_FRAG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/draw.frag.spv"));
