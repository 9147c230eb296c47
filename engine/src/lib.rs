//! The SPIR-V engine of Blackbox.
//!
//! This crate takes SPIR-V modules in and gives instrumented SPIR-V modules out, together with what it
//! learnt about each shader (entry points, source files, the source location of every instrumented site).
//! It knows nothing of Vulkan: the layer (`blackbox-layer`) and the CLI (`blackbox instrument`) both drive it,
//! and it is tested offline on real compiler output.
//!
//! The instrumentation passes arrive with the shader-instrumentation work; this crate fixes their place in
//! the workspace so that nothing Vulkan-specific ever leaks into it.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

/// The version of the engine, recorded in dumps and reports so that an instrumented module can be traced to
/// the code that produced it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
