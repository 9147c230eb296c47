//! A SPIR-V module as sections of instructions, read from words and written back word for word.
//!
//! [`Module::parse`] splits a module into the sections of the SPIR-V logical layout (capabilities,
//! extensions, extended-instruction imports, memory model, entry points, execution modes, debug
//! instructions, annotations, types/constants/global variables, functions made of blocks).
//! Each [`Instruction`] keeps its operand words as they were, so instructions the engine does not understand,
//! unknown opcodes included, survive untouched: [`Module::to_words`] of an unmodified module gives back the
//! input exactly. Module-level `OpExtInst` (`NonSemantic.Shader.DebugInfo.100`) is kept in the global section
//! where it appeared.
//!
//! Malformed input (bad magic, a word count of 0, an instruction running past the end, a result id out of
//! the header's bound, sections out of order) is an error, never a panic; parsing is one pass over the words
//! and allocates in proportion to the input.

use crate::error::NotInstrumented;
use spirv::Op;

use crate::grammar::{self, OpInfo};

/// The SPIR-V magic number, as the first word of every module.
pub const MAGIC: u32 = 0x0723_0203;

/// The largest id bound the engine accepts: SPIR-V's universal limit on result ids (4,194,303).
pub const MAX_BOUND: u32 = 0x3F_FFFF;

/// One instruction: its opcode, result type and result id where the grammar says it has them, and the
/// remaining operand words exactly as read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Instruction {
    /// The opcode as read (low half of the first word): a number, since an opcode the grammar does not know
    /// must survive a round trip too.
    opcode: u16,
    /// The opcode as the grammar knows it, looked up once when the instruction is made.
    op: Option<Op>,
    /// The result type id, for opcodes that have one.
    pub result_type: Option<u32>,
    /// The result id, for opcodes that define one.
    pub result_id: Option<u32>,
    /// Every word after the result type and result id (most instructions have a few: kept inline).
    pub operands: Operands,
}

/// An instruction's operand words.
pub type Operands = smallvec::SmallVec<[u32; 5]>;

/// Operands copied from `words`. Up to five words are read one by one into the inline buffer: for so few, a
/// `memcpy` call (what `Operands::from_slice` makes) costs more than the copy.
pub(crate) fn operands_of(words: &[u32]) -> Operands {
    if words.len() > 5 {
        return Operands::from_slice(words);
    }
    let word = |i: usize| words.get(i).copied().unwrap_or(0);
    Operands::from_buf_and_len([word(0), word(1), word(2), word(3), word(4)], words.len())
}

impl Instruction {
    /// An instruction from its parts.
    pub fn new(
        op: Op,
        result_type: Option<u32>,
        result_id: Option<u32>,
        operands: impl Into<Operands>,
    ) -> Self {
        Instruction {
            opcode: op as u16,
            op: Some(op),
            result_type,
            result_id,
            operands: operands.into(),
        }
    }

    /// The number of words the instruction takes, its first word included.
    pub fn word_count(&self) -> usize {
        1 + usize::from(self.result_type.is_some())
            + usize::from(self.result_id.is_some())
            + self.operands.len()
    }

    /// Appends the instruction's words to `out`. Always inlined: writing a module back is a loop of
    /// these, and left to the compiler (with LTO) it became a call per instruction.
    #[inline(always)]
    pub fn write(&self, out: &mut Vec<u32>) {
        let first = first_word(self.opcode, self.word_count());
        // Fixed-size pieces (one capacity check and a few stores each) rather than a push per word.
        match (self.result_type, self.result_id) {
            (Some(ty), Some(id)) => out.extend_from_slice(&[first, ty, id]),
            (None, Some(id)) => out.extend_from_slice(&[first, id]),
            (Some(ty), None) => out.extend_from_slice(&[first, ty]),
            (None, None) => out.push(first),
        }
        extend_short(out, &self.operands);
    }

    /// The operand word at `index` (after result type and id), if present.
    pub fn operand(&self, index: usize) -> Option<u32> {
        self.operands.get(index).copied()
    }

    /// The opcode as a number.
    #[inline]
    pub fn opcode(&self) -> u16 {
        self.opcode
    }

    /// The opcode, `None` when the grammar does not know it.
    #[inline]
    pub fn op(&self) -> Option<Op> {
        self.op
    }

    /// Whether the opcode is `op`.
    #[inline]
    pub fn is(&self, op: Op) -> bool {
        self.opcode == op as u16
    }

    /// `true` for `OpLine` and `OpNoLine`.
    pub fn is_line(&self) -> bool {
        self.is(Op::Line) || self.is(Op::NoLine)
    }
}

/// Appends `words` to `out`, a short list as a fixed-size piece: a `memcpy` call (what `extend_from_slice`
/// makes of a list of any length) costs more than a few stores. Always inlined: left to the compiler, it
/// stayed a call per instruction in the builder's helpers.
#[inline(always)]
pub(crate) fn extend_short(out: &mut Vec<u32>, words: &[u32]) {
    match *words {
        [] => {}
        [a] => out.push(a),
        [a, b] => out.extend_from_slice(&[a, b]),
        [a, b, c] => out.extend_from_slice(&[a, b, c]),
        [a, b, c, d] => out.extend_from_slice(&[a, b, c, d]),
        _ => out.extend_from_slice(words),
    }
}

