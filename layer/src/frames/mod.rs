//! Frame capture (`VK_BLACKBOX_FRAMES`, `VK_BLACKBOX_FLASH`): the last presented frames of a device, and
//! the `frame` report of a bad one.
//!
//! - Every submission is noted in the frame in progress ([`Frames::note_submission`]); at each
//!   `vkQueuePresentKHR` the frame is closed into a summary ([`model::FrameSummary`]) kept in a ring of
//!   `VK_BLACKBOX_FRAMES`, and the recordings of the last few frames are kept whole, for the draws a report
//!   lists.
//! - Each presented image is copied at the present ([`swapchain`]), into a ring of [`swapchain::SLOTS`]
//!   images per swapchain; with the flash pass on, a grid of its luminance is computed next to it
//!   ([`flash`]) and tested a frame later.
//! - The shader-error drain names the frame whose work wrote what it read ([`Frames::attribute`]) and hands
//!   the errors over ([`Frames::on_shader_errors`]); a flash is found when the grids are read. Either makes
//!   a *capture*, written as a report once the frame's image (and the frame after it) is there: the frame,
//!   its summary and its neighbours', the errors with their pixels, the draws that ran the shader that
//!   reported, and the image as PNG with the pixels or the region marked ([`image`]).
//!
//! Reports are capped ([`MAX_REPORTS`] per device, one per shader site, flashes at most one per
//! [`FLASH_QUIET_FRAMES`]), so a NaN that comes back every frame makes one report, not thousands.

pub mod flash;
pub mod image;
pub mod swapchain;

use ash::vk;
use blackbox_report as model;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::command_buffer::{for_each_execution, NONE};
use crate::device::Device;
use crate::queue::{Queue, Submitted};
use flash::{FlashPipeline, Grid};
use image::Picture;
use swapchain::{Copied, Swapchain, SLOTS};

/// Frame reports written per device at most.
pub const MAX_REPORTS: u32 = 8;
/// After a flash report, flashes in the next this many frames are counted, not reported.
pub const FLASH_QUIET_FRAMES: u64 = 30;
/// Frames whose recordings are kept whole (for the draws of a report): as far back as images are kept.
const RECENT_FRAMES: usize = SLOTS + 2;
/// Draws a report lists at most.
const MAX_DRAWS: usize = 64;
/// Labels a frame summary lists at most.
const MAX_LABELS: usize = 8;
/// Lock waits when a report is built from another thread's state.
const LOCK_WAIT: Duration = Duration::from_millis(200);

/// One submission of a frame, as a report names it.
#[derive(Clone)]
struct FrameWork {
    /// `family.index`.
    queue: String,
    /// Its number on the queue.
    seq: u64,
    /// Its command buffers, batches flattened.
    command_buffers: Vec<Submitted>,
}

/// The frame in progress.
#[derive(Default)]
struct Current {
    work: Vec<FrameWork>,
}

/// What is kept of past frames.
#[derive(Default)]
struct History {
    /// The last `kept` frames' summaries, oldest first.
    summaries: VecDeque<model::FrameSummary>,
    /// The last [`RECENT_FRAMES`] frames' work.
    recent: VecDeque<(u64, Vec<FrameWork>)>,
    /// Shader errors attributed to frames not presented yet, by frame.
    early_errors: HashMap<u64, u64>,
    /// Per swapchain, the last grid read (the flash test needs the frame before).
    last_grid: HashMap<u64, Grid>,
}

/// A bad frame waiting to be written as a report.
struct Capture {
    frame: u64,
    trigger: &'static str,
    reason: String,
    attribution: Option<String>,
    errors: Vec<model::FrameError>,
    /// For a flash: the swapchain and what was found.
    flash: Option<(u64, flash::Found)>,
}

