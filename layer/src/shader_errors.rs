//! Shader errors: the per-device error buffer that instrumented shaders write, the instrumentation cache,
//! and the drain that turns records into log lines and report entries.
//!
//! The buffer's layout is the engine's ([`blackbox_engine::record`]). Each module gets a range of global
//! site indices (`site_base`); the layer keeps, per global site, the module and its site description, so a
//! record's site index is all it needs to say what failed and where. Counters are cumulative on the GPU; the
//! drain logs the difference since the last drain, one line per site, and keeps the totals for reports. A
//! site gets `VK_BLACKBOX_LOG_REPEATS` lines; after that it is counted only, and [`close`] logs the rest of
//! its count when the device is destroyed.
//! When no work is pending the buffer is reset, so each site's full records are available again.

use ash::vk;
use blackbox_engine::record::{self, header};
use blackbox_engine::{LoopClock, LoopMode, Options, ShaderInfo, Site, SiteKind, Stage};
use blackbox_report::untrusted;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::Arc;

use crate::config::{AssertMode, NanRecords};
use crate::device::Device;
use crate::memory::HostBuffer;
use crate::site_map::SiteMap;

/// Site counters per device: modules beyond them still run, their sites uncounted.
pub const SITES: u32 = 64 * 1024;
/// Words of record area per device (4 MiB).
pub const RECORD_WORDS: u32 = 1024 * 1024;
/// Every device's error buffer: on CPU devices the engine bakes these sizes into the modules it instruments.
const LAYOUT: record::BufferLayout = record::BufferLayout {
    counter_count: SITES,
    records_capacity: RECORD_WORDS,
};
/// Shader clock ticks per millisecond, as the loop time budget assumes them: the device clock counts
/// nanoseconds on the drivers measured (NVIDIA's and lavapipe's); Vulkan leaves the unit to the driver, so
/// on others the budget is only as good as this guess (a subgroup clock counts core cycles, about 1 GHz).
const TICKS_PER_MS: u64 = 1_000_000;
/// printf lines logged per drain at most (distinct texts, with their counts); further ones are summed up
/// per site, so a shader printing from every invocation cannot stall the app on its log.
const PRINTF_LINES_PER_DRAIN: usize = 2048;

/// A module the engine instrumented, shared by every identical module the app creates.
pub struct InstrumentedShader {
    /// The instrumented words.
    pub words: Vec<u32>,
    /// What the engine learnt, with the sites.
    pub info: ShaderInfo,
    /// The module's first global site.
    pub site_base: u32,
}

/// What instrumenting a module gave: the shader, or why the engine refused it.
pub type Instrumentation = Result<Arc<InstrumentedShader>, String>;

/// Totals of one site since the device was created.
#[derive(Clone, Default)]
struct SiteTotal {
    count: u64,
    first_message: Option<String>,
    /// Log lines the site has had (`VK_BLACKBOX_LOG_REPEATS` limits them), and the firings counted after
    /// its last, for the closing line ([`close`]).
    lines: u32,
    not_logged: u64,
    /// The first record read for the site: a drain that reads a new count but none of the site's records
    /// (one still being written as the count came in, or past the site's cap while work stays pending)
    /// describes the site from it.
    first_record: Option<record::RawRecord>,
    /// A NaN-output site's last verdict: its NaNs were stored by invocations whose operations' lines said
    /// them first. Kept for drains that read counts but none of its records (past its cap).
    consequence: bool,
}

/// What the drain has read so far.
#[derive(Default)]
struct DrainState {
    /// Record-area words already read.
    read: u32,
    /// Counter values at the last drain, per global site.
    baseline: Vec<u32>,
    /// Per printf site, the calls since the buffer was last started afresh that log lines have accounted
    /// for (shown, or counted in a "more not shown" line), and how many of those were past the site's
    /// record cap. See [`printf_not_shown`].
    printf_accounted: Vec<u32>,
    printf_over_cap: Vec<u32>,
    /// Totals per global site.
    totals: HashMap<u32, SiteTotal>,
    /// Records dropped (buffer full), in total.
    dropped: u64,
    /// Frames presented.
    frame: u64,
    /// A drain found a failing assert in abort mode and is writing its report before the process stops.
    aborting: bool,
    /// When a look for unread records first saw some (cleared by each drain that reads records).
    unread_since: Option<std::time::Instant>,
    /// The invocations of the latest NaN-operation records.
    nan_origins: NanOrigins,
}

/// How many NaN-operation records' invocations a drain remembers for the next ones.
const RECENT_NAN_ORIGINS: usize = 1024;

/// The invocations (with their shader) of the latest NaN-operation records, up to [`RECENT_NAN_ORIGINS`]:
/// kept across drains, since an invocation's store record can come in the drain after its operation's.
#[derive(Default)]
struct NanOrigins(std::collections::VecDeque<(u64, [u32; 4])>);

impl NanOrigins {
    fn note(&mut self, shader: u64, invocation: [u32; 4]) {
        if self.0.len() == RECENT_NAN_ORIGINS {
            self.0.pop_front();
        }
        self.0.push_back((shader, invocation));
    }

    /// The NaN-output sites among `stores` (site, shader, invocation: one per record) that an invocation
    /// with an operation's record stored to: the operation's line already said their NaN. Any of a site's
    /// records counts, not only the first read: each site keeps the records of the first invocations to
    /// reach it, and with many invocations racing, the one first at the operation need not be first at
    /// the store.
    fn already_said(&self, stores: &[(u32, u64, [u32; 4])]) -> Vec<u32> {
        let mut sites: Vec<u32> = stores
            .iter()
            .filter(|(_, shader, invocation)| self.0.contains(&(*shader, *invocation)))
            .map(|(site, _, _)| *site)
            .collect();
        sites.sort_unstable();
        sites.dedup();
        sites
    }
}

/// A global site's module and its index there.
type SiteOf = (Arc<InstrumentedShader>, u32);

/// The sites of this run's modules, by global index. Kept ranges ([`crate::site_map`]) may leave gaps, for
/// modules of earlier runs: a drain reads the counters of `counted` alone, however far apart they lie.
#[derive(Default)]
struct SiteTable {
    by_index: Vec<Option<SiteOf>>,
    /// The global indices that have a module and a counter (below [`SITES`]), ascending.
    counted: Vec<u32>,
}

