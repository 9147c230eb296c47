//! Shader errors: draining the error buffer that instrumented shaders write, logging what it holds, and
//! keeping it for reports. (The error buffer arrives with shader instrumentation; until a device has one,
//! there is nothing to drain.)

use std::sync::Arc;

use crate::device::Device;

/// Reads what shaders reported since the last drain and logs it.
pub fn drain(_device: &Arc<Device>) {}

/// A frame ended (`vkQueuePresentKHR`).
pub fn end_frame(_device: &Arc<Device>) {}

/// The shader errors reported so far, for a report.
pub fn reported(_device: &Device) -> Vec<blackbox_report::ShaderError> {
    Vec::new()
}