/// A capture with its images, ready to be written.
struct Ready {
    capture: Capture,
    swapchain: Option<model::Swapchain>,
    /// (frame, role, image) of each image to save.
    images: Vec<(u64, &'static str, Copied)>,
    notes: Vec<String>,
}

/// What has been reported on this device.
#[derive(Default)]
struct Reported {
    count: u32,
    /// Global shader sites that have had their report.
    sites: HashSet<u32>,
    /// The last frame a flash report was written for.
    last_flash: Option<u64>,
    /// A cap was hit (said once).
    capped: bool,
}

/// A present Blackbox copies: the app's present info with the layer's semaphore to wait for instead.
pub struct Presenting {
    info: vk::PresentInfoKHR<'static>,
    _waits: Box<[vk::Semaphore; 1]>,
    swapchain: u64,
    index: u32,
}

impl Presenting {
    /// The present info to pass down.
    pub fn info(&self) -> &vk::PresentInfoKHR<'static> {
        &self.info
    }
}

/// A device's frame capture.
pub struct Frames {
    /// Summaries kept.
    kept: usize,
    /// The flash pass, with `VK_BLACKBOX_FLASH=on` (made with the first swapchain).
    flash_on: bool,
    flash: Mutex<Option<Arc<FlashPipeline>>>,
    /// Presents so far.
    presents: AtomicU64,
    current: Mutex<Current>,
    history: Mutex<History>,
    /// By raw handle.
    swapchains: Mutex<HashMap<u64, Swapchain>>,
    /// Semaphores a present may still wait for: destroyed with the device.
    graveyard: Mutex<Vec<vk::Semaphore>>,
    captures: Mutex<Vec<Capture>>,
    reported: Mutex<Reported>,
    /// Swapchains whose copy problems were logged.
    warned: Mutex<HashSet<u64>>,
    /// Captures taken while a present was being prepared: written once it went down.
    to_write: Mutex<Vec<Ready>>,
}

impl Frames {
    /// Frame capture as the settings ask, `None` when it is off.
    pub fn new(config: &crate::config::Config) -> Option<Frames> {
        config.watches_frames().then(|| Frames {
            kept: config.frames.max(1) as usize,
            flash_on: config.flash,
            flash: Mutex::new(None),
            presents: AtomicU64::new(0),
            current: Mutex::new(Current::default()),
            history: Mutex::new(History::default()),
            swapchains: Mutex::new(HashMap::new()),
            graveyard: Mutex::new(Vec::new()),
            captures: Mutex::new(Vec::new()),
            reported: Mutex::new(Reported::default()),
            warned: Mutex::new(HashSet::new()),
            to_write: Mutex::new(Vec::new()),
        })
    }

    /// The frame in progress: presents so far, plus one.
    pub fn current(&self) -> u64 {
        self.presents.load(Ordering::Acquire) + 1
    }

    /// A submission of the frame in progress went down.
    pub fn note_submission(&self, queue: &Queue, seq: u64, batches: &[Vec<Submitted>]) {
        self.current.lock().work.push(FrameWork {
            queue: format!("{}.{}", queue.family, queue.index),
            seq,
            command_buffers: batches.iter().flatten().cloned().collect(),
        });
    }

    /// The frame shader errors read now come from, and how sure that is: the earliest frame whose work
    /// finished since the last drain, or else still runs. Called by every drain, so that each sees only
    /// what finished since the one before.
    pub fn attribute(&self, device: &Device) -> (u64, Option<String>) {
        let (mut low, mut high) = (u64::MAX, 0u64);
        for queue in device.queues.read().iter() {
            let (retired, pending) = queue.tracker.lock().take_retired_frames();
            for (l, h) in retired.into_iter().chain(pending) {
                low = low.min(l);
                high = high.max(h);
            }
        }
        if low == u64::MAX {
            // Nothing tracked (no timeline semaphores): the frame in progress.
            return (self.current(), None);
        }
        let note = (low != high).then(|| {
            format!(
                "the work of frames {low}-{high} finished or ran since shader errors were last read: the earliest \
                 is named"
            )
        });
        (low, note)
    }