impl SiteTable {
    fn get(&self, index: usize) -> Option<&SiteOf> {
        self.by_index.get(index)?.as_ref()
    }

    /// One past the highest global index with a module.
    fn len(&self) -> usize {
        self.by_index.len()
    }

    fn add(&mut self, shader: &Arc<InstrumentedShader>, base: u32, count: u32) {
        let end = (base as usize).saturating_add(count as usize);
        if self.by_index.len() < end {
            self.by_index.resize(end, None);
        }
        for i in 0..count {
            self.by_index[(base + i) as usize] = Some((shader.clone(), i));
        }
        // Ranges never overlap: the new one goes in whole where its first site belongs (at the end, for
        // a module new to the map), with no sort of the whole list per module.
        let at = self.counted.partition_point(|&s| s < base);
        let range = base..base.saturating_add(count).min(SITES);
        self.counted.splice(at..at, range);
    }
}

/// The error buffer of a device and what belongs to it.
pub struct ErrorBuffer {
    buffer: HostBuffer,
    options: Options,
    /// Where each module's sites start, kept between runs ([`crate::site_map`]); read from its file when
    /// the first module is instrumented, so that an app without one leaves no file.
    site_map: Mutex<Option<SiteMap>>,
    sites: RwLock<SiteTable>,
    /// By shader id and the fragment output components kept (empty: all; see
    /// [`ErrorBuffer::instrument_for_attachments`]).
    cache: Mutex<HashMap<(u64, Vec<u8>), Instrumentation>>,
    state: Mutex<DrainState>,
}

impl ErrorBuffer {
    /// Creates the buffer on `device` (which has `bufferDeviceAddress` enabled) and writes its header.
    pub fn new(device: &Device) -> Result<Self, String> {
        let memory_type = device
            .capabilities
            .error_memory_type
            .ok_or("no host-visible coherent memory type")?;
        let words = LAYOUT.words();
        let size = (words * 4) as u64;
        let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_DST;
        // The buffer's address is baked into every instrumented module: on a CPU device (host pointers
        // as addresses) it is put at the same address each run, so that the modules are the same and the
        // driver's shader cache finds them.
        let fixed = device.capabilities.host_import.then(|| {
            // SAFETY: as below; VK_EXT_external_memory_host is enabled (`host_import`).
            unsafe {
                HostBuffer::new_at_fixed_address(
                    device.handle,
                    &device.next,
                    size,
                    usage,
                    memory_type,
                )
            }
            .inspect_err(|e| {
                debug!("error buffer at a fixed address: {e}; at the driver's address instead")
            })
            .ok()
        });
        let buffer = match fixed.flatten() {
            Some(buffer) => {
                debug!(
                    "error buffer at {:#x}: host memory at a fixed address",
                    buffer.address.unwrap_or(0)
                );
                buffer
            }
            // SAFETY: a live device and its dispatch table; host-visible coherent memory; a device address
            // is allowed because bufferDeviceAddress is enabled.
            None => unsafe {
                HostBuffer::new(device.handle, &device.next, size, usage, memory_type, true)
            }
            .map_err(|e| e.to_string())?,
        };
        for (i, w) in LAYOUT.header().iter().enumerate() {
            buffer.write(i, *w);
        }
        let config = crate::config();
        let loop_clock = match (config.loop_ms, device.capabilities.shader_clock) {
            (Some(ms), Some(scope)) => Some(LoopClock {
                scope,
                budget_ticks: u64::from(ms) * TICKS_PER_MS,
            }),
            _ => None,
        };
        let options = Options {
            error_buffer_address: buffer.address.unwrap_or(0),
            site_base: 0,
            // The sizes as constants in the record writers on CPU devices only: on llvmpipe each header
            // read is a loop over the lanes, and pipelines compiled 10-20% faster with constants; on an H100
            // the same writers, though never run, made NVIDIA's fragment code slower (NaN `ops` 1.227x ->
            // 1.289x, asserts 1.026x -> 1.029x; README).
            buffer_layout: device.description.cpu.then_some(LAYOUT),
            asserts: config.assert != AssertMode::Off,
            printf: config.printf,
            nan: config.nan,
            assert_crash: config.assert == AssertMode::Crash,
            loops: config.loops,
            loop_limit: config.loop_limit,
            loop_clock,
            int_checks: config.int_checks,
            records_at_end: match config.nan_records {
                NanRecords::End => true,
                NanRecords::Fired => false,
                // On a GPU, records where the check fires: on NVIDIA's compiler the end-of-invocation flush
                // cost as much to compile as a writer per site, in each shape tried (README).
                NanRecords::Auto => device.description.cpu,
            },
            // lavapipe of Mesa 22.3 crashed at a draw for a stored value the checks used several times.
            nan_values_through_select: device.description.cpu,
            ..Options::default()
        };
        Ok(Self {
            buffer,
            options,
            site_map: Mutex::new(None),
            sites: RwLock::new(SiteTable::default()),
            cache: Mutex::new(HashMap::new()),
            state: Mutex::new(DrainState::default()),
        })
    }

    /// Whether the engine could change `words` at all (NaN checks on, or printf/asserts/debug info in the
    /// module): most modules of most apps have none, and skip the engine.
    pub fn needs(&self, words: &[u32]) -> bool {
        blackbox_engine::needs_instrumentation(words, &self.options)
    }

    /// Instruments `words`, or gives the cached result for identical words (so the same module always gets
    /// the same output: driver pipeline caches key on it). Sites are numbered across the device, each
    /// module keeping its range from run to run ([`crate::site_map`]).
    /// The second value says whether this call did the work (so a refusal is logged once per module).
    pub fn instrument(&self, words: &[u32]) -> (Instrumentation, bool) {
        self.instrument_for_attachments(words, Vec::new())
    }

