//! Hooks for shader modules and pipelines: where the layer learns each shader's id and each pipeline's
//! stages (and, with instrumentation on, where shaders are rewritten).

use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;

use super::{contained, entry, Hook};
use crate::device::Device;
use crate::registry;
use crate::shaders::{shader_id, stage_name, PipelineRecord, ShaderRecord, StageRecord};

/// The words of a `VkShaderModuleCreateInfo`.
///
/// # Safety
/// `info` must be valid, its code `code_size` bytes long.
unsafe fn words<'a>(info: &'a vk::ShaderModuleCreateInfo) -> &'a [u32] {
    if info.p_code.is_null() {
        return &[];
    }
    // SAFETY: forwarded to the caller; code_size is a multiple of 4 for valid SPIR-V.
    unsafe { std::slice::from_raw_parts(info.p_code, info.code_size / 4) }
}

/// What the layer records of a module's code.
fn record_for(code: &[u32]) -> Arc<ShaderRecord> {
    Arc::new(ShaderRecord { id: shader_id(code), sources: Vec::new() })
}

pub(super) unsafe extern "system" fn create_shader_module(
    device: vk::Device,
    info: *const vk::ShaderModuleCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::ShaderModule,
) -> vk::Result {
    entry("vkCreateShaderModule", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else { return vk::Result::ERROR_UNKNOWN };
        let Some(next) = dev.next.create_shader_module else { return vk::Result::ERROR_UNKNOWN };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, info, allocator, out) };
        if result == vk::Result::SUCCESS {
            // SAFETY: the app's valid create info; the module was written.
            contained("recording a shader module", || unsafe { dev.shaders.add_module(*out, record_for(words(&*info))) });
        }
        result
    })
}

pub(super) unsafe extern "system" fn destroy_shader_module(
    device: vk::Device,
    module: vk::ShaderModule,
    allocator: *const vk::AllocationCallbacks,
) {
    entry("vkDestroyShaderModule", (), || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else { return };
        contained("forgetting a shader module", || dev.shaders.remove_module(module));
        if let Some(next) = dev.next.destroy_shader_module {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(device, module, allocator) };
        }
    })
}

/// The stages of a pipeline as the layer records them.
///
/// # Safety
/// `stages` must be the app's valid stage create infos.
unsafe fn stages(dev: &Device, stages: &[vk::PipelineShaderStageCreateInfo]) -> PipelineRecord {
    let stages = stages
        .iter()
        .filter_map(|s| {
            let shader = if s.module != vk::ShaderModule::null() {
                dev.shaders.module(s.module)?
            } else {
                // maintenance5 / graphics pipeline library: the code comes inline.
                let mut p = s.p_next;
                let mut found = None;
                while !p.is_null() {
                    // SAFETY: a valid chain.
                    let base = unsafe { &*(p as *const vk::BaseInStructure) };
                    if base.s_type == vk::StructureType::SHADER_MODULE_CREATE_INFO {
                        // SAFETY: the struct this sType names.
                        found = Some(record_for(unsafe { words(&*(p as *const vk::ShaderModuleCreateInfo)) }));
                        break;
                    }
                    p = base.p_next as *const std::ffi::c_void;
                }
                found?
            };
            let entry = if s.p_name.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated entry point name.
                unsafe { CStr::from_ptr(s.p_name) }.to_string_lossy().into_owned()
            };
            Some(StageRecord { shader, entry, stage: stage_name(s.stage).to_owned() })
        })
        .collect();
    PipelineRecord { stages }
}

/// Slices of the app's arrays.
///
/// # Safety
/// `ptr` must point to `count` items or be null.
unsafe fn slice<'a, T>(ptr: *const T, count: u32) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: forwarded.
        unsafe { std::slice::from_raw_parts(ptr, count as usize) }
    }
}

