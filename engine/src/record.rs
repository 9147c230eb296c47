//! The record format between instrumented shaders and the layer: one module that both sides import.
//!
//! # The error buffer
//!
//! The layer allocates one error buffer per device, with a buffer device address, and writes its header
//! ([`init_header`]). The engine bakes the buffer's address into every instrumented module; the shader code
//! reads the offsets from the header, so the layer alone decides the sizes. A caller that knows them (the
//! layer on CPU devices, through [`crate::Options::buffer_layout`]) has them baked in as constants too: a
//! site then reads no header word but the ones records change.
//!
//! Header, in 32-bit words ([`HEADER_WORDS`] of them):
//!
//! | word | name | content |
//! |---|---|---|
//! | 0 | [`header::MAGIC`] | [`MAGIC`] `0x4242_5831` |
//! | 1 | [`header::VERSION`] | [`LAYOUT_VERSION`] |
//! | 2 | [`header::CURSOR`] | words of the record area handed out so far (bumped with `atomicAdd` by each record's size; may exceed the capacity) |
//! | 3 | [`header::DROPPED`] | records that did not fit |
//! | 4 | [`header::COUNTERS_OFFSET`] | where the site counters start, in words from the buffer start |
//! | 5 | [`header::COUNTER_COUNT`] | how many site counters there are |
//! | 6 | [`header::RECORDS_OFFSET`] | where the record area starts, in words from the buffer start |
//! | 7 | [`header::RECORDS_CAPACITY`] | the size of the record area, in words |
//! | 8 | [`header::ZERO`] | 0, read by shaders (see [`header::ZERO`]) |
//! | 9..15 | | reserved, 0 |
//!
//! # What a site does
//!
//! Each instrumented site has a global index `site_base + local_index` (the layer hands out `site_base` per
//! module; see [`crate::Site`]). When a site fires:
//!
//! 1. if `site < counter count`: `prev = atomicAdd(counters[site], 1)` — the exact number of times it fired;
//! 2. only if `prev < cap` (`full_records_per_site`, or `printf_records_per_site` for printf sites):
//!    `off = atomicAdd(cursor, size)`;
//! 3. if `off + size <= capacity` the record is written at `records[off .. off + size]`, else
//!    `atomicAdd(dropped, 1)`.
//!
//! With [`crate::Options::records_at_end`], a NaN site (at `outputs` and `ops`) or an integer check's
//! site does this when its invocation ends, not where it fires: it counts its firings and keeps the first
//! one's payload in the invocation's `Private` memory, and a flush before each return of the entry point
//! (and before `OpKill` and the like) adds the count to `counters[site]` in one `atomicAdd` and, under the
//! cap, writes one record with that payload. So an invocation writes at most one record per such site, and
//! a device fault or an endless loop before it ends loses those records (see the engine's
//! `base/pending.rs`). Sites beyond the module's room for that write where they fire.
//!
//! Never a wait, and no loop but the flush's, over a module's waiting sites: a full buffer costs one atomic
//! and a count. Atomics use device scope
//! (queue-family scope in modules on the Vulkan memory model) and relaxed semantics; plain stores are aligned
//! to 4 bytes.
//!
//! # A record
//!
//! | word | content |
//! |---|---|
//! | 0 | size in words (bits 0..15) \| [`RecordKind`] code (bits 16..23, [`KIND_SHIFT`]) \| [`Stage`] code (bits 24..31, [`STAGE_SHIFT`]) |
//! | 1 | global site index |
//! | 2..5 | the invocation: compute/task/mesh `GlobalInvocationId` x, y, z, 0; fragment `FragCoord` x, y as integers, 0, 0; vertex `VertexIndex`, `InstanceIndex`, 0, 0; tessellation control and geometry `InvocationId`, `PrimitiveId`, 0, 0; tessellation evaluation 0, `PrimitiveId`, 0, 0; ray tracing `LaunchId` x, y, z, 0 |
//! | 6 | reserved, 0 (the layer's breadcrumb id later) |
//! | 7.. | the payload: the site's values in [`crate::Site::values`] order |
//!
//! Kind codes ([`RecordKind::code`]): 1 assert, 2 printf, 3 NaN from an operation, 4 NaN leaving the
//! shader, 5 loop budget, 6 integer operation, 7 index out of range. Stage codes ([`Stage::code`]): 0 vertex, 1 tessellation control, 2 tessellation evaluation,
//! 3 geometry, 4 fragment, 5 compute, 6 task, 7 mesh, 8 ray generation, 9 intersection, 10 any hit,
//! 11 closest hit, 12 miss, 13 callable; 255 ([`NO_STAGE`]) when no entry point prologue ran (a module
//! without entry points).
//!
//! Each value takes its components in order as 32-bit words: 64-bit types as two words (low, high), `f16`
//! widened to `f32`, 8- and 16-bit integers widened to 32 bits, booleans as 0 or 1 ([`ValueLayout`]).
//!
//! # Payloads of loop and integer records
//!
//! A **loop budget** record ([`RecordKind::LoopBudget`], site kind [`crate::SiteKind::LoopBudget`]) is
//! written by an invocation whose loop passed its budget, once per invocation and loop (the site counter
//! counts the invocations, each once). Its payload, in words:
//!
//! | word | value name | type | content |
//! |---|---|---|---|
//! | 0 | `iterations` | u32 | the iterations this invocation completed in the loop since it last entered it |
//! | 1 | `reason` | u32 | bit 0 ([`LOOP_REASON_ITERATIONS`]): `iterations` reached [`crate::Options::loop_limit`]; bit 1 ([`LOOP_REASON_TIME`]): the invocation ran past the clock budget ([`crate::Options::loop_clock`]) |
//! | 2, 3 | `elapsed ticks` | u32 x 2 | clock ticks (low word, high word) since the invocation's first clock reading (its first loop's 255th iteration); 0 without a clock |
//! | 4.. | induction values | their own | up to 8 values, named after their variables (`i`, `n`), else `%<id>` |
//!
//! The site's location is the loop header's source line (a do-while's is its `while` line); without line
//! information the site names the header's label id and the function ([`crate::Site::function`]). In
//! `report` mode the loop goes on after the record: a watchdog that finds a dispatch hung can read these
//! records while it runs, as the loops it is still in. In `break` mode the invocation then leaves the loop,
//! the loops around it and any loop it enters afterwards, so the dispatch completes with that invocation's
//! results wrong. The iteration check fires when a loop that has completed `loop_limit` iterations is about
//! to start another (so `iterations` is the limit); the clock is read every 256 iterations of a loop.
//!
//! An **integer operation** record ([`RecordKind::IntOp`], [`crate::SiteKind::IntOp`]) holds the two
//! operands as their own types, `dividend` and `divisor` for `SDiv`, `UDiv`, `SRem`, `SMod` and `UMod`
//! (a divisor component 0 is a division by zero; else, for the signed ones, a dividend component at its
//! type's minimum with the divisor's component -1 is the overflow), `base` and `shift` for the shifts (a
//! shift component, read as unsigned, at least the base's bit width). Vectors are recorded whole.
//!
//! An **index out of range** record ([`RecordKind::IndexOutOfRange`], [`crate::SiteKind::IndexOutOfRange`])
//! holds, for each checked index of the instruction, `index <k>` (the index, its own type) and `length <k>`
//! (the size it must stay under, in the index's type, or a specialization constant's own type), `k` being
//! the index's position among the instruction's indices (0 for `OpVectorExtractDynamic` and
//! `OpVectorInsertDynamic`). An index out of range is one whose value, read as unsigned, is at least its
//! length; the record has every checked index of the instruction, in range or not.
//!
//! # Reading it back
//!
//! [`read_records`] walks the record area through a word accessor (the layer reads the mapped buffer word
//! by word, with volatile reads, while shaders may still be writing) from where the last walk stopped, up to
//! the first record not fully written yet. [`decode`] turns a copy of the whole buffer into counters and
//! [`RawRecord`]s with the same walk. Neither panics nor loops on garbage. [`format_printf`] and
//! [`format_values`] turn payloads into text.