    /// As [`ErrorBuffer::instrument`], for one graphics pipeline whose colour attachments keep these
    /// components of each fragment output location
    /// ([`blackbox_engine::Options::fragment_output_components`]); cached per id and components.
    pub fn instrument_for_attachments(
        &self,
        words: &[u32],
        kept: Vec<u8>,
    ) -> (Instrumentation, bool) {
        let key = (blackbox_engine::ShaderId::of(words).0, kept);
        if let Some(cached) = self.cache.lock().get(&key) {
            return (cached.clone(), false);
        }
        // One module at a time: its sites must take a free range.
        let mut map = self.site_map.lock();
        if let Some(cached) = self.cache.lock().get(&key) {
            return (cached.clone(), false);
        }
        let map = map.get_or_insert_with(|| {
            SiteMap::open(
                crate::config().cache_dir.as_deref(),
                crate::site_map::settings_digest(&self.options),
                SITES,
            )
        });
        let id = blackbox_engine::ShaderId(key.0);
        let instrument = |site_base| {
            let options = Options {
                site_base,
                fragment_output_components: key.1.clone(),
                ..self.options.clone()
            };
            blackbox_engine::instrument_with_id(words, id, &options)
        };
        let mut base = map.base(&key);
        let mut result = instrument(base);
        if let Ok(out) = &result {
            if !map.assign(&key, base, out.info.sites.len() as u32) {
                // Its range from an earlier run no longer fits what the engine makes of it now.
                base = map.next();
                result = instrument(base);
                if let Ok(out) = &result {
                    map.assign(&key, base, out.info.sites.len() as u32);
                }
            }
        }
        let result = result
            .map(|out| {
                let shader = Arc::new(InstrumentedShader {
                    words: out.words,
                    info: out.info,
                    site_base: base,
                });
                let count = shader.info.sites.len() as u32;
                self.sites.write().add(&shader, base, count);
                shader
            })
            .map_err(|e| e.to_string());
        self.cache.lock().insert(key, result.clone());
        (result, true)
    }

    /// Frees the buffer.
    ///
    /// # Safety
    /// No pending work may use it.
    pub unsafe fn destroy(&mut self, device: &Device) {
        // SAFETY: no pending work uses the buffer (the caller's contract), on the device that made it.
        unsafe { self.buffer.destroy(device.handle, &device.next) };
    }
}

/// Reads what shaders reported since the last drain, logs it, and keeps totals for reports.
pub fn drain(device: &Arc<Device>) {
    drain_within(device, None);
}

/// As [`drain`], giving up (and draining nothing) when a lock cannot be had within `wait`: for reports
/// written from a signal handler, which may have interrupted a drain on its own thread.
pub fn drain_within(device: &Arc<Device>, wait: Option<std::time::Duration>) {
    if drain_unless_aborting(device, wait) {
        wait_for_abort();
    }
}