    /// `vkCreateSwapchainKHR` succeeded: the swapchain is watched. `copyable` says whether its images can
    /// be copied (usage and format).
    pub fn add_swapchain(
        &self,
        device: &Device,
        handle: vk::SwapchainKHR,
        info: &vk::SwapchainCreateInfoKHR,
        copyable: Result<(), String>,
    ) {
        if self.flash_on && self.flash.lock().is_none() {
            match FlashPipeline::new(device) {
                Ok(p) => *self.flash.lock() = Some(Arc::new(p)),
                Err(e) => warn!(
                    "frame capture: the flash pass cannot be made ({e}): flashes are not detected"
                ),
            }
        }
        let swapchain = Swapchain::new(device, handle, info, copyable);
        if let Some(why) = &swapchain.not_copied {
            warn!(
                "frame capture: the images of swapchain {:#x} ({}x{} {:?}) are not kept: {why}",
                vk::Handle::as_raw(handle),
                info.image_extent.width,
                info.image_extent.height,
                info.image_format
            );
        }
        self.swapchains
            .lock()
            .insert(vk::Handle::as_raw(handle), swapchain);
    }

    /// `vkDestroySwapchainKHR`, before the call down: the copies in flight are waited for, captures that
    /// need its images are written, and its GPU side freed.
    pub fn remove_swapchain(&self, device: &Arc<Device>, handle: vk::SwapchainKHR) {
        let raw = vk::Handle::as_raw(handle);
        let mut ready = Vec::new();
        {
            let mut swapchains = self.swapchains.lock();
            let Some(mut sc) = swapchains.remove(&raw) else {
                return;
            };
            let grids = sc.collect(device, true);
            self.grids_read(raw, &sc, grids, &mut ready);
            let mut single: HashMap<u64, Swapchain> = HashMap::new();
            single.insert(raw, sc);
            for frame in single[&raw].kept_frames() {
                self.take_ready_for(&single, frame, &mut ready);
            }
            let mut sc = single.remove(&raw).expect("inserted above");
            log_timings(&sc);
            sc.destroy(device, &mut self.graveyard.lock());
        }
        self.write_all(device, ready);
    }

    /// Before `vkQueuePresentKHR` goes down: copies the image of the first watched swapchain of the
    /// present. `None` when nothing is copied (the app's present goes down as it is).
    ///
    /// # Safety
    /// `info` must be the app's valid present info.
    pub unsafe fn before_present(
        &self,
        device: &Arc<Device>,
        queue: vk::Queue,
        info: &vk::PresentInfoKHR,
    ) -> Option<Presenting> {
        // SAFETY: the app's arrays of `swapchain_count` swapchains and indices, and its wait semaphores.
        let (swapchains, indices, waits) = unsafe {
            (
                crate::raw::slice(info.p_swapchains, info.swapchain_count),
                crate::raw::slice(info.p_image_indices, info.swapchain_count),
                crate::raw::slice(info.p_wait_semaphores, info.wait_semaphore_count),
            )
        };
        let family = device.queue(queue)?.family;
        let frame = self.current();
        let flash = self.flash.lock().clone();
        let mut ready = Vec::new();
        let mut all = self.swapchains.lock();
        let (raw, index) = swapchains
            .iter()
            .zip(indices)
            .map(|(s, &i)| (vk::Handle::as_raw(*s), i))
            .find(|(raw, _)| all.get(raw).is_some_and(|s| s.not_copied.is_none()))?;
        // A capture that needs the image this copy overwrites is taken now.
        if let Some(overwritten) = all.get(&raw).and_then(|s| s.frame_overwritten_by(frame)) {
            self.take_ready_for(&all, overwritten, &mut ready);
        }
        let sc = all.get_mut(&raw)?;
        let (grids, result) =
            sc.before_present(device, queue, family, index, waits, frame, flash.as_deref());
        let sc = all.get(&raw)?;
        self.grids_read(raw, sc, grids, &mut ready);
        self.take_ready(&all, false, &mut ready);
        drop(all);
        // Written after the present went down: the app's frame is not held up by a report.
        self.to_write.lock().extend(ready);
        match result {
            Ok(Some(semaphore)) => {
                let waits = Box::new([semaphore]);
                let mut copy = *info;
                copy.wait_semaphore_count = 1;
                copy.p_wait_semaphores = waits.as_ptr();
                // The copy borrows the app's arrays, which outlive the call down, and the box, which goes
                // with it.
                // SAFETY: same type but for the lifetime parameter.
                let info: vk::PresentInfoKHR<'static> = unsafe { std::mem::transmute(copy) };
                Some(Presenting {
                    info,
                    _waits: waits,
                    swapchain: raw,
                    index,
                })
            }
            Ok(None) => None,
            Err(e) => {
                if self.warned.lock().insert(raw) {
                    warn!("frame capture: swapchain {raw:#x}: {e}");
                }
                None
            }
        }
    }

