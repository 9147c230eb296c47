//! Hooks for shader modules and pipelines: where the layer learns each shader's id and each pipeline's
//! stages (and, with instrumentation on, where shaders are rewritten).

use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;

use super::{contained, entry, Hook};
use crate::device::Device;
use crate::registry;
use crate::shader_errors::InstrumentedShader;
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

/// What the layer records of a module's code: with what the engine learnt when it instrumented it, else
/// to be read only if a report asks.
fn record_for(code: &[u32], info: Option<&blackbox_engine::ShaderInfo>) -> Arc<ShaderRecord> {
    Arc::new(match info {
        Some(info) => ShaderRecord::with_info(code, info),
        None => ShaderRecord::deferred(code),
    })
}

/// Whether `VK_BLACKBOX_SHADERS` selects this module: an id prefix, or one of its names (entry point,
/// function, source file, or a source file's base name).
fn selected(code: &[u32], info: Option<&blackbox_engine::ShaderInfo>) -> bool {
    let filter = &crate::config().shader_filter;
    if filter.is_empty() {
        return true;
    }
    let id = shader_id(code);
    filter.iter().any(|f| {
        id.starts_with(f.as_str())
            || info.is_some_and(|i| {
                i.debug_names
                    .iter()
                    .any(|n| n == f || n.rsplit(['/', '\\']).next() == Some(f.as_str()))
            })
    })
}

/// The instrumented form of `code` on this device, or `None` to use the app's own (instrumentation off,
/// not selected, or refused by the engine: then a warning, once per module).
fn instrumented(dev: &Device, code: &[u32]) -> Option<Arc<InstrumentedShader>> {
    let guard = dev.error_buffer.read();
    let eb = guard.as_ref()?;
    if !crate::config().shader_filter.is_empty() {
        let info = blackbox_engine::shader_info(code).ok();
        if !selected(code, info.as_ref()) {
            return None;
        }
    }
    if !eb.needs(code) {
        return None;
    }
    let (result, fresh) = eb.instrument(code);
    match result {
        Ok(shader) => {
            if fresh {
                debug!(
                    "shader {} instrumented: {} site(s)",
                    shader.info.id,
                    shader.info.sites.len()
                );
                dump(code, Some(&shader));
            }
            Some(shader)
        }
        Err(reason) => {
            if fresh {
                warn!(
                    "shader {} is passed through unchanged: {reason}",
                    shader_id(code)
                );
                dump(code, None);
            }
            None
        }
    }
}

/// `VK_BLACKBOX_DUMP_SHADERS`: the app's module, the instrumented one and its sites, named by shader id.
fn dump(code: &[u32], shader: Option<&InstrumentedShader>) {
    let Some(dir) = &crate::config().dump_shaders else {
        return;
    };
    let id = shader_id(code);
    let bytes = |w: &[u32]| w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let result = (|| -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join(format!("{id}.spv")), bytes(code))?;
        if let Some(shader) = shader {
            std::fs::write(
                dir.join(format!("{id}.instrumented.spv")),
                bytes(&shader.words),
            )?;
            let mut sites = String::new();
            for s in &shader.info.sites {
                let at = s
                    .location
                    .as_ref()
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "?".into());
                sites.push_str(&format!(
                    "{} {:?} at {at}\n",
                    shader.site_base + s.local_index,
                    s.kind
                ));
            }
            std::fs::write(dir.join(format!("{id}.sites.txt")), sites)?;
        }
        Ok(())
    })();
    if let Err(e) = result {
        warn!(
            "VK_BLACKBOX_DUMP_SHADERS={}: cannot write shader {id} ({e})",
            dir.display()
        );
    }
}

pub(super) unsafe extern "system" fn create_shader_module(
    device: vk::Device,
    info: *const vk::ShaderModuleCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::ShaderModule,
) -> vk::Result {
    entry("vkCreateShaderModule", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.create_shader_module else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's valid create info.
        let code = unsafe { words(&*info) };
        let shader = contained("instrumenting a shader", || instrumented(&dev, code)).flatten();
        let mut result = vk::Result::ERROR_UNKNOWN;
        if let Some(shader) = &shader {
            // SAFETY: the app's create info, with the instrumented code.
            let mut patched = unsafe { *info };
            patched.code_size = shader.words.len() * 4;
            patched.p_code = shader.words.as_ptr();
            // SAFETY: as above; the words outlive the call.
            result = unsafe { next(device, &patched, allocator, out) };
            if result != vk::Result::SUCCESS {
                warn!(
                    "the driver refused instrumented shader {} ({result:?}): using the app's own",
                    shader.info.id
                );
            }
        }
        if result != vk::Result::SUCCESS {
            // SAFETY: the app's arguments, forwarded as they came.
            result = unsafe { next(device, info, allocator, out) };
        }
        if result == vk::Result::SUCCESS {
            contained("recording a shader module", || {
                let record = record_for(code, shader.as_ref().map(|s| &s.info));
                // SAFETY: the module was written.
                unsafe { dev.shaders.add_module(*out, record) }
            });
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
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return;
        };
        contained("forgetting a shader module", || {
            dev.shaders.remove_module(module)
        });
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
                // SAFETY: the app's valid chain; the struct found is valid for the call.
                let info = unsafe { crate::chain::find::<vk::ShaderModuleCreateInfo>(s.p_next) }?;
                // SAFETY: as above.
                let code = unsafe { words(&*info) };
                record_for(code, None)
            };
            let entry = if s.p_name.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated entry point name.
                unsafe { CStr::from_ptr(s.p_name) }
                    .to_string_lossy()
                    .into_owned()
            };
            Some(StageRecord {
                shader,
                entry,
                stage: stage_name(s.stage).to_owned(),
            })
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