use std::fmt::Write as _;

use crate::info::Stage;

/// The error buffer's magic number (word 0).
pub const MAGIC: u32 = 0x4242_5831;

/// The layout version described here (word 1).
pub const LAYOUT_VERSION: u32 = 1;

/// The size of the buffer header, in words.
pub const HEADER_WORDS: usize = 16;

/// The words of a record before its payload.
pub const RECORD_HEADER_WORDS: usize = 7;

/// The largest payload the engine gives a site, in words; values beyond it are not recorded.
pub const MAX_PAYLOAD_WORDS: usize = 64;

/// The device address an assert in `crash` mode writes to after its record, to fault the device on purpose.
pub const CRASH_ADDRESS: u64 = 0x0000_dead_0000_0000;

/// Where a record's [`RecordKind`] code starts in its first word; the size is in the bits below.
pub const KIND_SHIFT: u32 = 16;

/// Where a record's [`Stage`] code starts in its first word.
pub const STAGE_SHIFT: u32 = 24;

/// The stage code of a record written where no entry-point prologue ran (a module without entry points).
pub const NO_STAGE: u8 = 0xFF;

/// A loop record's `reason` bit: the loop reached [`crate::Options::loop_limit`] iterations.
pub const LOOP_REASON_ITERATIONS: u32 = 1;

/// A loop record's `reason` bit: the invocation ran past the time budget ([`crate::Options::loop_clock`]).
pub const LOOP_REASON_TIME: u32 = 2;

/// Indices of the header words.
pub mod header {
    /// [`super::MAGIC`].
    pub const MAGIC: usize = 0;
    /// [`super::LAYOUT_VERSION`].
    pub const VERSION: usize = 1;
    /// Words of the record area handed out so far.
    pub const CURSOR: usize = 2;
    /// Records dropped for lack of space.
    pub const DROPPED: usize = 3;
    /// Offset of the site counters, in words from the buffer start.
    pub const COUNTERS_OFFSET: usize = 4;
    /// Number of site counters.
    pub const COUNTER_COUNT: usize = 5;
    /// Offset of the record area, in words from the buffer start.
    pub const RECORDS_OFFSET: usize = 6;
    /// Size of the record area, in words.
    pub const RECORDS_CAPACITY: usize = 7;
    /// Always 0: shaders read it where a value the compiler cannot see is needed (the NaN flush's loop
    /// bound, so that the loop is not unrolled).
    pub const ZERO: usize = 8;
}

/// The header of a fresh buffer with `counter_count` site counters right after the header and a record area
/// of `records_capacity` words after them. The rest of the buffer must be zero.
pub fn init_header(counter_count: u32, records_capacity: u32) -> [u32; HEADER_WORDS] {
    let mut h = [0u32; HEADER_WORDS];
    h[header::MAGIC] = MAGIC;
    h[header::VERSION] = LAYOUT_VERSION;
    h[header::COUNTERS_OFFSET] = HEADER_WORDS as u32;
    h[header::COUNTER_COUNT] = counter_count;
    h[header::RECORDS_OFFSET] = (HEADER_WORDS as u32).saturating_add(counter_count);
    h[header::RECORDS_CAPACITY] = records_capacity;
    h
}

/// The size in words of a buffer laid out by [`init_header`].
pub fn buffer_words(counter_count: u32, records_capacity: u32) -> usize {
    HEADER_WORDS + counter_count as usize + records_capacity as usize
}

/// The sizes of an error buffer laid out by [`init_header`], for [`crate::Options::buffer_layout`]: the
/// header words they fix are then constants in the instrumented code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferLayout {
    /// Site counters, right after the header.
    pub counter_count: u32,
    /// Words of the record area, right after the counters.
    pub records_capacity: u32,
}

impl BufferLayout {
    /// The header of a fresh buffer of this layout ([`init_header`]).
    pub fn header(&self) -> [u32; HEADER_WORDS] {
        init_header(self.counter_count, self.records_capacity)
    }

    /// The buffer's size in words ([`buffer_words`]).
    pub fn words(&self) -> usize {
        buffer_words(self.counter_count, self.records_capacity)
    }

    /// The value of header word `word` where the layout fixes it (the counters' offset and count, the
    /// record area's offset and size); `None` for the words that change as records are written, and the
    /// others.
    pub fn fixed_word(&self, word: usize) -> Option<u32> {
        match word {
            header::COUNTERS_OFFSET
            | header::COUNTER_COUNT
            | header::RECORDS_OFFSET
            | header::RECORDS_CAPACITY => Some(self.header()[word]),
            _ => None,
        }
    }
}

/// What a record reports (bits 16..23 of its first word).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A failing assert.
    Assert,
    /// A printf.
    Printf,
    /// A float operation that made NaN/Inf from finite operands.
    NanOp,
    /// A NaN/Inf leaving the shader.
    NanOutput,
    /// A loop past its iteration or time budget.
    LoopBudget,
    /// An integer operation with undefined behaviour (division by zero, `INT_MIN / -1`, a shift too far).
    IntOp,
    /// An index out of range.
    IndexOutOfRange,
    /// A code this version does not know.
    Unknown(u8),
}

