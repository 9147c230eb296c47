//! One instruction as text, the way `spirv-dis --raw-id` writes it: `%412 = OpExtInst %3 %1 Sqrt %409`,
//! `OpStore %29 %30`, `OpStore %31 %32 Aligned 16`.
//!
//! A site without a source line is named by the instruction it checks, so that the user can find it in the
//! disassembly of the module as the app gave it (the layer's `VK_BLACKBOX_DUMP_SHADERS` writes that module).
//! Ids are the module's own numbers, not spirv-dis's friendly names (`%float`, `%main`): those depend on
//! every `OpName` and type of the module and on spirv-dis's collision rules, and `--raw-id` output is what a
//! search for the text finds every time.
//!
//! Operands follow rspirv's grammar: ids as `%N`, literal numbers in decimal, strings quoted, extended
//! instructions by name (for the sets rspirv knows), and the `MemoryAccess`, `ImageOperands`,
//! `LoopControl` and `SelectionControl` masks by name with their parameters. Anything else (kinds that no
//! site's instruction has) is written as numbers.

use std::fmt::Write as _;
use std::sync::OnceLock;

use rspirv::grammar::{
    ext_inst_table, Instruction, OperandKind, OperandQuantifier, INSTRUCTION_TABLE,
};
use spirv::{ImageOperands, MemoryAccess};

use super::Analysis;
use crate::module::{self, decode_string};

/// The names spirv-dis gives the bits of a `MemoryAccess` mask, lowest bit first.
const MEMORY_ACCESS: [(u32, &str); 8] = [
    (MemoryAccess::VOLATILE.bits(), "Volatile"),
    (MemoryAccess::ALIGNED.bits(), "Aligned"),
    (MemoryAccess::NONTEMPORAL.bits(), "Nontemporal"),
    (
        MemoryAccess::MAKE_POINTER_AVAILABLE.bits(),
        "MakePointerAvailable",
    ),
    (
        MemoryAccess::MAKE_POINTER_VISIBLE.bits(),
        "MakePointerVisible",
    ),
    (
        MemoryAccess::NON_PRIVATE_POINTER.bits(),
        "NonPrivatePointer",
    ),
    (
        MemoryAccess::ALIAS_SCOPE_INTEL_MASK.bits(),
        "AliasScopeINTELMask",
    ),
    (MemoryAccess::NO_ALIAS_INTEL_MASK.bits(), "NoAliasINTELMask"),
];

/// The names spirv-dis gives the bits of an `ImageOperands` mask, lowest bit first.
const IMAGE_OPERANDS: [(u32, &str); 16] = [
    (ImageOperands::BIAS.bits(), "Bias"),
    (ImageOperands::LOD.bits(), "Lod"),
    (ImageOperands::GRAD.bits(), "Grad"),
    (ImageOperands::CONST_OFFSET.bits(), "ConstOffset"),
    (ImageOperands::OFFSET.bits(), "Offset"),
    (ImageOperands::CONST_OFFSETS.bits(), "ConstOffsets"),
    (ImageOperands::SAMPLE.bits(), "Sample"),
    (ImageOperands::MIN_LOD.bits(), "MinLod"),
    (
        ImageOperands::MAKE_TEXEL_AVAILABLE.bits(),
        "MakeTexelAvailable",
    ),
    (ImageOperands::MAKE_TEXEL_VISIBLE.bits(), "MakeTexelVisible"),
    (ImageOperands::NON_PRIVATE_TEXEL.bits(), "NonPrivateTexel"),
    (ImageOperands::VOLATILE_TEXEL.bits(), "VolatileTexel"),
    (ImageOperands::SIGN_EXTEND.bits(), "SignExtend"),
    (ImageOperands::ZERO_EXTEND.bits(), "ZeroExtend"),
    (ImageOperands::NONTEMPORAL.bits(), "Nontemporal"),
    (ImageOperands::OFFSETS.bits(), "Offsets"),
];

/// The names spirv-dis gives the bits of a `LoopControl` mask (loop sites name their `OpLoopMerge`), with
/// how many literal parameters each takes.
const LOOP_CONTROL: [(u32, &str, usize); 9] = [
    (0x1, "Unroll", 0),
    (0x2, "DontUnroll", 0),
    (0x4, "DependencyInfinite", 0),
    (0x8, "DependencyLength", 1),
    (0x10, "MinIterations", 1),
    (0x20, "MaxIterations", 1),
    (0x40, "IterationMultiple", 1),
    (0x80, "PeelCount", 1),
    (0x100, "PartialCount", 1),
];

