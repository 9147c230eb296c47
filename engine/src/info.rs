//! What the engine knows about a shader module: [`ShaderInfo`] and the types it is made of.

use std::fmt;

use crate::hash::Fnv1a64;
use crate::record::{RecordKind, ValueLayout};

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

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = if self.file.is_empty() {
            "<unknown>"
        } else {
            &self.file
        };
        if self.column == 0 {
            write!(f, "{file}:{}", self.line)
        } else {
            write!(f, "{file}:{}:{}", self.line, self.column)
        }
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
        /// How it leaves: `"output"`, `"storage buffer store"` or `"image store"`.
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Site {
    /// The index of the site in its module, from 0 in module order. Its counter and its records use the
    /// global index `site_base + local_index`.
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
    /// The `OpName` of the function that contains the site, when there is one.
    pub function: Option<String>,
}

impl Site {
    /// The payload size of this site's records, in words.
    pub fn payload_words(&self) -> usize {
        self.values.iter().map(ValueLayout::words).sum()
    }
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