/// Inline modules (a `VkShaderModuleCreateInfo` chained to a stage, maintenance5 / pipeline libraries)
/// swapped for their instrumented code during the call down, and restored after it.
struct InlinePatch {
    restore: Vec<(*mut vk::ShaderModuleCreateInfo<'static>, usize, *const u32)>,
    _keep: Vec<Arc<InstrumentedShader>>,
}

impl InlinePatch {
    /// Patches the inline modules of `stages`.
    ///
    /// # Safety
    /// `stages` must be the app's valid stage infos; the patch must be dropped before the hook returns.
    unsafe fn new(dev: &Device, stages: &[vk::PipelineShaderStageCreateInfo]) -> Self {
        let mut patch = InlinePatch {
            restore: Vec::new(),
            _keep: Vec::new(),
        };
        for stage in stages
            .iter()
            .filter(|s| s.module == vk::ShaderModule::null())
        {
            // SAFETY: the app's valid chain.
            let Some(info) = (unsafe {
                crate::chain::find::<vk::ShaderModuleCreateInfo<'static>>(stage.p_next)
            }) else {
                continue;
            };
            // SAFETY: the struct found, valid for the call.
            let code = unsafe { words(&*info) };
            if let Some(shader) = instrumented(dev, code) {
                // SAFETY: as above; restored in Drop.
                unsafe {
                    patch
                        .restore
                        .push((info, (*info).code_size, (*info).p_code));
                    (*info).code_size = shader.words.len() * 4;
                    (*info).p_code = shader.words.as_ptr();
                }
                patch._keep.push(shader);
            }
        }
        patch
    }
}

impl Drop for InlinePatch {
    fn drop(&mut self) {
        for &(info, size, code) in &self.restore {
            // SAFETY: the app's struct, still valid inside the hook.
            unsafe {
                (*info).code_size = size;
                (*info).p_code = code;
            }
        }
    }
}

/// Shared body of the three pipeline-creation hooks.
fn record_pipelines<I>(
    dev: &Device,
    infos: &[I],
    out: *mut vk::Pipeline,
    stages_of: impl Fn(&I) -> &[vk::PipelineShaderStageCreateInfo],
) {
    contained("recording pipelines", || {
        for (i, info) in infos.iter().enumerate() {
            // SAFETY: the driver wrote one pipeline per create info (null where it failed).
            let pipeline = unsafe { *out.add(i) };
            if pipeline != vk::Pipeline::null() {
                // SAFETY: the app's valid stage infos.
                dev.shaders
                    .add_pipeline(pipeline, unsafe { stages(dev, stages_of(info)) });
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
    entry(
        "vkCreateComputePipelines",
        vk::Result::ERROR_UNKNOWN,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_UNKNOWN;
            };
            let Some(next) = dev.next.create_compute_pipelines else {
                return vk::Result::ERROR_UNKNOWN;
            };
            // SAFETY: the app's array of `count` infos.
            let stages: Vec<_> = unsafe { slice(infos, count) }
                .iter()
                .map(|i| i.stage)
                .collect();
            // SAFETY: the app's stage infos; dropped before returning.
            let patch = contained("instrumenting inline shaders", || unsafe {
                InlinePatch::new(&dev, &stages)
            });
            // SAFETY: the app's arguments, inline code swapped for its instrumented form.
            let result = unsafe { next(device, cache, count, infos, allocator, out) };
            drop(patch);
            if result.as_raw() >= 0 {
                // SAFETY: the app's array of `count` infos.
                record_pipelines(&dev, unsafe { slice(infos, count) }, out, |i| {
                    std::slice::from_ref(&i.stage)
                });
            }
            result
        },
    )
}

pub(super) unsafe extern "system" fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::Pipeline,
) -> vk::Result {
    entry(
        "vkCreateGraphicsPipelines",
        vk::Result::ERROR_UNKNOWN,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_UNKNOWN;
            };
            let Some(next) = dev.next.create_graphics_pipelines else {
                return vk::Result::ERROR_UNKNOWN;
            };
            // SAFETY: the app's infos and their stages; dropped before returning.
            let patch = contained("instrumenting inline shaders", || unsafe {
                let stages: Vec<_> = slice(infos, count)
                    .iter()
                    .flat_map(|i| slice(i.p_stages, i.stage_count).iter().copied())
                    .collect();
                InlinePatch::new(&dev, &stages)
            });
            // SAFETY: the app's arguments, inline code swapped for its instrumented form.
            let result = unsafe { next(device, cache, count, infos, allocator, out) };
            drop(patch);
            if result.as_raw() >= 0 {
                // SAFETY: the app's array of `count` infos, each with `stage_count` stages.
                record_pipelines(&dev, unsafe { slice(infos, count) }, out, |i| unsafe {
                    slice(i.p_stages, i.stage_count)
                });
            }
            result
        },
    )
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
    entry(
        "vkCreateRayTracingPipelinesKHR",
        vk::Result::ERROR_UNKNOWN,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_UNKNOWN;
            };
            let Some(next) = dev.next.create_ray_tracing_pipelines_khr else {
                return vk::Result::ERROR_UNKNOWN;
            };
            // With a deferred operation the driver may read the code after the call: no inline patch then.
            let patch = if deferred == vk::DeferredOperationKHR::null() {
                // SAFETY: the app's infos and their stages; dropped before returning.
                contained("instrumenting inline shaders", || unsafe {
                    let stages: Vec<_> = slice(infos, count)
                        .iter()
                        .flat_map(|i| slice(i.p_stages, i.stage_count).iter().copied())
                        .collect();
                    InlinePatch::new(&dev, &stages)
                })
            } else {
                None
            };
            // SAFETY: the app's arguments, inline code swapped for its instrumented form.
            let result = unsafe { next(device, deferred, cache, count, infos, allocator, out) };
            drop(patch);
            if result.as_raw() >= 0 && deferred == vk::DeferredOperationKHR::null() {
                // SAFETY: the app's array of `count` infos, each with `stage_count` stages.
                record_pipelines(&dev, unsafe { slice(infos, count) }, out, |i| unsafe {
                    slice(i.p_stages, i.stage_count)
                });
            }
            result
        },
    )
}