/// Shared body of the three pipeline-creation hooks.
fn record_pipelines<I>(dev: &Device, infos: &[I], out: *mut vk::Pipeline, stages_of: impl Fn(&I) -> &[vk::PipelineShaderStageCreateInfo]) {
    contained("recording pipelines", || {
        for (i, info) in infos.iter().enumerate() {
            // SAFETY: the driver wrote one pipeline per create info (null where it failed).
            let pipeline = unsafe { *out.add(i) };
            if pipeline != vk::Pipeline::null() {
                // SAFETY: the app's valid stage infos.
                dev.shaders.add_pipeline(pipeline, unsafe { stages(dev, stages_of(info)) });
            }
        }
    });
}

pub(super) unsafe extern "system" fn create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::ComputePipelineCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
) -> vk::Result {
    entry("vkCreateComputePipelines", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else { return vk::Result::ERROR_UNKNOWN };
        let Some(next) = dev.next.create_compute_pipelines else { return vk::Result::ERROR_UNKNOWN };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, cache, count, infos, allocator, out) };
        if result.as_raw() >= 0 {
            // SAFETY: the app's array of `count` infos.
            record_pipelines(&dev, unsafe { slice(infos, count) }, out, |i| std::slice::from_ref(&i.stage));
        }
        result
    })
}

pub(super) unsafe extern "system" fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
) -> vk::Result {
    entry("vkCreateGraphicsPipelines", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else { return vk::Result::ERROR_UNKNOWN };
        let Some(next) = dev.next.create_graphics_pipelines else { return vk::Result::ERROR_UNKNOWN };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, cache, count, infos, allocator, out) };
        if result.as_raw() >= 0 {
            // SAFETY: the app's array of `count` infos, each with `stage_count` stages.
            record_pipelines(&dev, unsafe { slice(infos, count) }, out, |i| unsafe { slice(i.p_stages, i.stage_count) });
        }
        result
    })
}

pub(super) unsafe extern "system" fn create_ray_tracing_pipelines_khr(
    device: vk::Device,
    deferred: vk::DeferredOperationKHR,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::RayTracingPipelineCreateInfoKHR,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
) -> vk::Result {
    entry("vkCreateRayTracingPipelinesKHR", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else { return vk::Result::ERROR_UNKNOWN };
        let Some(next) = dev.next.create_ray_tracing_pipelines_khr else { return vk::Result::ERROR_UNKNOWN };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, deferred, cache, count, infos, allocator, out) };
        if result.as_raw() >= 0 && deferred == vk::DeferredOperationKHR::null() {
            // SAFETY: the app's array of `count` infos, each with `stage_count` stages.
            record_pipelines(&dev, unsafe { slice(infos, count) }, out, |i| unsafe { slice(i.p_stages, i.stage_count) });
        }
        result
    })
}

pub(super) unsafe extern "system" fn destroy_pipeline(
    device: vk::Device,
    pipeline: vk::Pipeline,
    allocator: *const vk::AllocationCallbacks,
) {
    entry("vkDestroyPipeline", (), || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else { return };
        contained("forgetting a pipeline", || dev.shaders.remove_pipeline(pipeline));
        if let Some(next) = dev.next.destroy_pipeline {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(device, pipeline, allocator) };
        }
    })
}

/// The hooks of this file.
pub(super) const HOOKS: &[Hook] = &[
    hook!(Device, c"vkCreateShaderModule", create_shader_module as PFN_vkCreateShaderModule),
    hook!(Device, c"vkDestroyShaderModule", destroy_shader_module as PFN_vkDestroyShaderModule),
    hook!(Device, c"vkCreateComputePipelines", create_compute_pipelines as PFN_vkCreateComputePipelines),
    hook!(Device, c"vkCreateGraphicsPipelines", create_graphics_pipelines as PFN_vkCreateGraphicsPipelines),
    hook!(Device, c"vkCreateRayTracingPipelinesKHR", create_ray_tracing_pipelines_khr as PFN_vkCreateRayTracingPipelinesKHR),
    hook!(Device, c"vkDestroyPipeline", destroy_pipeline as PFN_vkDestroyPipeline),
];
