//! The SPIR-V engine of Blackbox.
//!
//! This crate takes SPIR-V modules in and gives instrumented SPIR-V modules out, together with what it
//! learnt about each shader. It knows nothing of Vulkan: the layer (`blackbox-layer`) and the CLI
//! (`blackbox instrument`, `blackbox shader-info`) both drive it, and it is tested offline on real compiler
//! output.
//!
//! # Main types
//!
//! - [`instrument`] takes a module's words and [`Options`] and returns [`Instrumented`]: the new words and a
//!   [`ShaderInfo`] whose [`Site`]s say what each record means (kind, source location, format, value
//!   layout). A module it cannot handle comes back as [`NotInstrumented`] with the reason; the caller then
//!   uses the original module unchanged. [`instrument_with_id`] is the same for a caller that has the
//!   module's [`ShaderId`] already (the layer, which looks modules up in a cache by it first).
//! - [`shader_info`] is the analysis alone: [`ShaderId`] (content hash), SPIR-V version, [`EntryPoint`]s,
//!   [`SourceFile`]s with their text when the module carries it, and names to match shaders by.
//! - [`fnv1a64`] ([`Fnv1a64`] piece by piece) is Blackbox's one content hash: shader ids and crash
//!   signatures.
//! - [`record`] is the contract between instrumented shaders and the layer: the error-buffer header, the
//!   record layout, [`record::decode`] and the value formatting ([`record::format_printf`],
//!   [`record::format_values`]).
//! - [`module::Module`] is the module structure everything works on: sections of raw instructions that
//!   write back word for word.
//!
//! # How it works
//!
//! `module` parses; `analysis` builds the lookups (types, names, builtins, entry points, source lines);
//! `base` is the shared instrumentation base (error-buffer access through a device address baked into the
//! module, helper functions, prologues, entry-point interfaces); `passes` are the callbacks over it, one file
//! each: `assert`, `printf`, `nan_guard`, `loops`, `int_guard`, `strip`. A site never changes the application's
//! control flow: it is a call to a helper function that holds the check and the record write. The one
//! exception is `break` mode of loop budgets ([`LoopMode::Break`]), whose purpose is to change it: a loop
//! header's branch also leaves for the merge block once the invocation has passed its budget.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod analysis;
mod base;
pub mod error;
mod grammar;
pub mod hash;
pub mod info;
pub mod module;
mod passes;
pub mod record;
mod util;

use crate::util::FastSet;

use analysis::Analysis;
pub use error::{NotInstrumented, NotInstrumentedKind};
pub use hash::{fnv1a64, Fnv1a64};
pub use info::{
    EntryPoint, FragmentOutput, ShaderId, ShaderInfo, Site, SiteKind, SourceFile, SourceLanguage,
    SourceLocation, Stage,
};
use module::Module;
pub use passes::assert::ASSERT_PREFIX;
pub use record::{ScalarType, ValueLayout};

/// The version of the engine, recorded in dumps and reports so that an instrumented module can be traced to
/// the code that produced it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How much NaN/Inf checking to add.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NanLevel {
    /// None.
    #[default]
    Off,
    /// Float values that leave the invocation: stores to stage outputs, buffers and ray-tracing and task
    /// payloads, image writes, integers that hold a float's bits stored there, copies into them, float
    /// atomics, reported hit distances (see the `nan_guard` pass).
    Outputs,
    /// Every float operation that can make NaN or Inf from finite operands, plus everything `Outputs` checks.
    Ops,
}

impl NanLevel {
    /// Every level, in order.
    pub const ALL: [NanLevel; 3] = [NanLevel::Off, NanLevel::Outputs, NanLevel::Ops];

    /// The level's name, as `VK_BLACKBOX_NAN`, `blackbox instrument --nan` and reports spell it.
    pub const fn name(self) -> &'static str {
        match self {
            NanLevel::Off => "off",
            NanLevel::Outputs => "outputs",
            NanLevel::Ops => "ops",
        }
    }

    /// What the level checks, in a line.
    pub const fn describe(self) -> &'static str {
        match self {
            NanLevel::Off => "no checks",
            NanLevel::Outputs => {
                "float values leaving the shader (stores, copies and float atomics to outputs, buffers, \
                 images and ray-tracing and task payloads, floats stored as integer bits)"
            }
            NanLevel::Ops => {
                "every float operation that can make NaN or Inf from finite operands, and outputs"
            }
        }
    }
}

