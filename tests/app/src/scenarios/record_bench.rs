//! `record-bench` (not part of `all`): the CPU cost of recording and submitting, which is what a layer
//! that intercepts every command adds to. Each iteration records `--cmdbufs` command buffers of
//! `--draws` draws each, with state changes between draws and a compute dispatch every 50 draws (the
//! render pass is ended and begun again around it), then submits them all at once and waits (not with
//! `--record-only`, for profiling: then the command buffers are only recorded and reset).
//!
//! Every command buffer's recording is timed on its own, after two warm-up iterations (`--iters` more,
//! default 30). Prints `record-bench commands N` (vkCmd* calls per iteration), `record-bench
//! record_ns_per_command X` (the mean ns per command of the fastest 5% of the command buffers timed: the
//! figure to compare, since another process's time slice or a cold cache only ever adds time; on a loaded
//! 2-core machine it repeats within a few percent where the median moves by 20%), `record-bench
//! record_ns_per_command_median M` and `record-bench submit_ns Y` (median of submit + wait, integer).
//! The 16x16 target keeps GPU time small; numbers are for comparing runs, never for assertions.

use std::time::Instant;

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, ComputePush, GROUP, VALUES_USAGE};
use super::draw::{Blend, DrawKit, PassTarget, Target, QUAD, TRIANGLE};
use super::Outcome;
use crate::context::{
    begin_command_buffer, record_buffer_readback, Access, Context, Fnv1a, Memory, VkResultExt,
};
use crate::Options;

pub(super) const EXTENT: vk::Extent2D = vk::Extent2D {
    width: 16,
    height: 16,
};
/// Iterations recorded first and not counted: the first recordings allocate and fault in what later ones
/// reuse, in the app, the layer and the driver.
const WARM_UP_ITERS: u32 = 2;
/// Draws between two compute dispatches (each one ends and restarts the render pass).
const DRAWS_PER_PASS: u32 = 50;
pub(super) const VALUES_BYTES: vk::DeviceSize = (GROUP * GROUP * 4) as vk::DeviceSize;

/// Everything a recorded command buffer refers to (only handles, cheap to copy). memory-bench records
/// the same command buffers.
#[derive(Clone, Copy)]
pub(super) struct Bench<'a> {
    pub device: &'a ash::Device,
    pub debug_utils: Option<&'a ash::ext::debug_utils::Device>,
    pub target: &'a PassTarget,
    pub draw: DrawKit,
    pub compute: ComputeKit,
    pub values: vk::Buffer,
    pub set: vk::DescriptorSet,
    /// `--app-markers`: a buffer marker before each draw and dispatch, not counted as commands.
    pub markers: Option<&'a AppMarkers>,
}

/// What `--app-markers` writes with.
pub(super) struct AppMarkers {
    device: ash::amd::buffer_marker::Device,
    buffer: vk::Buffer,
}

/// Marker words the buffer holds; writes go round them.
const MARKER_WORDS: u32 = 1024;

