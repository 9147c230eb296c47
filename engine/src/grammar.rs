//! What the engine needs from the SPIR-V grammar: which opcodes carry a result type and a result id.
//!
//! The table is built once from rspirv's core grammar. Opcodes the grammar does not know are treated as
//! having neither, so that an unknown-but-well-formed instruction survives a round trip as raw words.
//! Opcodes, storage classes, decorations and the other enumerants are `spirv`'s types throughout the
//! engine; no number of the grammar is written by hand.

use std::sync::OnceLock;

use spirv::Op;

use crate::module::Place;

/// What the grammar says about one opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpInfo {
    /// The opcode, when it is in the grammar.
    pub op: Option<Op>,
    /// The first operand word is a result type id.
    pub has_type: bool,
    /// The instruction defines a result id (after the result type, if any).
    pub has_result: bool,
    /// Where the parser puts it ([`crate::module::place_of`]), looked up with the rest rather than
    /// matched on per instruction.
    pub place: Place,
}

const UNKNOWN: OpInfo = OpInfo {
    op: None,
    has_type: false,
    has_result: false,
    place: Place::Unknown,
};

/// The table by opcode; [`lookup`] reads it. Fetched once by a loop over many instructions, rather than
/// checked to be built at each one.
pub(crate) fn table() -> &'static [OpInfo] {
    static TABLE: OnceLock<Vec<OpInfo>> = OnceLock::new();
    TABLE.get_or_init(|| {
        use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
        let max = INSTRUCTION_TABLE
            .iter()
            .map(|i| i.opcode as usize)
            .max()
            .unwrap_or(0);
        let mut table = vec![UNKNOWN; max + 1];
        for inst in INSTRUCTION_TABLE.iter() {
            let mut kinds = inst.operands.iter().map(|o| o.kind);
            let (has_type, has_result) = match kinds.next() {
                Some(OperandKind::IdResultType) => {
                    (true, kinds.next() == Some(OperandKind::IdResult))
                }
                Some(OperandKind::IdResult) => (false, true),
                _ => (false, false),
            };
            table[inst.opcode as usize] = OpInfo {
                op: Some(inst.opcode),
                has_type,
                has_result,
                place: crate::module::place_of(inst.opcode),
            };
        }
        table
    })
}

/// Looks an opcode up.
#[cfg(test)]
pub(crate) fn op_info(opcode: u16) -> OpInfo {
    lookup(table(), opcode)
}

/// Looks an opcode up in [`table`].
#[inline]
pub(crate) fn lookup(table: &[OpInfo], opcode: u16) -> OpInfo {
    table.get(usize::from(opcode)).copied().unwrap_or(UNKNOWN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_result_layout() {
        let info = |op: Op| op_info(op as u16);
        let load = info(Op::Load);
        assert!(load.op == Some(Op::Load) && load.has_type && load.has_result);
        let store = info(Op::Store);
        assert!(store.op == Some(Op::Store) && !store.has_type && !store.has_result);
        let ty = info(Op::TypeInt);
        assert!(ty.op.is_some() && !ty.has_type && ty.has_result);
        let ext = info(Op::ExtInstWithForwardRefsKHR);
        assert!(ext.op.is_some() && ext.has_type && ext.has_result);
        assert_eq!(op_info(0xfff0), UNKNOWN);
    }

    /// rspirv's grammar table and the `spirv` crate's `Op` know the same opcodes, so matching on
    /// [`OpInfo::op`] is matching on the opcode's number.
    #[test]
    fn the_table_and_spirv_op_agree() {
        for opcode in 0..=u16::MAX {
            assert_eq!(
                op_info(opcode).op,
                Op::from_u32(u32::from(opcode)),
                "opcode {opcode}"
            );
        }
    }
}