impl RecordKind {
    /// The code in the record.
    pub fn code(self) -> u8 {
        match self {
            RecordKind::Assert => 1,
            RecordKind::Printf => 2,
            RecordKind::NanOp => 3,
            RecordKind::NanOutput => 4,
            RecordKind::LoopBudget => 5,
            RecordKind::IntOp => 6,
            RecordKind::IndexOutOfRange => 7,
            RecordKind::Unknown(c) => c,
        }
    }

    /// The kind with a code.
    pub fn from_code(code: u8) -> RecordKind {
        match code {
            1 => RecordKind::Assert,
            2 => RecordKind::Printf,
            3 => RecordKind::NanOp,
            4 => RecordKind::NanOutput,
            5 => RecordKind::LoopBudget,
            6 => RecordKind::IntOp,
            7 => RecordKind::IndexOutOfRange,
            c => RecordKind::Unknown(c),
        }
    }
}

/// The scalar type of a recorded value, as it is stored in the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// A 16-bit float, stored widened to `f32`.
    F16,
    /// A 32-bit float.
    F32,
    /// A 64-bit float: two words, low then high.
    F64,
    /// A signed integer of 32 bits or fewer, stored as `i32`.
    I32,
    /// An unsigned integer of 32 bits or fewer, stored as `u32`.
    U32,
    /// A signed 64-bit integer: two words, low then high.
    I64,
    /// An unsigned 64-bit integer: two words, low then high.
    U64,
    /// A boolean, stored as 0 or 1.
    Bool,
}

impl ScalarType {
    /// Words per component in the payload.
    pub fn words(self) -> usize {
        match self {
            ScalarType::F64 | ScalarType::I64 | ScalarType::U64 => 2,
            _ => 1,
        }
    }

    /// A short name: `f16`, `f32`, `f64`, `i32`, `u32`, `i64`, `u64`, `bool`.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::F16 => "f16",
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::I32 => "i32",
            ScalarType::U32 => "u32",
            ScalarType::I64 => "i64",
            ScalarType::U64 => "u64",
            ScalarType::Bool => "bool",
        }
    }
}

/// One value of a record payload: what it is and how many words it takes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueLayout {
    /// What the value is: `"operand 0"`, `"result"`, `"value"`, `"%f arg 2"`, ...
    pub name: String,
    /// Its scalar type.
    pub scalar: ScalarType,
    /// Its number of components: 1 for a scalar, 2..4 for a vector, columns x rows for a matrix.
    pub components: u32,
}

impl ValueLayout {
    /// The number of payload words it takes.
    pub fn words(&self) -> usize {
        self.components as usize * self.scalar.words()
    }

    /// Its type: `f32`, `f32x3`, `f32x16` (a matrix: columns x rows components).
    pub fn type_name(&self) -> String {
        if self.components == 1 {
            self.scalar.name().to_string()
        } else {
            format!("{}x{}", self.scalar.name(), self.components)
        }
    }
}

/// One record as read back, before the layer matches it to its site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRecord {
    /// What it reports.
    pub kind: RecordKind,
    /// The stage that wrote it, `None` for an unknown code.
    pub stage: Option<Stage>,
    /// The global site index.
    pub site: u32,
    /// The invocation words (see the module docs for their meaning per stage).
    pub invocation: [u32; 4],
    /// The reserved word (0 today).
    pub reserved: u32,
    /// The payload words.
    pub payload: Vec<u32>,
}

/// The content of an error buffer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoded {
    /// The header had the right magic number and version; when `false` nothing else was read.
    pub header_valid: bool,
    /// The site counters (how many times each global site fired), as far as the buffer holds them.
    pub counters: Vec<u32>,
    /// The records, in the order they were allocated.
    pub records: Vec<RawRecord>,
    /// Records that did not fit.
    pub dropped: u32,
    /// The cursor (words of record area handed out, possibly more than the capacity).
    pub cursor: u32,
    /// Inconsistencies found (a zero-sized record, a record past the cursor, counters past the buffer end);
    /// decoding stops at the first bad record.
    pub malformed: usize,
}

/// Why [`read_records`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordsEnd {
    /// It read every record up to the end it was given.
    End,
    /// The next record's first word is 0: its words were handed out but its header is not stored yet (a
    /// shader is writing it now), or never will be (a record allocated across the end of a full buffer).
    Unwritten,
    /// The next record's first word is not 0 but its size is under [`RECORD_HEADER_WORDS`] or runs past the
    /// end: garbage.
    Malformed,
}

/// What [`read_records`] read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordsRead {
    /// The records, in the order they were allocated.
    pub records: Vec<RawRecord>,
    /// The record-area position (in words) after the last record read: where the next walk starts.
    pub next: u32,
    /// Why the walk stopped at `next`.
    pub end: RecordsEnd,
}

/// Reads the records of an error buffer from record-area position `from` up to `end`, both in words from
/// the start of the record area, through `read_word(i)`, which gives word `i` of the buffer (from the buffer
/// start, header included).
///
/// `records_offset` is the header's [`header::RECORDS_OFFSET`]; `end` is normally the header's
/// [`header::CURSOR`] capped at [`header::RECORDS_CAPACITY`] (a cursor past the capacity counts records that
/// did not fit). The walk stops before the first record that is not fully there: a first word of 0 (not
/// written yet), a size under [`RECORD_HEADER_WORDS`], or a record running past `end`; a later walk from
/// [`RecordsRead::next`] picks it up once written. An assert's record has its first word stored last, after its
/// payload; the others have it stored after their words are handed out and before their payload, so a walk
/// that races a shader may read such a payload still being written. A walk after the work completed reads
/// final words.
///
/// Reads only words `records_offset + from .. records_offset + end`, each once; never panics; takes at most
/// `(end - from) / RECORD_HEADER_WORDS` steps.
pub fn read_records(
    read_word: impl Fn(usize) -> u32,
    records_offset: usize,
    from: u32,
    end: u32,
) -> RecordsRead {
    let mut records = Vec::new();
    let mut pos = from;
    let stop = loop {
        if pos >= end {
            break RecordsEnd::End;
        }
        let base = records_offset.saturating_add(pos as usize);
        let first = read_word(base);
        if first == 0 {
            break RecordsEnd::Unwritten;
        }
        let size = first & 0xFFFF;
        if (size as usize) < RECORD_HEADER_WORDS || size > end - pos {
            break RecordsEnd::Malformed;
        }
        let word = |k: usize| read_word(base.saturating_add(k));
        records.push(RawRecord {
            kind: RecordKind::from_code((first >> KIND_SHIFT) as u8),
            stage: Stage::from_code((first >> STAGE_SHIFT) as u8),
            site: word(1),
            invocation: [word(2), word(3), word(4), word(5)],
            reserved: word(6),
            payload: (RECORD_HEADER_WORDS..size as usize).map(word).collect(),
        });
        pos += size;
    };
    RecordsRead {
        records,
        next: pos,
        end: stop,
    }
}

