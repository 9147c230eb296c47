//! GPU breadcrumbs: marker writes recorded around the app's commands, read back to learn how far the GPU got.
//!
//! A recording's marker writes go to words of the device's marker buffer that belong to that recording
//! alone, one word per write: a "started" word before each *unit* of work (one command, or a whole render
//! pass where markers cannot go inside it), written with the unit's number, and a "finished" word at each
//! place where the app synchronizes anyway (before a barrier or event wait, and at the end of the command
//! buffer), written with the number of the last unit started. No word is written twice in one execution,
//! so the writes need no ordering among themselves: synchronization validation sees no hazard, and no late
//! write of an earlier unit can hide a later one's. The words are zeroed by the host when the command
//! buffer is submitted (the submission makes host writes visible to the device), never by GPU writes that
//! would race the markers. Units are numbered from 1 in recording order.
//!
//! A "finished" write waits for all earlier work, and one after every unit would serialize the GPU, hence
//! only at the app's synchronization points.
//!
//! Two ways to write a marker, chosen once per device:
//! - `VK_AMD_buffer_marker`: top-of-pipe and bottom-of-pipe writes, allowed anywhere, render passes
//!   included, so every command is a unit;
//! - otherwise `vkCmdFillBuffer`, which is not allowed inside a render pass: commands outside passes are
//!   units, and each render pass is one unit (marked started before it begins).
//!
//! One exception, for GPU time: on the buffer-marker path without synchronization validation below
//! ([`crate::validation_below`]), a recording's "started" marks share one word and its "finished" marks
//! another, and a command's "started" mark is written right after the command rather than before it (a
//! top-of-pipe write says the same there; see `command_buffer::AfterCall`; a render pass that is one unit
//! as a whole is still marked before it begins). NVIDIA's driver 580 spends more GPU time on a marker
//! write to a new address: 10,000 one-triangle draws at `command` took 1.47x the frame time with a word
//! per mark and 1.26x with shared words (`scripts/bench-gpu.sh`, H200). There, "started" writes are
//! top-of-pipe writes in command order, so the word holds the latest unit started; synchronization
//! validation would report them as write-after-write hazards, hence the distinct words when it is on.
//!
//! Words are handed out in chunks from a pool; a recording's chunks go back when the last submission that
//! holds it is gone.

use ash::vk;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::config::Breadcrumbs;
use crate::dispatch::DeviceDispatch;
use crate::memory::HostBuffer;

/// Words per chunk of the pool: a recording takes one more chunk every this many marker writes.
pub const CHUNK_WORDS: u32 = 64;
/// The marker buffer: 4 MiB, a million marker writes in recordings alive at once. A recording that finds
/// the pool empty goes on without markers (the report says its progress is unknown).
pub const BUFFER_WORDS: u32 = 1 << 20;

/// How markers are written on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerPath {
    /// `vkCmdWriteBufferMarkerAMD`, anywhere.
    BufferMarker,
    /// `vkCmdFillBuffer`, outside render passes.
    FillBuffer,
}

impl MarkerPath {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            MarkerPath::BufferMarker => "buffer markers (VK_AMD_buffer_marker)",
            MarkerPath::FillBuffer => "fill-buffer writes (vkCmdFillBuffer, outside render passes)",
        }
    }
}

/// The marker buffer's words and which chunks are free; shared by every recording that holds chunks, so
/// that a recording outliving the device's markers still gives its chunks back somewhere harmless.
pub struct MarkerPool {
    /// The buffer.
    pub buffer: HostBuffer,
    free: Mutex<Vec<u32>>,
}

impl MarkerPool {
    fn take_chunk(&self) -> Option<u32> {
        self.free.lock().pop()
    }

    fn give_back(&self, chunks: &[u32]) {
        self.free.lock().extend_from_slice(chunks);
    }
}

/// The marker buffer of a device and how it is written.
pub struct Markers {
    /// The buffer and its chunks.
    pub pool: Arc<MarkerPool>,
    /// How markers are written.
    pub path: MarkerPath,
    /// `VK_BLACKBOX_BREADCRUMBS` in force.
    pub granularity: Breadcrumbs,
    /// NV checkpoints are recorded as well, with the "finished" markers.
    pub checkpoints: bool,
    /// Every mark gets a word of its own; else a recording's "started" marks share one word and its
    /// "finished" marks another.
    pub distinct: bool,
}