impl std::fmt::Display for NanLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for NanLevel {
    type Err = String;

    /// A level by name, in any case.
    fn from_str(s: &str) -> Result<Self, String> {
        NanLevel::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("{s:?} is not one of off, outputs, ops"))
    }
}

/// What to do about loops that run too long (`VK_BLACKBOX_LOOPS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LoopMode {
    /// No loop counters.
    #[default]
    Off,
    /// Count each loop's iterations; an invocation that passes the budget records once, and the loop goes
    /// on.
    Report,
    /// As `Report`, and the invocation then leaves the loop and every loop it is nested in (and every loop
    /// it enters afterwards, at its first iteration), so that the dispatch finishes.
    Break,
}

impl LoopMode {
    /// Every mode, in order.
    pub const ALL: [LoopMode; 3] = [LoopMode::Off, LoopMode::Report, LoopMode::Break];

    /// The mode's name, as `VK_BLACKBOX_LOOPS` spells it.
    pub const fn name(self) -> &'static str {
        match self {
            LoopMode::Off => "off",
            LoopMode::Report => "report",
            LoopMode::Break => "break",
        }
    }

    /// What the mode does, in a line.
    pub const fn describe(self) -> &'static str {
        match self {
            LoopMode::Off => "no loop counters",
            LoopMode::Report => "a loop past its budget records once per invocation and goes on",
            LoopMode::Break => {
                "a loop past its budget records once per invocation, which then leaves it and the loops around it"
            }
        }
    }
}

impl std::fmt::Display for LoopMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LoopMode {
    type Err = String;

    /// A mode by name, in any case.
    fn from_str(s: &str) -> Result<Self, String> {
        LoopMode::ALL
            .into_iter()
            .find(|l| l.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("{s:?} is not one of off, report, break"))
    }
}

/// The scope of the shader clock a loop's time budget reads (`OpReadClockKHR`, `VK_KHR_shader_clock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClockScope {
    /// `Subgroup` scope: `shaderSubgroupClock`.
    Subgroup,
    /// `Device` scope: `shaderDeviceClock`.
    Device,
}

impl ClockScope {
    /// The SPIR-V scope of `OpReadClockKHR`.
    pub(crate) fn spirv(self) -> spirv::Scope {
        match self {
            ClockScope::Subgroup => spirv::Scope::Subgroup,
            ClockScope::Device => spirv::Scope::Device,
        }
    }
}

/// A time budget for loops, on a device with `VK_KHR_shader_clock`. The clock's unit is the
/// implementation's: the layer turns `VK_BLACKBOX_LOOP_MS` into ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoopClock {
    /// Which clock to read (the device must have the matching feature enabled).
    pub scope: ClockScope,
    /// An invocation whose loops have run for more than this many clock ticks fires at the next check.
    pub budget_ticks: u64,
}