/// Reads a copy of an error buffer. Robust to garbage: never panics, never loops, reads only inside `buffer`.
pub fn decode(buffer: &[u32]) -> Decoded {
    let mut d = Decoded::default();
    if buffer.len() < HEADER_WORDS
        || buffer[header::MAGIC] != MAGIC
        || buffer[header::VERSION] != LAYOUT_VERSION
    {
        d.malformed = 1;
        return d;
    }
    d.header_valid = true;
    d.cursor = buffer[header::CURSOR];
    d.dropped = buffer[header::DROPPED];
    let counters_offset = buffer[header::COUNTERS_OFFSET] as usize;
    let counter_count = buffer[header::COUNTER_COUNT] as usize;
    let available = buffer.len().saturating_sub(counters_offset);
    if counter_count > available {
        d.malformed += 1;
    }
    if let Some(c) = buffer.get(counters_offset..counters_offset + counter_count.min(available)) {
        d.counters = c.to_vec();
    }
    let records_offset = buffer[header::RECORDS_OFFSET] as usize;
    let capacity = buffer[header::RECORDS_CAPACITY] as usize;
    let used = (d.cursor as usize).min(capacity);
    // The record area is the buffer's words from the offset, as far as the cursor goes and the copy holds.
    let held = match buffer.len().checked_sub(records_offset) {
        Some(held) => {
            if held < used {
                d.malformed += 1;
            }
            held
        }
        None => {
            d.malformed += 1;
            0
        }
    };
    // `used` is at most the cursor, a u32.
    let end = used.min(held) as u32;
    let read = read_records(
        |i| buffer.get(i).copied().unwrap_or(0),
        records_offset,
        0,
        end,
    );
    d.records = read.records;
    match read.end {
        RecordsEnd::End => {}
        // The tail of a full buffer: a record allocated across the end was never written.
        RecordsEnd::Unwritten if d.cursor as usize > capacity => {}
        RecordsEnd::Unwritten | RecordsEnd::Malformed => d.malformed += 1,
    }
    d
}

/// One component of a value, decoded from its words.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scalar {
    Float(f64),
    Signed(i64),
    Unsigned(u64),
    Bool(bool),
}

impl Scalar {
    fn read(scalar: ScalarType, words: &[u32]) -> Scalar {
        let w0 = words.first().copied().unwrap_or(0);
        let w64 = u64::from(w0) | u64::from(words.get(1).copied().unwrap_or(0)) << 32;
        match scalar {
            ScalarType::F16 | ScalarType::F32 => Scalar::Float(f64::from(f32::from_bits(w0))),
            ScalarType::F64 => Scalar::Float(f64::from_bits(w64)),
            ScalarType::I32 => Scalar::Signed(i64::from(w0 as i32)),
            ScalarType::U32 => Scalar::Unsigned(u64::from(w0)),
            ScalarType::I64 => Scalar::Signed(w64 as i64),
            ScalarType::U64 => Scalar::Unsigned(w64),
            ScalarType::Bool => Scalar::Bool(w0 != 0),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Scalar::Float(f) => f,
            Scalar::Signed(i) => i as f64,
            Scalar::Unsigned(u) => u as f64,
            Scalar::Bool(b) => f64::from(u8::from(b)),
        }
    }

    /// The value's bits as an integer of `wide` (64) or 32 bits, C-style; floats convert numerically.
    fn as_bits(self, wide: bool) -> u64 {
        let v = match self {
            Scalar::Float(f) => {
                if f.is_nan() {
                    0
                } else {
                    f as i64 as u64
                }
            }
            Scalar::Signed(i) => i as u64,
            Scalar::Unsigned(u) => u,
            Scalar::Bool(b) => u64::from(b),
        };
        if wide {
            v
        } else {
            v & 0xFFFF_FFFF
        }
    }
}

/// The components of the value at `layout`, read from `words` (missing words read as 0).
fn components(words: &[u32], layout: &ValueLayout) -> Vec<Scalar> {
    let per = layout.scalar.words();
    (0..layout.components as usize)
        .map(|i| Scalar::read(layout.scalar, words.get(i * per..).unwrap_or(&[])))
        .collect()
}

/// Formats a float for a report: integers without a fraction (`0`, `-3`), shortest round-trip digits
/// otherwise, exponent form for very large or small magnitudes, `NaN`, `inf`, `-inf`.
fn display_float(f: f64, single: bool) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = f.abs();
    if f == f.trunc() && a < 1e15 {
        if f == 0.0 && f.is_sign_negative() {
            return "-0".into();
        }
        return format!("{}", f as i64);
    }
    let plain = (1e-4..1e15).contains(&a);
    match (single, plain) {
        (true, true) => format!("{}", f as f32),
        (true, false) => format!("{:e}", f as f32),
        (false, true) => format!("{f}"),
        (false, false) => format!("{f:e}"),
    }
}

fn display_scalar(s: Scalar, scalar: ScalarType) -> String {
    match s {
        Scalar::Float(f) => display_float(f, scalar != ScalarType::F64),
        Scalar::Signed(i) => i.to_string(),
        Scalar::Unsigned(u) => u.to_string(),
        Scalar::Bool(b) => b.to_string(),
    }
}

/// Formats one value of a payload: `1.5`, `NaN`, `-inf`, `7`, `true`, or `(0, 0, 0)` for a vector.
pub fn format_value(words: &[u32], layout: &ValueLayout) -> String {
    let parts: Vec<String> = components(words, layout)
        .into_iter()
        .map(|s| display_scalar(s, layout.scalar))
        .collect();
    if parts.len() == 1 {
        parts.into_iter().next().unwrap_or_default()
    } else {
        format!("({})", parts.join(", "))
    }
}

/// Formats every value of a payload, one string per layout (see [`format_value`]). Values past the end of
/// the payload read as zeros.
pub fn format_values(payload: &[u32], layouts: &[ValueLayout]) -> Vec<String> {
    let mut at = 0;
    layouts
        .iter()
        .map(|l| {
            let s = format_value(payload.get(at..).unwrap_or(&[]), l);
            at += l.words();
            s
        })
        .collect()
}