/// What one marker word says when it is not zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// The unit of this number started.
    Started(u32),
    /// Every unit up to this number finished.
    Finished(u32),
}

/// The marker words of one recording.
pub struct MarkWords {
    pool: Arc<MarkerPool>,
    chunks: Vec<u32>,
    /// Words handed out so far.
    used: u32,
    /// Marks that found the pool empty.
    missed: u32,
    /// `(word, unit)` of the "started" marks, in recording order.
    started: Vec<(u32, u32)>,
    /// `(word, unit)` of the "finished" marks, in recording order.
    finished: Vec<(u32, u32)>,
    /// How many of each were seen written by the last progress reading, to read on from there.
    seen_started: AtomicU32,
    seen_finished: AtomicU32,
    /// Every mark has a word of its own; else all "started" marks share the first word and all
    /// "finished" marks the second, each holding the latest unit written.
    distinct: bool,
}

impl MarkWords {
    /// No words yet.
    pub fn new(pool: Arc<MarkerPool>, distinct: bool) -> Self {
        Self {
            distinct,
            pool,
            chunks: Vec::new(),
            used: 0,
            missed: 0,
            started: Vec::new(),
            finished: Vec::new(),
            seen_started: AtomicU32::new(0),
            seen_finished: AtomicU32::new(0),
        }
    }

    /// Ready for a new recording of the same command buffer: no marks, the chunks kept (so a command buffer
    /// recorded again and again takes no chunk from the pool, and its lists no new memory).
    pub fn reuse(&mut self) {
        self.used = 0;
        self.missed = 0;
        self.started.clear();
        self.finished.clear();
        self.seen_started.store(0, Ordering::Relaxed);
        self.seen_finished.store(0, Ordering::Relaxed);
    }

    /// Whether these words come from `pool` and are laid out as `distinct` says, so a recording there can
    /// reuse them.
    pub fn fits(&self, pool: &Arc<MarkerPool>, distinct: bool) -> bool {
        Arc::ptr_eq(&self.pool, pool) && self.distinct == distinct
    }

    /// A word for `mark`, or `None` when the pool is empty. Inlined into every recorded action: the
    /// common case is a word in a chunk already taken, the rare one (a chunk to take) is out of line.
    #[inline(always)]
    pub fn next(&mut self, mark: Mark) -> Option<u32> {
        if !self.distinct {
            return self.shared(mark);
        }
        if self.used == self.chunks.len() as u32 * CHUNK_WORDS && !self.take_chunk() {
            return None;
        }
        let chunk = self.chunks[(self.used / CHUNK_WORDS) as usize];
        let word = chunk * CHUNK_WORDS + self.used % CHUNK_WORDS;
        self.used += 1;
        match mark {
            Mark::Started(u) => self.started.push((word, u)),
            Mark::Finished(u) => self.finished.push((word, u)),
        }
        Some(word)
    }

    /// Takes one more chunk from the pool; `false` (the mark counted as missed) when the pool is empty.
    #[cold]
    #[inline(never)]
    fn take_chunk(&mut self) -> bool {
        match self.pool.take_chunk() {
            Some(chunk) => {
                self.chunks.push(chunk);
                true
            }
            None => {
                self.missed += 1;
                false
            }
        }
    }

    /// The shared layout's word for `mark`: the first of the recording's chunk for "started", the second for
    /// "finished" (the lists keep one entry each, the latest unit).
    #[inline(always)]
    fn shared(&mut self, mark: Mark) -> Option<u32> {
        if self.chunks.is_empty() && !self.take_chunk() {
            return None;
        }
        let base = self.chunks[0] * CHUNK_WORDS;
        let (list, word, unit) = match mark {
            Mark::Started(u) => (&mut self.started, base, u),
            Mark::Finished(u) => (&mut self.finished, base + 1, u),
        };
        match list.first_mut() {
            Some(latest) => *latest = (word, unit),
            None => list.push((word, unit)),
        }
        Some(word)
    }

