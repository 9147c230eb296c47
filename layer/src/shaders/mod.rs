//! What the layer knows of the app's shaders and pipelines: each module's id (the hash of the app's SPIR-V)
//! and what the engine learnt of it, and each pipeline's stages, so that a report can name the shaders of
//! the work in flight.
//!
//! [`create`] holds the hooks that create and destroy them; [`select`] decides which shaders are
//! instrumented and dumps them.

mod attachments;
mod create;
mod select;

pub(crate) use select::warn_of_unmatched_filters;

use ash::vk;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A shader module as the app created it.
pub struct ShaderRecord {
    /// Content hash of the app's SPIR-V.
    pub id: String,
    /// Source files the module names (from its debug info), read when a report first asks.
    sources: once_cell::sync::OnceCell<Vec<String>>,
    /// The app's code, kept to read the sources from later when the engine did not read it already.
    code: Option<Box<[u32]>>,
}

impl ShaderRecord {
    /// A record whose sources the engine already read.
    pub fn with_info(code: &[u32], info: &blackbox_engine::ShaderInfo) -> Self {
        let record = ShaderRecord {
            id: shader_id(code),
            sources: Default::default(),
            code: None,
        };
        let _ = record.sources.set(source_names(info));
        record
    }

    /// A record whose sources are read only if a report needs them: module creation stays cheap.
    pub fn deferred(code: &[u32]) -> Self {
        ShaderRecord {
            id: shader_id(code),
            sources: Default::default(),
            code: Some(code.into()),
        }
    }

    /// Source files the module names.
    pub fn sources(&self) -> &[String] {
        self.sources.get_or_init(|| {
            let info = self
                .code
                .as_deref()
                .and_then(|c| blackbox_engine::shader_info(c).ok());
            info.as_ref().map(source_names).unwrap_or_default()
        })
    }
}

fn source_names(info: &blackbox_engine::ShaderInfo) -> Vec<String> {
    info.sources
        .iter()
        .map(|s| s.name.clone())
        .filter(|n| !n.is_empty())
        .collect()
}

/// One stage of a pipeline.
pub struct StageRecord {
    /// The module (shared by every pipeline that uses it).
    pub shader: Arc<ShaderRecord>,
    /// The entry point.
    pub entry: String,
    /// The stage, e.g. `compute`.
    pub stage: String,
}

/// A pipeline's stages.
pub struct PipelineRecord {
    /// Its stages.
    pub stages: Vec<StageRecord>,
}

/// How many pipelines a log line names before it says how many more use the shader.
pub const NAMED_PIPELINES: usize = 3;