/// A parsed conversion specification.
#[derive(Clone, Debug, Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: usize,
    precision: Option<usize>,
    wide: bool,
    conv: char,
}

/// Parses the specification after a `%`; returns it and the number of chars consumed, or `None` when the
/// text is not a conversion this formatter knows.
fn parse_spec(chars: &[char]) -> Option<(Spec, usize)> {
    let mut s = Spec::default();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            '-' => s.left = true,
            '+' => s.plus = true,
            ' ' => s.space = true,
            '#' => s.alt = true,
            '0' => s.zero = true,
            _ => break,
        }
        i += 1;
    }
    let digits = |i: &mut usize| {
        let mut n: usize = 0;
        while let Some(d) = chars.get(*i).and_then(|c| c.to_digit(10)) {
            n = n.saturating_mul(10).saturating_add(d as usize).min(1000);
            *i += 1;
        }
        n
    };
    s.width = digits(&mut i);
    if chars.get(i) == Some(&'.') {
        i += 1;
        s.precision = Some(digits(&mut i));
    }
    // Vector size (`v2`..`v4`) and length modifiers, in either order.
    for _ in 0..2 {
        match chars.get(i) {
            Some('v') => {
                match chars.get(i + 1) {
                    Some('2' | '3' | '4') => i += 2,
                    _ => return None,
                };
            }
            Some('l') => {
                s.wide = true;
                i += 1;
                if chars.get(i) == Some(&'l') {
                    i += 1;
                }
            }
            Some('h') => {
                i += 1;
                if chars.get(i) == Some(&'h') {
                    i += 1;
                }
            }
            _ => {}
        }
    }
    let conv = *chars.get(i)?;
    if !"diuxXofFeEgGaAc".contains(conv) {
        return None;
    }
    s.conv = conv;
    Some((s, i + 1))
}

fn pad(spec: &Spec, sign: &str, prefix: &str, body: &str, numeric: bool) -> String {
    let len = sign.len() + prefix.len() + body.chars().count();
    if len >= spec.width {
        return format!("{sign}{prefix}{body}");
    }
    let fill = spec.width - len;
    if spec.left {
        format!("{sign}{prefix}{body}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        format!("{sign}{prefix}{}{body}", "0".repeat(fill))
    } else {
        format!("{}{sign}{prefix}{body}", " ".repeat(fill))
    }
}

fn sign_of(negative: bool, spec: &Spec) -> &'static str {
    if negative {
        "-"
    } else if spec.plus {
        "+"
    } else if spec.space {
        " "
    } else {
        ""
    }
}

fn format_int(s: Scalar, spec: &Spec, scalar: ScalarType) -> String {
    let wide = spec.wide || scalar.words() == 2;
    let bits = s.as_bits(wide);
    let (negative, magnitude, digits) = match spec.conv {
        'd' | 'i' => {
            let v = if wide {
                bits as i64
            } else {
                i64::from(bits as u32 as i32)
            };
            (v < 0, v.unsigned_abs(), v.unsigned_abs().to_string())
        }
        'u' => (false, bits, bits.to_string()),
        'x' => (false, bits, format!("{bits:x}")),
        'X' => (false, bits, format!("{bits:X}")),
        _ => (false, bits, format!("{bits:o}")),
    };
    let mut body = digits;
    let mut zero_ok = true;
    if let Some(p) = spec.precision {
        zero_ok = false;
        if p == 0 && magnitude == 0 {
            body.clear();
        } else if body.len() < p {
            body = format!("{}{body}", "0".repeat(p - body.len()));
        }
    }
    let prefix = match spec.conv {
        'x' if spec.alt && magnitude != 0 => "0x",
        'X' if spec.alt && magnitude != 0 => "0X",
        'o' if spec.alt && !body.starts_with('0') => "0",
        _ => "",
    };
    let sign = if matches!(spec.conv, 'd' | 'i') {
        sign_of(negative, spec)
    } else {
        ""
    };
    pad(spec, sign, prefix, &body, zero_ok)
}

/// `d.ddde+XX` from Rust's `d.ddde X`.
fn c_exponent(rust: &str, upper: bool) -> String {
    let (mantissa, exp) = rust.split_once('e').unwrap_or((rust, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}{e}{sign}{:02}", exp.unsigned_abs())
}

fn strip_fraction_zeros(s: &str) -> String {
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(p) => s.split_at(p),
        None => (s, ""),
    };
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    format!("{mantissa}{exp}")
}

fn hex_float(v: f64, precision: Option<usize>, upper: bool) -> String {
    let bits = v.to_bits();
    let exp_bits = ((bits >> 52) & 0x7FF) as i64;
    let mut mantissa = bits & ((1u64 << 52) - 1);
    let (mut lead, exp) = if exp_bits == 0 {
        if mantissa == 0 {
            (0u64, 0i64)
        } else {
            (0, -1022)
        }
    } else {
        (1, exp_bits - 1023)
    };
    let mut digits = 13usize;
    if let Some(p) = precision {
        if p < 13 {
            let shift = (13 - p) * 4;
            let half = 1u64 << (shift - 1);
            let rem = mantissa & ((1u64 << shift) - 1);
            mantissa >>= shift;
            if rem > half || (rem == half && mantissa & 1 == 1) {
                mantissa += 1;
                if mantissa >> (p * 4) != 0 {
                    mantissa &= (1u64 << (p * 4)) - 1;
                    lead += 1;
                }
            }
            digits = p;
        }
    }
    let mut frac = if digits == 0 {
        String::new()
    } else {
        format!("{mantissa:0digits$x}")
    };
    if precision.is_none() {
        frac = frac.trim_end_matches('0').to_string();
    } else if let Some(p) = precision {
        while frac.len() < p {
            frac.push('0');
        }
    }
    let dot = if frac.is_empty() { "" } else { "." };
    let s = format!(
        "0x{lead}{dot}{frac}p{}{}",
        if exp < 0 { '-' } else { '+' },
        exp.abs()
    );
    if upper {
        s.to_uppercase()
    } else {
        s
    }
}