    /// On the shared layout, the word all of this recording's "started" marks write, taken now (with a chunk
    /// from the pool if the words have none yet) and counted as written, so that the recording can write
    /// its "started" marks straight to it ([`MarkerWriter::started`]). `None` with distinct words, or when
    /// the pool is empty.
    pub fn shared_started_word(&mut self) -> Option<u32> {
        if self.distinct {
            return None;
        }
        // Unit 0 stands for none: the GPU's writes say which unit started last.
        self.shared(Mark::Started(0))
    }

    /// Zeroes every word on the host, before a submission (no execution of this recording is pending).
    pub fn zero(&self) {
        for &(word, _) in self.started.iter().chain(&self.finished) {
            self.pool.buffer.write(word as usize, 0);
        }
        self.seen_started.store(0, Ordering::Relaxed);
        self.seen_finished.store(0, Ordering::Relaxed);
    }

    /// `(top, bottom)`: the last unit started and the last known finished, as the GPU wrote them so far.
    /// Each kind is read in order up to its first word not written yet, on from where the last reading
    /// stopped, so a watchdog looking at a stuck recording reads a word or two, not the whole recording.
    /// (Kinds are read apart: a top-of-pipe "started" write may land before the bottom-of-pipe "finished"
    /// one recorded ahead of it.)
    pub fn progress(&self) -> (u32, u32) {
        if !self.distinct {
            // Each shared word holds the latest unit the GPU wrote.
            let read = |marks: &[(u32, u32)]| {
                marks
                    .first()
                    .map_or(0, |&(w, _)| self.pool.buffer.read(w as usize))
            };
            return (read(&self.started), read(&self.finished));
        }
        let read = |marks: &[(u32, u32)], seen: &AtomicU32| {
            let mut n = (seen.load(Ordering::Relaxed) as usize).min(marks.len());
            while n < marks.len() && self.pool.buffer.read(marks[n].0 as usize) != 0 {
                n += 1;
            }
            seen.store(n as u32, Ordering::Relaxed);
            n.checked_sub(1).map_or(0, |last| marks[last].1)
        };
        (
            read(&self.started, &self.seen_started),
            read(&self.finished, &self.seen_finished),
        )
    }

    /// Marks that got no word because the pool was empty: their units' progress is unknown.
    pub fn missed(&self) -> u32 {
        self.missed
    }
}

impl Drop for MarkWords {
    fn drop(&mut self) {
        self.pool.give_back(&self.chunks);
    }
}

impl Markers {
    /// Wraps a marker buffer of [`BUFFER_WORDS`] words.
    pub fn new(
        buffer: HostBuffer,
        path: MarkerPath,
        granularity: Breadcrumbs,
        checkpoints: bool,
        distinct: bool,
    ) -> Self {
        let chunks = (buffer.words() as u32).min(BUFFER_WORDS) / CHUNK_WORDS;
        Self {
            pool: Arc::new(MarkerPool {
                buffer,
                free: Mutex::new((0..chunks).rev().collect()),
            }),
            path,
            granularity,
            checkpoints,
            distinct,
        }
    }

    /// Marker words for a new recording, laid out as this device's markers are: `reused` (the command
    /// buffer's last recording's) when they fit, else new ones.
    pub fn words(&self, reused: Option<MarkWords>) -> MarkWords {
        match reused {
            Some(mut words) if words.fits(&self.pool, self.distinct) => {
                words.reuse();
                words
            }
            _ => MarkWords::new(self.pool.clone(), self.distinct),
        }
    }

    /// What a recording needs to write markers, copied into it when it begins, so that no command takes
    /// the device's lock on its markers.
    pub fn writer(&self, next: &DeviceDispatch) -> MarkerWriter {
        MarkerWriter {
            path: self.path,
            checkpoints: self.checkpoints,
            buffer: self.pool.buffer.buffer,
            write_buffer_marker: next.cmd_write_buffer_marker_amd,
            fill_buffer: next.cmd_fill_buffer,
            pipeline_barrier: next.cmd_pipeline_barrier,
            set_checkpoint: next.cmd_set_checkpoint_nv,
        }
    }

    /// The marker buffer's size.
    pub fn buffer_size() -> u64 {
        u64::from(BUFFER_WORDS) * 4
    }

    /// Whether a unit boundary can be marked here.
    pub fn can_mark(&self, inside_render_pass: bool) -> bool {
        self.path == MarkerPath::BufferMarker || !inside_render_pass
    }
}