/// The names spirv-dis gives the bits of a `SelectionControl` mask.
const SELECTION_CONTROL: [(u32, &str); 2] = [(0x1, "Flatten"), (0x2, "DontFlatten")];

/// The extended-instruction sets whose instructions spirv-dis writes by name.
const NAMED_SETS: [&str; 2] = ["GLSL.std.450", "OpenCL.std"];

/// Appends `prefix`, `%` and the id in decimal: most of what a disassembly is, so without `fmt`.
fn push_id(out: &mut String, prefix: &str, id: u32) {
    out.push_str(prefix);
    out.push('%');
    crate::util::push_decimal(out, id);
}

/// The grammar of an opcode, from a table indexed by opcode (rspirv's own lookup is a linear search).
fn grammar_of(opcode: u16) -> Option<&'static Instruction<'static>> {
    static BY_OPCODE: OnceLock<Vec<Option<&'static Instruction<'static>>>> = OnceLock::new();
    let table = BY_OPCODE.get_or_init(|| {
        let mut table = Vec::new();
        for inst in INSTRUCTION_TABLE.iter() {
            let i = inst.opcode as usize;
            if table.len() <= i {
                table.resize(i + 1, None);
            }
            table[i] = Some(inst);
        }
        table
    });
    table.get(usize::from(opcode)).copied().flatten()
}

/// The positions in `inst.operands` that hold ids (operands after the result type and result id), or
/// `None` where the grammar leaves them uncertain here: an unknown opcode, a mask whose parameters may be
/// ids (memory access, image operands), a literal whose width depends on another operand (`OpSwitch`,
/// `OpConstant`), pairs other than `OpPhi`'s, or words the grammar does not account for. For rewriting
/// uses of an id, where a guess could change a literal.
pub(crate) fn id_positions(inst: &module::Instruction) -> Option<smallvec::SmallVec<[usize; 8]>> {
    let words = &inst.operands[..];
    if inst.is(spirv::Op::Phi) {
        return Some((0..words.len()).collect());
    }
    let grammar = grammar_of(inst.opcode())?;
    let mut ids = smallvec::SmallVec::new();
    let mut at = 0;
    for operand in grammar
        .operands
        .iter()
        .filter(|o| !matches!(o.kind, OperandKind::IdResultType | OperandKind::IdResult))
    {
        while at < words.len() {
            at += match operand.kind {
                OperandKind::IdRef | OperandKind::IdScope | OperandKind::IdMemorySemantics => {
                    ids.push(at);
                    1
                }
                OperandKind::LiteralString => decode_string(&words[at..]).1.max(1),
                OperandKind::MemoryAccess
                | OperandKind::ImageOperands
                | OperandKind::LiteralContextDependentNumber
                | OperandKind::PairIdRefIdRef
                | OperandKind::PairIdRefLiteralInteger
                | OperandKind::PairLiteralIntegerIdRef => return None,
                // A literal number or an enumerant of one word; enumerants with parameters (decorations,
                // execution modes) do not occur inside functions, where this is used.
                _ => 1,
            };
            if operand.quantifier != OperandQuantifier::ZeroOrMore {
                break;
            }
        }
    }
    (at == words.len()).then_some(ids)
}

/// The instruction as `spirv-dis --raw-id` writes it (without the indentation).
pub(crate) fn disassemble(an: &Analysis, inst: &module::Instruction) -> String {
    let mut out = String::with_capacity(48);
    if let Some(id) = inst.result_id {
        push_id(&mut out, "", id);
        out.push_str(" = ");
    }
    let grammar = grammar_of(inst.opcode());
    let Some(grammar) = grammar else {
        // Not reached from `instrument`, which refuses modules with opcodes it has no grammar for.
        let _ = write!(out, "Op{}", inst.opcode());
        for w in &inst.operands {
            let _ = write!(out, " {w}");
        }
        return out;
    };
    out.push_str("Op");
    out.push_str(grammar.opname);
    if let Some(ty) = inst.result_type {
        push_id(&mut out, " ", ty);
    }
    let words = &inst.operands[..];
    let mut at = 0;
    for operand in grammar
        .operands
        .iter()
        .filter(|o| !matches!(o.kind, OperandKind::IdResultType | OperandKind::IdResult))
    {
        loop {
            if at >= words.len() {
                break;
            }
            at += write_operand(&mut out, an, operand.kind, words, at);
            if operand.quantifier != OperandQuantifier::ZeroOrMore {
                break;
            }
        }
    }
    // Words the grammar does not account for: as numbers, so that nothing is hidden.
    for w in words.get(at..).unwrap_or(&[]) {
        let _ = write!(out, " {w}");
    }
    out
}