fn format_float(s: Scalar, spec: &Spec) -> String {
    let v = s.as_f64();
    let upper = spec.conv.is_ascii_uppercase();
    let negative = v.is_sign_negative() && !v.is_nan();
    let sign = sign_of(negative, spec);
    if !v.is_finite() {
        let body = if v.is_nan() { "nan" } else { "inf" };
        let body = if upper {
            body.to_uppercase()
        } else {
            body.to_string()
        };
        return pad(spec, sign, "", &body, false);
    }
    let a = v.abs();
    let p = spec.precision.unwrap_or(6);
    let (prefix, body) = match spec.conv.to_ascii_lowercase() {
        'f' => {
            let mut b = format!("{a:.p$}");
            if spec.alt && p == 0 {
                b.push('.');
            }
            ("", b)
        }
        'e' => ("", c_exponent(&format!("{a:.p$e}"), upper)),
        'g' => {
            let p = if p == 0 { 1 } else { p };
            // The exponent the %e form would have, after rounding to p significant digits.
            let e_form = format!("{:.*e}", p - 1, a);
            let x: i32 = e_form
                .split_once('e')
                .and_then(|(_, e)| e.parse().ok())
                .unwrap_or(0);
            let b = if x < -4 || x >= p as i32 {
                c_exponent(&e_form, upper)
            } else {
                let decimals = (p as i32 - 1 - x).max(0) as usize;
                format!("{a:.decimals$}")
            };
            (
                "",
                if spec.alt {
                    b
                } else {
                    strip_fraction_zeros(&b)
                },
            )
        }
        _ => {
            let h = hex_float(a, spec.precision, upper);
            let (pre, rest) = h.split_at(2);
            return pad(spec, sign, pre, rest, true);
        }
    };
    pad(spec, sign, prefix, &body, true)
}

fn format_component(s: Scalar, spec: &Spec, scalar: ScalarType) -> String {
    match spec.conv {
        'c' => {
            let c = char::from_u32(s.as_bits(false) as u32).unwrap_or('\u{fffd}');
            pad(spec, "", "", &c.to_string(), false)
        }
        'd' | 'i' | 'u' | 'x' | 'X' | 'o' => format_int(s, spec, scalar),
        _ => format_float(s, spec),
    }
}