    /// After `vkQueuePresentKHR` returned `result`: the frame is closed, its summary kept, and captures now
    /// ready are written.
    pub fn after_present(
        &self,
        device: &Arc<Device>,
        presenting: Option<Presenting>,
        result: vk::Result,
    ) {
        if let Some(p) = presenting {
            if let Some(sc) = self.swapchains.lock().get_mut(&p.swapchain) {
                sc.after_present(device, p.index, result, &mut self.graveyard.lock());
            }
        }
        let frame = self.presents.fetch_add(1, Ordering::AcqRel) + 1;
        let taken = std::mem::take(&mut *self.to_write.lock());
        self.write_all(device, taken);
        let work = std::mem::take(&mut self.current.lock().work);
        {
            let mut history = self.history.lock();
            let errors = history.early_errors.remove(&frame).unwrap_or(0);
            let mut summary = summarize(frame, &work, errors);
            // A flash grid read before this summary existed.
            if let Some(g) = history.last_grid.values().find(|g| g.frame == frame) {
                summary.luminance_jump = Some(g.largest_change());
            }
            history.summaries.push_back(summary);
            while history.summaries.len() > self.kept {
                history.summaries.pop_front();
            }
            history.recent.push_back((frame, work));
            while history.recent.len() > RECENT_FRAMES {
                history.recent.pop_front();
            }
            history.early_errors.retain(|&f, _| f > frame);
        }
        self.service(device);
    }

    /// The shader-error drain read `errors` from the work of `frame`: counted in its summary, and captured
    /// once per site.
    pub fn on_shader_errors(
        &self,
        device: &Arc<Device>,
        frame: u64,
        attribution: Option<String>,
        errors: Vec<(u32, model::FrameError)>,
    ) {
        if errors.is_empty() {
            return;
        }
        let total: u64 = errors.iter().map(|(_, e)| e.count).sum();
        {
            let mut history = self.history.lock();
            match history.summaries.iter_mut().find(|s| s.number == frame) {
                Some(s) => s.shader_errors += total,
                None => *history.early_errors.entry(frame).or_insert(0) += total,
            }
        }
        let new: Vec<model::FrameError> = {
            let mut reported = self.reported.lock();
            if reported.count >= MAX_REPORTS {
                self.say_capped(&mut reported);
                return;
            }
            // `insert` is true for a site not reported yet.
            let fresh: Vec<model::FrameError> = errors
                .into_iter()
                .filter(|(site, _)| reported.sites.insert(*site))
                .map(|(_, e)| e)
                .collect();
            if !fresh.is_empty() {
                reported.count += 1;
            }
            fresh
        };
        let Some(first) = new.first() else { return };
        let reason = format!("frame {frame}: {}", first.message);
        self.captures.lock().push(Capture {
            frame,
            trigger: "shader-error",
            reason,
            attribution,
            errors: new,
            flash: None,
        });
        self.service(device);
    }

    /// Writes the captures that are ready, if the swapchains can be looked at now (a present holding them
    /// writes them itself).
    fn service(&self, device: &Arc<Device>) {
        if self.captures.lock().is_empty() {
            return;
        }
        let mut ready = Vec::new();
        if let Some(all) = self.swapchains.try_lock_for(LOCK_WAIT) {
            self.take_ready(&all, false, &mut ready);
        }
        self.write_all(device, ready);
    }

