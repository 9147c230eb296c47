//! What the engine knows about a shader module: [`ShaderInfo`] and the types it is made of.

use std::fmt;
use std::sync::Arc;

use crate::hash::Fnv1a64;
use crate::record::{RecordKind, ValueLayout};
use crate::util::{map_with_capacity, FastMap, FastSet};

/// A shader's identity: a 64-bit content hash of the module's words as given to the engine (before any
/// rewrite). `Display` writes 16 lowercase hex digits; that string is what dumps, logs and
/// `VK_BLACKBOX_SHADERS` use.
///
/// The hash is [`crate::fnv1a64`] over the little-endian bytes of the words (the module's file), so any
/// tool can recompute it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShaderId(pub u64);

impl ShaderId {
    /// The id of a module given as words. It reads nothing but the words, so a module the engine refuses
    /// (or that is not SPIR-V at all) has an id too. Allocates nothing.
    pub fn of(words: &[u32]) -> ShaderId {
        let mut h = Fnv1a64::new();
        h.write_words(words);
        ShaderId(h.finish())
    }
}

impl fmt::Display for ShaderId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// A shader stage (a SPIR-V execution model of the Vulkan environment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Stage {
    /// Vertex shader.
    Vertex,
    /// Tessellation control shader.
    TessellationControl,
    /// Tessellation evaluation shader.
    TessellationEvaluation,
    /// Geometry shader.
    Geometry,
    /// Fragment shader.
    Fragment,
    /// Compute shader.
    Compute,
    /// Task shader (EXT or NV).
    Task,
    /// Mesh shader (EXT or NV).
    Mesh,
    /// Ray generation shader.
    RayGeneration,
    /// Intersection shader.
    Intersection,
    /// Any-hit shader.
    AnyHit,
    /// Closest-hit shader.
    ClosestHit,
    /// Miss shader.
    Miss,
    /// Callable shader.
    Callable,
}

impl Stage {
    /// Every stage, in code order.
    pub const ALL: [Stage; 14] = [
        Stage::Vertex,
        Stage::TessellationControl,
        Stage::TessellationEvaluation,
        Stage::Geometry,
        Stage::Fragment,
        Stage::Compute,
        Stage::Task,
        Stage::Mesh,
        Stage::RayGeneration,
        Stage::Intersection,
        Stage::AnyHit,
        Stage::ClosestHit,
        Stage::Miss,
        Stage::Callable,
    ];

    /// The stage of a SPIR-V execution model (an `OpEntryPoint`'s first operand), or `None` for kernels and
    /// models the `spirv` grammar does not know.
    pub fn from_execution_model(model: u32) -> Option<Stage> {
        use spirv::ExecutionModel as M;
        Some(match M::from_u32(model)? {
            M::Vertex => Stage::Vertex,
            M::TessellationControl => Stage::TessellationControl,
            M::TessellationEvaluation => Stage::TessellationEvaluation,
            M::Geometry => Stage::Geometry,
            M::Fragment => Stage::Fragment,
            M::GLCompute => Stage::Compute,
            M::TaskNV | M::TaskEXT => Stage::Task,
            M::MeshNV | M::MeshEXT => Stage::Mesh,
            M::RayGenerationKHR => Stage::RayGeneration,
            M::IntersectionKHR => Stage::Intersection,
            M::AnyHitKHR => Stage::AnyHit,
            M::ClosestHitKHR => Stage::ClosestHit,
            M::MissKHR => Stage::Miss,
            M::CallableKHR => Stage::Callable,
            M::Kernel => return None,
        })
    }

    /// The stage's code in a record's stage byte (see [`crate::record`]): its index in [`Stage::ALL`].
    pub fn code(self) -> u8 {
        Stage::ALL.iter().position(|s| *s == self).unwrap_or(0) as u8
    }

    /// The stage with a record's stage code.
    pub fn from_code(code: u8) -> Option<Stage> {
        Stage::ALL.get(usize::from(code)).copied()
    }