/// The first word of an instruction: its word count and opcode. A count above 0xFFFF cannot be encoded;
/// instructions the engine builds stay far below it, and parsed ones were encoded that way already.
#[inline]
pub(crate) fn first_word(opcode: u16, word_count: usize) -> u32 {
    (word_count.min(0xFFFF) as u32) << 16 | u32::from(opcode)
}

/// Decodes a SPIR-V literal string (UTF-8, nul-terminated, padded to whole words) from the start of `words`.
/// Returns the string (invalid UTF-8 replaced) and the number of words it took. An unterminated string takes
/// all the words.
pub fn decode_string(words: &[u32]) -> (String, usize) {
    let taken = crate::util::string_words(words);
    // Allocated at its final size and filled a word at a time: collected byte by byte from `flat_map`
    // (whose size hint is 0), the list grew several times.
    let mut bytes: Vec<u8> = Vec::with_capacity(taken * 4);
    for w in &words[..taken] {
        bytes.extend_from_slice(&w.to_le_bytes());
    }
    // Only the last word taken can hold the nul.
    let last = taken.saturating_sub(1) * 4;
    if let Some(nul) = bytes[last..].iter().position(|&b| b == 0) {
        bytes.truncate(last + nul);
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    (text, taken)
}

/// Encodes a literal string as SPIR-V words (nul-terminated, zero-padded).
pub fn encode_string(s: &str) -> Vec<u32> {
    let bytes = s.as_bytes();
    let mut words = Vec::with_capacity(bytes.len() / 4 + 1);
    for chunk in bytes.chunks(4) {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        words.push(u32::from_le_bytes(w));
    }
    if bytes.len() % 4 == 0 {
        words.push(0);
    }
    words
}

/// The five header words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The magic number ([`MAGIC`]).
    pub magic: u32,
    /// The SPIR-V version: `0x00MMmm00`.
    pub version: u32,
    /// The generator's magic number.
    pub generator: u32,
    /// One more than the largest id used.
    pub bound: u32,
    /// Reserved (0).
    pub schema: u32,
}

impl Header {
    /// The version as (major, minor).
    pub fn version_pair(&self) -> (u8, u8) {
        ((self.version >> 16) as u8, (self.version >> 8) as u8)
    }
}

/// One basic block: its `OpLabel` and every instruction after it up to the next label or the function's
/// end (the terminator is normally the last one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The `OpLabel`.
    pub label: Instruction,
    /// The instructions of the block, in order.
    pub instructions: Vec<Instruction>,
}

impl Block {
    /// The block's label id.
    pub fn id(&self) -> u32 {
        self.label.result_id.unwrap_or(0)
    }
}

/// One function: its `OpFunction`, what follows before the first block (parameters, debug lines), its blocks
/// and its `OpFunctionEnd`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// `OpLine`/`OpNoLine` written between the previous section and `OpFunction`.
    pub prefix: Vec<Instruction>,
    /// The `OpFunction` instruction.
    pub def: Instruction,
    /// Instructions between `OpFunction` and the first `OpLabel` (`OpFunctionParameter`, debug lines).
    pub params: Vec<Instruction>,
    /// The blocks; empty for a function declaration.
    pub blocks: Vec<Block>,
    /// The `OpFunctionEnd` instruction.
    pub end: Instruction,
}

impl Function {
    /// The function's result id.
    pub fn id(&self) -> u32 {
        self.def.result_id.unwrap_or(0)
    }
}

/// A whole module, by sections in the order of the SPIR-V logical layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    /// The header.
    pub header: Header,
    /// `OpCapability`.
    pub capabilities: Vec<Instruction>,
    /// `OpExtension`.
    pub extensions: Vec<Instruction>,
    /// `OpExtInstImport`.
    pub ext_inst_imports: Vec<Instruction>,
    /// `OpMemoryModel` (one in a valid module).
    pub memory_model: Vec<Instruction>,
    /// `OpEntryPoint`.
    pub entry_points: Vec<Instruction>,
    /// `OpExecutionMode` and `OpExecutionModeId`.
    pub execution_modes: Vec<Instruction>,
    /// `OpString`, `OpSourceExtension`, `OpSource`, `OpSourceContinued`.
    pub debug_strings: Vec<Instruction>,
    /// `OpName`, `OpMemberName`.
    pub debug_names: Vec<Instruction>,
    /// `OpModuleProcessed`.
    pub debug_module_processed: Vec<Instruction>,
    /// Decorations.
    pub annotations: Vec<Instruction>,
    /// Types, constants, global variables, `OpUndef`, module-level `OpExtInst`, `OpLine`/`OpNoLine`.
    pub globals: Vec<Instruction>,
    /// Functions.
    pub functions: Vec<Function>,
    /// Decorations the engine added, as the words they are written as: after `annotations`.
    pub added_annotations: Vec<u32>,
    /// Types, constants and variables the engine added, as words: after `globals`.
    pub added_globals: Vec<u32>,
    /// Functions the engine added (its helpers), each as the words it is written as: after `functions`, in
    /// the order they were added.
    ///
    /// The `added_*` parts are empty in a parsed module, and not among [`Module::all_instructions`]: see
    /// [`Module::added_instructions`].
    pub added_functions: Vec<Vec<u32>>,
}