    /// Grids read back from `sc`'s finished copies: flash tests, summaries' luminance jumps.
    fn grids_read(&self, raw: u64, sc: &Swapchain, grids: Vec<Grid>, ready: &mut Vec<Ready>) {
        for grid in grids {
            let found = {
                let mut history = self.history.lock();
                let jump = grid.largest_change();
                if let Some(s) = history
                    .summaries
                    .iter_mut()
                    .find(|s| s.number == grid.frame)
                {
                    s.luminance_jump = Some(jump);
                }
                let found = history.last_grid.get(&raw).and_then(|before| {
                    flash::detect(before, &grid, sc.extent.width, sc.extent.height)
                });
                history.last_grid.insert(raw, grid);
                found
            };
            let Some(found) = found else { continue };
            {
                let mut reported = self.reported.lock();
                let quiet = reported
                    .last_flash
                    .is_some_and(|f| found.frame < f + FLASH_QUIET_FRAMES);
                if quiet {
                    debug!(
                        "frame capture: another flash at frame {} (not reported: one just was)",
                        found.frame
                    );
                    continue;
                }
                if reported.count >= MAX_REPORTS {
                    self.say_capped(&mut reported);
                    continue;
                }
                reported.count += 1;
                reported.last_flash = Some(found.frame);
            }
            let [x0, y0, x1, y1] = found.region;
            let [before, during, after] = found.luminance;
            let reason = format!(
                "frame {}: a one-frame flash in ({x0}, {y0})-({x1}, {y1}), mean luminance {before:.2} -> {during:.2} -> {after:.2}",
                found.frame
            );
            warn!("frame capture: {reason}");
            let capture = Capture {
                frame: found.frame,
                trigger: "flash",
                reason,
                attribution: None,
                errors: Vec::new(),
                flash: Some((raw, found)),
            };
            // Its three images are kept now (the next present overwrites the oldest): taken at once.
            ready.push(self.ready(capture, Some((raw, sc)), &HashMap::new()));
        }
    }

    fn say_capped(&self, reported: &mut Reported) {
        if !reported.capped {
            reported.capped = true;
            info!("frame capture: {MAX_REPORTS} frame reports written on this device; later bad frames are logged, not reported");
        }
    }

    /// Moves the captures that can be written now into `ready` (with `force`, all of them: the images
    /// are about to go).
    fn take_ready(&self, all: &HashMap<u64, Swapchain>, force: bool, ready: &mut Vec<Ready>) {
        let presents = self.presents.load(Ordering::Acquire);
        let mut captures = self.captures.lock();
        let mut waiting = Vec::new();
        for capture in captures.drain(..) {
            let frame = capture.frame;
            let copying = all.values().any(|s| s.copying(frame));
            let kept = all.iter().find(|(_, s)| s.kept_frames().contains(&frame));
            let go = match kept {
                // The frame after it is shown among its neighbours.
                Some(_) => force || presents > frame,
                None => force || (!copying && presents >= frame),
            };
            if go {
                ready.push(self.ready(capture, kept.map(|(raw, s)| (*raw, s)), all));
            } else {
                waiting.push(capture);
            }
        }
        *captures = waiting;
    }

    /// As [`Frames::take_ready`], for the captures of `frame` alone, whose image is about to be overwritten.
    fn take_ready_for(&self, all: &HashMap<u64, Swapchain>, frame: u64, ready: &mut Vec<Ready>) {
        let mut captures = self.captures.lock();
        let (now, later): (Vec<Capture>, Vec<Capture>) =
            captures.drain(..).partition(|c| c.frame == frame);
        *captures = later;
        drop(captures);
        for capture in now {
            let kept = all.iter().find(|(_, s)| s.kept_frames().contains(&frame));
            ready.push(self.ready(capture, kept.map(|(raw, s)| (*raw, s)), all));
        }
    }

    /// A capture with its images copied out of `swapchain`'s ring (`all`, the swapchains, say why there is
    /// no image when there is none).
    fn ready(
        &self,
        capture: Capture,
        swapchain: Option<(u64, &Swapchain)>,
        all: &HashMap<u64, Swapchain>,
    ) -> Ready {
        let mut images = Vec::new();
        let mut notes = Vec::new();
        let frame = capture.frame;
        let model_swapchain = swapchain.map(|(raw, s)| model::Swapchain {
            handle: format!("{raw:#x}"),
            width: s.extent.width,
            height: s.extent.height,
            format: format!("{:?}", s.format),
        });
        match swapchain {
            Some((_, sc)) => {
                let mut wanted = vec![(frame, "frame")];
                if capture.flash.is_some() {
                    wanted.push((frame.wrapping_sub(1), "before"));
                    wanted.push((frame + 1, "after"));
                }
                for (f, role) in wanted {
                    match sc.image(f) {
                        Some(copied) => images.push((f, role, copied)),
                        None => notes.push(format!("the image of frame {f} is no longer kept")),
                    }
                }
            }
            None => {
                let why = all.values().find_map(|s| s.not_copied.clone());
                notes.push(match why {
                    Some(why) => format!("no image of frame {frame}: {why}"),
                    None => format!(
                        "no image of frame {frame} was kept (it was not presented to a watched swapchain, or \
                         its copy was overwritten before the error was read)"
                    ),
                });
            }
        }
        Ready {
            capture,
            swapchain: model_swapchain,
            images,
            notes,
        }
    }