impl PipelineRecord {
    /// `vertex 34e80b18b129a479 + fragment b2e6aac68dc03c7f`: the stages and their shader ids, for a pipeline
    /// without a debug name.
    pub fn describe(&self) -> String {
        if self.stages.is_empty() {
            return "a pipeline without shader stages".to_owned();
        }
        self.stages
            .iter()
            .map(|s| format!("{} {}", s.stage, s.shader.id))
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// A fragment shader module whose NaN output checks a pipeline's attachments can narrow: the app's code, to
/// instrument again for such a pipeline (see [`attachments`]).
pub struct FragmentModule {
    /// Its shader id.
    pub id: String,
    /// The app's words.
    pub code: Box<[u32]>,
    /// Its float outputs.
    pub outputs: Vec<blackbox_engine::FragmentOutput>,
}

/// Shader modules and pipelines of a device.
#[derive(Default)]
pub struct Registry {
    modules: Mutex<HashMap<u64, Arc<ShaderRecord>>>,
    pipelines: Mutex<HashMap<u64, Arc<PipelineRecord>>>,
    /// Fragment modules with NaN output checks, by handle.
    fragment_modules: Mutex<HashMap<u64, Arc<FragmentModule>>>,
    /// The colour formats of render passes, with NaN checks on.
    render_passes: Mutex<HashMap<u64, Arc<attachments::RenderPassFormats>>>,
}

impl Registry {
    /// Records a module.
    pub fn add_module(&self, module: vk::ShaderModule, record: Arc<ShaderRecord>) {
        self.modules
            .lock()
            .insert(vk::Handle::as_raw(module), record);
    }

    /// Forgets a module (pipelines made from it keep their record).
    pub fn remove_module(&self, module: vk::ShaderModule) {
        self.modules.lock().remove(&vk::Handle::as_raw(module));
        self.fragment_modules
            .lock()
            .remove(&vk::Handle::as_raw(module));
    }

    /// Records a fragment module's code for pipelines to instrument again.
    pub fn add_fragment_module(&self, module: vk::ShaderModule, fragment: FragmentModule) {
        self.fragment_modules
            .lock()
            .insert(vk::Handle::as_raw(module), Arc::new(fragment));
    }

    /// A fragment module's code, if recorded.
    pub fn fragment_module(&self, module: vk::ShaderModule) -> Option<Arc<FragmentModule>> {
        self.fragment_modules
            .lock()
            .get(&vk::Handle::as_raw(module))
            .cloned()
    }

    /// Records a render pass's colour formats.
    pub fn add_render_pass(&self, pass: vk::RenderPass, formats: attachments::RenderPassFormats) {
        self.render_passes
            .lock()
            .insert(vk::Handle::as_raw(pass), Arc::new(formats));
    }

    /// Forgets a render pass.
    pub fn remove_render_pass(&self, pass: vk::RenderPass) {
        self.render_passes.lock().remove(&vk::Handle::as_raw(pass));
    }

    /// A render pass's colour formats.
    pub fn render_pass(&self, pass: vk::RenderPass) -> Option<Arc<attachments::RenderPassFormats>> {
        self.render_passes
            .lock()
            .get(&vk::Handle::as_raw(pass))
            .cloned()
    }

    /// The record of a module.
    pub fn module(&self, module: vk::ShaderModule) -> Option<Arc<ShaderRecord>> {
        self.modules
            .lock()
            .get(&vk::Handle::as_raw(module))
            .cloned()
    }

    /// Records a pipeline.
    pub fn add_pipeline(&self, pipeline: vk::Pipeline, record: PipelineRecord) {
        self.pipelines
            .lock()
            .insert(vk::Handle::as_raw(pipeline), Arc::new(record));
    }

    /// Forgets a pipeline.
    pub fn remove_pipeline(&self, pipeline: vk::Pipeline) {
        self.pipelines.lock().remove(&vk::Handle::as_raw(pipeline));
    }

    /// The pipelines that use the shader `id`, as log lines name them: by debug name, else by their stages
    /// and shader ids (a handle says nothing to the user); at most [`NAMED_PIPELINES`], then how many more.
    pub fn pipeline_names_using(
        &self,
        id: &str,
        name_of: impl Fn(u64) -> Option<String>,
    ) -> Vec<String> {
        let mut names: Vec<String> = self
            .pipelines
            .lock()
            .iter()
            .filter(|(_, p)| p.stages.iter().any(|s| s.shader.id == id))
            .map(|(&h, p)| {
                name_of(h)
                    .map(|n| format!("\"{n}\""))
                    .unwrap_or_else(|| p.describe())
            })
            .collect();
        names.sort();
        names.dedup();
        if names.len() > NAMED_PIPELINES {
            let more = names.len() - NAMED_PIPELINES;
            names.truncate(NAMED_PIPELINES);
            names.push(format!("and {more} more"));
        }
        names
    }

    /// The record of a pipeline.
    pub fn pipeline(&self, pipeline: vk::Pipeline) -> Option<Arc<PipelineRecord>> {
        self.pipelines
            .lock()
            .get(&vk::Handle::as_raw(pipeline))
            .cloned()
    }

    /// As [`Registry::pipeline`], waiting at most `wait` for the registry's lock: for reports, which can be
    /// built while another thread holds it.
    pub fn try_pipeline(
        &self,
        pipeline: vk::Pipeline,
        wait: Duration,
    ) -> Result<Option<Arc<PipelineRecord>>, Busy> {
        let pipelines = self.pipelines.try_lock_for(wait).ok_or(Busy)?;
        Ok(pipelines.get(&vk::Handle::as_raw(pipeline)).cloned())
    }
}

/// A lock of the registry was held for longer than the caller would wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// The shader id of a module: the engine's (FNV-1a 64 of its bytes, as 16 hex digits), which it gives any
/// words, modules it refuses included.
pub fn shader_id(words: &[u32]) -> String {
    blackbox_engine::ShaderId::of(words).to_string()
}

/// `compute`, `vertex`, ... for a single stage flag.
pub fn stage_name(stage: vk::ShaderStageFlags) -> &'static str {
    match stage {
        vk::ShaderStageFlags::VERTEX => "vertex",
        vk::ShaderStageFlags::TESSELLATION_CONTROL => "tessellation control",
        vk::ShaderStageFlags::TESSELLATION_EVALUATION => "tessellation evaluation",
        vk::ShaderStageFlags::GEOMETRY => "geometry",
        vk::ShaderStageFlags::FRAGMENT => "fragment",
        vk::ShaderStageFlags::COMPUTE => "compute",
        vk::ShaderStageFlags::TASK_EXT => "task",
        vk::ShaderStageFlags::MESH_EXT => "mesh",
        vk::ShaderStageFlags::RAYGEN_KHR => "ray generation",
        vk::ShaderStageFlags::ANY_HIT_KHR => "any hit",
        vk::ShaderStageFlags::CLOSEST_HIT_KHR => "closest hit",
        vk::ShaderStageFlags::MISS_KHR => "miss",
        vk::ShaderStageFlags::INTERSECTION_KHR => "intersection",
        vk::ShaderStageFlags::CALLABLE_KHR => "callable",
        _ => "shader",
    }
}