/// Where the parser puts an instruction, by its opcode ([`place_of`], kept in the grammar table): a
/// module-level section, in layout order (every known opcode of no section of its own goes with the
/// globals), or one of the opcodes that make functions. One flat list of small numbers: a section is a place
/// up to [`Place::Global`], compared and used as an index as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub(crate) enum Place {
    Capability,
    Extension,
    ExtInstImport,
    MemoryModel,
    EntryPoint,
    ExecutionMode,
    DebugStrings,
    DebugNames,
    DebugModuleProcessed,
    Annotation,
    Global,
    /// An opcode the grammar does not know: at module level it stays in the section it was found in.
    Unknown,
    Function,
    FunctionEnd,
    Label,
    FunctionParameter,
}

/// The number of module-level sections.
const SECTIONS: usize = Place::Global as usize + 1;

/// Where the parser puts a known opcode.
pub(crate) fn place_of(op: Op) -> Place {
    match op {
        Op::Function => Place::Function,
        Op::FunctionEnd => Place::FunctionEnd,
        Op::Label => Place::Label,
        Op::FunctionParameter => Place::FunctionParameter,
        Op::Capability => Place::Capability,
        Op::Extension => Place::Extension,
        Op::ExtInstImport => Place::ExtInstImport,
        Op::MemoryModel => Place::MemoryModel,
        Op::EntryPoint => Place::EntryPoint,
        Op::ExecutionMode | Op::ExecutionModeId => Place::ExecutionMode,
        Op::String | Op::SourceExtension | Op::Source | Op::SourceContinued => Place::DebugStrings,
        Op::Name | Op::MemberName => Place::DebugNames,
        Op::ModuleProcessed => Place::DebugModuleProcessed,
        Op::Decorate
        | Op::MemberDecorate
        | Op::DecorationGroup
        | Op::GroupDecorate
        | Op::GroupMemberDecorate
        | Op::DecorateId
        | Op::DecorateString
        | Op::MemberDecorateString => Place::Annotation,
        _ => Place::Global,
    }
}

/// The error for an instruction out of the SPIR-V logical layout order.
#[cold]
fn out_of_order(inst: &Instruction, at: usize, what: &str) -> NotInstrumented {
    NotInstrumented::malformed(format!(
        "opcode {} at word {at} is out of the SPIR-V logical layout order ({what})",
        inst.opcode()
    ))
}

impl Module {
    /// Reads a module. Fails, with the word offset, on anything malformed; never panics.
    pub fn parse(words: &[u32]) -> Result<Module, NotInstrumented> {
        Self::parse_words::<false, false>(words).map(|(module, _)| module)
    }

    /// [`Module::parse`], and the FNV-1a 64 hash of the words' bytes ([`crate::ShaderId::of`]) on the way.
    /// The hash is a chain of dependent multiplies, four cycles a byte whatever else runs: fed each
    /// instruction's words as the parser reaches them, it runs alongside the parsing (the processor
    /// overlaps the two) rather than in a pass of its own after it. With it, the rest of [`ParseNotes`].
    pub(crate) fn parse_and_hash(words: &[u32]) -> Result<(Module, ParseNotes), NotInstrumented> {
        Self::parse_words::<true, true>(words)
    }

    /// [`Module::parse_and_hash`] for a caller that has the hash already: the notes' `hash` is 0.
    pub(crate) fn parse_with_notes(words: &[u32]) -> Result<(Module, ParseNotes), NotInstrumented> {
        Self::parse_words::<true, false>(words)
    }