    /// Builds and writes each ready capture's report.
    fn write_all(&self, device: &Arc<Device>, ready: Vec<Ready>) {
        for r in ready {
            crate::contained("writing a frame report", || {
                let built = self.build(device, r);
                crate::report::write(&built);
            });
        }
    }

    /// The report of a ready capture.
    fn build(&self, device: &Arc<Device>, ready: Ready) -> crate::report::Built {
        let Ready {
            capture,
            swapchain,
            images,
            mut notes,
        } = ready;
        let mut built =
            crate::report::build(device, model::Kind::Frame, capture.reason.clone(), None);
        let frame = capture.frame;
        let mut marked_pixels: Vec<[u32; 2]> = capture
            .errors
            .iter()
            .flat_map(|e| e.pixels.iter().copied())
            .collect();
        marked_pixels.dedup();
        let region = capture.flash.as_ref().map(|(_, f)| f.region);
        let mut files = Vec::new();
        let mut model_images = Vec::new();
        for (f, role, copied) in images {
            let mut picture = Picture::from_texels(
                &copied.words,
                copied.extent.width,
                copied.extent.height,
                copied.texels,
            );
            let pixels: Vec<[u32; 2]> = if role == "frame" {
                marked_pixels
                    .iter()
                    .copied()
                    .filter(|[x, y]| *x < copied.extent.width && *y < copied.extent.height)
                    .collect()
            } else {
                Vec::new()
            };
            for &[x, y] in &pixels {
                picture.mark_pixel(x, y);
            }
            if let Some(r) = region {
                picture.mark_region(r);
            }
            match picture.png() {
                Ok(bytes) => {
                    let file = format!("frame-{f}.png");
                    files.push((file.clone(), bytes));
                    model_images.push(model::FrameImage {
                        frame: f,
                        role: role.to_owned(),
                        file,
                        marked_pixels: pixels,
                        marked_region: region,
                    });
                }
                Err(e) => notes.push(format!("the image of frame {f} could not be encoded: {e}")),
            }
        }
        let shaders: Vec<&str> = capture.errors.iter().map(|e| e.shader.as_str()).collect();
        let (frames, draws) = {
            let history = self.history.lock();
            let around: Vec<model::FrameSummary> = history.summaries.iter().cloned().collect();
            let work = history
                .recent
                .iter()
                .find(|(f, _)| *f == frame)
                .map(|(_, w)| w.clone());
            (around, work)
        };
        let draws = match (draws, shaders.is_empty()) {
            (_, true) => Vec::new(),
            (Some(work), false) => draws_using(device, &work, &shaders),
            (None, false) => {
                notes.push(format!(
                    "the recordings of frame {frame} are no longer kept: its draws are not listed"
                ));
                Vec::new()
            }
        };
        let flash = capture.flash.as_ref().map(|(_, f)| model::Flash {
            region: f.region,
            luminance: f.luminance,
            threshold: flash::THRESHOLD,
            grid: flash::GRID,
        });
        built.report.frame = Some(model::Frame {
            number: frame,
            trigger: capture.trigger.to_owned(),
            attribution: capture.attribution,
            swapchain,
            frames,
            errors: capture.errors,
            flash,
            images: model_images,
            draws,
            notes,
        });
        built.files = files;
        crate::report::sign(&mut built.report);
        built
    }