    /// The usual file-extension name of the stage: `vert`, `tesc`, `tese`, `geom`, `frag`, `comp`, `task`,
    /// `mesh`, `rgen`, `rint`, `rahit`, `rchit`, `rmiss`, `rcall`.
    pub fn short_name(self) -> &'static str {
        match self {
            Stage::Vertex => "vert",
            Stage::TessellationControl => "tesc",
            Stage::TessellationEvaluation => "tese",
            Stage::Geometry => "geom",
            Stage::Fragment => "frag",
            Stage::Compute => "comp",
            Stage::Task => "task",
            Stage::Mesh => "mesh",
            Stage::RayGeneration => "rgen",
            Stage::Intersection => "rint",
            Stage::AnyHit => "rahit",
            Stage::ClosestHit => "rchit",
            Stage::Miss => "rmiss",
            Stage::Callable => "rcall",
        }
    }

    /// What the four invocation words of a record from this stage hold, for reports.
    pub fn invocation_meaning(self) -> &'static str {
        match self {
            Stage::Compute | Stage::Task | Stage::Mesh => "global invocation id x, y, z",
            Stage::Fragment => "pixel x, y",
            Stage::Vertex => "vertex index, instance index",
            Stage::TessellationControl | Stage::Geometry => "invocation id, primitive id",
            Stage::TessellationEvaluation => "primitive id",
            _ => "launch id x, y, z",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

/// One entry point of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPoint {
    /// The entry point's name (as the pipeline names it).
    pub name: String,
    /// Its stage.
    pub stage: Stage,
    /// The `OpName` of its function, when the module has one.
    pub function_name: Option<String>,
}

/// A source language, as `OpSource` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SourceLanguage {
    /// Not stated.
    Unknown,
    /// OpenGL ES Shading Language.
    Essl,
    /// OpenGL Shading Language.
    Glsl,
    /// HLSL.
    Hlsl,
    /// Slang.
    Slang,
    /// WGSL.
    Wgsl,
    /// Another language, by its SPIR-V `SourceLanguage` number.
    Other(u32),
}

impl SourceLanguage {
    /// The language of a SPIR-V `SourceLanguage` number (an `OpSource`'s first operand).
    pub fn from_spirv(n: u32) -> SourceLanguage {
        use spirv::SourceLanguage as L;
        match L::from_u32(n) {
            Some(L::Unknown) => SourceLanguage::Unknown,
            Some(L::ESSL) => SourceLanguage::Essl,
            Some(L::GLSL) => SourceLanguage::Glsl,
            Some(L::HLSL) => SourceLanguage::Hlsl,
            Some(L::WGSL) => SourceLanguage::Wgsl,
            Some(L::Slang) => SourceLanguage::Slang,
            _ => SourceLanguage::Other(n),
        }
    }
}

/// One source file the module names (`OpSource`, `NonSemantic.Shader.DebugInfo.100` `DebugSource`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The file name as the compiler wrote it; empty when the module names none.
    pub name: String,
    /// The source text, when the module carries it (`-g`, `-gVS`, DXC `-fspv-debug=vulkan-with-source`).
    pub text: Option<String>,
    /// The language.
    pub language: SourceLanguage,
    /// The language version (`450`, `500`, ...), 0 when unknown.
    pub version: u32,
}

/// A place in a source file. Lines and columns count from 1; 0 means unknown (glslang writes column 0).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceLocation {
    /// The file name, as the module gives it.
    pub file: String,
    /// The line.
    pub line: u32,
    /// The column, 0 when unknown.
    pub column: u32,
}

impl SourceLocation {
    /// `file:line` or `file:line:column` (`<unknown>` for no file), written directly: the formatter's
    /// machinery cost more than the text at every site. `Display` prints the same.
    fn place(&self) -> String {
        let file = if self.file.is_empty() {
            "<unknown>"
        } else {
            &self.file
        };
        let mut out = String::with_capacity(file.len() + 12);
        out.push_str(file);
        out.push(':');
        crate::util::push_decimal(&mut out, self.line);
        if self.column != 0 {
            out.push(':');
            crate::util::push_decimal(&mut out, self.column);
        }
        out
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.place())
    }
}

