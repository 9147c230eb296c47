//! Source files and source locations.
//!
//! Locations come from `OpLine` (file from an `OpString`) and from `NonSemantic.Shader.DebugInfo.100`
//! `DebugLine` (file from its `DebugSource`). Either applies to the instructions after it until the next
//! line instruction; `OpNoLine`/`DebugNoLine` end it. When both kinds are present the most recent wins, and
//! a column of 0 is filled from the other kind if it names the same file and line.
//!
//! The SPIR-V specification ends a line's effect at the end of its block, but glslang writes `OpLine` only
//! when the line changes, also across blocks (a `?:` or a loop inside one statement continues the line in
//! the next blocks without a new `OpLine`). So the tracker carries the location from block to block in
//! layout order and forgets it only at the start of a function: an instruction that a strict compiler left
//! without a line gets the previous block's, which is where it comes from in practice.

use spirv::NonsemanticShaderDebuginfo100Op as DebugInfoOp;
use spirv::Op;

use super::{Analysis, TypeTable, DEBUG_INFO_SET};
use crate::info::{SourceFile, SourceLanguage, SourceLocation};
use crate::module::{decode_string, Instruction, Module};
use crate::util::FastMap;

/// `DebugSource` ids and what they name.
#[derive(Default)]
pub(crate) struct DebugSources {
    /// DebugSource result id -> file name.
    files: FastMap<u32, String>,
}

impl DebugSources {
    pub(crate) fn new(module: &Module, an: &Analysis) -> DebugSources {
        let mut s = DebugSources::default();
        for inst in &module.globals {
            if let Some((DebugInfoOp::DebugSource, args)) = debug_ext_inst(an, inst) {
                if let (Some(id), Some(file)) = (inst.result_id, args.first()) {
                    s.files
                        .insert(id, an.strings.get(file).cloned().unwrap_or_default());
                }
            }
        }
        s
    }
}

/// If `inst` is an `OpExtInst` of `NonSemantic.Shader.DebugInfo.100` that the grammar knows, the instruction
/// and its arguments. Inlined: called for every instruction of every function, which is rarely an
/// `OpExtInst`; left to the compiler it became a call each when other code changed.
#[inline(always)]
pub(crate) fn debug_ext_inst<'a>(
    an: &Analysis,
    inst: &'a Instruction,
) -> Option<(DebugInfoOp, &'a [u32])> {
    if !(inst.is(Op::ExtInst) || inst.is(Op::ExtInstWithForwardRefsKHR)) {
        return None;
    }
    let set = *inst.operands.first()?;
    if an.ext_set(set)? != DEBUG_INFO_SET {
        return None;
    }
    let op = DebugInfoOp::from_u32(*inst.operands.get(1)?)?;
    Some((op, inst.operands.get(2..)?))
}

/// Follows the line instructions through a function.
#[derive(Default)]
pub(crate) struct LineTracker {
    op_line: Option<SourceLocation>,
    debug_line: Option<SourceLocation>,
    /// The id each location's file was read from (an `OpString`, a `DebugSource`): a line instruction
    /// naming the same one as the location it replaces keeps its file name rather than copying it again
    /// (most name the file of the line before).
    op_line_file: Option<u32>,
    debug_line_file: Option<u32>,
    /// Which of the two came last: true for `DebugLine`.
    debug_latest: bool,
}

impl LineTracker {
    /// Forgets everything: a new function starts.
    pub(crate) fn reset(&mut self) {
        *self = LineTracker::default();
    }

    /// Takes one instruction into account; returns `true` if it was a line instruction.
    ///
    /// Inlined, down to the opcode test: called for every instruction of every function, of which few
    /// are line instructions or `OpExtInst`s, the call (its prologue and epilogue) cost more than the test.
    #[inline(always)]
    pub(crate) fn observe(
        &mut self,
        an: &Analysis,
        types: &TypeTable,
        sources: &DebugSources,
        inst: &Instruction,
    ) -> bool {
        if !(inst.is(Op::Line)
            || inst.is(Op::NoLine)
            || inst.is(Op::ExtInst)
            || inst.is(Op::ExtInstWithForwardRefsKHR))
        {
            return false;
        }
        self.observe_maybe_line(an, types, sources, inst)
    }