    /// Parses; with `NOTES`, also takes the [`ParseNotes`] but their hash, which `HASH` adds (every word,
    /// all of them once parsing succeeds). The module-level sections, then each function, then what lies between
    /// functions, each a loop of its own: where an instruction goes is then a match on its [`Place`] (from
    /// the grammar table), with no parser state to consult and update per instruction.
    #[inline(always)]
    fn parse_words<const NOTES: bool, const HASH: bool>(
        words: &[u32],
    ) -> Result<(Module, ParseNotes), NotInstrumented> {
        let mut hash = crate::hash::Fnv1a64::new();
        if words.len() < 5 {
            return Err(NotInstrumented::malformed(format!(
                "{} words is shorter than the 5-word SPIR-V header",
                words.len()
            )));
        }
        if words[0] != MAGIC {
            let reason = if words[0] == MAGIC.swap_bytes() {
                "the module is in the opposite byte order".to_string()
            } else {
                format!("bad magic number {:#010x}", words[0])
            };
            return Err(NotInstrumented::malformed(reason));
        }
        if HASH {
            hash.write_words(&words[..5]);
        }
        let header = Header {
            magic: words[0],
            version: words[1],
            generator: words[2],
            bound: words[3],
            schema: words[4],
        };
        if header.bound > MAX_BOUND {
            return Err(NotInstrumented::malformed(format!(
                "id bound {} is above SPIR-V's limit of {MAX_BOUND}",
                header.bound
            )));
        }
        let grammar = grammar::table();
        let mut plan = Plan::of(words, grammar);
        let mut reader = Reader::<NOTES, HASH> {
            words,
            at: 5,
            grammar,
            bound: header.bound,
            hash,
            first_unknown: None,
            value_types: if NOTES {
                vec![0; header.bound as usize]
            } else {
                Vec::new()
            },
        };
        // One spare slot for a capability: an instrumented module gets one (`PhysicalStorageBufferAddresses`),
        // and a list sized exactly was reallocated for it. (The same for the extensions, pushed only below
        // SPIR-V 1.5, counted more at every level.)
        plan.sections[Place::Capability as usize] += 1;
        let mut lists: [Vec<Instruction>; SECTIONS] = plan.sections.map(Vec::with_capacity);
        let mut current = Place::Capability;
        let mut first_function = None;
        while let Some((inst, place, at)) = reader.next()? {
            let section = match place {
                section if section <= Place::Global => section,
                Place::Unknown => current,
                Place::Function => {
                    first_function = Some(inst);
                    break;
                }
                _ => return Err(out_of_order(&inst, at, "outside a function")),
            };
            if section < current {
                return Err(out_of_order(&inst, at, "section already passed"));
            }
            current = section;
            lists[section as usize].push(inst);
        }
        let mut functions = Vec::with_capacity(plan.functions);
        if let Some(mut def) = first_function {
            // Debug lines written just before the first function belong to it.
            let globals = &mut lists[Place::Global as usize];
            let keep = globals
                .iter()
                .rposition(|i| !i.is_line())
                .map_or(0, |p| p + 1);
            let mut prefix = globals.split_off(keep);
            loop {
                functions.push(reader.function(&mut plan, prefix, def)?);
                // Between functions, debug lines wait for the next one.
                let mut lines = Vec::new();
                let next = loop {
                    let Some((inst, _, at)) = reader.next()? else {
                        break None;
                    };
                    match inst.op() {
                        Some(Op::Line | Op::NoLine) => lines.push(inst),
                        Some(Op::Function) => break Some(inst),
                        _ => return Err(out_of_order(&inst, at, "between functions")),
                    }
                };
                match next {
                    Some(inst) => (prefix, def) = (lines, inst),
                    None if lines.is_empty() => break,
                    None => {
                        return Err(NotInstrumented::malformed(
                            "debug lines after the last function",
                        ))
                    }
                }
            }
        }
        let [capabilities, extensions, ext_inst_imports, memory_model, entry_points, execution_modes, debug_strings, debug_names, debug_module_processed, annotations, globals] =
            lists;
        let module = Module {
            header,
            capabilities,
            extensions,
            ext_inst_imports,
            memory_model,
            entry_points,
            execution_modes,
            debug_strings,
            debug_names,
            debug_module_processed,
            annotations,
            globals,
            functions,
            added_annotations: Vec::new(),
            added_globals: Vec::new(),
            added_functions: Vec::new(),
        };
        let notes = ParseNotes {
            hash: if HASH { reader.hash.finish() } else { 0 },
            first_unknown: reader.first_unknown,
            value_types: reader.value_types,
        };
        Ok((module, notes))
    }
    /// Writes the module back to words.
    pub fn to_words(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.word_estimate());
        let h = &self.header;
        out.extend([h.magic, h.version, h.generator, h.bound, h.schema]);
        let write = |out: &mut Vec<u32>, list: &[Instruction]| {
            for inst in list {
                inst.write(out);
            }
        };
        // The engine's additions go after the parts they belong to.
        let [earlier @ .., annotations, globals] = self.sections();
        for list in earlier {
            write(&mut out, list);
        }
        write(&mut out, annotations);
        out.extend_from_slice(&self.added_annotations);
        write(&mut out, globals);
        out.extend_from_slice(&self.added_globals);
        self.for_each_function_list(|list| write(&mut out, list));
        for function in &self.added_functions {
            out.extend_from_slice(function);
        }
        // Where the estimate was over, the spare room is handed back (in place: cheap).
        out.shrink_to_fit();
        out
    }

    /// Calls `f` with every run of instructions of the module's functions, in layout order. Plain loops,
    /// cheaper than [`Module::all_instructions`]'s chain of iterators where every instruction is visited
    /// (writing the module, counting its words).
    pub(crate) fn for_each_function_list<'a>(&'a self, mut f: impl FnMut(&'a [Instruction])) {
        for function in &self.functions {
            f(&function.prefix);
            f(std::slice::from_ref(&function.def));
            f(&function.params);
            for b in &function.blocks {
                f(std::slice::from_ref(&b.label));
                f(&b.instructions);
            }
            f(std::slice::from_ref(&function.end));
        }
    }

    /// The module-level sections, in layout order.
    pub(crate) fn sections(&self) -> [&Vec<Instruction>; 11] {
        [
            &self.capabilities,
            &self.extensions,
            &self.ext_inst_imports,
            &self.memory_model,
            &self.entry_points,
            &self.execution_modes,
            &self.debug_strings,
            &self.debug_names,
            &self.debug_module_processed,
            &self.annotations,
            &self.globals,
        ]
    }

    /// About the length of [`to_words`](Self::to_words), an upper bound for most modules, so that it
    /// mostly allocates once: five words an instruction, counted from the lengths of the lists. (The exact
    /// length, summed over every instruction, was a second walk over the module.)
    fn word_estimate(&self) -> usize {
        let mut instructions = 0;
        for list in self.sections() {
            instructions += list.len();
        }
        for function in &self.functions {
            instructions += function.prefix.len() + function.params.len() + 2;
            for block in &function.blocks {
                instructions += 1 + block.instructions.len();
            }
        }
        5 + 5 * instructions
            + self.added_annotations.len()
            + self.added_globals.len()
            + self.added_functions.iter().map(Vec::len).sum::<usize>()
    }

    /// The words of each instruction the engine added (`added_annotations`, `added_globals`,
    /// `added_functions`), first word included.
    pub fn added_instructions(&self) -> impl Iterator<Item = &[u32]> {
        [&self.added_annotations, &self.added_globals]
            .into_iter()
            .chain(&self.added_functions)
            .flat_map(|words| {
                let mut rest = words.as_slice();
                std::iter::from_fn(move || {
                    let count = (*rest.first()? >> 16) as usize;
                    // The engine writes no instruction of 0 words; one would be taken as 1 rather than loop.
                    let (inst, after) = rest.split_at(count.clamp(1, rest.len()));
                    rest = after;
                    Some(inst)
                })
            })
    }

    /// Every instruction of the module in layout order, functions included, what the engine added left
    /// out (it is words: [`Module::added_instructions`]).
    pub fn all_instructions(&self) -> impl Iterator<Item = &Instruction> {
        self.sections()
            .into_iter()
            .flatten()
            .chain(self.functions.iter().flat_map(|f| {
                f.prefix
                    .iter()
                    .chain(std::iter::once(&f.def))
                    .chain(f.params.iter())
                    .chain(
                        f.blocks
                            .iter()
                            .flat_map(|b| std::iter::once(&b.label).chain(b.instructions.iter())),
                    )
                    .chain(std::iter::once(&f.end))
            }))
    }

    /// The SPIR-V version as (major, minor).
    pub fn version(&self) -> (u8, u8) {
        self.header.version_pair()
    }

    /// Whether the module declares `capability`.
    pub fn has_capability(&self, capability: spirv::Capability) -> bool {
        self.capabilities
            .iter()
            .any(|c| c.operand(0) == Some(capability as u32))
    }
}