/// How one recording writes its markers: the device's marker path and buffer and the next layer's commands,
/// copied from [`Markers::writer`] when the recording begins (the buffer lives as long as the device, which
/// outlives its command buffers' recordings).
#[derive(Clone, Copy)]
pub struct MarkerWriter {
    path: MarkerPath,
    checkpoints: bool,
    buffer: vk::Buffer,
    write_buffer_marker: Option<vk::PFN_vkCmdWriteBufferMarkerAMD>,
    fill_buffer: Option<vk::PFN_vkCmdFillBuffer>,
    pipeline_barrier: Option<vk::PFN_vkCmdPipelineBarrier>,
    set_checkpoint: Option<vk::PFN_vkCmdSetCheckpointNV>,
}

impl MarkerWriter {
    /// Whether a unit boundary can be marked here.
    pub fn can_mark(&self, inside_render_pass: bool) -> bool {
        self.path == MarkerPath::BufferMarker || !inside_render_pass
    }

    /// The straight way of writing "started" marks to `word` (from [`MarkWords::shared_started_word`]):
    /// on the buffer-marker path, a top-of-pipe write and nothing else, so the per-command path calls the
    /// driver with no more to decide. `None` on the fill path.
    pub fn started(&self, word: u32) -> Option<StartedWrite> {
        match self.path {
            MarkerPath::BufferMarker => Some(StartedWrite {
                write: self.write_buffer_marker?,
                buffer: self.buffer,
                offset: u64::from(word) * 4,
            }),
            MarkerPath::FillBuffer => None,
        }
    }

    /// Records the write of `mark` into `word` (from [`MarkWords::next`]). `id` names the command buffer
    /// in NV checkpoints.
    ///
    /// # Safety
    /// `cb` must be recording on the device the writer was made for; for the fill path, outside a render
    /// pass.
    #[inline(always)]
    pub unsafe fn write(&self, cb: vk::CommandBuffer, word: u32, mark: Mark, id: u32) {
        let offset = u64::from(word) * 4;
        let (value, finished) = match mark {
            Mark::Started(u) => (u, false),
            Mark::Finished(u) => (u, true),
        };
        let buffer = self.buffer;
        match self.path {
            MarkerPath::BufferMarker => {
                if let Some(write) = self.write_buffer_marker {
                    let stage = if finished {
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE
                    } else {
                        vk::PipelineStageFlags::TOP_OF_PIPE
                    };
                    // SAFETY: the layer's marker buffer, in bounds, 4-byte aligned.
                    unsafe { write(cb, stage, buffer, offset, value) };
                }
            }
            MarkerPath::FillBuffer => {
                if finished {
                    if let Some(barrier) = self.pipeline_barrier {
                        // A fill is a transfer that may overtake the units it follows; this execution
                        // dependency on everything before (BOTTOM_OF_PIPE in a first scope: every stage)
                        // makes "finished" mean finished.
                        // SAFETY: outside a render pass; no memory barriers.
                        unsafe {
                            barrier(
                                cb,
                                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                                vk::PipelineStageFlags::TRANSFER,
                                vk::DependencyFlags::empty(),
                                0,
                                std::ptr::null(),
                                0,
                                std::ptr::null(),
                                0,
                                std::ptr::null(),
                            )
                        };
                    }
                }
                if let Some(fill) = self.fill_buffer {
                    // SAFETY: outside a render pass (the caller's contract); in bounds, 4-byte aligned.
                    unsafe { fill(cb, buffer, offset, 4, value) };
                }
            }
        }
        // NV checkpoints go with the "finished" markers only, at the app's synchronization points: one per
        // unit made a frame of 10,000 dispatches 19x slower on the H200, where the buffer markers alone
        // cost nothing measurable.
        if self.checkpoints && finished {
            if let Some(set) = self.set_checkpoint {
                // The checkpoint's "pointer" carries the command buffer's id and the unit, decoded after a
                // loss.
                let tag =
                    (u64::from(id) << 32 | u64::from(value)) as usize as *const std::ffi::c_void;
                // SAFETY: a recording command buffer; the marker is an opaque value.
                unsafe { set(cb, tag) };
            }
        }
    }
}