/// What an instrumented site reports.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SiteKind {
    /// A failing `BB_ASSERT` with this id.
    Assert {
        /// The assert's id, as written in the shader.
        id: u32,
    },
    /// A `debugPrintfEXT`/`printf` call.
    Printf,
    /// A float operation that made NaN or Inf from finite operands.
    NanOp {
        /// The operation, GLSL-style: `normalize`, `pow`, `division`, ...
        op: &'static str,
    },
    /// A NaN or Inf leaving the shader.
    NanOutput {
        /// How it leaves: a store (`"output"`, `"storage buffer store"`, `"image store"`, `"ray payload
        /// store"`, `"incoming ray payload store"`, `"callable data store"`, `"incoming callable data
        /// store"`, `"hit attribute store"`, `"task payload store"`), the same of an integer bit-cast from a
        /// float (`"storage buffer store of a bitcast float"`, `"output of a bitcast float"`, ...), a copy
        /// (`"copy to output"`, `"copy to storage buffer"`, `"copy to ray payload"`, ...) or an atomic
        /// (`"atomic float add"`, `"atomic float min"`, `"atomic float max"`, `"atomic float store"`,
        /// `"atomic float exchange"`, `"atomic store of a bitcast float"`, ...), or the hit distance an
        /// intersection shader reports (`"reported hit distance"`).
        what: &'static str,
    },
    /// A loop whose iteration (or time) budget an invocation passed ([`crate::Options::loops`]). The
    /// site's location is the loop header's; its payload starts with the iterations so far (see
    /// [`crate::record`]).
    LoopBudget {
        /// The result id of the loop header's `OpLabel`: names the loop in a module without line
        /// information (`loop %27 in main`), and in its disassembly.
        header: u32,
        /// How many loops of the same function the loop is nested in (0 for an outermost loop).
        depth: u32,
    },
    /// An integer operation with undefined behaviour ([`crate::Options::int_checks`]): a division or
    /// remainder by zero, signed `INT_MIN / -1`, or a shift by at least the bit width. The payload holds
    /// the two operands; which case it was follows from their values.
    IntOp {
        /// The SPIR-V opcode without `Op`: `SDiv`, `UDiv`, `SRem`, `SMod`, `UMod`, `ShiftLeftLogical`,
        /// `ShiftRightLogical`, `ShiftRightArithmetic`.
        op: &'static str,
    },
    /// A dynamic index out of range of a vector, matrix or fixed-size array ([`crate::Options::int_checks`]).
    /// The payload holds each checked index with the length it must stay under.
    IndexOutOfRange {
        /// The SPIR-V opcode without `Op`: `AccessChain`, `InBoundsAccessChain`, `VectorExtractDynamic`,
        /// `VectorInsertDynamic`.
        op: &'static str,
    },
}

impl fmt::Display for SiteKind {
    /// `nan-op normalize`, `nan-output storage buffer store`, `assert 7`, `printf`, `loop`, `int-op SDiv`,
    /// `index AccessChain`: the kind as site tables
    /// and `// expect:` markers write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SiteKind::Assert { id } => write!(f, "assert {id}"),
            SiteKind::Printf => f.write_str("printf"),
            SiteKind::NanOp { op } => write!(f, "nan-op {op}"),
            SiteKind::NanOutput { what } => write!(f, "nan-output {what}"),
            SiteKind::LoopBudget { .. } => f.write_str("loop"),
            SiteKind::IntOp { op } => write!(f, "int-op {op}"),
            SiteKind::IndexOutOfRange { op } => write!(f, "index {op}"),
        }
    }
}