/// The drain itself. Returns whether another thread is stopping the app for a failing assert (abort mode):
/// then this app thread must not go back to the app, which would read results the assert said are wrong.
/// The locks are released on return, so that the aborting thread's report can read what it needs.
fn drain_unless_aborting(device: &Arc<Device>, wait: Option<std::time::Duration>) -> bool {
    let guard = match wait {
        None => device.error_buffer.read(),
        Some(wait) => match device.error_buffer.try_read_for(wait) {
            Some(g) => g,
            None => return false,
        },
    };
    let Some(eb) = guard.as_ref() else {
        return false;
    };
    // Frame capture names the frame whose work wrote what this drain reads; asked at every drain (not from
    // a signal handler, which must not wait for the queues' locks), so each sees what finished since the last.
    let attribution = device
        .frames
        .as_ref()
        .filter(|_| wait.is_none())
        .map(|frames| frames.attribute(device));
    // With nothing pending, nothing can be writing: this drain reads final counts and may start the buffer
    // afresh. Only such a drain takes the submit gate, held to the end to keep new submissions out; with
    // work pending the counts read are only the counts so far, and nothing is reset. Pending is checked
    // again under the gate: a submission may have gone down in between. Bounded wait: a drain from a
    // signal handler may have interrupted a submission holding the gate.
    let gate = (!device.has_pending())
        .then(|| {
            device
                .submit_gate
                .try_write_for(std::time::Duration::from_millis(200))
        })
        .flatten()
        .filter(|_| !device.has_pending());
    let quiescent = gate.is_some();
    let mut state = match wait {
        None => eb.state.lock(),
        Some(wait) => match eb.state.try_lock_for(wait) {
            Some(s) => s,
            None => return false,
        },
    };
    // Set by another thread (the monitor, or another app thread), or this drain finds the assert itself.
    let aborting_elsewhere = wait.is_none() && state.aborting;
    let buf = &eb.buffer;
    let sites = match wait {
        None => eb.sites.read(),
        Some(wait) => match eb.sites.try_read_for(wait) {
            Some(s) => s,
            None => return false,
        },
    };
    let site_count = sites.len().min(SITES as usize);
    let counters_offset = buf.read(header::COUNTERS_OFFSET) as usize;
    let records_offset = buf.read(header::RECORDS_OFFSET) as usize;
    let capacity = buf.read(header::RECORDS_CAPACITY);

    // Counts since the last drain.
    state.baseline.resize(site_count, 0);
    state.printf_accounted.resize(site_count, 0);
    state.printf_over_cap.resize(site_count, 0);
    let mut deltas: Vec<(u32, u32)> = Vec::new();
    for site in sites.counted.iter().map(|&s| s as usize) {
        let now = buf.read(counters_offset + site);
        let delta = now.wrapping_sub(state.baseline[site]);
        if delta > 0 {
            deltas.push((site as u32, delta));
            state.baseline[site] = now;
        }
    }
    // New records, up to the first one not fully written yet.
    let cursor = buf.read(header::CURSOR).min(capacity);
    let dropped = buf.read(header::DROPPED) as u64;
    let is_printf = |site: usize| {
        sites.get(site).is_some_and(|(shader, local)| {
            shader
                .info
                .sites
                .get(*local as usize)
                .is_some_and(|s| matches!(s.kind, SiteKind::Printf))
        })
    };
    // Printf calls whose records have not come (in flight, or dropped): settled only by a drain with
    // nothing pending, when every record that will come is there.
    let unsettled: Vec<u32> = if quiescent {
        sites
            .counted
            .iter()
            .map(|&s| s as usize)
            .filter(|&s| state.printf_accounted[s] < state.baseline[s] && is_printf(s))
            .map(|s| s as u32)
            .collect()
    } else {
        Vec::new()
    };
    // The counts can all be in while records are still being written, or drops counted: a drain with no
    // new counts still reads those (the counts go up before a record is allocated, and a drop is counted
    // after).
    if deltas.is_empty() && cursor <= state.read && dropped == state.dropped && unsettled.is_empty()
    {
        return aborting_elsewhere;
    }
    let mut first_record: HashMap<u32, record::RawRecord> = HashMap::new();
    // NaN-output records' sites and invocations (with their shader), checked against the NaN-operation
    // records once all are read.
    let mut output_records: Vec<(u32, u64, [u32; 4])> = Vec::new();
    let mut printf_lines: HashMap<u32, Vec<String>> = HashMap::new();
    // Up to the first record not fully written yet (read it next time).
    let read = record::read_records(|i| buf.read(i), records_offset, state.read, cursor);
    // The pixels of fragment records, per site, for frame reports.
    let mut pixels: HashMap<u32, Vec<[u32; 2]>> = HashMap::new();
    for raw in read.records {
        if attribution.is_some() && raw.stage == Some(Stage::Fragment) {
            let list = pixels.entry(raw.site).or_default();
            let pixel = [raw.invocation[0], raw.invocation[1]];
            if !list.contains(&pixel) {
                list.push(pixel);
            }
        }
        if let Some((shader, local)) = sites.get(raw.site as usize) {
            if let Some(site) = shader.info.sites.get(*local as usize) {
                match site.kind {
                    SiteKind::Printf => printf_lines
                        .entry(raw.site)
                        .or_default()
                        .push(printf_text(site, &raw)),
                    SiteKind::NanOp { .. } => {
                        state.nan_origins.note(shader.info.id.0, raw.invocation)
                    }
                    SiteKind::NanOutput { .. } => {
                        output_records.push((raw.site, shader.info.id.0, raw.invocation))
                    }
                    _ => {}
                }
            }
        }
        first_record.entry(raw.site).or_insert(raw);
    }
    state.read = read.next;
    state.unread_since = None;
    // Printf sites with records or calls to settle but no new count have their lines too.
    let mut work = deltas;
    for site in printf_lines.keys().copied().chain(unsettled) {
        if !work.iter().any(|&(s, _)| s == site) {
            work.push((site, 0));
        }
    }
    work.sort_unstable();
    let newly_dropped = dropped.saturating_sub(state.dropped);
    state.dropped = dropped;

    // The frame in log lines: with frame capture, the frame the errors are attributed to; without it, the
    // presents before this drain.
    let frame = attribution.as_ref().map_or(state.frame, |(f, _)| *f);
    let mut abort_message = None;
    // A NaN an operation made is also caught where it is stored; the operation's line says it first, so the
    // store's line is a debug line when an invocation of the same shader has records of both.
    let consequences = state.nan_origins.already_said(&output_records);
    let mut printf_budget = PRINTF_LINES_PER_DRAIN;
    let repeats = crate::config().log_repeats;
    let mut frame_errors: Vec<(u32, blackbox_report::FrameError)> = Vec::new();
    for (site_index, delta) in work {
        let Some((shader, local)) = sites.get(site_index as usize) else {
            continue;
        };
        let Some(site) = shader.info.sites.get(*local as usize) else {
            continue;
        };
        // Looked up only for a line that is logged: a site past its repeats is only counted.
        let pipelines = || pipelines_using(device, &shader.info);
        let printf = matches!(site.kind, SiteKind::Printf);
        let message = match printf.then(|| printf_lines.get(&site_index)) {
            Some(lines) => {
                let pipelines = pipelines();
                let lines = lines.map(Vec::as_slice).unwrap_or_default();
                // printf: one line per distinct text, in order of first appearance, with its count among
                // the records read.
                let mut counts: Vec<(&str, u32)> = Vec::new();
                let mut index: HashMap<&str, usize> = HashMap::new();
                for l in lines {
                    match index.get(l.as_str()) {
                        Some(&i) => counts[i].1 += 1,
                        None => {
                            index.insert(l, counts.len());
                            counts.push((l, 1));
                        }
                    }
                }
                let mut shown = 0;
                for (text, c) in counts.iter().take(printf_budget) {
                    info!(
                        "{}{}{}",
                        untrusted::shown(text),
                        if *c > 1 {
                            format!(" x{c}")
                        } else {
                            String::new()
                        },
                        pipelines
                    );
                    shown += c;
                }
                printf_budget = printf_budget.saturating_sub(counts.len());
                let s = site_index as usize;
                let not_shown = printf_not_shown(
                    PrintfTally {
                        calls: state.baseline[s],
                        accounted: state.printf_accounted[s],
                        over_cap: state.printf_over_cap[s],
                        cap: eb.options.printf_records_per_site,
                    },
                    lines.len() as u32,
                    shown,
                    quiescent,
                );
                state.printf_accounted[s] += lines.len() as u32 + not_shown.past_records;
                state.printf_over_cap[s] += not_shown.over_cap;
                let more = lines.len() as u32 - shown + not_shown.past_records;
                if more > 0 {
                    info!(
                        "printf at {} (site {}): {more} more call(s) not shown (records are capped per site, \
                         log lines per drain; the count is exact){}",
                        untrusted::shown(&location(site)),
                        site.local_index,
                        pipelines
                    );
                }
                counts
                    .first()
                    .map(|(t, _)| t.to_string())
                    .unwrap_or_default()
            }
            None if delta == 0 => continue,
            None => {
                let raw = first_record.get(&site_index).cloned().or_else(|| {
                    state
                        .totals
                        .get(&site_index)
                        .and_then(|t| t.first_record.clone())
                });
                if raw.is_none() && !quiescent && dropped == 0 {
                    // The count came in before its record was written (the counts go up first): it
                    // waits for the next drain, which reads both. A drain with nothing pending reports
                    // it whatever it finds, and so does any drain once records have been dropped (its
                    // record may be one of them).
                    let s = site_index as usize;
                    state.baseline[s] = state.baseline[s].wrapping_sub(delta);
                    continue;
                }
                let raw = raw.as_ref();
                let text = describe(site, raw, &shader.info);
                let total = state.totals.entry(site_index).or_default();
                if output_records.iter().any(|(s, _, _)| *s == site_index) {
                    total.consequence = consequences.binary_search(&site_index).is_ok();
                }
                // Set only for NaN-output sites: only they have `output_records`.
                let consequence = total.consequence;
                match repeat_line(total.lines, repeats) {
                    RepeatLine::Log { last } => {
                        total.lines += 1;
                        let line = format!(
                            "{text} x{delta}{}{}",
                            pipelines(),
                            if frame > 0 {
                                format!(" (frame {frame})")
                            } else {
                                String::new()
                            }
                        );
                        let line = if last {
                            format!(
                                "{line}; later ones of this site are counted, not logged \
                                 (VK_BLACKBOX_LOG_REPEATS={repeats})"
                            )
                        } else {
                            line
                        };
                        if consequence {
                            debug!("{} (the operation above made it)", untrusted::shown(&line));
                        } else {
                            warn!("{}", untrusted::shown(&line));
                        }
                    }
                    RepeatLine::Count => total.not_logged += u64::from(delta),
                }
                let kind = error_kind(site, &text);
                if attribution.is_some() && !consequence && kind != "loop" {
                    frame_errors.push((
                        site_index,
                        blackbox_report::FrameError {
                            kind: kind.to_owned(),
                            message: text.clone(),
                            shader: shader.info.id.to_string(),
                            location: site.location.as_ref().map(|l| l.to_string()),
                            count: u64::from(delta),
                            pixels: pixels.remove(&site_index).unwrap_or_default(),
                        },
                    ));
                }
                if matches!(site.kind, SiteKind::Assert { .. })
                    && crate::config().assert == AssertMode::Abort
                {
                    abort_message.get_or_insert(text.clone());
                }
                text
            }
        };
        let total = state.totals.entry(site_index).or_default();
        total.count += u64::from(delta);
        total.first_message.get_or_insert(message);
        if total.first_record.is_none() {
            total.first_record = first_record.get(&site_index).cloned();
        }
    }
    if newly_dropped > 0 {
        warn!("{newly_dropped} shader error record(s) dropped: the error buffer is full (the counts above stay exact)");
    }

    if quiescent {
        for i in 0..cursor as usize {
            buf.write(records_offset + i, 0);
        }
        for &site in &sites.counted {
            buf.write(counters_offset + site as usize, 0);
        }
        buf.write(header::CURSOR, 0);
        buf.write(header::DROPPED, 0);
        state.read = 0;
        state.dropped = 0;
        state.baseline.iter_mut().for_each(|b| *b = 0);
        state.printf_accounted.iter_mut().for_each(|a| *a = 0);
        state.printf_over_cap.iter_mut().for_each(|o| *o = 0);
    }

    let abort = abort_message.filter(|_| !state.aborting);
    if abort.is_some() {
        state.aborting = true;
    }
    drop(state);
    drop(sites);
    drop(gate);
    drop(guard);
    if let (Some(frames), Some((frame, note))) = (&device.frames, attribution) {
        frames.on_shader_errors(device, frame, note, frame_errors);
    }
    if let Some(message) = abort {
        abort_on_assert(device, message);
    }
    aborting_elsewhere
}

