//! Removing `NonSemantic.*` instructions.
//!
//! A driver without `VK_KHR_shader_non_semantic_info` rejects modules that import any `NonSemantic.*` set.
//! The printf and assert passes always replace or remove every `NonSemantic.DebugPrintf` call; afterwards
//! [`remove_unused_imports`] drops imports nothing uses any more, and the `SPV_KHR_non_semantic_info`
//! extension once no `NonSemantic.*` import is left.
//!
//! `NonSemantic.Shader.DebugInfo.100` (glslang `-gVS`, DXC `-fspv-debug=vulkan`) is read for source lines
//! and files first; then, with `Options::strip_non_semantic` (the default), [`strip_non_semantic`] removes it
//! and every other `NonSemantic.*` instruction, so the instrumented module loads on such drivers (lavapipe
//! among them). With the option off it is kept as it was, and the device must support the extension.

use spirv::Op;

use crate::module::{decode_string, Instruction, Module};
use crate::util::{string_is, string_starts_with, FastSet};

fn non_semantic_sets(module: &Module) -> FastSet<u32> {
    module
        .ext_inst_imports
        .iter()
        .filter(|i| string_starts_with(&i.operands, "NonSemantic."))
        .filter_map(|i| i.result_id)
        .collect()
}

fn is_ext_inst(inst: &Instruction) -> bool {
    inst.is(Op::ExtInst) || inst.is(Op::ExtInstWithForwardRefsKHR)
}

/// [`is_ext_inst`] for an instruction given as its words.
fn is_ext_inst_words(words: &[u32]) -> bool {
    let opcode = words[0] & 0xFFFF;
    opcode == Op::ExtInst as u32 || opcode == Op::ExtInstWithForwardRefsKHR as u32
}

/// Removes every instruction of a `NonSemantic.*` set, module-level and in functions, and the names and
/// decorations that target their results (valid SPIR-V may name them; a name left behind would refer to
/// an id no longer defined).
pub(crate) fn strip_non_semantic(module: &mut Module) {
    let sets = non_semantic_sets(module);
    if sets.is_empty() {
        return;
    }
    let mut removed = FastSet::default();
    let mut keep = |i: &Instruction| {
        let strip = is_ext_inst(i) && i.operand(0).is_some_and(|s| sets.contains(&s));
        if strip {
            removed.extend(i.result_id);
        }
        !strip
    };
    module.globals.retain(&mut keep);
    // The engine adds no extended instruction (and no name): nothing of its own to strip.
    debug_assert!(
        !module.added_instructions().any(is_ext_inst_words),
        "the engine added an extended instruction"
    );
    for f in &mut module.functions {
        f.params.retain(&mut keep);
        for b in &mut f.blocks {
            b.instructions.retain(&mut keep);
        }
    }
    if removed.is_empty() {
        return;
    }
    let targets_removed = |i: &Instruction| i.operand(0).is_some_and(|t| removed.contains(&t));
    module.debug_names.retain(|i| !targets_removed(i));
    module.annotations.retain(|i| !targets_removed(i));
    for group_decorate in module.annotations.iter_mut().filter(|i| {
        (i.is(Op::GroupDecorate) || i.is(Op::GroupMemberDecorate)) && !i.operands.is_empty()
    }) {
        // Operands: the group, then targets (with a member index each for the member form).
        let stride = if group_decorate.is(Op::GroupDecorate) {
            1
        } else {
            2
        };
        let mut kept = vec![group_decorate.operands[0]];
        for target in group_decorate.operands[1..].chunks(stride) {
            if !removed.contains(&target[0]) {
                kept.extend_from_slice(target);
            }
        }
        group_decorate.operands = kept.into();
    }
}

/// Drops `NonSemantic.*` imports that no instruction uses, `SPV_KHR_non_semantic_info` when no such
/// import is left, and `SPV_KHR_relaxed_extended_instruction` when no `OpExtInstWithForwardRefsKHR` is left.
pub(crate) fn remove_unused_imports(module: &mut Module) {
    let sets = non_semantic_sets(module);
    let has_extension = |name: &str| {
        module
            .extensions
            .iter()
            .any(|e| string_is(&e.operands, name))
    };
    // Nothing that could go: no walk over every instruction (most modules have no debug info).
    if sets.is_empty()
        && !has_extension("SPV_KHR_non_semantic_info")
        && !has_extension("SPV_KHR_relaxed_extended_instruction")
    {
        return;
    }
    let mut used = FastSet::default();
    let mut forward_refs = false;
    // `for_each`, not a `for` loop: the chained iterator is far cheaper walked from inside.
    module.all_instructions().for_each(|inst| {
        if is_ext_inst(inst) {
            used.extend(inst.operand(0));
            forward_refs |= inst.is(Op::ExtInstWithForwardRefsKHR);
        }
    });
    // None today (see `strip_non_semantic`), but an import the engine's code used must stay.
    for words in module.added_instructions().filter(|w| is_ext_inst_words(w)) {
        // Words: the first, the result type and id, the set.
        used.extend(words.get(3));
        forward_refs |= words[0] & 0xFFFF == Op::ExtInstWithForwardRefsKHR as u32;
    }
    module.ext_inst_imports.retain(|i| {
        i.result_id
            .is_none_or(|id| !sets.contains(&id) || used.contains(&id))
    });
    let any_non_semantic = !non_semantic_sets(module).is_empty();
    module
        .extensions
        .retain(|e| match decode_string(&e.operands).0.as_str() {
            "SPV_KHR_non_semantic_info" => any_non_semantic,
            "SPV_KHR_relaxed_extended_instruction" => forward_refs,
            _ => true,
        });
}