pub(super) unsafe extern "system" fn destroy_pipeline(
    device: vk::Device,
    pipeline: vk::Pipeline,
    allocator: *const vk::AllocationCallbacks,
) {
    entry("vkDestroyPipeline", (), || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return;
        };
        contained("forgetting a pipeline", || {
            dev.shaders.remove_pipeline(pipeline)
        });
        if let Some(next) = dev.next.destroy_pipeline {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(device, pipeline, allocator) };
        }
    })
}

pub(super) unsafe extern "system" fn create_shaders_ext(
    device: vk::Device,
    count: u32,
    infos: *const vk::ShaderCreateInfoEXT,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::ShaderEXT,
) -> vk::Result {
    entry("vkCreateShadersEXT", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.create_shaders_ext else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let patched = contained("instrumenting shader objects", || {
            // SAFETY: the app's array of `count` infos.
            let list = unsafe { slice(infos, count) };
            let mut copies = list.to_vec();
            let mut keep = Vec::new();
            for c in copies
                .iter_mut()
                .filter(|c| c.code_type == vk::ShaderCodeTypeEXT::SPIRV && !c.p_code.is_null())
            {
                // SAFETY: SPIR-V code of `code_size` bytes.
                let code =
                    unsafe { std::slice::from_raw_parts(c.p_code as *const u32, c.code_size / 4) };
                if let Some(shader) = instrumented(&dev, code) {
                    c.code_size = shader.words.len() * 4;
                    c.p_code = shader.words.as_ptr().cast();
                    keep.push(shader);
                }
            }
            (!keep.is_empty()).then_some((copies, keep))
        })
        .flatten();
        if let Some((copies, _keep)) = &patched {
            // SAFETY: the app's infos with instrumented code; the words outlive the call.
            let result = unsafe { next(device, count, copies.as_ptr(), allocator, out) };
            if result == vk::Result::SUCCESS {
                return result;
            }
            warn!(
                "the driver refused instrumented shader objects ({result:?}): using the app's own"
            );
        }
        // SAFETY: the app's arguments, forwarded as they came.
        unsafe { next(device, count, infos, allocator, out) }
    })
}

/// The hooks of this file.
pub(super) const HOOKS: &[Hook] = &[
    hook!(
        Device,
        c"vkCreateShaderModule",
        create_shader_module as PFN_vkCreateShaderModule
    ),
    hook!(
        Device,
        c"vkDestroyShaderModule",
        destroy_shader_module as PFN_vkDestroyShaderModule
    ),
    hook!(
        Device,
        c"vkCreateComputePipelines",
        create_compute_pipelines as PFN_vkCreateComputePipelines
    ),
    hook!(
        Device,
        c"vkCreateGraphicsPipelines",
        create_graphics_pipelines as PFN_vkCreateGraphicsPipelines
    ),
    hook!(
        Device,
        c"vkCreateRayTracingPipelinesKHR",
        create_ray_tracing_pipelines_khr as PFN_vkCreateRayTracingPipelinesKHR
    ),
    hook!(
        Device,
        c"vkDestroyPipeline",
        destroy_pipeline as PFN_vkDestroyPipeline
    ),
    hook!(
        Device,
        c"vkCreateShadersEXT",
        create_shaders_ext as PFN_vkCreateShadersEXT
    ),
];