/// How many instructions each list of a module will hold, counted ahead in one pass over the instructions'
/// first words, so that every list is allocated once at its final size rather than grown one push at a
/// time (growing moves every instruction again at each doubling). Counts are only capacities: the pass
/// stops at anything malformed, which the parser then reports.
struct Plan {
    /// Instructions of each module-level section.
    sections: [usize; SECTIONS],
    /// Functions.
    functions: usize,
    /// For each function in order: its parameters (everything before its first label), its blocks, then
    /// the instructions of each block.
    sizes: smallvec::SmallVec<[u32; 128]>,
    /// How far [`Plan::function`] and [`Plan::block`] have read `sizes`.
    read: usize,
}

impl Plan {
    fn of(words: &[u32], grammar: &[OpInfo]) -> Plan {
        let mut plan = Plan {
            sections: [0; SECTIONS],
            functions: 0,
            sizes: smallvec::SmallVec::new(),
            read: 0,
        };
        let mut at = 5;
        let mut current = Place::Capability;
        // The module-level sections, up to the first function.
        while let Some(&first) = words.get(at) {
            let (count, opcode) = ((first >> 16) as usize, (first & 0xFFFF) as u16);
            let section = match grammar::lookup(grammar, opcode).place {
                section if section <= Place::Global => section,
                Place::Unknown => current,
                _ => break,
            };
            if count == 0 {
                return plan;
            }
            current = current.max(section);
            plan.sections[section as usize] += 1;
            at += count;
        }
        // The functions. `run` counts the instructions since the last `OpFunction` or `OpLabel`, to be
        // stored at `sizes[slot]` when the run ends; `function` indexes the current function's entries.
        let (mut run, mut slot, mut function) = (0u32, None, None);
        let end_run =
            |sizes: &mut smallvec::SmallVec<[u32; 128]>, slot: Option<usize>, run: u32| {
                if let Some(slot) = slot {
                    sizes[slot] = run;
                }
            };
        while let Some(&first) = words.get(at) {
            let (count, opcode) = ((first >> 16) as usize, (first & 0xFFFF) as u16);
            if count == 0 {
                break;
            }
            match grammar::lookup(grammar, opcode).place {
                Place::Function => {
                    end_run(&mut plan.sizes, slot, run);
                    plan.functions += 1;
                    function = Some(plan.sizes.len());
                    slot = function;
                    run = 0;
                    plan.sizes.extend_from_slice(&[0, 0]);
                }
                Place::Label => {
                    end_run(&mut plan.sizes, slot, run);
                    if let Some(f) = function {
                        plan.sizes[f + 1] += 1;
                        slot = Some(plan.sizes.len());
                        plan.sizes.push(0);
                    }
                    run = 0;
                }
                Place::FunctionEnd => {
                    end_run(&mut plan.sizes, slot, run);
                    (slot, function, run) = (None, None, 0);
                }
                _ => run += 1,
            }
            at += count;
        }
        end_run(&mut plan.sizes, slot, run);
        plan
    }