impl SiteKind {
    /// The record kind this site writes.
    pub fn record_kind(&self) -> RecordKind {
        match self {
            SiteKind::Assert { .. } => RecordKind::Assert,
            SiteKind::Printf => RecordKind::Printf,
            SiteKind::NanOp { .. } => RecordKind::NanOp,
            SiteKind::NanOutput { .. } => RecordKind::NanOutput,
            SiteKind::LoopBudget { .. } => RecordKind::LoopBudget,
            SiteKind::IntOp { .. } => RecordKind::IntOp,
            SiteKind::IndexOutOfRange { .. } => RecordKind::IndexOutOfRange,
        }
    }
}

/// One instrumented site: a place in the module that writes records.
///
/// A site is named, in log lines, reports and `blackbox instrument --sites` / `blackbox shader-info
/// --sites`, by its number (`site N`: `local_index`, or `site_base + local_index` where the global index is
/// meant), its kind, [`Site::place`] and [`Site::scope`]; [`Site::describe`] puts the last three together.
/// No two sites of a module have the same description, with or without debug info.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The index of the site in its module, from 0 in module order: the `N` of `site N`. Its counter and its
    /// records use the global index `site_base + local_index`.
    pub local_index: u32,
    /// What it reports.
    pub kind: SiteKind,
    /// Where it is in the source, when the module has line information.
    pub location: Option<SourceLocation>,
    /// For printf sites (and asserts written with a message), the format string to apply to the values.
    pub format: Option<String>,
    /// The values of the record payload, in order.
    pub values: Vec<ValueLayout>,
    /// The stage of the first entry point whose call tree reaches the site (records carry their own stage).
    pub stage: Stage,
    /// The `OpName` of the function that contains the site, when there is one. Shared by the sites of
    /// one function (most have several): a copy each was several allocations per site.
    pub function: Option<Arc<str>>,
    /// The names of the entry points whose static call tree reaches the site, in module order, each name
    /// once; empty when none does. Shared by the sites of one function, like `function`.
    pub entry_points: Arc<[String]>,
    /// The instruction the site checks (for printf and asserts, the call it replaces) as `spirv-dis
    /// --raw-id` writes it, with the ids of the module as the app gave it: `%412 = OpExtInst %3 %1 Sqrt
    /// %409`, `OpStore %29 %30`, `OpCopyMemory %12 %15`. Searching the disassembly of that module
    /// (`spirv-dis --raw-id`; the layer's `VK_BLACKBOX_DUMP_SHADERS` writes the module as `<id>.spv`)
    /// finds it. Ids are numbers, not spirv-dis's friendly names (`%float`), which depend on the whole
    /// module.
    pub instruction: String,
    /// Where the site is, in one phrase: its source location (`particles.comp:42:17`) when it has one, else
    /// `instruction ` and [`Site::instruction`]. When another site of the module of the same kind and scope
    /// has the same location, the instruction follows the location (`particles.comp:42, instruction %412 =
    /// ...`); sites that would still read alike (the same instruction text twice) end in ` #1`, ` #2`, ...
    pub place: String,
}

impl Site {
    /// The payload size of this site's records, in words.
    pub fn payload_words(&self) -> usize {
        self.values.iter().map(ValueLayout::words).sum()
    }

    /// The kind with its format, for printf sites and asserts written with a message: `nan-op sqrt`,
    /// `nan-output ray payload store`, `assert 7`, `assert 7 "size %f"`, `printf "n = %v3f"`.
    pub fn kind_text(&self) -> String {
        match self.shown_format() {
            Some(format) => format!("{} {format:?}", self.kind),
            None => self.kind.to_string(),
        }
    }

    /// The function and entry points the site is in: `entry point main (comp)`, `function
    /// attraction(vf3;vf3;, entry point main (comp)`, `function f, entry points vs, ps`, `no entry point`.
    /// The function is left out when it has no `OpName` or is named like an entry point (glslang names the
    /// entry function `main`); the stage is given with a single entry point.
    pub fn scope(&self) -> String {
        let mut out = String::new();
        if let Some(f) = self.shown_function() {
            out.push_str("function ");
            out.push_str(f);
            out.push_str(", ");
        }
        match &self.entry_points[..] {
            [] => out.push_str("no entry point"),
            [one] => out.push_str(&format!("entry point {one} ({})", self.stage)),
            many => {
                out.push_str("entry points ");
                out.push_str(&many.join(", "));
            }
        }
        out
    }

