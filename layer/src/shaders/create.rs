//! The hooks of shader modules, pipelines and shader objects: where each shader's id and each pipeline's
//! stages become known and, with instrumentation on, where shaders are rewritten.

use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;

use super::attachments::{kept_components, render_pass2_formats, render_pass_formats};
use super::select::{dump_for_attachments, instrumented, record_for};
use super::{stage_name, FragmentModule, PipelineRecord, StageRecord};
use crate::chain::{ChainCopy, Found};
use crate::device::Device;
use crate::fallback::Fallback;
use crate::raw::slice;
use crate::shader_errors::InstrumentedShader;

/// The words of a `VkShaderModuleCreateInfo`.
///
/// # Safety
/// `info` must be valid, its code `code_size` bytes long.
pub(super) unsafe fn words<'a>(info: &'a vk::ShaderModuleCreateInfo) -> &'a [u32] {
    if info.p_code.is_null() {
        return &[];
    }
    // SAFETY: forwarded to the caller; code_size is a multiple of 4 for valid SPIR-V.
    unsafe { std::slice::from_raw_parts(info.p_code, info.code_size / 4) }
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
                // SAFETY: the struct found in the app's chain, valid for the call, its code `code_size` bytes.
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

/// Copies of a pipeline's stage infos whose inline modules (a `VkShaderModuleCreateInfo` chained to a
/// stage: maintenance5, graphics pipeline libraries) carry instrumented code. Owns what the copies point
/// to; must outlive the call down.
struct InlineStages {
    stages: Vec<vk::PipelineShaderStageCreateInfo<'static>>,
    _chains: Vec<ChainCopy>,
    _shaders: Vec<Arc<InstrumentedShader>>,
}

impl InlineStages {
    /// The copies, or `None` when no stage has inline code to instrument (the app's own stages then go down).
    ///
    /// # Safety
    /// `stages` must be the app's valid stage infos, which outlive the result.
    unsafe fn new(dev: &Device, stages: &[vk::PipelineShaderStageCreateInfo]) -> Option<Self> {
        let mut copy = InlineStages {
            // SAFETY: the copies point into the app's structs, which outlive them (the caller's contract).
            stages: stages
                .iter()
                .map(|s| unsafe {
                    std::mem::transmute::<
                        vk::PipelineShaderStageCreateInfo<'_>,
                        vk::PipelineShaderStageCreateInfo<'static>,
                    >(*s)
                })
                .collect(),
            _chains: Vec::new(),
            _shaders: Vec::new(),
        };
        for stage in copy
            .stages
            .iter_mut()
            .filter(|s| s.module == vk::ShaderModule::null())
        {
            // SAFETY: the app's valid chain.
            let Some(info) =
                (unsafe { crate::chain::find::<vk::ShaderModuleCreateInfo>(stage.p_next) })
            else {
                continue;
            };
            // SAFETY: the struct found, valid for the call.
            let code = unsafe { words(&*info) };
            let Some(shader) = instrumented(dev, code) else {
                continue;
            };
            // SAFETY: the app's valid chain, which outlives the copy.
            let mut chain = unsafe { ChainCopy::new(stage.p_next) };
            let Found::Copied(module) = chain.find::<vk::ShaderModuleCreateInfo>() else {
                debug!("shader {}: inline code behind a struct Blackbox does not know is left as it is", shader.info.id);
                continue;
            };
            module.code_size = shader.words.len() * 4;
            module.p_code = shader.words.as_ptr();
            stage.p_next = chain.head();
            copy._chains.push(chain);
            copy._shaders.push(shader);
        }
        (!copy._shaders.is_empty()).then_some(copy)
    }
}

/// Copies of a call's pipeline create infos with their inline stages instrumented ([`InlineStages`]):
/// `None` when nothing changed, and the app's infos go down as they are.
struct InlinePipelines<I> {
    infos: Vec<I>,
    _stages: Vec<InlineStages>,
}

impl<I: Copy> InlinePipelines<I> {
    /// # Safety
    /// `infos` must be the app's valid create infos; `stages` gives each one's valid stage infos and `set`
    /// points a copy at its new ones.
    unsafe fn new(
        dev: &Device,
        infos: &[I],
        stages: impl Fn(&I) -> &[vk::PipelineShaderStageCreateInfo],
        set: impl Fn(&mut I, &InlineStages),
    ) -> Option<Self> {
        let mut copy = InlinePipelines {
            infos: infos.to_vec(),
            _stages: Vec::new(),
        };
        for info in &mut copy.infos {
            // SAFETY: the app's valid stages.
            if let Some(inline) = unsafe { InlineStages::new(dev, stages(info)) } {
                set(info, &inline);
                copy._stages.push(inline);
            }
        }
        (!copy._stages.is_empty()).then_some(copy)
    }
}