impl<'a> Bench<'a> {
    /// The pipelines and buffers the benchmark's command buffers use, drawing into `target`; the values
    /// buffer initialized (submitted and waited for).
    pub(super) fn new(cx: &'a Context, target: &'a PassTarget) -> Result<Bench<'a>> {
        let d = &cx.device;
        let draw = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
        let compute = ComputeKit::new(cx, 1)?;
        let values = cx.create_buffer(VALUES_BYTES, VALUES_USAGE, Memory::Device)?;
        let set = compute.descriptor_set(cx, values.handle, 0, VALUES_BYTES)?;
        cx.submit_and_wait(|cmd| {
            record_init(d, cmd, values.handle, 0, VALUES_BYTES);
            Ok(())
        })?;
        Ok(Bench {
            device: d,
            debug_utils: cx.debug_utils.as_ref(),
            target,
            draw,
            compute,
            values: values.handle,
            set,
            markers: None,
        })
    }

    /// The buffer marker before the `n`-th draw or dispatch, with `--app-markers`.
    fn mark(&self, cmd: vk::CommandBuffer, n: u32) {
        if let Some(m) = self.markers {
            let offset = vk::DeviceSize::from(n % MARKER_WORDS) * 4;
            // SAFETY: the app's own marker buffer, in bounds and 4-byte aligned, on this device.
            unsafe {
                m.device.cmd_write_buffer_marker(
                    cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    m.buffer,
                    offset,
                    n,
                )
            };
        }
    }

    /// Begins the render pass and sets all draw state; returns the number of vkCmd* calls.
    fn begin_pass(&self, cmd: vk::CommandBuffer) -> u64 {
        let d = self.device;
        self.target.begin(d, cmd, vk::SubpassContents::INLINE);
        unsafe {
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.draw.opaque);
            d.cmd_bind_vertex_buffers(cmd, 0, &[self.draw.vertices], &[0]);
        }
        self.draw.set_area(d, cmd, EXTENT, super::draw::Area::Full); // viewport + scissor
        self.draw
            .push(d, cmd, [0.5, 0.5, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]);
        6
    }

    /// Records one whole command buffer; returns the number of vkCmd* calls.
    pub fn record(&self, cmd: vk::CommandBuffer, draws: u32, seed: u32) -> Result<u64> {
        let d = self.device;
        begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
        let mut commands = self.begin_pass(cmd);
        for i in 0..draws {
            if i > 0 && i % DRAWS_PER_PASS == 0 {
                unsafe { d.cmd_end_render_pass(cmd) };
                let push = ComputePush {
                    pass: seed + i,
                    offset: 0,
                    width: GROUP,
                    scale: 0.75,
                };
                self.mark(cmd, i);
                self.compute.record_dispatch(d, cmd, self.set, push, [1, 1]); // 4 commands
                let values = &self.values;
                let (src, dst) = (Access::COMPUTE_WRITE, Access::COMPUTE_READ_WRITE);
                crate::context::buffer_barrier(d, cmd, *values, 0, vk::WHOLE_SIZE, src, dst);
                commands += 6 + self.begin_pass(cmd);
            }
            // One state change before each draw, cycling through the kinds a real frame has.
            match i % 4 {
                0 => {
                    let blend = if (i / 4) % 2 == 0 {
                        Blend::Opaque
                    } else {
                        Blend::Additive
                    };
                    unsafe {
                        d.cmd_bind_pipeline(
                            cmd,
                            vk::PipelineBindPoint::GRAPHICS,
                            self.draw.pipeline(blend),
                        )
                    };
                }
                2 => unsafe { d.cmd_bind_vertex_buffers(cmd, 0, &[self.draw.vertices], &[0]) },
                3 if self.debug_utils.is_some() => {
                    let label = vk::DebugUtilsLabelEXT::default().label_name(c"bench draw");
                    unsafe {
                        self.debug_utils
                            .unwrap()
                            .cmd_insert_debug_utils_label(cmd, &label)
                    };
                }
                _ => {
                    let k = (i.wrapping_mul(37) + seed) % 64;
                    let transform = [
                        0.25,
                        0.25,
                        (k % 8) as f32 / 4.0 - 0.875,
                        (k / 8) as f32 / 4.0 - 0.875,
                    ];
                    self.draw
                        .push(d, cmd, transform, [0.05, 0.03, 0.02, k as f32]);
                }
            }
            let (first, count) = if i % 2 == 0 { TRIANGLE } else { QUAD };
            self.mark(cmd, i);
            unsafe { d.cmd_draw(cmd, count, 1, first, 0) };
            commands += 2;
        }
        unsafe { d.cmd_end_render_pass(cmd) };
        commands += 1;
        unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
        Ok(commands)
    }
}

/// The median of `samples` (the upper one of an even count; `samples` is not empty).
pub fn median(mut samples: Vec<u128>) -> u128 {
    samples.sort_unstable();
    samples[samples.len() / 2]
}