    /// The next function's number of parameters and of blocks.
    fn function(&mut self) -> (usize, usize) {
        (self.take(), self.take())
    }

    /// The next block's number of instructions.
    fn block(&mut self) -> usize {
        self.take()
    }

    fn take(&mut self) -> usize {
        let size = self.sizes.get(self.read).copied().unwrap_or(0);
        self.read += 1;
        size as usize
    }
}

/// The parser's cursor: reads, checks, hashes and decodes one instruction at a time.
struct Reader<'a, const NOTES: bool, const HASH: bool> {
    words: &'a [u32],
    /// The next instruction's first word.
    at: usize,
    grammar: &'static [OpInfo],
    bound: u32,
    hash: crate::hash::Fnv1a64,
    /// The first opcode read that the grammar does not know.
    first_unknown: Option<u16>,
    /// Each id's result type, with `NOTES` (empty without).
    value_types: Vec<u32>,
}

/// What [`Module::parse_and_hash`] notes on the way, for the engine: each of these in a walk of its own
/// after parsing cost more.
pub(crate) struct ParseNotes {
    /// The FNV-1a 64 hash of the words' bytes ([`crate::ShaderId::of`]); 0 from
    /// [`Module::parse_with_notes`].
    pub hash: u64,
    /// The first opcode the grammar does not know, in the order of the words.
    pub first_unknown: Option<u16>,
    /// The result type of every id that has one, indexed by id (0 when none; the last, where an id is
    /// defined twice): the analysis's table ([`crate::analysis::Analysis::with_value_types`]).
    pub value_types: Vec<u32>,
}

impl<const NOTES: bool, const HASH: bool> Reader<'_, NOTES, HASH> {
    /// The next instruction, where it goes and the word it starts at; `None` at the end of the module.
    #[inline(always)]
    fn next(&mut self) -> Result<Option<(Instruction, Place, usize)>, NotInstrumented> {
        let at = self.at;
        let Some(&first) = self.words.get(at) else {
            return Ok(None);
        };
        let count = (first >> 16) as usize;
        let opcode = (first & 0xFFFF) as u16;
        if count == 0 {
            return Err(NotInstrumented::malformed(format!(
                "word count 0 at word {at}"
            )));
        }
        let Some(inst_words) = self.words.get(at..at + count) else {
            return Err(NotInstrumented::malformed(format!(
                "instruction at word {at} (opcode {opcode}, {count} words) runs past the end of the module"
            )));
        };
        if HASH {
            self.hash.write_words(inst_words);
        }
        let info = grammar::lookup(self.grammar, opcode);
        if NOTES && info.op.is_none() && self.first_unknown.is_none() {
            self.first_unknown = Some(opcode);
        }
        let inst = decode(info, opcode, self.words, at, count, self.bound)?;
        if NOTES {
            if let (Some(ty), Some(id)) = (inst.result_type, inst.result_id) {
                // In the bound: `decode` checked it.
                if let Some(slot) = self.value_types.get_mut(id as usize) {
                    *slot = ty;
                }
            }
        }
        self.at = at + count;
        Ok(Some((inst, info.place, at)))
    }

    /// [`Reader::next`] inside a function, where the module must not end.
    #[inline(always)]
    fn next_in_function(&mut self) -> Result<(Instruction, Place, usize), NotInstrumented> {
        self.next()?
            .ok_or_else(|| NotInstrumented::malformed("the module ends inside a function"))
    }

    /// One function, from the instruction after its `OpFunction` (`def`) to its `OpFunctionEnd`.
    #[inline(always)]
    fn function(
        &mut self,
        plan: &mut Plan,
        prefix: Vec<Instruction>,
        def: Instruction,
    ) -> Result<Function, NotInstrumented> {
        let (param_count, block_count) = plan.function();
        let mut params = Vec::with_capacity(param_count);
        let mut blocks = Vec::with_capacity(block_count);
        // Before the first label: parameters and debug lines.
        let mut label = loop {
            let (inst, place, at) = self.next_in_function()?;
            match place {
                Place::Label => break inst,
                Place::FunctionEnd => {
                    return Ok(Function {
                        prefix,
                        def,
                        params,
                        blocks,
                        end: inst,
                    })
                }
                Place::Function => {
                    return Err(out_of_order(&inst, at, "function inside a function"))
                }
                _ => params.push(inst),
            }
        };
        // Each block's instructions, up to the next label or the end of the function.
        loop {
            let mut instructions = Vec::with_capacity(plan.block());
            let (next, place) = loop {
                let (inst, place, at) = self.next_in_function()?;
                match place {
                    Place::Label | Place::FunctionEnd => break (inst, place),
                    Place::Function => {
                        return Err(out_of_order(&inst, at, "function inside a function"))
                    }
                    _ => instructions.push(inst),
                }
            };
            blocks.push(Block {
                label,
                instructions,
            });
            if place == Place::FunctionEnd {
                return Ok(Function {
                    prefix,
                    def,
                    params,
                    blocks,
                    end: next,
                });
            }
            label = next;
        }
    }
}

