//! What a hook returns when Blackbox cannot reach the next layer at all, in one place for every hook.

use ash::vk;

/// What a hook returns when it cannot reach the next layer at all: the object it was called on is unknown
/// to the layer (its state was lost to an internal error), or the chain below lacks the command (then the
/// hook is never handed out, so only a broken chain gets here). Nothing else ever returns it.
pub trait Fallback {
    /// The value.
    fn fallback() -> Self;
}

impl Fallback for () {
    fn fallback() {}
}

impl Fallback for vk::Result {
    /// `VK_ERROR_INITIALIZATION_FAILED`: the code the loader and layers give for a layer that could not do
    /// its part, and the one an app can act on (it cannot have caused it).
    fn fallback() -> Self {
        vk::Result::ERROR_INITIALIZATION_FAILED
    }
}

impl Fallback for vk::PFN_vkVoidFunction {
    /// No command: the app sees it as absent.
    fn fallback() -> Self {
        None
    }
}