    /// [`LineTracker::observe`] for an `OpLine`, `OpNoLine` or `OpExtInst`.
    #[inline(never)]
    fn observe_maybe_line(
        &mut self,
        an: &Analysis,
        types: &TypeTable,
        sources: &DebugSources,
        inst: &Instruction,
    ) -> bool {
        match inst.op() {
            Some(Op::Line) => {
                let o = &inst.operands;
                let file_id = o.first().copied();
                let (line, column) = (
                    o.get(1).copied().unwrap_or(0),
                    o.get(2).copied().unwrap_or(0),
                );
                move_location(
                    &mut self.op_line,
                    &mut self.op_line_file,
                    (file_id, line, column),
                    || file_id.and_then(|f| an.strings.get(&f)).cloned(),
                );
                self.debug_latest = false;
                true
            }
            Some(Op::NoLine) => {
                self.op_line = None;
                true
            }
            _ => match debug_ext_inst(an, inst) {
                Some((DebugInfoOp::DebugLine, args)) => {
                    let value =
                        |i: usize| args.get(i).and_then(|&id| types.int_value(id)).unwrap_or(0);
                    let file_id = args.first().copied();
                    let (line, column) = (value(1), value(3));
                    move_location(
                        &mut self.debug_line,
                        &mut self.debug_line_file,
                        (file_id, line, column),
                        || file_id.and_then(|s| sources.files.get(&s)).cloned(),
                    );
                    self.debug_latest = true;
                    true
                }
                Some((DebugInfoOp::DebugNoLine, _)) => {
                    self.debug_line = None;
                    true
                }
                _ => false,
            },
        }
    }

    /// The location of the next instruction, if any line instruction applies.
    pub(crate) fn current(&self) -> Option<SourceLocation> {
        let (first, second) = if self.debug_latest {
            (&self.debug_line, &self.op_line)
        } else {
            (&self.op_line, &self.debug_line)
        };
        let mut loc = first.clone().or_else(|| second.clone())?;
        if loc.column == 0 {
            if let Some(other) = second {
                if other.file == loc.file && other.line == loc.line {
                    loc.column = other.column;
                }
            }
        }
        Some(loc)
    }
}

/// The source files a module names: every `OpSource` (with its `OpSourceContinued` text) and every
/// `DebugSource` (with `DebugSourceContinued`), merged by file name, in module order.
pub(crate) fn source_files(module: &Module, an: &Analysis) -> Vec<SourceFile> {
    let mut files: Vec<SourceFile> = Vec::new();
    let mut language = SourceLanguage::Unknown;
    let mut version = 0;
    // Which file the next continuation belongs to.
    let mut last: Option<usize> = None;
    fn merge(files: &mut Vec<SourceFile>, file: SourceFile) -> usize {
        if let Some(i) = files.iter().position(|f| f.name == file.name) {
            let f = &mut files[i];
            if f.text.is_none() {
                f.text = file.text;
            }
            if f.language == SourceLanguage::Unknown {
                f.language = file.language;
                f.version = file.version;
            }
            i
        } else {
            files.push(file);
            files.len() - 1
        }
    }
    for inst in &module.debug_strings {
        let o = &inst.operands;
        match inst.op() {
            Some(Op::Source) => {
                language = SourceLanguage::from_spirv(o.first().copied().unwrap_or(0));
                version = o.get(1).copied().unwrap_or(0);
                let name = o
                    .get(2)
                    .and_then(|f| an.strings.get(f))
                    .cloned()
                    .unwrap_or_default();
                let text = o
                    .get(3..)
                    .filter(|t| !t.is_empty())
                    .map(|t| decode_string(t).0);
                last = Some(merge(
                    &mut files,
                    SourceFile {
                        name,
                        text,
                        language,
                        version,
                    },
                ));
            }
            Some(Op::SourceContinued) => {
                if let Some(f) = last.and_then(|i| files.get_mut(i)) {
                    f.text
                        .get_or_insert_with(String::new)
                        .push_str(&decode_string(o).0);
                }
            }
            _ => {}
        }
    }
    last = None;
    for inst in &module.globals {
        match debug_ext_inst(an, inst) {
            Some((DebugInfoOp::DebugSource, args)) => {
                let name = args
                    .first()
                    .and_then(|f| an.strings.get(f))
                    .cloned()
                    .unwrap_or_default();
                let text = args.get(1).and_then(|t| an.strings.get(t)).cloned();
                last = Some(merge(
                    &mut files,
                    SourceFile {
                        name,
                        text,
                        language,
                        version,
                    },
                ));
            }
            Some((DebugInfoOp::DebugSourceContinued, args)) => {
                let more = args.first().and_then(|t| an.strings.get(t));
                if let (Some(f), Some(more)) = (last.and_then(|i| files.get_mut(i)), more) {
                    f.text.get_or_insert_with(String::new).push_str(more);
                }
            }
            _ => {}
        }
    }
    if files.iter().any(|f| !f.name.is_empty()) {
        files.retain(|f| !(f.name.is_empty() && f.text.is_none()));
    }
    files
}