    /// The function as [`Site::scope`] names it: not when unnamed or named like an entry point.
    fn shown_function(&self) -> Option<&str> {
        self.function
            .as_deref()
            .filter(|f| !f.is_empty() && !self.entry_points.iter().any(|e| e == f))
    }

    /// The format as [`Site::kind_text`] shows it: for printf sites and asserts only.
    fn shown_format(&self) -> Option<&str> {
        match self.kind {
            SiteKind::Printf | SiteKind::Assert { .. } => self.format.as_deref(),
            _ => None,
        }
    }

    /// The site in one line, without its number: `{kind_text} at {place} in {scope}`, e.g. `nan-op sqrt at
    /// instruction %412 = OpExtInst %3 %1 Sqrt %409 in function shade(, entry point main (frag)`. Unique
    /// among the sites of a module.
    pub fn describe(&self) -> String {
        format!("{} at {} in {}", self.kind_text(), self.place, self.scope())
    }

    /// Its line in a site table (`blackbox instrument --sites`, `shader-info --sites`, the layer's
    /// `<id>.sites.txt`): `site <index>: <description>; values <name: type, ...>` (`-` for none), the index
    /// being `site_base` plus the local index.
    pub fn table_line(&self, site_base: u32) -> String {
        let values = if self.values.is_empty() {
            "-".to_owned()
        } else {
            self.values
                .iter()
                .map(|v| format!("{}: {}", v.name, v.type_name()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "site {}: {}; values {values}",
            u64::from(site_base) + u64::from(self.local_index),
            self.describe()
        )
    }
}

/// Gives every site its [`Site::place`], so that no two sites of the module read alike: the location, the
/// instruction where there is no location or where the location is shared, and a count as the last resort.
pub(crate) fn assign_places(sites: &mut [Site]) {
    for site in sites.iter_mut() {
        site.place = match &site.location {
            Some(l) => l.place(),
            None => {
                let mut place = String::with_capacity(12 + site.instruction.len());
                place.push_str("instruction ");
                place.push_str(&site.instruction);
                place
            }
        };
    }
    let Some(shared) = sites_reading_alike(sites) else {
        return;
    };
    for (site, &n) in sites.iter_mut().zip(&shared) {
        if n > 1 && site.location.is_some() {
            site.place = format!("{}, instruction {}", site.place, site.instruction);
        }
    }
    let Some(shared) = sites_reading_alike(sites) else {
        return;
    };
    let mut ordinal: FastMap<ReadingKey<'_>, usize> = FastMap::default();
    let mut numbered = Vec::with_capacity(sites.len());
    for (site, &n) in sites.iter().zip(&shared) {
        numbered.push((n > 1).then(|| {
            let k = ordinal.entry(reading_key(site)).or_default();
            *k += 1;
            *k
        }));
    }
    for (site, k) in sites.iter_mut().zip(numbered) {
        if let Some(k) = k {
            site.place = format!("{} #{k}", site.place);
        }
    }
}

/// What [`Site::describe`] is made of, to compare sites without writing the text.
type ReadingKey<'s> = (
    &'s SiteKind,
    Option<&'s str>,
    &'s str,
    Option<&'s str>,
    &'s [String],
    Option<Stage>,
);

fn reading_key(s: &Site) -> ReadingKey<'_> {
    (
        &s.kind,
        s.shown_format(),
        s.place.as_str(),
        s.shown_function(),
        &s.entry_points,
        // The scope names the stage with a single entry point only.
        (s.entry_points.len() == 1).then_some(s.stage),
    )
}