/// One instance's share of the benchmark: its command buffers and what their recordings measured.
struct Side<'a> {
    cx: &'a Context,
    bench: Bench<'a>,
    pool: vk::CommandPool,
    cmds: Vec<vk::CommandBuffer>,
    fence: vk::Fence,
    /// Per command buffer recorded: ns per command.
    per_command: Vec<f64>,
    submit_ns: Vec<u128>,
    commands: u64,
}

impl<'a> Side<'a> {
    fn new(
        cx: &'a Context,
        target: &'a PassTarget,
        cmdbufs: u32,
        markers: Option<&'a AppMarkers>,
    ) -> Result<Side<'a>> {
        let mut bench = Bench::new(cx, target)?;
        bench.markers = markers;
        let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
        let cmds = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, cmdbufs)?;
        let fence = cx.create_fence()?;
        Ok(Side {
            cx,
            bench,
            pool,
            cmds,
            fence,
            per_command: Vec::new(),
            submit_ns: Vec::new(),
            commands: 0,
        })
    }

    /// Records every command buffer, each timed on its own (counted from iteration [`WARM_UP_ITERS`] on),
    /// then submits them and waits (not with `--record-only`).
    fn iteration(&mut self, iter: u32, opts: &crate::BenchOptions) -> Result<()> {
        let d = &self.cx.device;
        // The previous iteration's fence was waited for: the command buffers can be reset.
        unsafe { d.reset_command_pool(self.pool, vk::CommandPoolResetFlags::empty()) }
            .vk_context("vkResetCommandPool")?;
        self.commands = 0;
        for (n, &cmd) in self.cmds.iter().enumerate() {
            let start = Instant::now();
            let recorded = self.bench.record(cmd, opts.draws, iter * 1000 + n as u32)?;
            let ns = start.elapsed().as_nanos() as f64;
            if iter >= WARM_UP_ITERS {
                self.per_command.push(ns / recorded.max(1) as f64);
            }
            self.commands += recorded;
        }
        if opts.record_only {
            return Ok(());
        }
        let start = Instant::now();
        let submit = vk::SubmitInfo::default().command_buffers(&self.cmds);
        unsafe { d.queue_submit(self.cx.queues[0], &[submit], self.fence) }
            .vk_context("vkQueueSubmit")?;
        self.cx.wait_fence(self.fence)?;
        if iter >= WARM_UP_ITERS {
            self.submit_ns.push(start.elapsed().as_nanos());
        }
        unsafe { d.reset_fences(&[self.fence]) }.vk_context("vkResetFences")?;
        Ok(())
    }

    /// Prints the figures, each line's name after `prefix`.
    fn print(&mut self, prefix: &str, opts: &crate::BenchOptions) {
        // The fastest 5% of the command buffers: those no other process interrupted and whose caches
        // were warm (the first ones after a submission run cold; they show in the median).
        self.per_command.sort_by(f64::total_cmp);
        let fastest = &self.per_command[..self.per_command.len().div_ceil(20)];
        let fastest_mean = fastest.iter().sum::<f64>() / fastest.len() as f64;
        println!("record-bench {prefix}commands {}", self.commands);
        println!("record-bench {prefix}record_ns_per_command {fastest_mean:.1}");
        println!(
            "record-bench {prefix}record_ns_per_command_median {:.1}",
            self.per_command[self.per_command.len() / 2]
        );
        if !opts.record_only {
            println!(
                "record-bench {prefix}submit_ns {}",
                median(std::mem::take(&mut self.submit_ns))
            );
        }
    }
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let opts = options.bench;
    let target = PassTarget::new(cx, EXTENT)?;
    let mut side = Side::new(cx, &target, opts.cmdbufs, None)?;
    // With --ab-layer: the same work through a second instance and device, in turn with the first.
    let ab = opts
        .ab_layer
        .map(|layer| SecondInstance::new(cx, options, layer))
        .transpose()?;
    if opts.app_markers {
        match &ab {
            None => anyhow::bail!("--app-markers needs --ab-layer"),
            Some(second) if second.markers.is_none() => {
                let skipped = Outcome::Skipped(
                    "--app-markers: the device has no VK_AMD_buffer_marker".into(),
                );
                ab.expect("matched").destroy();
                return Ok(skipped);
            }
            Some(_) => {}
        }
    }
    let ab_target = ab
        .as_ref()
        .map(|second| PassTarget::new(&second.cx, EXTENT))
        .transpose()?;
    let mut ab_side = ab
        .as_ref()
        .zip(ab_target.as_ref())
        .map(|(second, target)| {
            Side::new(&second.cx, target, opts.cmdbufs, second.markers.as_ref())
        })
        .transpose()?;
    for iter in 0..WARM_UP_ITERS + opts.iters.unwrap_or(30) {
        // Each goes first every other iteration: neither always finds the caches the other left.
        if iter % 2 == 1 {
            if let Some(b) = ab_side.as_mut() {
                b.iteration(iter, &opts)?;
            }
        }
        side.iteration(iter, &opts)?;
        if iter % 2 == 0 {
            if let Some(b) = ab_side.as_mut() {
                b.iteration(iter, &opts)?;
            }
        }
    }
    side.print("", &opts);
    if let Some(mut b) = ab_side {
        b.print("ab_", &opts);
    }
    // Its target and command buffers are the device's own objects, destroyed with it.
    if let Some(second) = ab {
        second.destroy();
    }
    let bench = side.bench;
    if opts.record_only {
        // Nothing was drawn: the checksum is of the options alone.
        let sum = Fnv1a::new()
            .update(&opts.cmdbufs.to_le_bytes())
            .update(&opts.draws.to_le_bytes())
            .finish();
        return Ok(Outcome::Checksum(sum));
    }

    // A checksum of the final picture and values, like every scenario (depends on the options).
    let image_readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let values_readback = cx.create_buffer(
        VALUES_BYTES,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    cx.submit_and_wait(|cmd| {
        // The render pass left the image in TRANSFER_SRC_OPTIMAL, its outgoing dependency covers this copy.
        cx.record_image_readback(cmd, &target.image, &image_readback);
        record_buffer_readback(
            d,
            cmd,
            bench.values,
            0,
            values_readback.handle,
            0,
            VALUES_BYTES,
            Access::COMPUTE_WRITE,
        );
        Ok(())
    })?;
    let sum = Fnv1a::new()
        .update(image_readback.bytes())
        .update(values_readback.bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}

/// The second instance and device of `--ab-layer`, with the layer enabled (none for `none`).
struct SecondInstance {
    app: crate::AppInstance,
    cx: Context,
    markers: Option<AppMarkers>,
}

impl SecondInstance {
    fn new(first: &Context, options: &Options, layer: &str) -> Result<SecondInstance> {
        let name = std::ffi::CString::new(layer)?;
        let layers: Vec<&std::ffi::CStr> = if layer == "none" {
            Vec::new()
        } else {
            vec![name.as_c_str()]
        };
        let app = crate::AppInstance::create_with_layers(
            &first.entry,
            options.api_version,
            c"bb-testapp",
            None,
            &layers,
        )?;
        let needs = crate::context::Needs {
            features_via_extensions: options.stress.features_via_extensions,
            buffer_marker: options.bench.app_markers,
            ..crate::context::Needs::NONE
        };
        let cx = Context::new(&app, options.device_index, needs)?;
        eprintln!(
            "bb-testapp: record-bench: second instance with layer {layer} on {}",
            cx.device_name
        );
        let markers = if !options.bench.app_markers {
            None
        } else if cx.features.buffer_marker {
            let bytes = vk::DeviceSize::from(MARKER_WORDS) * 4;
            let buffer =
                cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Device)?;
            Some(AppMarkers {
                device: ash::amd::buffer_marker::Device::new(&app.instance, &cx.device),
                buffer: buffer.handle,
            })
        } else {
            None
        };
        Ok(SecondInstance { app, cx, markers })
    }

    fn destroy(self) {
        self.cx.destroy_owned();
        self.cx.destroy();
        self.app.destroy();
    }
}