/// How long an app thread waits for another thread's abort (its report written, then SIGABRT).
const ABORT_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Holds an app thread while another thread writes an assert's report and aborts the process (which ends
/// the sleep). Bounded, so that an abort that never comes cannot hang the app: it then goes on, with an
/// error in the log.
fn wait_for_abort() {
    std::thread::sleep(ABORT_WAIT);
    error!(
        "a failing assert was to stop the app (VK_BLACKBOX_ASSERT=abort), but the process did not stop within \
         {} s; the app goes on",
        ABORT_WAIT.as_secs()
    );
}

/// A site's kind as reports name it (`nan`, `inf`, `assert`, ...), from the site and its message.
fn error_kind(site: &Site, message: &str) -> &'static str {
    match &site.kind {
        SiteKind::Assert { .. } => "assert",
        SiteKind::Printf => "printf",
        SiteKind::LoopBudget { .. } => "loop",
        SiteKind::IntOp { .. } => "integer",
        SiteKind::IndexOutOfRange { .. } => "index",
        _ if message.starts_with("Inf") => "inf",
        _ => "nan",
    }
}

/// `VK_BLACKBOX_ASSERT=abort`: a report, then the app stops like at a failed CPU assert.
fn abort_on_assert(device: &Arc<Device>, message: String) {
    error!(
        "stopping the app at the first failing shader assert (VK_BLACKBOX_ASSERT=abort): {}",
        untrusted::shown(&message)
    );
    // The app stops even where the report fails: other threads wait for this abort (`wait_for_abort`).
    crate::contained("writing the assert's report", || {
        let built = crate::report::build(device, blackbox_report::Kind::Assert, message, None);
        crate::report::write(&built);
    });
    crate::signals::abort_without_report();
}

/// `printf at file:line: text (invocation)`.
fn printf_text(site: &Site, raw: &record::RawRecord) -> String {
    let format = site.format.as_deref().unwrap_or("");
    let text = record::format_printf(format, &raw.payload, &site.values);
    format!(
        "printf at {}: {text} [{}, site {}]",
        location(site),
        invocation(raw),
        site.local_index
    )
}

/// Where a site is: its source line, or without one its instruction as `spirv-dis --raw-id` writes it
/// (with both where two sites share a line): the engine's [`Site::place`], unique in the module.
fn location(site: &Site) -> String {
    if !site.place.is_empty() {
        return site.place.clone();
    }
    site.location
        .as_ref()
        .map_or_else(|| "unknown location".to_owned(), |l| l.to_string())
}

/// `site N (function f, entry point main (compute))`: the number of `<id>.sites.txt` and
/// `blackbox shader-info --sites`, and the code it is in.
fn site_name(site: &Site) -> String {
    format!("site {} ({})", site.local_index, site.scope())
}

/// The invocation words as the stage defines them.
fn invocation(raw: &record::RawRecord) -> String {
    let [a, b, c, _] = raw.invocation;
    match raw.stage {
        Some(Stage::Fragment) => format!("pixel ({a}, {b})"),
        Some(Stage::Vertex) => format!("vertex {a}, instance {b}"),
        Some(Stage::TessellationControl) | Some(Stage::Geometry) => {
            format!("invocation {a}, primitive {b}")
        }
        Some(Stage::TessellationEvaluation) => format!("primitive {b}"),
        _ => format!("invocation ({a}, {b}, {c})"),
    }
}