/// A recording's "started" marker write on the shared layout of the buffer-marker path (see
/// [`MarkerWriter::started`]).
#[derive(Clone, Copy)]
pub struct StartedWrite {
    write: vk::PFN_vkCmdWriteBufferMarkerAMD,
    buffer: vk::Buffer,
    offset: u64,
}

impl StartedWrite {
    /// Records the write of `unit`.
    ///
    /// # Safety
    /// `cb` must be recording on the device the writer was made for.
    #[inline(always)]
    pub unsafe fn write(&self, cb: vk::CommandBuffer, unit: u32) {
        // SAFETY: the layer's marker buffer, in bounds, 4-byte aligned; allowed anywhere.
        unsafe {
            (self.write)(
                cb,
                vk::PipelineStageFlags::TOP_OF_PIPE,
                self.buffer,
                self.offset,
                unit,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool over plain memory, as the tests cannot make a Vulkan buffer.
    fn pool(chunks: u32) -> Arc<MarkerPool> {
        Arc::new(MarkerPool {
            buffer: HostBuffer::host_only(chunks * CHUNK_WORDS),
            free: Mutex::new((0..chunks).rev().collect()),
        })
    }

    #[test]
    fn every_mark_has_a_word_of_its_own_and_progress_reads_them_in_order() {
        let pool = pool(4);
        let mut words = MarkWords::new(pool.clone(), true);
        let mut used = Vec::new();
        for unit in 1..=100 {
            used.push(words.next(Mark::Started(unit)).unwrap());
            if unit % 10 == 0 {
                used.push(words.next(Mark::Finished(unit)).unwrap());
            }
        }
        let mut unique = used.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), used.len(), "no word is written twice");
        assert_eq!(words.progress(), (0, 0));
        // The GPU got through unit 25: the marks up to it are written.
        for &(word, unit) in words
            .started
            .iter()
            .take(25)
            .chain(words.finished.iter().take(2))
        {
            pool.buffer.write(word as usize, unit);
        }
        assert_eq!(words.progress(), (25, 20));
        assert_eq!(
            words.progress(),
            (25, 20),
            "reading again from where it stopped"
        );
        words.zero();
        assert_eq!(words.progress(), (0, 0));
    }

    #[test]
    fn chunks_go_back_when_the_recording_is_dropped_and_an_empty_pool_gives_no_word() {
        let pool = pool(1);
        let mut words = MarkWords::new(pool.clone(), true);
        for unit in 0..CHUNK_WORDS {
            assert!(words.next(Mark::Started(unit + 1)).is_some());
        }
        assert!(
            words.next(Mark::Started(1000)).is_none(),
            "the pool is empty"
        );
        drop(words);
        let mut again = MarkWords::new(pool, true);
        assert!(again.next(Mark::Started(1)).is_some());
    }

    #[test]
    fn the_shared_layout_writes_two_words_and_reads_the_latest() {
        let pool = pool(2);
        let mut words = MarkWords::new(pool.clone(), false);
        let first = words.next(Mark::Started(1)).unwrap();
        assert_eq!(words.next(Mark::Started(2)), Some(first));
        let finished = words.next(Mark::Finished(2)).unwrap();
        assert_ne!(finished, first);
        pool.buffer.write(first as usize, 2);
        pool.buffer.write(finished as usize, 1);
        assert_eq!(words.progress(), (2, 1));
        words.zero();
        assert_eq!(words.progress(), (0, 0));
    }

    #[test]
    fn the_shared_started_word_is_the_one_marks_write_and_is_zeroed_and_read() {
        let pool = pool(2);
        let mut words = MarkWords::new(pool.clone(), false);
        let started = words.shared_started_word().unwrap();
        // Nothing written yet: nothing started.
        assert_eq!(words.progress(), (0, 0));
        // The recording's other "started" marks (a render pass as one unit) go to the same word.
        assert_eq!(words.next(Mark::Started(1)), Some(started));
        pool.buffer.write(started as usize, 7);
        assert_eq!(words.progress(), (7, 0));
        words.zero();
        assert_eq!(pool.buffer.read(started as usize), 0);
        // Distinct words have no shared word; an empty pool gives none.
        assert_eq!(
            MarkWords::new(pool.clone(), true).shared_started_word(),
            None
        );
        let empty = MarkWords::new(self::pool(0), false).shared_started_word();
        assert_eq!(empty, None);
    }
}