/// Formats a printf record the way `debugPrintfEXT` describes: each conversion takes the next value.
///
/// Conversions: `%d %i %u %x %X %o %f %F %e %E %g %G %a %A %c` and `%%`, with flags `- + space # 0`, a
/// width, a precision, vectors `%v2f`..`%v4u` (components joined by `", "`) and 64-bit lengths `%lu %lx
/// %ld` (`l`, `ll`, `h`, `hh` accepted). The value's own type decides how many words it takes; a float given
/// to an integer conversion (or the reverse) is converted by value. A conversion without a value left
/// prints as written, and so does anything the formatter does not know (`%s`, `%*d`).
pub fn format_printf(format: &str, payload: &[u32], layouts: &[ValueLayout]) -> String {
    let chars: Vec<char> = format.chars().collect();
    let mut out = String::with_capacity(format.len() + 16);
    let mut values = layouts.iter();
    let mut at = 0usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'%') {
            out.push('%');
            i += 2;
            continue;
        }
        let Some((spec, used)) = parse_spec(&chars[i + 1..]) else {
            out.push('%');
            i += 1;
            continue;
        };
        let text: String = chars[i..i + 1 + used].iter().collect();
        i += 1 + used;
        let Some(layout) = values.next() else {
            out.push_str(&text);
            continue;
        };
        let words = payload.get(at..).unwrap_or(&[]);
        at += layout.words();
        let parts: Vec<String> = components(words, layout)
            .into_iter()
            .map(|s| format_component(s, &spec, layout.scalar))
            .collect();
        let _ = write!(out, "{}", parts.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lay(scalar: ScalarType, components: u32) -> ValueLayout {
        ValueLayout {
            name: "v".into(),
            scalar,
            components,
        }
    }

    fn one(format: &str, scalar: ScalarType, words: &[u32]) -> String {
        let n = (words.len() / scalar.words()) as u32;
        format_printf(format, words, &[lay(scalar, n)])
    }

    #[test]
    fn integer_conversions() {
        use ScalarType::*;
        assert_eq!(one("%d", I32, &[(-5i32) as u32]), "-5");
        assert_eq!(one("%i", I32, &[42]), "42");
        assert_eq!(one("%u", U32, &[u32::MAX]), "4294967295");
        assert_eq!(one("%d", U32, &[u32::MAX]), "-1");
        assert_eq!(one("%x", U32, &[255]), "ff");
        assert_eq!(one("%X", U32, &[255]), "FF");
        assert_eq!(one("%#x", U32, &[255]), "0xff");
        assert_eq!(one("%o", U32, &[8]), "10");
        assert_eq!(one("%#o", U32, &[8]), "010");
        assert_eq!(one("%5d|", I32, &[42]), "   42|");
        assert_eq!(one("%-5d|", I32, &[42]), "42   |");
        assert_eq!(one("%05d", I32, &[(-42i32) as u32]), "-0042");
        assert_eq!(one("%+d", I32, &[42]), "+42");
        assert_eq!(one("% d", I32, &[42]), " 42");
        assert_eq!(one("%.4d", I32, &[42]), "0042");
        assert_eq!(one("%08x", U32, &[0xbeef]), "0000beef");
        assert_eq!(one("%c", U32, &[u32::from('A')]), "A");
        assert_eq!(one("%d", Bool, &[1]), "1");
        assert_eq!(one("%d", F32, &[2.7f32.to_bits()]), "2");
    }

    #[test]
    fn sixty_four_bit_values() {
        use ScalarType::*;
        let big = 0x1_0000_0002u64;
        let words = [big as u32, (big >> 32) as u32];
        assert_eq!(one("%lu", U64, &words), big.to_string());
        assert_eq!(one("%lx", U64, &words), "100000002");
        let neg = (-3i64) as u64;
        assert_eq!(one("%ld", I64, &[neg as u32, (neg >> 32) as u32]), "-3");
        let d = 1.25f64.to_bits();
        assert_eq!(one("%f", F64, &[d as u32, (d >> 32) as u32]), "1.250000");
        assert_eq!(one("%lu", U32, &[7]), "7");
    }

    #[test]
    fn float_conversions() {
        use ScalarType::*;
        let f = |x: f32| [x.to_bits()];
        assert_eq!(one("%f", F32, &f(1.5)), "1.500000");
        assert_eq!(one("%.2f", F32, &f(3.25)), "3.25");
        assert_eq!(one("%8.3f|", F32, &f(-1.5)), "  -1.500|");
        assert_eq!(one("%e", F32, &f(1234.5)), "1.234500e+03");
        assert_eq!(one("%E", F32, &f(0.00012)), "1.200000E-04");
        assert_eq!(one("%g", F32, &f(100000.0)), "100000");
        assert_eq!(one("%g", F32, &f(1000000.0)), "1e+06");
        assert_eq!(one("%g", F32, &f(0.0001)), "0.0001");
        assert_eq!(one("%g", F32, &f(0.5)), "0.5");
        assert_eq!(one("%a", F32, &f(1.0)), "0x1p+0");
        assert_eq!(one("%a", F32, &f(3.0)), "0x1.8p+1");
        assert_eq!(one("%A", F32, &f(-0.5)), "-0X1P-1");
        assert_eq!(one("%.1a", F32, &f(1.0)), "0x1.0p+0");
        assert_eq!(one("%a", F32, &f(0.0)), "0x0p+0");
        assert_eq!(one("%f", F32, &f(f32::NAN)), "nan");
        assert_eq!(one("%F", F32, &f(f32::INFINITY)), "INF");
        assert_eq!(one("%f", F32, &f(f32::NEG_INFINITY)), "-inf");
        assert_eq!(one("%f", I32, &[3]), "3.000000");
        assert_eq!(one("%f", F16, &f(0.25)), "0.250000");
    }

    #[test]
    fn vectors_and_mixed_arguments() {
        use ScalarType::*;
        let v = [1.0f32, 2.0, 3.0].map(f32::to_bits);
        assert_eq!(
            format_printf("p=%v3f", &v, &[lay(F32, 3)]),
            "p=1.000000, 2.000000, 3.000000"
        );
        assert_eq!(format_printf("%v2u", &[4, 5], &[lay(U32, 2)]), "4, 5");
        assert_eq!(
            format_printf("%v4d", &[1, 2, 3, (-4i32) as u32], &[lay(I32, 4)]),
            "1, 2, 3, -4"
        );
        let payload = [7, 2.5f32.to_bits(), 9, 10];
        let layouts = [lay(U32, 1), lay(F32, 1), lay(U32, 2)];
        assert_eq!(
            format_printf("a=%u b=%.1f c=%v2x 100%%", &payload, &layouts),
            "a=7 b=2.5 c=9, a 100%"
        );
        // Missing values and unknown conversions print as written.
        assert_eq!(format_printf("%d %d", &[1], &[lay(I32, 1)]), "1 %d");
        assert_eq!(format_printf("%s %q %", &[], &[]), "%s %q %");
    }

    #[test]
    fn values_for_reports() {
        use ScalarType::*;
        let zero3 = [0.0f32; 3].map(f32::to_bits);
        assert_eq!(format_value(&zero3, &lay(F32, 3)), "(0, 0, 0)");
        assert_eq!(format_value(&[f32::NAN.to_bits()], &lay(F32, 1)), "NaN");
        assert_eq!(
            format_value(&[f32::INFINITY.to_bits()], &lay(F32, 1)),
            "inf"
        );
        assert_eq!(
            format_value(&[f32::NEG_INFINITY.to_bits()], &lay(F32, 1)),
            "-inf"
        );
        assert_eq!(format_value(&[0.1f32.to_bits()], &lay(F32, 1)), "0.1");
        assert_eq!(format_value(&[1e30f32.to_bits()], &lay(F32, 1)), "1e30");
        assert_eq!(format_value(&[(-0.5f32).to_bits()], &lay(F32, 1)), "-0.5");
        assert_eq!(format_value(&[(-7i32) as u32], &lay(I32, 1)), "-7");
        assert_eq!(format_value(&[1], &lay(Bool, 1)), "true");
        let d = 0.1f64.to_bits();
        assert_eq!(
            format_value(&[d as u32, (d >> 32) as u32], &lay(F64, 1)),
            "0.1"
        );
        let vals = format_values(
            &[1.0f32.to_bits(), 2, 3],
            &[lay(F32, 1), lay(U32, 2), lay(U32, 1)],
        );
        assert_eq!(vals, vec!["1", "(2, 3)", "0"]);
    }

    fn buffer(capacity: u32, counters: u32) -> Vec<u32> {
        let mut b = vec![0u32; buffer_words(counters, capacity)];
        b[..HEADER_WORDS].copy_from_slice(&init_header(counters, capacity));
        b
    }

    fn push_record(b: &mut [u32], kind: RecordKind, stage: Stage, site: u32, payload: &[u32]) {
        let size = (RECORD_HEADER_WORDS + payload.len()) as u32;
        let off = b[header::CURSOR];
        b[header::CURSOR] += size;
        let cap = b[header::RECORDS_CAPACITY];
        if off + size > cap {
            b[header::DROPPED] += 1;
            return;
        }
        let at = (b[header::RECORDS_OFFSET] + off) as usize;
        b[at] =
            size | u32::from(kind.code()) << KIND_SHIFT | u32::from(stage.code()) << STAGE_SHIFT;
        b[at + 1] = site;
        b[at + 2..at + 6].copy_from_slice(&[12, 0, 0, 0]);
        b[at + 7..at + 7 + payload.len()].copy_from_slice(payload);
    }

    /// Reads `buffer` through an accessor that notes every index it is asked for.
    fn read_noting(
        buffer: &[u32],
        from: u32,
        end: u32,
    ) -> (RecordsRead, std::collections::BTreeSet<usize>) {
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        let read = read_records(
            |i| {
                assert!(asked.borrow_mut().insert(i), "word {i} read twice");
                buffer.get(i).copied().unwrap_or(0)
            },
            buffer[header::RECORDS_OFFSET] as usize,
            from,
            end,
        );
        (read, asked.into_inner())
    }

    fn cursor(b: &[u32]) -> u32 {
        b[header::CURSOR].min(b[header::RECORDS_CAPACITY])
    }

    #[test]
    fn reading_an_empty_area_reads_nothing() {
        let b = buffer(32, 2);
        let (read, asked) = read_noting(&b, 0, cursor(&b));
        assert_eq!(
            (read.records.len(), read.next, read.end),
            (0, 0, RecordsEnd::End)
        );
        assert!(asked.is_empty());
        // A walk that already reached the end (or starts past it: a buffer reset since) reads nothing.
        let (read, asked) = read_noting(&b, 9, 9);
        assert_eq!(
            (read.records.len(), read.next, read.end),
            (0, 9, RecordsEnd::End)
        );
        assert!(asked.is_empty());
        let (read, _) = read_noting(&b, 12, 5);
        assert_eq!(
            (read.records.len(), read.next, read.end),
            (0, 12, RecordsEnd::End)
        );
    }

    #[test]
    fn reading_stops_at_a_record_not_written_yet_and_resumes_there() {
        let mut b = buffer(64, 2);
        push_record(&mut b, RecordKind::Printf, Stage::Compute, 1, &[5]);
        push_record(&mut b, RecordKind::NanOp, Stage::Fragment, 0, &[6, 7]);
        // A third record allocated (the cursor moved) but not stored yet.
        push_record(&mut b, RecordKind::Assert, Stage::Vertex, 1, &[8]);
        let mut pending = b.clone();
        let third = b[header::RECORDS_OFFSET] as usize + 8 + 9;
        pending[third..third + 8].fill(0);
        let (read, asked) = read_noting(&pending, 0, cursor(&pending));
        assert_eq!(read.records.len(), 2);
        assert_eq!(read.records[0].kind, RecordKind::Printf);
        assert_eq!(read.records[0].stage, Some(Stage::Compute));
        assert_eq!(
            (read.records[0].site, read.records[0].invocation),
            (1, [12, 0, 0, 0])
        );
        assert_eq!(read.records[0].payload, vec![5]);
        assert_eq!(read.records[1].payload, vec![6, 7]);
        assert_eq!((read.next, read.end), (17, RecordsEnd::Unwritten));
        // Only the two records' words and the third's first word were read.
        let start = b[header::RECORDS_OFFSET] as usize;
        assert_eq!(asked, (start..start + 18).collect());
        // Once stored, the next walk reads it, and only it.
        let (again, _) = read_noting(&b, read.next, cursor(&b));
        assert_eq!(again.records.len(), 1);
        assert_eq!(again.records[0].kind, RecordKind::Assert);
        assert_eq!((again.next, again.end), (25, RecordsEnd::End));
        // Read from the start in one go, the same records.
        let (all, _) = read_noting(&b, 0, cursor(&b));
        assert_eq!(all.records[..2], read.records[..]);
        assert_eq!(all.records[2], again.records[0]);
    }

    #[test]
    fn reading_stops_at_a_record_running_past_the_end() {
        let mut b = buffer(64, 0);
        push_record(&mut b, RecordKind::Printf, Stage::Compute, 0, &[1]);
        push_record(&mut b, RecordKind::Printf, Stage::Compute, 0, &[1, 2, 3]);
        // The end cuts the second record (10 words) after 4 of its words.
        let (read, asked) = read_noting(&b, 0, 8 + 4);
        assert_eq!(read.records.len(), 1);
        assert_eq!((read.next, read.end), (8, RecordsEnd::Malformed));
        let start = b[header::RECORDS_OFFSET] as usize;
        assert!(asked.iter().all(|&i| (start..start + 12).contains(&i)));
    }

    #[test]
    fn reading_stops_at_garbage_sizes() {
        for garbage in [
            u32::from(RecordKind::Assert.code()) << KIND_SHIFT, // size 0, kind set
            (RECORD_HEADER_WORDS as u32 - 1) | u32::from(RecordKind::NanOp.code()) << KIND_SHIFT,
            0xFFFF_FFFF,
        ] {
            let mut b = buffer(64, 0);
            push_record(&mut b, RecordKind::Printf, Stage::Compute, 0, &[1]);
            let at = b[header::RECORDS_OFFSET] as usize + 8;
            b[at] = garbage;
            b[header::CURSOR] += 20;
            let (read, asked) = read_noting(&b, 0, cursor(&b));
            assert_eq!(read.records.len(), 1, "{garbage:#x}");
            assert_eq!(
                (read.next, read.end),
                (8, RecordsEnd::Malformed),
                "{garbage:#x}"
            );
            assert_eq!(
                asked.last(),
                Some(&at),
                "nothing read past the garbage word"
            );
        }
    }

    #[test]
    fn decodes_records_and_counters() {
        let mut b = buffer(64, 4);
        b[HEADER_WORDS + 2] = 4213;
        push_record(
            &mut b,
            RecordKind::NanOp,
            Stage::Compute,
            2,
            &[0, 0, 0, 1, 2, 3],
        );
        push_record(&mut b, RecordKind::Printf, Stage::Fragment, 3, &[9]);
        let d = decode(&b);
        assert!(d.header_valid);
        assert_eq!(d.malformed, 0);
        assert_eq!(d.counters, vec![0, 0, 4213, 0]);
        assert_eq!(d.records.len(), 2);
        assert_eq!(d.records[0].kind, RecordKind::NanOp);
        assert_eq!(d.records[0].stage, Some(Stage::Compute));
        assert_eq!(d.records[0].site, 2);
        assert_eq!(d.records[0].invocation, [12, 0, 0, 0]);
        assert_eq!(d.records[0].payload, vec![0, 0, 0, 1, 2, 3]);
        assert_eq!(d.records[1].payload, vec![9]);
    }

    #[test]
    fn a_full_buffer_counts_drops() {
        let mut b = buffer(20, 1);
        for _ in 0..5 {
            push_record(&mut b, RecordKind::Printf, Stage::Vertex, 0, &[1, 2]);
        }
        let d = decode(&b);
        assert_eq!(d.records.len(), 2);
        assert_eq!(d.dropped, 3);
        assert_eq!(
            d.malformed, 0,
            "the unwritten tail of a full buffer is not garbage"
        );
    }

    #[test]
    fn garbage_never_panics() {
        assert!(!decode(&[]).header_valid);
        assert!(!decode(&[1, 2, 3]).header_valid);
        let mut b = buffer(32, 2);
        b[header::CURSOR] = 10;
        let d = decode(&b);
        assert_eq!(
            (d.records.len(), d.malformed),
            (0, 1),
            "a zero-sized record is malformed"
        );
        let mut b = buffer(32, 2);
        b[header::COUNTER_COUNT] = u32::MAX;
        b[header::RECORDS_OFFSET] = u32::MAX;
        b[header::CURSOR] = u32::MAX;
        b[header::RECORDS_CAPACITY] = u32::MAX;
        let d = decode(&b);
        assert!(d.malformed >= 1);
        // A record claiming more words than the cursor covers.
        let mut b = buffer(32, 0);
        push_record(&mut b, RecordKind::Assert, Stage::Fragment, 0, &[1]);
        b[header::CURSOR] = 5;
        assert_eq!(decode(&b).malformed, 1);
        // Random words everywhere.
        let mut state = 0x9e37_79b9u32;
        for _ in 0..500 {
            let mut b = buffer(64, 3);
            for w in b.iter_mut().skip(2) {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                *w = if state % 3 == 0 { state % 40 } else { state };
            }
            let d = decode(&b);
            assert!(d.records.len() <= 64);
        }
    }
}