/// A checked operation as the log names it: `sqrt()`; a shape checked as one site is named whole already
/// (`exp() / exp()`).
fn called(op: &str) -> std::borrow::Cow<'_, str> {
    if op.ends_with(')') {
        op.into()
    } else {
        format!("{op}()").into()
    }
}

/// One log line's text for a site, from its first record of this drain, else the first the site had; with
/// none read yet, the line says what the site checks and that its values were not read.
fn describe(site: &Site, raw: Option<&record::RawRecord>, info: &ShaderInfo) -> String {
    let at = location(site);
    let values = raw
        .map(|r| record::format_values(&r.payload, &site.values))
        .unwrap_or_default();
    let who = raw
        .map(|r| format!(", {}", invocation(r)))
        .unwrap_or_default();
    let shader = format!(" in shader {}, {}", info.id, site_name(site));
    const NOT_READ: &str = "no values read (its record was still being written, or dropped)";
    match &site.kind {
        SiteKind::NanOp { op } if raw.is_none() => {
            let op = called(op);
            format!("NaN or Inf from {op} at {at}: {NOT_READ}{shader}")
        }
        SiteKind::NanOutput { what } if raw.is_none() => {
            format!("NaN or Inf in {what} at {at}: {NOT_READ}{shader}")
        }
        SiteKind::NanOp { op } => {
            let (operands, result) = split_result(site, &values);
            let what = if result.iter().any(|v| v.contains("NaN")) {
                "NaN"
            } else {
                "Inf"
            };
            let result = result.join(", ");
            let op = called(op);
            format!("{what} from {op} at {at}: operands {operands} -> {result}{who}{shader}")
        }
        SiteKind::NanOutput { what } => {
            let kind = if values.iter().any(|v| v.contains("NaN")) {
                "NaN"
            } else {
                "Inf"
            };
            format!(
                "{kind} in {what} at {at}: {}{who}{shader}",
                values.join(", ")
            )
        }
        SiteKind::Assert { id } => {
            let detail = match (&site.format, raw) {
                (Some(f), Some(r)) if !f.is_empty() => {
                    record::format_printf(f, &r.payload, &site.values)
                }
                _ if values.is_empty() => String::new(),
                _ => format!("values {}", values.join(", ")),
            };
            format!("assert {id} failed at {at}: {detail}{who}{shader}")
        }
        SiteKind::Printf => format!("printf at {at}{who}{shader}"),
        SiteKind::LoopBudget { header, depth } => {
            let at = loop_location(site, *header, *depth);
            let payload = raw.map(|r| r.payload.as_slice()).unwrap_or_default();
            let word = |i: usize| payload.get(i).copied().unwrap_or(0);
            let iterations = word(0);
            let reason = word(1);
            let ticks = u64::from(word(2)) | (u64::from(word(3)) << 32);
            let mut why = Vec::new();
            if reason & record::LOOP_REASON_ITERATIONS != 0 {
                why.push(format!(
                    "{iterations} iterations (VK_BLACKBOX_LOOP_LIMIT={})",
                    crate::config().loop_limit
                ));
            }
            if reason & record::LOOP_REASON_TIME != 0 {
                why.push(format!(
                    "{:.1} ms in loops (VK_BLACKBOX_LOOP_MS={}; {iterations} iterations of this one)",
                    ticks as f64 / TICKS_PER_MS as f64,
                    crate::config().loop_ms.unwrap_or(0)
                ));
            }
            if why.is_empty() {
                why.push(format!("{iterations} iterations"));
            }
            // The induction values follow the three fixed ones.
            let induction: Vec<String> = site
                .values
                .iter()
                .zip(&values)
                .skip(3)
                .map(|(layout, value)| format!("{} = {value}", layout.name))
                .collect();
            let induction = if induction.is_empty() {
                String::new()
            } else {
                format!(" ({})", induction.join(", "))
            };
            let then = match crate::config().loops {
                LoopMode::Break => "; the invocation left it (VK_BLACKBOX_LOOPS=break)",
                _ => "; it went on (VK_BLACKBOX_LOOPS=report)",
            };
            if raw.is_none() {
                // Full records are capped per site; the count stays exact.
                return format!("loop at {at} passed its budget{shader}{then}");
            }
            format!(
                "loop at {at} passed its budget: {}{induction}{who}{shader}{then}",
                why.join(" and ")
            )
        }
        SiteKind::IntOp { op } => {
            let what = raw.map_or("undefined integer operation", |r| int_case(op, site, r));
            let operands = named_values(site, &values);
            format!("{what} at {at}: {op} {operands}{who}{shader}")
        }
        SiteKind::IndexOutOfRange { op } => {
            let operands = named_values(site, &values);
            format!("index out of range at {at}: {op} {operands}{who}{shader}")
        }
        _ => format!("shader error at {at}{who}{shader}"),
    }
}