/// Writes the operand of `kind` that starts at `words[at]`; returns the number of words it took (at least
/// one).
fn write_operand(
    out: &mut String,
    an: &Analysis,
    kind: OperandKind,
    words: &[u32],
    at: usize,
) -> usize {
    let word = words[at];
    match kind {
        OperandKind::IdRef | OperandKind::IdScope | OperandKind::IdMemorySemantics => {
            push_id(out, " ", word);
            1
        }
        OperandKind::LiteralString => {
            let (text, taken) = decode_string(&words[at..]);
            out.push_str(" \"");
            for c in text.chars() {
                if c == '"' || c == '\\' {
                    out.push('\\');
                }
                out.push(c);
            }
            out.push('"');
            taken.max(1)
        }
        OperandKind::LiteralExtInstInteger => {
            // The set is the instruction's first operand (OpExtInst's `Set`). spirv-dis names the
            // instructions of these sets only (`NonSemantic.DebugPrintf`'s it writes as numbers).
            let name = words
                .first()
                .and_then(|&set| an.ext_set(set))
                .filter(|set| NAMED_SETS.contains(set))
                .and_then(ext_inst_table)
                .and_then(|table| table.lookup_opcode(word))
                .map(|i| i.opname);
            match name {
                Some(name) => {
                    out.push(' ');
                    out.push_str(name);
                }
                None => {
                    let _ = write!(out, " {word}");
                }
            }
            1
        }
        OperandKind::MemoryAccess => {
            write_mask(out, word, &MEMORY_ACCESS);
            let mut taken = 1;
            for (bit, _) in MEMORY_ACCESS {
                if word & bit == 0 {
                    continue;
                }
                let Some(&param) = words.get(at + taken) else {
                    break;
                };
                if bit == MemoryAccess::ALIGNED.bits() {
                    let _ = write!(out, " {param}");
                    taken += 1;
                } else if bit
                    & (MemoryAccess::MAKE_POINTER_AVAILABLE | MemoryAccess::MAKE_POINTER_VISIBLE)
                        .bits()
                    != 0
                {
                    push_id(out, " ", param);
                    taken += 1;
                }
            }
            taken
        }
        OperandKind::LoopControl => {
            let names: Vec<(u32, &str)> = LOOP_CONTROL.iter().map(|&(b, n, _)| (b, n)).collect();
            write_mask(out, word, &names);
            let mut taken = 1;
            for (bit, _, params) in LOOP_CONTROL {
                if word & bit == 0 {
                    continue;
                }
                for _ in 0..params {
                    if let Some(&param) = words.get(at + taken) {
                        let _ = write!(out, " {param}");
                        taken += 1;
                    }
                }
            }
            taken
        }
        OperandKind::SelectionControl => {
            write_mask(out, word, &SELECTION_CONTROL);
            1
        }
        OperandKind::ImageOperands => {
            write_mask(out, word, &IMAGE_OPERANDS);
            let mut taken = 1;
            for (bit, _) in IMAGE_OPERANDS {
                if word & bit == 0 {
                    continue;
                }
                let no_parameter = (ImageOperands::NON_PRIVATE_TEXEL
                    | ImageOperands::VOLATILE_TEXEL
                    | ImageOperands::SIGN_EXTEND
                    | ImageOperands::ZERO_EXTEND
                    | ImageOperands::NONTEMPORAL)
                    .bits();
                let params = if bit == ImageOperands::GRAD.bits() {
                    2
                } else if bit & no_parameter != 0 {
                    0
                } else {
                    1
                };
                for _ in 0..params {
                    if let Some(&id) = words.get(at + taken) {
                        push_id(out, " ", id);
                        taken += 1;
                    }
                }
            }
            taken
        }
        _ => {
            let _ = write!(out, " {word}");
            1
        }
    }
}

/// A mask as `Volatile|Aligned`, `None` when no bit is set; bits without a name as a hex number.
fn write_mask(out: &mut String, mask: u32, names: &[(u32, &str)]) {
    if mask == 0 {
        out.push_str(" None");
        return;
    }
    out.push(' ');
    let mut rest = mask;
    let mut first = true;
    for &(bit, name) in names {
        if mask & bit != 0 {
            if !first {
                out.push('|');
            }
            out.push_str(name);
            first = false;
            rest &= !bit;
        }
    }
    if rest != 0 {
        if !first {
            out.push('|');
        }
        let _ = write!(out, "0x{rest:x}");
    }
}