/// Decodes one instruction, the `count` words of `module` from word `at`, checking its result type and id
/// against the bound. Inlined into the parser's loop (as a call of its own it cost about a tenth of
/// parsing).
#[inline(always)]
fn decode(
    info: OpInfo,
    opcode: u16,
    module: &[u32],
    at: usize,
    count: usize,
    bound: u32,
) -> Result<Instruction, NotInstrumented> {
    let words = &module[at..at + count];
    // The common case, a well-formed instruction, checked in a few comparisons; anything else goes the
    // slow way below, which says what is wrong.
    let in_bound = |id: u32| id != 0 && id < bound;
    let well_formed = match (info.has_type, info.has_result, words) {
        (false, false, [_, ..]) => Some((None, None, 1)),
        (false, true, [_, id, ..]) if in_bound(*id) => Some((None, Some(*id), 2)),
        (true, true, [_, ty, id, ..]) if in_bound(*ty) && in_bound(*id) => {
            Some((Some(*ty), Some(*id), 3))
        }
        _ => None,
    };
    if let Some((result_type, result_id, skip)) = well_formed {
        // Up to five operands are copied as the five words from the first one, those past the instruction
        // included (they are never read back): a fixed-size copy, not one per word.
        let (start, len) = (at + skip, count - skip);
        let operands = match module.get(start..).and_then(|rest| rest.first_chunk::<5>()) {
            Some(&five) if len <= 5 => Operands::from_buf_and_len(five, len),
            _ => operands_of(&words[skip..]),
        };
        return Ok(Instruction {
            opcode,
            op: info.op,
            result_type,
            result_id,
            operands,
        });
    }
    let mut pos = 1;
    let mut take = |what: &str| -> Result<u32, NotInstrumented> {
        let Some(&id) = words.get(pos) else {
            return Err(NotInstrumented::malformed(format!(
                "opcode {opcode} at word {at} is too short to hold its {what}"
            )));
        };
        if id == 0 || id >= bound {
            return Err(NotInstrumented::malformed(format!(
                "opcode {opcode} at word {at}: {what} {id} is outside the id bound {bound}"
            )));
        }
        pos += 1;
        Ok(id)
    };
    let result_type = if info.has_type {
        Some(take("result type")?)
    } else {
        None
    };
    let result_id = if info.has_result {
        Some(take("result id")?)
    } else {
        None
    };
    Ok(Instruction {
        opcode,
        op: info.op,
        result_type,
        result_id,
        operands: operands_of(&words[pos..]),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use spirv::{
        AddressingModel, Capability, ExecutionMode, ExecutionModel, FunctionControl, MemoryModel,
        SourceLanguage,
    };

    /// `OpCapability Shader`'s operand.
    pub(crate) const SHADER: u32 = Capability::Shader as u32;
    /// `OpMemoryModel Logical GLSL450`'s operands.
    pub(crate) const LOGICAL_GLSL450: [u32; 2] =
        [AddressingModel::Logical as u32, MemoryModel::GLSL450 as u32];

    /// Assembles a module from (opcode, operand words) pairs, with a header of the given version and bound.
    pub(crate) fn assemble(version: u32, bound: u32, insts: &[(Op, &[u32])]) -> Vec<u32> {
        let mut words = vec![MAGIC, version, 0, bound, 0];
        for &(op, operands) in insts {
            push_instruction(&mut words, op as u16, operands);
        }
        words
    }

    fn push_instruction(words: &mut Vec<u32>, opcode: u16, operands: &[u32]) {
        words.push(((operands.len() as u32 + 1) << 16) | u32::from(opcode));
        words.extend_from_slice(operands);
    }

    /// An opcode no grammar defines.
    const UNKNOWN_OPCODE: u16 = 0x7777;

    /// A tiny compute shader: `main` with one block, `OpLine`s before the function and in it, an unknown
    /// opcode among the globals.
    pub(crate) fn tiny() -> Vec<u32> {
        let name = encode_string("main");
        let file = encode_string("a.comp");
        let mut ep = vec![ExecutionModel::GLCompute as u32, 1];
        ep.extend(&name);
        let mut s = vec![7];
        s.extend(&file);
        let mut n = vec![1];
        n.extend(&name);
        let local_size = [1, ExecutionMode::LocalSize as u32, 1, 1, 1];
        let head = assemble(
            0x0001_0000,
            20,
            &[
                (Op::Capability, &[SHADER]),
                (Op::MemoryModel, &LOGICAL_GLSL450),
                (Op::EntryPoint, &ep),
                (Op::ExecutionMode, &local_size),
                (Op::String, &s),
                (Op::Source, &[SourceLanguage::GLSL as u32, 450]),
                (Op::Name, &n),
                (Op::TypeVoid, &[2]),
                (Op::TypeFunction, &[3, 2]),
            ],
        );
        let mut words = head;
        push_instruction(&mut words, UNKNOWN_OPCODE, &[1, 2, 3]);
        for (op, operands) in [
            (Op::Line, &[7, 3, 1][..]),
            (Op::Function, &[2, 1, FunctionControl::NONE.bits(), 3]),
            (Op::Label, &[4]),
            (Op::Line, &[7, 4, 2]),
            (Op::Return, &[]),
            (Op::FunctionEnd, &[]),
        ] {
            push_instruction(&mut words, op as u16, operands);
        }
        words
    }

    #[test]
    fn round_trips_word_for_word() {
        let words = tiny();
        let module = Module::parse(&words).unwrap();
        assert_eq!(module.to_words(), words);
        assert_eq!(module.functions.len(), 1);
        assert_eq!(
            module.functions[0].prefix.len(),
            1,
            "the OpLine before OpFunction belongs to the function"
        );
        assert_eq!(
            module.globals.len(),
            3,
            "void, function type, unknown opcode"
        );
        assert_eq!(module.functions[0].blocks[0].instructions.len(), 2);
        assert_eq!(module.version(), (1, 0));
    }

    #[test]
    fn parsing_notes_the_first_unknown_opcode() {
        let (module, notes) = Module::parse_and_hash(&tiny()).unwrap();
        assert_eq!(notes.first_unknown, Some(UNKNOWN_OPCODE));
        let analysis = crate::analysis::Analysis::new(&module).unwrap();
        assert_eq!(notes.value_types, analysis.value_types_for_tests());
        let err = crate::instrument(&tiny(), &crate::Options::default()).unwrap_err();
        assert!(
            err.to_string()
                .contains(&format!("opcode {UNKNOWN_OPCODE} ")),
            "{err}"
        );
    }

    #[test]
    fn strings_encode_and_decode() {
        for s in ["", "a", "abc", "abcd", "abcde", "main"] {
            let w = encode_string(s);
            assert_eq!(w.len(), s.len() / 4 + 1);
            assert_eq!(decode_string(&w), (s.to_string(), w.len()));
        }
        assert_eq!(
            decode_string(&[u32::from_le_bytes(*b"abcd")]),
            ("abcd".to_string(), 1)
        );
        // The nul ends it wherever it is in its word; later words are not taken.
        let words = [
            u32::from_le_bytes(*b"abcd"),
            u32::from_le_bytes(*b"e\0xy"),
            u32::from_le_bytes(*b"zzzz"),
        ];
        assert_eq!(decode_string(&words), ("abcde".to_string(), 2));
        // A high byte (0x80..) is not mistaken for the nul; invalid UTF-8 is replaced.
        let words = [u32::from_le_bytes([0xff, 0x80, b'a', 0]), 7];
        assert_eq!(decode_string(&words), ("\u{fffd}\u{fffd}a".to_string(), 1));
        let words = [u32::from_le_bytes([0xc3, 0xa9, 0x01, 0x80])];
        assert_eq!(
            decode_string(&words),
            ("\u{e9}\u{1}\u{fffd}".to_string(), 1)
        );
    }

    #[test]
    fn rejects_malformed_input_without_panicking() {
        let good = tiny();
        assert!(Module::parse(&good[..4]).is_err());
        let mut bad = good.clone();
        bad[0] = 0x1234_5678;
        assert!(Module::parse(&bad).is_err());
        let mut swapped = good.clone();
        swapped[0] = MAGIC.swap_bytes();
        assert!(Module::parse(&swapped)
            .unwrap_err()
            .reason
            .contains("byte order"));
        let mut huge = good.clone();
        huge[3] = u32::MAX;
        assert!(Module::parse(&huge).is_err());
        // Truncated in the middle of the last instructions.
        for cut in 6..good.len() {
            let r = Module::parse(&good[..cut]);
            if let Ok(m) = r {
                assert_eq!(m.to_words(), &good[..cut]);
            }
        }
        // Word count 0.
        let mut zero = good.clone();
        zero[5] = Op::Capability as u32;
        assert!(Module::parse(&zero)
            .unwrap_err()
            .reason
            .contains("word count 0"));
        // Result id outside the bound.
        let mut out = good.clone();
        out[3] = 3;
        assert!(Module::parse(&out).unwrap_err().reason.contains("bound"));
        // Sections out of order: a capability after the memory model.
        let late = assemble(
            0x10000,
            4,
            &[
                (Op::MemoryModel, &LOGICAL_GLSL450),
                (Op::Capability, &[SHADER]),
            ],
        );
        assert!(Module::parse(&late).unwrap_err().reason.contains("order"));
        // Function never ended.
        let open = assemble(
            0x10000,
            4,
            &[
                (Op::TypeVoid, &[1]),
                (Op::Function, &[1, 2, FunctionControl::NONE.bits(), 3]),
            ],
        );
        assert!(Module::parse(&open).is_err());
    }

    #[test]
    fn survives_random_garbage() {
        // A small deterministic generator: every prefix and mutation parses or fails, never panics.
        let good = tiny();
        let mut state = 0x1234_5678_u32;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let mut words = good.clone();
            let i = 5 + (state as usize % (words.len() - 5));
            words[i] = state.rotate_left(7);
            if let Ok(m) = Module::parse(&words) {
                assert_eq!(m.to_words(), words);
            }
        }
    }
}