/// Moves `location` to `line` and `column` of the file `file_id`. The file's name is looked up only when
/// the file changes: most lines are in the file of the line before them.
fn move_location(
    location: &mut Option<SourceLocation>,
    location_file: &mut Option<u32>,
    (file_id, line, column): (Option<u32>, u32, u32),
    file_name: impl FnOnce() -> Option<String>,
) {
    match location {
        Some(loc) if *location_file == file_id => {
            loc.line = line;
            loc.column = column;
        }
        _ => {
            *location = Some(SourceLocation {
                file: file_name().unwrap_or_default(),
                line,
                column,
            });
            *location_file = file_id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::encode_string;
    use crate::module::tests::{assemble, LOGICAL_GLSL450, SHADER};
    use spirv::{ExecutionModel, FunctionControl, SourceLanguage as Language};

    fn with_string(id: u32, s: &str) -> Vec<u32> {
        let mut v = vec![id];
        v.extend(encode_string(s));
        v
    }

    /// A compute shader whose one function has an `OpLine`, an `OpNoLine`, a `DebugLine` and a second block
    /// without line instructions; each `OpUndef` marks a place to ask the tracker about.
    fn module() -> Module {
        let ext = encode_string("SPV_KHR_non_semantic_info");
        let import = with_string(2, DEBUG_INFO_SET);
        let mut ep = vec![ExecutionModel::GLCompute as u32, 10];
        ep.extend(encode_string("main"));
        let mut source = vec![Language::GLSL as u32, 450, 1];
        source.extend(encode_string("void main() {"));
        let continued = encode_string(" }");
        let words = assemble(
            0x0001_0000,
            20,
            &[
                (Op::Capability, &[SHADER]),
                (Op::Extension, &ext),
                (Op::ExtInstImport, &import),
                (Op::MemoryModel, &LOGICAL_GLSL450),
                (Op::EntryPoint, &ep),
                (Op::String, &with_string(1, "a.comp")),
                (Op::String, &with_string(3, "b.glsl")),
                (Op::Source, &source),
                (Op::SourceContinued, &continued),
                (Op::TypeVoid, &[4]),
                (Op::TypeFunction, &[5, 4]),
                (Op::TypeInt, &[6, 32, 0]),
                (Op::Constant, &[6, 7, 42]),
                (Op::Constant, &[6, 8, 7]),
                (Op::ExtInst, &[4, 9, 2, DebugInfoOp::DebugSource as u32, 3]),
                (Op::Function, &[4, 10, FunctionControl::NONE.bits(), 5]),
                (Op::Label, &[11]),
                (Op::Line, &[1, 5, 3]),
                (Op::Undef, &[6, 12]),
                (Op::NoLine, &[]),
                (Op::Undef, &[6, 13]),
                (
                    Op::ExtInst,
                    &[4, 14, 2, DebugInfoOp::DebugLine as u32, 9, 7, 7, 8, 8],
                ),
                (Op::Undef, &[6, 15]),
                (Op::Branch, &[16]),
                (Op::Label, &[16]),
                (Op::Undef, &[6, 17]),
                (Op::Return, &[]),
                (Op::FunctionEnd, &[]),
            ],
        );
        Module::parse(&words).unwrap()
    }

    #[test]
    fn maps_instructions_to_lines() {
        let m = module();
        let an = Analysis::new(&m).unwrap();
        let types = TypeTable::new(&m);
        let sources = DebugSources::new(&m, &an);
        let mut tracker = LineTracker::default();
        let mut seen = Vec::new();
        for block in &m.functions[0].blocks {
            for inst in &block.instructions {
                tracker.observe(&an, &types, &sources, inst);
                if inst.is(Op::Undef) {
                    seen.push(tracker.current().map(|l| l.to_string()));
                }
            }
        }
        let expected = [
            Some("a.comp:5:3"),
            None,
            Some("b.glsl:42:7"),
            Some("b.glsl:42:7"),
        ];
        assert_eq!(seen, expected.map(|s| s.map(String::from)));
    }

    #[test]
    fn lists_source_files_with_their_text() {
        let m = module();
        let an = Analysis::new(&m).unwrap();
        let files = source_files(&m, &an);
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].name, "a.comp");
        assert_eq!(files[0].text.as_deref(), Some("void main() { }"));
        assert_eq!(
            (files[0].language, files[0].version),
            (SourceLanguage::Glsl, 450)
        );
        assert_eq!(files[1].name, "b.glsl");
        assert_eq!(files[1].text, None);
    }
}