    /// For a device-loss or hang report: the last frame presented, its neighbours and its image (best
    /// effort, nothing waited for).
    pub fn last_frame(&self, trigger: &str) -> (model::Frame, Vec<(String, Vec<u8>)>) {
        let presents = self.presents.load(Ordering::Acquire);
        let mut notes = Vec::new();
        let mut files = Vec::new();
        let mut images = Vec::new();
        let mut swapchain = None;
        match self.swapchains.try_lock_for(LOCK_WAIT) {
            Some(all) => {
                if let Some((raw, sc, (f, copied))) = all
                    .iter()
                    .filter_map(|(raw, s)| Some((raw, s, s.last_image()?)))
                    .max_by_key(|(_, _, (f, _))| *f)
                {
                    swapchain = Some(model::Swapchain {
                        handle: format!("{raw:#x}"),
                        width: sc.extent.width,
                        height: sc.extent.height,
                        format: format!("{:?}", sc.format),
                    });
                    let picture = Picture::from_texels(
                        &copied.words,
                        copied.extent.width,
                        copied.extent.height,
                        copied.texels,
                    );
                    match picture.png() {
                        Ok(bytes) => {
                            let file = format!("frame-{f}.png");
                            files.push((file.clone(), bytes));
                            images.push(model::FrameImage {
                                frame: f,
                                role: "frame".to_owned(),
                                file,
                                marked_pixels: Vec::new(),
                                marked_region: None,
                            });
                        }
                        Err(e) => {
                            notes.push(format!("the image of frame {f} could not be encoded: {e}"))
                        }
                    }
                } else {
                    notes.push("no presented image was kept".to_owned());
                }
            }
            None => notes.push("the swapchains could not be read (a lock was held)".to_owned()),
        }
        let frames = self
            .history
            .try_lock_for(LOCK_WAIT)
            .map(|h| h.summaries.iter().cloned().collect())
            .unwrap_or_default();
        let frame = model::Frame {
            number: presents,
            trigger: trigger.to_owned(),
            attribution: None,
            swapchain,
            frames,
            errors: Vec::new(),
            flash: None,
            images,
            draws: Vec::new(),
            notes,
        };
        (frame, files)
    }

    /// `vkDestroyDevice`, the device idle: every swapchain's GPU side, the flash pass and the semaphores
    /// presents waited for are freed. Captures still waiting are written first.
    pub fn destroy(&self, device: &Arc<Device>) {
        let mut ready = Vec::new();
        {
            let mut all = self.swapchains.lock();
            for (raw, sc) in all.iter_mut() {
                let grids = sc.collect(device, true);
                self.grids_read(*raw, sc, grids, &mut ready);
            }
            self.take_ready(&all, true, &mut ready);
            for (_, mut sc) in all.drain() {
                log_timings(&sc);
                sc.destroy(device, &mut self.graveyard.lock());
            }
        }
        self.write_all(device, ready);
        if let Some(p) = self.flash.lock().take() {
            p.destroy(device);
        }
        if let Some(destroy) = device.next.destroy_semaphore {
            for s in self.graveyard.lock().drain(..) {
                // SAFETY: the layer's own semaphores; the device is idle (the caller's contract).
                unsafe { destroy(device.handle, s, std::ptr::null()) };
            }
        }
    }
}

/// Attaches the last frame to a device-loss or hang report, when frame capture is on.
pub fn attach_last_frame(device: &Device, built: &mut crate::report::Built, trigger: &str) {
    let Some(frames) = &device.frames else { return };
    crate::contained("adding the last frame to the report", || {
        let (frame, files) = frames.last_frame(trigger);
        built.report.frame = Some(frame);
        built.files.extend(files);
    });
}

/// The line that says what the copies and flash passes of a swapchain cost on the GPU.
fn log_timings(sc: &Swapchain) {
    let median = |v: &[u64]| -> Option<f64> {
        let mut v = v.to_vec();
        v.sort_unstable();
        v.get(v.len() / 2).map(|&ns| ns as f64 / 1000.0)
    };
    let Some(copy) = median(&sc.timings.copy_ns) else {
        return;
    };
    let flash = median(&sc.timings.flash_ns)
        .map(|us| format!(", flash pass {us:.1} us"))
        .unwrap_or_default();
    let kept = sc.timings.copy_ns.len();
    let of = if sc.timings.copies_seen > kept {
        format!("the last {kept} of {}", sc.timings.copies_seen)
    } else {
        kept.to_string()
    };
    info!(
        "frame capture: swapchain {:#x} ({}x{} {:?}): GPU time per present (median of {of}): copy {copy:.1} us{flash}",
        vk::Handle::as_raw(sc.handle),
        sc.extent.width,
        sc.extent.height,
        sc.format,
    );
}