/// What to instrument, and where records go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// The device address of the error buffer (see [`record`]).
    pub error_buffer_address: u64,
    /// The global index of this module's first site: its sites count into `counters[site_base + local]`.
    pub site_base: u32,
    /// The error buffer's sizes, where the caller knows them (the layer passes them on CPU devices; on
    /// NVIDIA's GPUs the constants made fragment code slower): the record writers then take
    /// the counters' offset and count and the record area's offset and size as constants instead of reading
    /// them from the header for each record. The check of a site's counter index then folds away, and
    /// llvmpipe, where each read through a device address is a loop over the lanes, compiles a writer
    /// faster. `None` (the default): read from the header, for a module instrumented without the layer.
    pub buffer_layout: Option<record::BufferLayout>,
    /// Turn `BB_ASSERT`s into records (else they are removed).
    pub asserts: bool,
    /// Turn `debugPrintfEXT`/`printf` calls into records (else they are removed).
    pub printf: bool,
    /// NaN/Inf checks.
    pub nan: NanLevel,
    /// After a failing assert's record, store through [`record::CRASH_ADDRESS`] to fault the device.
    pub assert_crash: bool,
    /// Full records kept per assert and NaN site (the count is always exact).
    pub full_records_per_site: u32,
    /// Records kept per printf site.
    pub printf_records_per_site: u32,
    /// Remove every `NonSemantic.*` instruction (source-level debug info included, after reading it) so
    /// that the module loads without `VK_KHR_shader_non_semantic_info`. `NonSemantic.DebugPrintf` calls are
    /// removed whatever this says.
    pub strip_non_semantic: bool,
    /// Loop budgets: per-invocation iteration counters in every loop ([`LoopMode`]).
    pub loops: LoopMode,
    /// The iteration budget of one loop: an invocation that has run this many iterations of a loop and
    /// starts one more fires. 0: no iteration budget (only the time budget, if any).
    pub loop_limit: u32,
    /// A time budget as well, read from the shader clock; `None` (the default) counts iterations only. Set
    /// only for a device with `VK_KHR_shader_clock` and the clock's feature enabled.
    pub loop_clock: Option<LoopClock>,
    /// Integer checks: division and remainder by zero, signed `INT_MIN / -1`, shifts by the bit width or
    /// more, and dynamic indices out of range of a vector or fixed-size array. The operations run unchanged.
    pub int_checks: bool,
    /// NaN checks (at `outputs` and `ops`) and integer checks keep what they find in the invocation's
    /// private memory and write their records when it ends, one per site and invocation, counts exact (see
    /// [`record`]'s "What a site does"), instead of where they fire. Where it is on, the app's code gets no
    /// access to the error buffer, which on llvmpipe keeps the cost of compiling the checks low and the
    /// float results as they are; a device fault or an endless loop before the invocation ends loses these
    /// records. On by default; the layer turns it on for CPU devices only (on NVIDIA's compiler the flush
    /// did not make compiling cheaper).
    pub records_at_end: bool,
    /// Each value a NaN check is handed goes through an `OpSelect` of it on a condition never true at run
    /// time (the invocation's first word is `0xFFFFFFFF`), so that the check is one use of a value the app
    /// also stores, not one per component. Lavapipe of Mesa 22.3 (Debian 12) marks a scalar stored with five
    /// uses or more, read from uniform buffers alone, as a uniform to inline, and its inlining of uniform
    /// buffers when a draw begins then crashed the process (piglit's `arb_gl_spirv` `ubo/aoa-2` through
    /// zink, NaN `outputs`). Off by default; the layer turns it on for CPU devices.
    pub nan_values_through_select: bool,
    /// For a fragment shader instrumented for one graphics pipeline: per output `Location`, the components
    /// (bit i: component i, counted from the location's first) that reach the pipeline's colour attachment
    /// there, which its format, write mask and blending keep. Locations past the end have no attachment.
    /// The `outputs` checks read only those components of a fragment output: a component the pipeline
    /// drops is no NaN that reaches memory, and a check that reads it keeps alive the work computing it,
    /// which the driver would otherwise drop. Empty (the default): every component of every output.
    /// Applied only to a module whose entry points are all fragment shaders.
    pub fragment_output_components: Vec<u8>,
}

/// The default of [`Options::loop_limit`]: 2^24 iterations.
pub const DEFAULT_LOOP_LIMIT: u32 = 1 << 24;

impl Default for Options {
    /// Asserts and printf on, NaN checks off, 8 full records per site, 1024 per printf site, stripping on,
    /// loop counters and integer checks off (a loop limit of [`DEFAULT_LOOP_LIMIT`], no clock), error
    /// buffer at address 0, site base 0, the buffer's sizes read from its header (the layer sets the
    /// address and base, and the sizes on CPU devices).
    fn default() -> Self {
        Options {
            error_buffer_address: 0,
            site_base: 0,
            buffer_layout: None,
            asserts: true,
            printf: true,
            nan: NanLevel::Off,
            assert_crash: false,
            full_records_per_site: 8,
            printf_records_per_site: 1024,
            strip_non_semantic: true,
            loops: LoopMode::Off,
            loop_limit: DEFAULT_LOOP_LIMIT,
            loop_clock: None,
            int_checks: false,
            records_at_end: true,
            nan_values_through_select: false,
            fragment_output_components: Vec::new(),
        }
    }
}