/// For each site, how many sites of the module read like it; `None` when every site reads unlike the
/// others (almost always, so that is found first).
fn sites_reading_alike(sites: &[Site]) -> Option<Vec<usize>> {
    // One site (most modules at the NaN levels) reads like no other: no table.
    if sites.len() < 2 {
        return None;
    }
    // Sites in different places read apart whatever else they share, and places alone are far cheaper
    // to hash than whole keys: where every place differs (most modules), no keys. Up to 16 sites (most
    // modules with two or more) are compared pair by pair, without a table: the set cost more, its
    // allocation and hashing every place, than the 120 comparisons at most, most of them settled by length.
    let places_differ = if sites.len() <= 16 {
        sites
            .iter()
            .enumerate()
            .all(|(i, s)| sites[..i].iter().all(|t| t.place != s.place))
    } else {
        let mut places: FastSet<&str> =
            FastSet::with_capacity_and_hasher(sites.len(), Default::default());
        sites.iter().all(|s| places.insert(s.place.as_str()))
    };
    if places_differ {
        return None;
    }
    // Sized for every site reading apart (the usual case): grown from nothing, it was rehashed at each
    // doubling.
    let mut counts: FastMap<ReadingKey<'_>, usize> = map_with_capacity(sites.len());
    for s in sites {
        *counts.entry(reading_key(s)).or_default() += 1;
    }
    if counts.len() == sites.len() {
        return None;
    }
    Some(
        sites
            .iter()
            .map(|s| counts.get(&reading_key(s)).copied().unwrap_or(1))
            .collect(),
    )
}

/// What the engine knows about a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShaderInfo {
    /// The content hash of the input module.
    pub id: ShaderId,
    /// The input module's SPIR-V version, (major, minor).
    pub spirv_version: (u8, u8),
    /// Its entry points.
    pub entry_points: Vec<EntryPoint>,
    /// The source files it names, with their text when it carries it.
    pub sources: Vec<SourceFile>,
    /// Names to match a shader by (`VK_BLACKBOX_SHADERS`): entry point names, the `OpName` of each entry
    /// function and the source file names, without duplicates, in that order.
    pub debug_names: Vec<String>,
    /// The instrumented sites, by local index (empty from [`crate::shader_info`]).
    pub sites: Vec<Site>,
    /// The float fragment outputs whose `outputs` checks a pipeline's attachments can narrow
    /// ([`crate::Options::fragment_output_components`]): found when NaN checks are on, in a module whose
    /// entry points are all fragment shaders (empty otherwise, and from [`crate::shader_info`]).
    pub fragment_outputs: Vec<FragmentOutput>,
}

/// A float scalar or vector fragment output (not a dual-source blend's second colour).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FragmentOutput {
    /// Its `Location`.
    pub location: u32,
    /// Its `Component`: the first component of the location it writes.
    pub component: u32,
    /// Its components.
    pub count: u32,
}

impl FragmentOutput {
    /// The components of this output that `kept` (per location, as
    /// [`crate::Options::fragment_output_components`] gives them) keeps: bit i is its component i.
    pub fn kept(&self, kept: &[u8]) -> u8 {
        let at_location = kept.get(self.location as usize).copied().unwrap_or(0);
        (at_location >> self.component) & self.all()
    }

