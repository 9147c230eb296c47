//! `pipeline-compile` (not part of `all`): what the driver (and a layer that instruments shaders) costs per
//! module, for the `--spirv` compute and fragment modules (`scripts/bench-compile.sh` drives it). Each
//! module gets the interface `spirv-run` gives it (a fragment shader behind `companion_vertex_shader`, whose
//! module is made once, untimed). Then `--iters` K times (default 3): the module is tagged
//! (`pipeline_bench::tag`, so that nothing keyed by its words can reuse earlier work), and the clock runs
//! over its vkCreateShaderModule and its one vkCreate*Pipelines call (no pipeline cache); then the pipeline
//! is used twice, one submission each, waited for: a dispatch of one workgroup, or one triangle over the
//! 64x64 targets. Some drivers (llvmpipe) compile at the first use, not at pipeline creation: the first use
//! minus the second is that deferred compile (the second use runs the same work with nothing to compile).
//!
//! Before the first module, one pipeline of it is made and used untimed (a warm-up of the driver).
//! Prints, per module, `compile <file name> <compute|fragment> create_us C first_use_us F cpu_us T`
//! (medians over the K iterations, one decimal): C and F are wall-clock times, F the first use minus the
//! second (at least 0); T is the process's CPU time (all threads) over the creation and the first use, less
//! that of the second use: it moves less than the wall clock where other processes share the cores. Or
//! `compile <file name> skipped: <reason>` (a module it cannot run, or whose pipeline the driver refuses:
//! the run goes on). The checksum is of the names of the modules measured and the iteration count.
//! Numbers are for comparing runs, never for assertions.

use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context as _, Result};
use ash::vk;

use super::pipeline_bench::tag;
use super::record_bench::median;
use super::spirv_run::{
    companion_vertex_shader, create_compute_pipeline, create_fragment_pipeline, file_name,
    fragment_targets, record_dispatch, record_draw, runnable, Resources,
};
use super::Outcome;
use crate::context::{Buffer, Context, Fnv1a, Image, VkResultExt};
use crate::reflect::{ShaderInterface, Stage};
use crate::Options;

const DEFAULT_ITERS: u32 = 3;

/// What one module needs besides its own shader module: resources, and for a fragment shader its
/// targets and the companion vertex shader's module.
struct Kit {
    res: Resources,
    fragment: Option<(Vec<(Image, Buffer)>, vk::ShaderModule)>,
    /// The fragment shader's attachments' format.
    format: vk::Format,
}

impl Kit {
    fn new(cx: &Context, interface: &ShaderInterface, format: vk::Format) -> Result<Kit> {
        Ok(match interface.stage {
            Stage::Compute => Kit {
                res: Resources::new(cx, interface, vk::ShaderStageFlags::COMPUTE)?,
                fragment: None,
                format,
            },
            Stage::Fragment => {
                let targets = fragment_targets(cx, interface, format)?;
                let res = Resources::new(cx, interface, vk::ShaderStageFlags::FRAGMENT)?;
                let vertex =
                    cx.create_shader_module(&companion_vertex_shader(&interface.inputs))?;
                Kit {
                    res,
                    fragment: Some((targets, vertex)),
                    format,
                }
            }
        })
    }

    /// Creates a shader module of `words` and a pipeline of it; the time both calls took.
    fn create(
        &self,
        cx: &Context,
        interface: &ShaderInterface,
        words: &[u32],
    ) -> Result<(vk::Pipeline, Times)> {
        let start = Times::now();
        let info = vk::ShaderModuleCreateInfo::default().code(words);
        let module = unsafe { cx.device.create_shader_module(&info, None) }
            .vk_context("vkCreateShaderModule")?;
        let created = match &self.fragment {
            None => create_compute_pipeline(cx, module, interface, self.res.layout),
            Some((_, vertex)) => create_fragment_pipeline(
                cx,
                *vertex,
                module,
                interface,
                self.res.layout,
                self.format,
            ),
        };
        let elapsed = start.elapsed();
        cx.destroy_shader_module(module);
        Ok((created?, elapsed))
    }

    /// One use of `pipeline`, submitted and waited for; the time it took.
    fn use_once(&self, cx: &Context, pipeline: vk::Pipeline) -> Result<Times> {
        let start = Times::now();
        cx.submit_and_wait(|cmd| {
            match &self.fragment {
                None => record_dispatch(cx, cmd, &self.res, pipeline, [1, 1, 1]),
                Some((targets, _)) => record_draw(cx, cmd, &self.res, targets, pipeline),
            }
            Ok(())
        })?;
        Ok(start.elapsed())
    }