/// The summary of a frame's work.
fn summarize(number: u64, work: &[FrameWork], shader_errors: u64) -> model::FrameSummary {
    let mut summary = model::FrameSummary {
        number,
        submissions: work.len() as u32,
        command_buffers: 0,
        commands: 0,
        draws: 0,
        dispatches: 0,
        labels: Vec::new(),
        shader_errors,
        luminance_jump: None,
    };
    for w in work {
        for s in &w.command_buffers {
            summary.command_buffers += 1;
            for_each_execution(&s.command_buffer, s.log.as_ref(), &mut |_, log| {
                let Some(log) = log else { return };
                summary.commands += log.log.len() + log.unlogged();
                for c in log.commands() {
                    if c.name.starts_with("vkCmdDraw") {
                        summary.draws += 1;
                    } else if c.name.starts_with("vkCmdDispatch") {
                        summary.dispatches += 1;
                    }
                }
                for scope in log.scopes().filter(|s| s.parent == NONE && !s.inserted) {
                    if summary.labels.len() < MAX_LABELS
                        && !summary.labels.iter().any(|l| **l == *scope.name)
                    {
                        summary.labels.push(scope.name.to_string());
                    }
                }
            });
        }
    }
    summary
}

/// The draws of `work` whose pipeline has one of `shaders`.
fn draws_using(device: &Device, work: &[FrameWork], shaders: &[&str]) -> Vec<model::Location> {
    let mut out = Vec::new();
    let mut pipelines: HashMap<u64, Option<model::Pipeline>> = HashMap::new();
    for w in work {
        for s in &w.command_buffers {
            for_each_execution(&s.command_buffer, s.log.as_ref(), &mut |cb, log| {
                let Some(log) = log else { return };
                for (index, c) in log.commands().enumerate() {
                    if out.len() >= MAX_DRAWS
                        || !c.name.starts_with("vkCmdDraw")
                        || c.pipeline == vk::Pipeline::null()
                    {
                        continue;
                    }
                    let raw = vk::Handle::as_raw(c.pipeline);
                    let pipeline = pipelines
                        .entry(raw)
                        .or_insert_with(|| pipeline_using(device, c.pipeline, shaders))
                        .clone();
                    let Some(pipeline) = pipeline else { continue };
                    let mut labels = Vec::new();
                    let mut scope = c.scope;
                    while let Some(s) = log.scope(scope) {
                        labels.push(s.name.to_string());
                        scope = s.parent;
                    }
                    labels.reverse();
                    let handle = vk::Handle::as_raw(cb.handle);
                    out.push(model::Location {
                        queue: w.queue.clone(),
                        submission: w.seq,
                        command_buffer: match device.name_of(handle) {
                            Some(name) => format!("{handle:#x} \"{name}\""),
                            None => format!("{handle:#x}"),
                        },
                        command_index: index as u32,
                        command: c.name.to_owned(),
                        params: c.params[..usize::from(c.param_count)].to_vec(),
                        labels,
                        pipeline: Some(pipeline),
                    });
                }
            });
        }
    }
    out
}

/// The pipeline as a report shows it, if one of its stages is one of `shaders`.
fn pipeline_using(
    device: &Device,
    pipeline: vk::Pipeline,
    shaders: &[&str],
) -> Option<model::Pipeline> {
    let record = device.shaders.try_pipeline(pipeline, LOCK_WAIT).ok()??;
    if !record
        .stages
        .iter()
        .any(|s| shaders.contains(&s.shader.id.as_str()))
    {
        return None;
    }
    let raw = vk::Handle::as_raw(pipeline);
    Some(model::Pipeline {
        handle: format!("{raw:#x}"),
        name: device.name_of(raw),
        shaders: record
            .stages
            .iter()
            .map(|s| model::Shader {
                id: s.shader.id.clone(),
                entry_points: vec![format!("{} ({})", s.entry, s.stage)],
                sources: s.shader.sources().to_vec(),
                name: None,
            })
            .collect(),
    })
}