    /// Every component of it, as [`FragmentOutput::kept`] gives them.
    pub fn all(&self) -> u8 {
        ((1u16 << self.count) - 1) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_placed_as_file_line_and_column() {
        for (file, line, column, place) in [
            ("", 0, 0, "<unknown>:0"),
            ("a.frag", 12, 0, "a.frag:12"),
            (
                "shaders/b.comp",
                4_294_967_295,
                7,
                "shaders/b.comp:4294967295:7",
            ),
            ("c.hlsl", 1, 4_000_000_000, "c.hlsl:1:4000000000"),
        ] {
            let l = SourceLocation {
                file: file.to_string(),
                line,
                column,
            };
            assert_eq!(l.place(), place);
            assert_eq!(l.to_string(), place);
        }
    }

    #[test]
    fn shader_id_is_fnv1a_and_prints_16_hex_digits() {
        assert_eq!(ShaderId::of(&[]).0, crate::fnv1a64(&[]));
        // Pinned: the id of a module's first word, as the layer and dumps have always written it.
        assert_eq!(ShaderId::of(&[0x0723_0203]).0, 0xdb6a_a387_e9e0_200a);
        let id = ShaderId::of(&[0x0723_0203]);
        assert_eq!(id.to_string().len(), 16);
        assert_ne!(id, ShaderId::of(&[0x0723_0204]));
        assert_eq!(ShaderId(0xab).to_string(), "00000000000000ab");
    }

    #[test]
    fn stage_codes_round_trip() {
        for s in Stage::ALL {
            assert_eq!(Stage::from_code(s.code()), Some(s));
        }
        // The codes the record format documents.
        let codes: Vec<u8> = [
            Stage::Vertex,
            Stage::Fragment,
            Stage::Compute,
            Stage::Mesh,
            Stage::Callable,
        ]
        .iter()
        .map(|s| s.code())
        .collect();
        assert_eq!(codes, [0, 4, 5, 7, 13]);
        use spirv::ExecutionModel as M;
        assert_eq!(
            Stage::from_execution_model(M::TaskEXT as u32),
            Some(Stage::Task)
        );
        assert_eq!(Stage::from_execution_model(M::Kernel as u32), None);
        assert_eq!(Stage::from_execution_model(0xffff), None);
    }

    fn site(kind: SiteKind, line: Option<u32>, instruction: &str, function: Option<&str>) -> Site {
        Site {
            local_index: 0,
            kind,
            location: line.map(|line| SourceLocation {
                file: "a.frag".into(),
                line,
                column: 0,
            }),
            format: None,
            values: Vec::new(),
            stage: Stage::Fragment,
            function: function.map(Arc::from),
            entry_points: Arc::new(["main".into()]),
            instruction: instruction.into(),
            place: String::new(),
        }
    }

    #[test]
    fn places_tell_every_site_apart() {
        let out = SiteKind::NanOutput { what: "output" };
        let sqrt = SiteKind::NanOp { op: "sqrt" };
        let mut sites = vec![
            site(
                sqrt.clone(),
                Some(3),
                "%10 = OpExtInst %2 %1 Sqrt %9",
                Some("main"),
            ),
            site(
                sqrt.clone(),
                Some(3),
                "%12 = OpExtInst %2 %1 Sqrt %11",
                Some("main"),
            ),
            site(
                sqrt,
                Some(4),
                "%14 = OpExtInst %2 %1 Sqrt %13",
                Some("main"),
            ),
            // The same store in the entry function and in an unnamed one: their scopes read alike.
            site(out.clone(), None, "OpStore %5 %7", Some("main")),
            site(out.clone(), None, "OpStore %5 %7", None),
            site(out, None, "OpStore %5 %8", Some("shade(")),
        ];
        assign_places(&mut sites);
        let places: Vec<&str> = sites.iter().map(|s| s.place.as_str()).collect();
        assert_eq!(
            places,
            [
                "a.frag:3, instruction %10 = OpExtInst %2 %1 Sqrt %9",
                "a.frag:3, instruction %12 = OpExtInst %2 %1 Sqrt %11",
                "a.frag:4",
                "instruction OpStore %5 %7 #1",
                "instruction OpStore %5 %7 #2",
                "instruction OpStore %5 %8",
            ]
        );
        assert_eq!(
            sites[5].describe(),
            "nan-output output at instruction OpStore %5 %8 in function shade(, entry point main (frag)"
        );
        let described: std::collections::HashSet<String> =
            sites.iter().map(Site::describe).collect();
        assert_eq!(described.len(), sites.len());
    }

    #[test]
    fn locations_print_like_compilers() {
        let l = SourceLocation {
            file: "a.comp".into(),
            line: 4,
            column: 17,
        };
        assert_eq!(l.to_string(), "a.comp:4:17");
        let l = SourceLocation {
            file: "a.comp".into(),
            line: 4,
            column: 0,
        };
        assert_eq!(l.to_string(), "a.comp:4");
    }
}