    /// Creates and uses a pipeline of `words`: the creation, and the first use minus the second.
    fn measure(
        &self,
        cx: &Context,
        interface: &ShaderInterface,
        words: &[u32],
    ) -> Result<(Times, Times)> {
        let (pipeline, created) = self.create(cx, interface, words)?;
        let uses = self
            .use_once(cx, pipeline)
            .and_then(|first| Ok((first, self.use_once(cx, pipeline)?)));
        // SAFETY: the submissions were waited for (or never made); nothing else uses the pipeline.
        unsafe { cx.device.destroy_pipeline(pipeline, None) };
        let (first, second) = uses?;
        Ok((created, first.minus(second)))
    }

    fn destroy(self, cx: &Context) {
        if let Some((_, vertex)) = self.fragment {
            cx.destroy_shader_module(vertex);
        }
    }
}

/// Wall-clock time and the CPU time of the whole process (every thread: a driver may compile on its own),
/// in nanoseconds. The CPU time moves less than the wall clock where other processes share the cores.
#[derive(Clone, Copy)]
struct Times {
    wall: u128,
    cpu: u128,
}

impl Times {
    fn now() -> Times {
        Times {
            wall: EPOCH.get_or_init(Instant::now).elapsed().as_nanos(),
            cpu: process_cpu_ns(),
        }
    }

    fn elapsed(self) -> Times {
        Times::now().minus(self)
    }

    /// `self - earlier`, each at least 0.
    fn minus(self, earlier: Times) -> Times {
        Times {
            wall: self.wall.saturating_sub(earlier.wall),
            cpu: self.cpu.saturating_sub(earlier.cpu),
        }
    }
}

/// What `Times::wall` counts from.
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// CPU time used by the process so far (`CLOCK_PROCESS_CPUTIME_ID`), in nanoseconds.
fn process_cpu_ns() -> u128 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill; the clock id is a constant of the platform.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    if r != 0 {
        return 0;
    }
    t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let iters = options.bench.iters.unwrap_or(DEFAULT_ITERS);
    let mut checksum = Fnv1a::new();
    let mut warmed_up = false;
    for path in &options.stress.spirv_files {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = file_name(path);
        let interface = match runnable(cx, &bytes) {
            Ok(interface) => interface,
            Err(reason) => {
                println!("compile {name} skipped: {reason}");
                continue;
            }
        };
        let words = ash::util::read_spv(&mut std::io::Cursor::new(&bytes))?;
        let kit = match Kit::new(cx, &interface, options.stress.attachment_format) {
            Ok(kit) => kit,
            Err(reason) => {
                println!("compile {name} skipped: {reason:#}");
                continue;
            }
        };
        let result = (|| {
            if !warmed_up {
                kit.measure(cx, &interface, &tag(&words, "pipeline-compile warm-up")?)?;
                warmed_up = true;
            }
            let (mut create, mut first_use, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
            for i in 0..iters {
                let tagged = tag(&words, &format!("pipeline-compile {i}"))?;
                let (c, f) = kit.measure(cx, &interface, &tagged)?;
                create.push(c.wall);
                first_use.push(f.wall);
                cpu.push(c.cpu + f.cpu);
            }
            Ok::<_, anyhow::Error>((median(create), median(first_use), median(cpu)))
        })();
        kit.destroy(cx);
        // Each module's buffers and images go before the next one's are made (the GPU is idle).
        cx.destroy_owned();
        let (create, first_use, cpu) = match result {
            Ok(times) => times,
            Err(e) => {
                // A module the driver refuses (a capability it lacks, say) does not end the run.
                println!("compile {name} skipped: {e:#}");
                continue;
            }
        };
        let stage = match interface.stage {
            Stage::Compute => "compute",
            Stage::Fragment => "fragment",
        };
        let us = |ns: u128| ns as f64 / 1000.0;
        println!(
            "compile {name} {stage} create_us {:.1} first_use_us {:.1} cpu_us {:.1}",
            us(create),
            us(first_use),
            us(cpu)
        );
        checksum.update(name.as_bytes());
    }
    Ok(Outcome::Checksum(
        checksum.update(&iters.to_le_bytes()).finish(),
    ))
}