/// `name value, name value` for a payload.
fn named_values(site: &Site, values: &[String]) -> String {
    site.values
        .iter()
        .zip(values)
        .map(|(layout, value)| format!("{} {value}", layout.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where a loop is ([`location`]: its source line, else its merge instruction), with how deeply it is
/// nested.
fn loop_location(site: &Site, header: u32, depth: u32) -> String {
    let mut at = match (&site.location, site.place.is_empty()) {
        (None, true) => format!("the loop of header %{header}"),
        _ => location(site),
    };
    if depth > 0 {
        at.push_str(&format!(" (nested {depth} deep)"));
    }
    at
}

/// Which undefined case an integer record shows: the operands are its payload (first operand, second).
fn int_case(op: &str, site: &Site, raw: &record::RawRecord) -> &'static str {
    let Some(layout) = site.values.get(1) else {
        return "undefined integer operation";
    };
    let second_words = layout.words();
    let first_words = site.values.first().map_or(0, |l| l.words());
    let second = raw
        .payload
        .get(first_words..first_words + second_words)
        .unwrap_or_default();
    if op.starts_with("Shift") {
        return "shift by the bit width or more";
    }
    let zero_component = second
        .chunks(layout.scalar.words())
        .any(|c| c.iter().all(|&w| w == 0));
    if zero_component {
        if op.ends_with("Div") {
            "integer division by zero"
        } else {
            "integer remainder by zero"
        }
    } else {
        "signed integer overflow (INT_MIN / -1)"
    }
}

/// Splits a NaN-op payload into operand texts and result texts by the value names.
fn split_result(site: &Site, values: &[String]) -> (String, Vec<String>) {
    let mut operands = Vec::new();
    let mut result = Vec::new();
    for (layout, value) in site.values.iter().zip(values) {
        if layout.name == "result" {
            result.push(value.clone());
        } else {
            operands.push(value.clone());
        }
    }
    (operands.join(", "), result)
}

/// ` [pipeline "name"]` for the named pipelines that use a shader.
fn pipelines_using(device: &Device, info: &ShaderInfo) -> String {
    let id = info.id.to_string();
    let names = device
        .shaders
        .pipeline_names_using(&id, |h| device.name_of(h));
    if names.is_empty() {
        String::new()
    } else {
        format!(" [pipeline {}]", untrusted::shown(&names.join(", ")))
    }
}

/// Where a printf site stands since the buffer was last started afresh.
#[derive(Debug, Clone, Copy)]
struct PrintfTally {
    /// Calls counted.
    calls: u32,
    /// Calls log lines have accounted for.
    accounted: u32,
    /// Of those, calls past the record cap.
    over_cap: u32,
    /// Records kept per site.
    cap: u32,
}

/// Calls a drain accounts for without their records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NotShown {
    /// Calls whose records never come, beyond the records read.
    past_records: u32,
    /// Of those, calls past the record cap.
    over_cap: u32,
}

/// The calls of a printf site a drain counts in its "more not shown" line, beyond the records it read
/// (`records`, of which `shown` are in lines). A call counts before its record is allocated, so a drain
/// can read a record whose call it has not counted yet, or count a call whose record comes later: counting
/// "calls since the last drain minus records shown" counted such a call twice. So a drain with work
/// pending accounts only for what has no record for sure (calls past the cap), and a drain with nothing
/// pending, when every record that will come is there, for everything left (records dropped as well).
/// Over the drains between two fresh starts, the calls shown and not shown add up to the calls counted.
fn printf_not_shown(tally: PrintfTally, records: u32, shown: u32, quiescent: bool) -> NotShown {
    debug_assert!(shown <= records);
    let over_cap_now = tally.calls.saturating_sub(tally.cap);
    if quiescent {
        let past_records = tally.calls.saturating_sub(tally.accounted + records);
        NotShown {
            past_records,
            over_cap: over_cap_now
                .saturating_sub(tally.over_cap)
                .min(past_records),
        }
    } else {
        let over_cap = over_cap_now.saturating_sub(tally.over_cap);
        NotShown {
            past_records: over_cap,
            over_cap,
        }
    }
}

/// How long records of work still running wait before the monitor thread drains them. Without it a poll
/// that came while a draw was half done split the draw's firings of a site over two log lines (every run of
/// a 250 ms dispatch; once in CI for a 64x64 draw); with it a draw or dispatch is logged once, when it
/// finishes, and a shader that runs for long (or hangs) still gets its lines once a second.
const UNREAD_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// Whether shaders wrote records that no drain has read yet: one word of the buffer, for an app's poll that
/// saw work finish (an event set, query results ready), whose results may be those records' work. `false`
/// when a drain is under way (it will read them).
pub fn has_unread_records(device: &Device) -> bool {
    unread_for(device, std::time::Duration::ZERO)
}

/// As [`has_unread_records`], for the monitor thread, which saw no work finish: only once the records have
/// waited [`UNREAD_SETTLE`], or at once in abort mode, where the first failing assert must stop the app
/// while the work that wrote it still runs.
pub fn records_waiting(device: &Device) -> bool {
    let settle = match crate::config().assert {
        AssertMode::Abort => std::time::Duration::ZERO,
        _ => UNREAD_SETTLE,
    };
    unread_for(device, settle)
}

/// Whether records no drain has read have been there for `settle` (since a call here first saw them).
fn unread_for(device: &Device, settle: std::time::Duration) -> bool {
    let Some(guard) = device.error_buffer.try_read() else {
        return false;
    };
    let Some(eb) = guard.as_ref() else {
        return false;
    };
    let Some(mut state) = eb.state.try_lock() else {
        return false;
    };
    if eb.buffer.read(header::CURSOR) == state.read {
        return false;
    }
    let now = std::time::Instant::now();
    let since = *state.unread_since.get_or_insert(now);
    now.duration_since(since) >= settle
}

/// Whether a site's next firing gets a log line: the first `repeats` do (0: all), the last of them saying
/// so; later ones are counted.
#[derive(Debug, PartialEq, Eq)]
enum RepeatLine {
    Log { last: bool },
    Count,
}

fn repeat_line(lines_so_far: u32, repeats: u32) -> RepeatLine {
    match repeats {
        0 => RepeatLine::Log { last: false },
        n if lines_so_far < n => RepeatLine::Log {
            last: lines_so_far + 1 == n,
        },
        _ => RepeatLine::Count,
    }
}

/// When the device is destroyed (idle): a last drain, then one closing line per site whose firings went
/// on past its log lines, with how many were not logged and the total, so that the log's counts add up.
pub fn close(device: &Arc<Device>) {
    drain(device);
    let guard = device.error_buffer.read();
    let Some(eb) = guard.as_ref() else { return };
    let state = eb.state.lock();
    let sites = eb.sites.read();
    let mut silenced: Vec<(u32, &SiteTotal)> = state
        .totals
        .iter()
        .filter(|(_, t)| t.not_logged > 0)
        .map(|(&i, t)| (i, t))
        .collect();
    silenced.sort_unstable_by_key(|&(i, _)| i);
    for (index, total) in silenced {
        let Some((shader, _)) = sites.get(index as usize) else {
            continue;
        };
        warn!(
            "{} x{} more, not logged one by one after its {} lines (VK_BLACKBOX_LOG_REPEATS), {} in all{}",
            untrusted::shown(total.first_message.as_deref().unwrap_or_default()),
            total.not_logged,
            total.lines,
            total.count,
            pipelines_using(device, &shader.info)
        );
    }
}

/// A frame ended (`vkQueuePresentKHR`).
pub fn end_frame(device: &Arc<Device>) {
    if let Some(eb) = device.error_buffer.read().as_ref() {
        eb.state.lock().frame += 1;
    }
}

/// The shader errors reported so far, for a report, each lock waited for at most `wait`: `None` when one
/// could not be had.
pub fn reported(
    device: &Device,
    wait: std::time::Duration,
) -> Option<Vec<blackbox_report::ShaderError>> {
    let guard = device.error_buffer.try_read_for(wait)?;
    let Some(eb) = guard.as_ref() else {
        return Some(Vec::new());
    };
    let state = eb.state.try_lock_for(wait)?;
    let sites = eb.sites.try_read_for(wait)?;
    let mut out: Vec<_> = state
        .totals
        .iter()
        .filter_map(|(&index, total)| {
            let (shader, local) = sites.get(index as usize)?;
            let site = shader.info.sites.get(*local as usize)?;
            let kind = error_kind(site, total.first_message.as_deref().unwrap_or(""));
            Some(blackbox_report::ShaderError {
                kind: kind.to_owned(),
                message: total.first_message.clone().unwrap_or_default(),
                shader: shader.info.id.to_string(),
                location: site.location.as_ref().map(|l| l.to_string()),
                count: total.count,
            })
        })
        .collect();
    out.sort_by_key(|e| std::cmp::Reverse(e.count));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_nan_is_said_by_its_operation_whichever_invocation_came_first_at_each() {
        const SHADER: u64 = 0xdb41;
        let inv = |x: u32| [x, 0, 0, 0];
        let mut origins = NanOrigins::default();
        // The operation's records: invocations 0 and 2048 (0 first); the first store record read is
        // 2048's, as in the CI run where both lines were logged.
        origins.note(SHADER, inv(0));
        origins.note(SHADER, inv(2048));
        let stores = [
            (1, SHADER, inv(2048)),
            (1, SHADER, inv(0)),
            // Another store site whose invocations made no NaN of their own, in this shader...
            (3, SHADER, inv(7)),
            // ...and the same invocation number in another shader.
            (5, 0xbeef, inv(0)),
        ];
        assert_eq!(origins.already_said(&stores), [1]);
        // Only the recent operations are remembered.
        for x in 0..RECENT_NAN_ORIGINS as u32 {
            origins.note(SHADER, inv(10_000 + x));
        }
        assert!(origins.already_said(&stores).is_empty());
        assert_eq!(origins.0.len(), RECENT_NAN_ORIGINS);
    }

    #[test]
    fn site_table_keeps_the_counted_sites_in_order_whatever_order_ranges_come_in() {
        let shader = Arc::new(InstrumentedShader {
            words: Vec::new(),
            info: ShaderInfo {
                id: blackbox_engine::ShaderId(1),
                spirv_version: (1, 0),
                entry_points: Vec::new(),
                sources: Vec::new(),
                debug_names: Vec::new(),
                sites: Vec::new(),
                fragment_outputs: Vec::new(),
            },
            site_base: 0,
        });
        let mut table = SiteTable::default();
        // Kept ranges come in any order; one reaches past the counters.
        for (base, count) in [(10, 3), (0, 2), (SITES - 2, 4), (5, 1), (13, 0)] {
            table.add(&shader, base, count);
        }
        assert_eq!(
            table.counted,
            [0, 1, 5, 10, 11, 12, SITES - 2, SITES - 1],
            "every site below SITES once, ascending"
        );
        assert_eq!(table.len(), SITES as usize + 2);
        assert_eq!(table.get(11).map(|(_, local)| *local), Some(1));
        assert!(table.get(3).is_none(), "a gap: no module of this run");
    }

    /// Plays drains over a site: each `(calls counted so far, records read, shown, quiescent)`; returns the
    /// calls accounted for by lines (shown plus "more not shown") in all.
    fn play(cap: u32, drains: &[(u32, u32, u32, bool)]) -> u32 {
        let (mut accounted, mut over_cap, mut lines) = (0, 0, 0);
        for &(calls, records, shown, quiescent) in drains {
            let tally = PrintfTally {
                calls,
                accounted,
                over_cap,
                cap,
            };
            let n = printf_not_shown(tally, records, shown, quiescent);
            accounted += records + n.past_records;
            over_cap += n.over_cap;
            lines += shown + (records - shown) + n.past_records;
            if quiescent {
                (accounted, over_cap) = (0, 0);
            }
        }
        lines
    }

    #[test]
    fn a_site_gets_its_repeats_in_lines_then_counts() {
        let lines: Vec<RepeatLine> = (0..4).map(|n| repeat_line(n, 3)).collect();
        assert_eq!(
            lines,
            [
                RepeatLine::Log { last: false },
                RepeatLine::Log { last: false },
                RepeatLine::Log { last: true },
                RepeatLine::Count
            ]
        );
        assert_eq!(repeat_line(1_000_000, 0), RepeatLine::Log { last: false });
        assert_eq!(repeat_line(0, 1), RepeatLine::Log { last: true });
    }

    #[test]
    fn a_record_read_before_its_call_is_counted_is_not_counted_twice() {
        // 1,000 calls counted, 1,010 records read (10 calls counted after the counters were read), then
        // the last 10 counted with no record left to read.
        assert_eq!(
            play(1024, &[(1000, 1010, 1010, false), (1010, 0, 0, true)]),
            1010
        );
    }

    #[test]
    fn records_that_come_after_their_calls_are_not_counted_twice() {
        // 1,000 calls counted, 900 records so far; the last 100 records come with nothing pending.
        assert_eq!(
            play(1024, &[(1000, 900, 900, false), (1000, 100, 100, true)]),
            1000
        );
    }

    #[test]
    fn calls_past_the_cap_and_dropped_records_are_counted_once() {
        // 5,000 calls, cap 1,024: 3,976 past the cap, counted as soon as seen; 24 records dropped,
        // counted when nothing is pending; log lines show 200 of the records read.
        let drains = [
            (3000, 800, 200, false),
            (5000, 100, 0, false),
            (5000, 100, 0, true),
        ];
        assert_eq!(play(1024, &drains), 5000);
        let first = printf_not_shown(
            PrintfTally {
                calls: 3000,
                accounted: 0,
                over_cap: 0,
                cap: 1024,
            },
            800,
            200,
            false,
        );
        assert_eq!(
            first,
            NotShown {
                past_records: 1976,
                over_cap: 1976
            }
        );
    }
}