/// An instrumented module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instrumented {
    /// The new module. When nothing needed changing it equals the input.
    pub words: Vec<u32>,
    /// What the engine knows about the input, with its sites.
    pub info: ShaderInfo,
}

/// Instruments a module. Deterministic: the same words and options give the same output.
///
/// The result uses the error buffer only when it has sites; a module without any (nothing to check, printf
/// and asserts off) gets no buffer access and only loses its `NonSemantic.DebugPrintf` calls (and, with
/// [`Options::strip_non_semantic`], the rest of its `NonSemantic.*` instructions).
pub fn instrument(words: &[u32], options: &Options) -> Result<Instrumented, NotInstrumented> {
    instrument_parsed(parse_supported(words, None)?, options)
}

/// [`instrument`] for a caller that has the module's id already ([`ShaderId::of`] the same words, say to
/// look the module up in a cache first): the words are not hashed again, which at the default options is
/// about a fifth of [`instrument`]'s time. The id is taken as given: it names the shader in the result.
pub fn instrument_with_id(
    words: &[u32],
    id: ShaderId,
    options: &Options,
) -> Result<Instrumented, NotInstrumented> {
    debug_assert_eq!(id, ShaderId::of(words), "the id of other words");
    instrument_parsed(parse_supported(words, Some(id))?, options)
}

/// [`instrument`] from [`parse_supported`]'s result.
fn instrument_parsed(
    (mut module, notes): (Module, module::ParseNotes),
    options: &Options,
) -> Result<Instrumented, NotInstrumented> {
    // An instruction this engine has no grammar for may define ids or types, or end a block, in ways the
    // passes cannot see: such a module is handed back as it is rather than risk breaking it.
    if let Some(unknown) = notes.first_unknown {
        return Err(NotInstrumented::unsupported(format!(
            "opcode {unknown} is not in the SPIR-V grammar this engine knows"
        )));
    }
    let id = ShaderId(notes.hash);
    let mut base = base::Base::new(&module, notes.value_types, options)?;
    // The type table only for a module that a pass may change: at the default options most have no debug
    // printf, and reading their types and constants was a tenth of their cost.
    if passes::may_instrument(&base, options) {
        base.b.read_types(&module);
    }
    let mut info = basic_info(id, &module, &base.an);
    let mut asserts = passes::assert::AssertPass;
    let mut printf = passes::printf::PrintfPass;
    let mut nan = passes::nan_guard::NanGuardPass::new(options, &module, &base);
    info.fragment_outputs = nan.fragment_outputs();
    let mut loops = passes::loops::LoopPass::new(&module, &base, options);
    let mut ints = passes::int_guard::IntGuardPass::new(&module, &base, options);
    base.run(
        &mut module,
        &mut [&mut asserts, &mut printf, &mut nan, &mut loops, &mut ints],
    )?;
    loops.finish(&mut base, &mut module);
    info.sites = base.finish(&mut module)?;
    info::assign_places(&mut info.sites);
    if options.strip_non_semantic {
        passes::strip::strip_non_semantic(&mut module);
    }
    passes::strip::remove_unused_imports(&mut module);
    Ok(Instrumented {
        words: module.to_words(),
        info,
    })
}

/// Whether [`instrument`] could change the module at all with these options: NaN checks, loop counters or
/// integer checks are asked for, or the module imports a `NonSemantic.*` instruction set (printf, asserts,
/// debug info). A scan of the
/// module's preamble, far cheaper than [`instrument`]: callers skip the engine for most modules of an app
/// that uses neither. Malformed input answers `true`, so [`instrument`] gives the reason.
pub fn needs_instrumentation(words: &[u32], options: &Options) -> bool {
    if options.nan != NanLevel::Off || options.loops != LoopMode::Off || options.int_checks {
        return true;
    }
    let mut i = 5;
    while i < words.len() {
        let (count, opcode) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        if count == 0 || i + count > words.len() {
            return true;
        }
        if opcode == spirv::Op::Function as u32 {
            return false;
        }
        if opcode == spirv::Op::ExtInstImport as u32 && count > 2 {
            let name: Vec<u8> = words[i + 2..i + count]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            if name.starts_with(b"NonSemantic.") {
                return true;
            }
        }
        i += count;
    }
    words.len() < 5
}