/// Copies of a call's graphics pipeline infos whose fragment stage is instrumented again for the
/// pipeline's colour attachments (see [`super::attachments`]), with the modules made for them, which
/// [`AttachmentFragments::destroy`] destroys after the call (a pipeline needs its modules only while it is
/// created). `None` when no pipeline of the call drops a component its fragment shader's checks read.
struct AttachmentFragments {
    infos: Vec<vk::GraphicsPipelineCreateInfo<'static>>,
    _stages: Vec<Vec<vk::PipelineShaderStageCreateInfo<'static>>>,
    modules: Vec<vk::ShaderModule>,
    _shaders: Vec<Arc<InstrumentedShader>>,
}

impl AttachmentFragments {
    /// # Safety
    /// `infos` must be valid create infos (the app's, or copies of them), which outlive the result.
    unsafe fn new(
        dev: &Device,
        device: vk::Device,
        infos: &[vk::GraphicsPipelineCreateInfo],
    ) -> Option<Self> {
        let create_module = dev.next.create_shader_module?;
        let mut copy = AttachmentFragments {
            // SAFETY: the copies point into structs that outlive them (the caller's contract).
            infos: infos
                .iter()
                .map(|i| unsafe {
                    std::mem::transmute::<
                        vk::GraphicsPipelineCreateInfo<'_>,
                        vk::GraphicsPipelineCreateInfo<'static>,
                    >(*i)
                })
                .collect(),
            _stages: Vec::new(),
            modules: Vec::new(),
            _shaders: Vec::new(),
        };
        for info in &mut copy.infos {
            // SAFETY: valid stage infos (the caller's contract), which outlive the copy.
            let stages: &[vk::PipelineShaderStageCreateInfo<'static>] =
                unsafe { slice(info.p_stages, info.stage_count) };
            let Some((index, fragment)) = stages.iter().enumerate().find_map(|(i, s)| {
                (s.stage == vk::ShaderStageFlags::FRAGMENT && s.module != vk::ShaderModule::null())
                    .then(|| dev.shaders.fragment_module(s.module))
                    .flatten()
                    .map(|f| (i, f))
            }) else {
                continue;
            };
            let formats = (info.render_pass != vk::RenderPass::null())
                .then(|| dev.shaders.render_pass(info.render_pass))
                .flatten();
            // SAFETY: a valid create info (the caller's contract).
            let Some(kept) = (unsafe { kept_components(info, formats.as_deref()) }) else {
                debug!(
                    "shader {}: its pipeline does not say what its attachments keep, so every component of \
                     its outputs is checked",
                    fragment.id
                );
                continue;
            };
            let Some(kept) = outputs_kept(&fragment, &kept) else {
                debug!(
                    "shader {}: its pipeline's attachments keep every component of its outputs",
                    fragment.id
                );
                continue;
            };
            let Some((result, fresh)) = dev
                .error_buffer
                .read()
                .as_ref()
                .map(|eb| eb.instrument_for_attachments(&fragment.code, kept.clone()))
            else {
                continue;
            };
            let shader = match result {
                Ok(shader) => {
                    if fresh {
                        dump_for_attachments(&fragment.code, &shader, &kept);
                    }
                    shader
                }
                Err(reason) => {
                    debug!(
                        "shader {} is not instrumented for its pipeline's attachments: {reason}",
                        fragment.id
                    );
                    continue;
                }
            };
            let module_info = vk::ShaderModuleCreateInfo {
                code_size: shader.words.len() * 4,
                p_code: shader.words.as_ptr(),
                ..Default::default()
            };
            let mut module = vk::ShaderModule::null();
            // SAFETY: the next layer's command on the app's device, with instrumented words that outlive it.
            let result =
                unsafe { create_module(device, &module_info, std::ptr::null(), &mut module) };
            if result != vk::Result::SUCCESS {
                warn!(
                    "the driver refused shader {} instrumented for a pipeline's attachments ({result:?}): the \
                     pipeline checks every component of its outputs",
                    shader.info.id
                );
                continue;
            }
            debug!(
                "shader {}: instrumented for a pipeline whose attachments keep components {kept:x?} of its \
                 output locations",
                shader.info.id
            );
            let mut new_stages = stages.to_vec();
            new_stages[index].module = module;
            info.p_stages = new_stages.as_ptr();
            copy._stages.push(new_stages);
            copy.modules.push(module);
            copy._shaders.push(shader);
        }
        (!copy.modules.is_empty()).then_some(copy)
    }

    /// Destroys the modules made for the call.
    fn destroy(self, dev: &Device, device: vk::Device) {
        if let Some(destroy) = dev.next.destroy_shader_module {
            for module in self.modules {
                // SAFETY: a module this layer made on the app's device; the call using it has returned.
                unsafe { destroy(device, module, std::ptr::null()) };
            }
        }
    }
}

/// The components of each output location a fragment module's checks read for a pipeline whose attachments
/// keep `kept` (per location): only where that drops a component of an output, as the engine takes them,
/// and naming only the module's outputs (so that pipelines that differ elsewhere share one instrumented
/// module).
fn outputs_kept(fragment: &FragmentModule, kept: &[u8]) -> Option<Vec<u8>> {
    if fragment.outputs.iter().all(|o| o.kept(kept) == o.all()) {
        return None;
    }
    let locations = fragment.outputs.iter().map(|o| o.location + 1).max()? as usize;
    let mut narrowed = vec![0u8; locations];
    for o in &fragment.outputs {
        narrowed[o.location as usize] |= o.kept(kept) << o.component;
    }
    Some(narrowed)
}

/// Records the pipelines the driver made.
fn record_pipelines<I>(
    dev: &Device,
    infos: &[I],
    out: *mut vk::Pipeline,
    stages_of: impl Fn(&I) -> &[vk::PipelineShaderStageCreateInfo],
) {
    crate::contained("recording pipelines", || {
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

/// The hooks of shaders and pipelines.
///
/// # Safety (every method)
/// The app's arguments, valid as the command's rules require.
impl Device {
    /// `vkCreateShaderModule`: the module as instrumented where it needs it (the app's own if the driver
    /// refuses that), recorded by its id.
    pub(crate) unsafe fn create_shader_module(
        &self,
        device: vk::Device,
        info: *const vk::ShaderModuleCreateInfo,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::ShaderModule,
    ) -> vk::Result {
        let Some(next) = self.next.create_shader_module else {
            return Fallback::fallback();
        };
        // SAFETY: the app's valid create info.
        let code = unsafe { words(&*info) };
        let shader =
            crate::contained("instrumenting a shader", || instrumented(self, code)).flatten();
        if let Some(shader) = &shader {
            // SAFETY: the app's create info, copied, with the instrumented code.
            let mut patched = unsafe { *info };
            patched.code_size = shader.words.len() * 4;
            patched.p_code = shader.words.as_ptr();
            // SAFETY: the next layer's command, with the app's arguments but for a copy of its create info
            // pointing at the instrumented words, which the cached shader keeps alive past the call.
            let result = unsafe { next(device, &patched, allocator, out) };
            if result == vk::Result::SUCCESS {
                self.record_module(out, code, Some(shader));
                return result;
            }
            warn!(
                "the driver refused instrumented shader {} ({result:?}): using the app's own",
                shader.info.id
            );
        }
        let result = forward!(next, device, info, allocator, out);
        if result == vk::Result::SUCCESS {
            self.record_module(out, code, None);
        }
        result
    }

    fn record_module(
        &self,
        out: *mut vk::ShaderModule,
        code: &[u32],
        shader: Option<&Arc<InstrumentedShader>>,
    ) {
        crate::contained("recording a shader module", || {
            let record = record_for(code, shader.map(|s| &s.info));
            // SAFETY: the driver wrote the module.
            let module = unsafe { *out };
            self.shaders.add_module(module, record.clone());
            if let Some(outputs) = shader
                .map(|s| &s.info.fragment_outputs)
                .filter(|o| !o.is_empty())
            {
                let fragment = FragmentModule {
                    id: record.id.clone(),
                    code: code.into(),
                    outputs: outputs.clone(),
                };
                self.shaders.add_fragment_module(module, fragment);
            }
        });
    }

    /// `vkDestroyShaderModule`: forgotten (pipelines made from it keep their record).
    pub(crate) unsafe fn destroy_shader_module(
        &self,
        device: vk::Device,
        module: vk::ShaderModule,
        allocator: *const vk::AllocationCallbacks,
    ) {
        crate::contained("forgetting a shader module", || {
            self.shaders.remove_module(module)
        });
        if let Some(next) = self.next.destroy_shader_module {
            forward!(next, device, module, allocator);
        }
    }

    /// `vkCreateComputePipelines`.
    pub(crate) unsafe fn create_compute_pipelines(
        &self,
        device: vk::Device,
        cache: vk::PipelineCache,
        count: u32,
        infos: *const vk::ComputePipelineCreateInfo,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::Pipeline,
    ) -> vk::Result {
        let Some(next) = self.next.create_compute_pipelines else {
            return Fallback::fallback();
        };
        // SAFETY: the app's infos and their stages, which outlive the copies.
        let inline = crate::contained("instrumenting inline shaders", || unsafe {
            InlinePipelines::new(
                self,
                slice(infos, count),
                |i| std::slice::from_ref(&i.stage),
                |i, inline| i.stage = inline.stages[0],
            )
        })
        .flatten();
        let infos_down = inline.as_ref().map_or(infos, |p| p.infos.as_ptr());
        // SAFETY: the app's arguments, or copies of its infos with inline code instrumented.
        let result = unsafe { next(device, cache, count, infos_down, allocator, out) };
        if result.as_raw() >= 0 {
            // SAFETY: the app's array of `count` infos.
            record_pipelines(self, unsafe { slice(infos, count) }, out, |i| {
                std::slice::from_ref(&i.stage)
            });
        }
        result
    }

    /// `vkCreateGraphicsPipelines`.
    pub(crate) unsafe fn create_graphics_pipelines(
        &self,
        device: vk::Device,
        cache: vk::PipelineCache,
        count: u32,
        infos: *const vk::GraphicsPipelineCreateInfo,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::Pipeline,
    ) -> vk::Result {
        let Some(next) = self.next.create_graphics_pipelines else {
            return Fallback::fallback();
        };
        // SAFETY: the app's infos and their stages, which outlive the copies.
        let inline = crate::contained("instrumenting inline shaders", || unsafe {
            InlinePipelines::new(
                self,
                slice(infos, count),
                |i| slice(i.p_stages, i.stage_count),
                |i, inline| i.p_stages = inline.stages.as_ptr(),
            )
        })
        .flatten();
        let infos_down = inline.as_ref().map_or(infos, |p| p.infos.as_ptr());
        // SAFETY: the app's infos or their copies, which outlive these copies.
        let narrowed = crate::contained(
            "instrumenting fragment shaders for their attachments",
            || unsafe { AttachmentFragments::new(self, device, slice(infos_down, count)) },
        )
        .flatten();
        let infos_down = narrowed.as_ref().map_or(infos_down, |p| p.infos.as_ptr());
        // SAFETY: the app's arguments, or copies of its infos with inline code instrumented.
        let result = unsafe { next(device, cache, count, infos_down, allocator, out) };
        if let Some(narrowed) = narrowed {
            narrowed.destroy(self, device);
        }
        if result.as_raw() >= 0 {
            // SAFETY: the app's array of `count` infos, each with `stage_count` stages.
            record_pipelines(self, unsafe { slice(infos, count) }, out, |i| unsafe {
                slice(i.p_stages, i.stage_count)
            });
        }
        result
    }

    /// `vkCreateRenderPass`: with NaN checks on, its colour formats are recorded for the pipelines made
    /// for it ([`AttachmentFragments`]).
    pub(crate) unsafe fn create_render_pass(
        &self,
        device: vk::Device,
        info: *const vk::RenderPassCreateInfo,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::RenderPass,
    ) -> vk::Result {
        let Some(next) = self.next.create_render_pass else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, info, allocator, out);
        // SAFETY: the app's valid create info, and the render pass the driver wrote where it succeeded.
        unsafe { self.record_render_pass(result, out, || render_pass_formats(&*info)) };
        result
    }

    /// `vkCreateRenderPass2`: as [`Device::create_render_pass`].
    pub(crate) unsafe fn create_render_pass2(
        &self,
        device: vk::Device,
        info: *const vk::RenderPassCreateInfo2,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::RenderPass,
    ) -> vk::Result {
        let Some(next) = self.next.create_render_pass2 else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, info, allocator, out);
        // SAFETY: as above.
        unsafe { self.record_render_pass(result, out, || render_pass2_formats(&*info)) };
        result
    }

    /// Records a render pass's colour `formats` when its creation succeeded and NaN checks are on.
    ///
    /// # Safety
    /// `out` must hold the render pass where `result` is a success; `formats` must be safe to call then.
    unsafe fn record_render_pass(
        &self,
        result: vk::Result,
        out: *const vk::RenderPass,
        formats: impl FnOnce() -> super::attachments::RenderPassFormats,
    ) {
        if result == vk::Result::SUCCESS && self.checks_fragment_outputs() {
            crate::contained("recording a render pass", || {
                // SAFETY: the driver wrote the render pass (the caller's contract).
                self.shaders.add_render_pass(unsafe { *out }, formats());
            });
        }
    }

    /// `vkDestroyRenderPass`: forgotten.
    pub(crate) unsafe fn destroy_render_pass(
        &self,
        device: vk::Device,
        pass: vk::RenderPass,
        allocator: *const vk::AllocationCallbacks,
    ) {
        crate::contained("forgetting a render pass", || {
            self.shaders.remove_render_pass(pass)
        });
        if let Some(next) = self.next.destroy_render_pass {
            forward!(next, device, pass, allocator);
        }
    }

    /// Whether NaN checks are on, so that fragment outputs are checked and pipelines can narrow them.
    fn checks_fragment_outputs(&self) -> bool {
        crate::config().nan != blackbox_engine::NanLevel::Off && self.error_buffer.read().is_some()
    }

    /// `vkCreateRayTracingPipelinesKHR`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn create_ray_tracing_pipelines(
        &self,
        device: vk::Device,
        deferred: vk::DeferredOperationKHR,
        cache: vk::PipelineCache,
        count: u32,
        infos: *const vk::RayTracingPipelineCreateInfoKHR,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::Pipeline,
    ) -> vk::Result {
        let Some(next) = self.next.create_ray_tracing_pipelines_khr else {
            return Fallback::fallback();
        };
        // With a deferred operation the driver may read the code after the call returns, when the copies
        // are gone: inline code stays the app's then.
        let inline = if deferred == vk::DeferredOperationKHR::null() {
            // SAFETY: the app's infos and their stages, which outlive the copies.
            crate::contained("instrumenting inline shaders", || unsafe {
                InlinePipelines::new(
                    self,
                    slice(infos, count),
                    |i| slice(i.p_stages, i.stage_count),
                    |i, inline| i.p_stages = inline.stages.as_ptr(),
                )
            })
            .flatten()
        } else {
            None
        };
        let infos_down = inline.as_ref().map_or(infos, |p| p.infos.as_ptr());
        // SAFETY: the app's arguments, or copies of its infos with inline code instrumented.
        let result = unsafe { next(device, deferred, cache, count, infos_down, allocator, out) };
        if result.as_raw() >= 0 && deferred == vk::DeferredOperationKHR::null() {
            // SAFETY: the app's array of `count` infos, each with `stage_count` stages.
            record_pipelines(self, unsafe { slice(infos, count) }, out, |i| unsafe {
                slice(i.p_stages, i.stage_count)
            });
        }
        result
    }

    /// `vkDestroyPipeline`: what its shaders reported is logged first, while its name is known (its work
    /// has finished: the app's contract).
    pub(crate) unsafe fn destroy_pipeline(
        self: &Arc<Self>,
        device: vk::Device,
        pipeline: vk::Pipeline,
        allocator: *const vk::AllocationCallbacks,
    ) {
        self.after_poll("vkDestroyPipeline");
        crate::contained("forgetting a pipeline", || {
            self.shaders.remove_pipeline(pipeline)
        });
        if let Some(next) = self.next.destroy_pipeline {
            forward!(next, device, pipeline, allocator);
        }
    }

    /// `vkCreateShadersEXT`: SPIR-V shader objects, instrumented as modules are.
    pub(crate) unsafe fn create_shaders(
        &self,
        device: vk::Device,
        count: u32,
        infos: *const vk::ShaderCreateInfoEXT,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::ShaderEXT,
    ) -> vk::Result {
        let Some(next) = self.next.create_shaders_ext else {
            return Fallback::fallback();
        };
        let patched = crate::contained("instrumenting shader objects", || {
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
                if let Some(shader) = instrumented(self, code) {
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
        forward!(next, device, count, infos, allocator, out)
    }
}