/// What the engine knows about a module, without rewriting it (`sites` is empty).
pub fn shader_info(words: &[u32]) -> Result<ShaderInfo, NotInstrumented> {
    let (module, notes) = parse_supported(words, None)?;
    let an = Analysis::with_value_types(&module, notes.value_types)?;
    Ok(basic_info(ShaderId(notes.hash), &module, &an))
}

/// Parses a module of a SPIR-V version the engine knows; also returns what the parser noted on the way
/// (`Module::parse_and_hash`): the hash of its [`ShaderId`] (`known`, where the caller has it, is taken
/// instead of hashing), the first opcode it has no grammar for, the values' types.
fn parse_supported(
    words: &[u32],
    known: Option<ShaderId>,
) -> Result<(Module, module::ParseNotes), NotInstrumented> {
    let (module, notes) = match known {
        None => Module::parse_and_hash(words)?,
        Some(id) => {
            let (module, mut notes) = Module::parse_with_notes(words)?;
            notes.hash = id.0;
            (module, notes)
        }
    };
    let (major, minor) = module.version();
    if major != 1 || minor > 6 {
        return Err(NotInstrumented::unsupported(format!(
            "SPIR-V version {major}.{minor}"
        )));
    }
    Ok((module, notes))
}

fn basic_info(id: ShaderId, module: &Module, an: &Analysis) -> ShaderInfo {
    let entry_points = an.public_entry_points();
    let sources = analysis::source::source_files(module, an);
    let names = entry_points
        .iter()
        .map(|e| e.name.as_str())
        .chain(
            entry_points
                .iter()
                .filter_map(|e| e.function_name.as_deref()),
        )
        .chain(sources.iter().map(|s| s.name.as_str()))
        .filter(|n| !n.is_empty());
    // A module has a few such names: each is looked for among those kept so far, with no table to build
    // and no copy of each name to key it; a set only where there are many.
    let mut kept: Vec<&str> = Vec::new();
    let mut seen: Option<FastSet<&str>> = None;
    for name in names {
        let new = match &mut seen {
            Some(seen) => seen.insert(name),
            None => !kept.contains(&name),
        };
        if new {
            kept.push(name);
            if seen.is_none() && kept.len() > 16 {
                seen = Some(kept.iter().copied().collect());
            }
        }
    }
    let debug_names = kept.into_iter().map(str::to_owned).collect();
    ShaderInfo {
        id,
        spirv_version: module.version(),
        entry_points,
        sources,
        debug_names,
        sites: Vec::new(),
        fragment_outputs: Vec::new(),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_modes_parse_and_print_by_name() {
        for mode in LoopMode::ALL {
            assert_eq!(mode.name().parse::<LoopMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.name());
        }
        assert_eq!(" BREAK ".parse::<LoopMode>(), Ok(LoopMode::Break));
        assert!("stop"
            .parse::<LoopMode>()
            .unwrap_err()
            .contains("off, report, break"));
        assert_eq!(Options::default().loops, LoopMode::Off);
        assert_eq!(Options::default().loop_limit, 1 << 24);
    }

    #[test]
    fn new_checks_need_instrumentation() {
        // A module with no NonSemantic import: nothing to do unless a check is asked for.
        let words = [crate::module::MAGIC, 0x0001_0000, 0, 1, 0];
        assert!(!needs_instrumentation(&words, &Options::default()));
        for options in [
            Options {
                loops: LoopMode::Report,
                ..Options::default()
            },
            Options {
                int_checks: true,
                ..Options::default()
            },
        ] {
            assert!(needs_instrumentation(&words, &options));
        }
    }
}
