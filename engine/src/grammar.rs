//! What the engine needs from the SPIR-V grammar: which opcodes carry a result type and a result id.
//!
//! The table is built once from rspirv's core grammar. Opcodes the grammar does not know are treated as
//! having neither, so that an unknown-but-well-formed instruction survives a round trip as raw words.

use std::sync::OnceLock;

const HAS_TYPE: u8 = 1;
const HAS_RESULT: u8 = 2;
const KNOWN: u8 = 4;

fn table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(|| {
        use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
        let max = INSTRUCTION_TABLE
            .iter()
            .map(|i| i.opcode as usize)
            .max()
            .unwrap_or(0);
        let mut table = vec![0u8; max + 1];
        for inst in INSTRUCTION_TABLE.iter() {
            let mut flags = KNOWN;
            let mut kinds = inst.operands.iter().map(|o| o.kind);
            match kinds.next() {
                Some(OperandKind::IdResultType) => {
                    flags |= HAS_TYPE;
                    if kinds.next() == Some(OperandKind::IdResult) {
                        flags |= HAS_RESULT;
                    }
                }
                Some(OperandKind::IdResult) => flags |= HAS_RESULT,
                _ => {}
            }
            table[inst.opcode as usize] = flags;
        }
        table
    })
}

/// What the grammar says about one opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OpInfo {
    /// The opcode is in the grammar.
    pub known: bool,
    /// The first operand word is a result type id.
    pub has_type: bool,
    /// The instruction defines a result id (after the result type, if any).
    pub has_result: bool,
}

/// Looks an opcode up.
pub(crate) fn op_info(opcode: u16) -> OpInfo {
    let flags = table().get(opcode as usize).copied().unwrap_or(0);
    OpInfo {
        known: flags & KNOWN != 0,
        has_type: flags & HAS_TYPE != 0,
        has_result: flags & HAS_RESULT != 0,
    }
}

/// Opcodes the engine handles by number.
#[allow(missing_docs)]
pub(crate) mod op {
    pub const SOURCE_CONTINUED: u16 = 2;
    pub const SOURCE: u16 = 3;
    pub const SOURCE_EXTENSION: u16 = 4;
    pub const NAME: u16 = 5;
    pub const MEMBER_NAME: u16 = 6;
    pub const STRING: u16 = 7;
    pub const LINE: u16 = 8;
    pub const EXTENSION: u16 = 10;
    pub const EXT_INST_IMPORT: u16 = 11;
    pub const EXT_INST: u16 = 12;
    pub const MEMORY_MODEL: u16 = 14;
    pub const ENTRY_POINT: u16 = 15;
    pub const EXECUTION_MODE: u16 = 16;
    pub const CAPABILITY: u16 = 17;
    pub const TYPE_VOID: u16 = 19;
    pub const TYPE_BOOL: u16 = 20;
    pub const TYPE_INT: u16 = 21;
    pub const TYPE_FLOAT: u16 = 22;
    pub const TYPE_VECTOR: u16 = 23;
    pub const TYPE_MATRIX: u16 = 24;
    pub const TYPE_ARRAY: u16 = 28;
    pub const TYPE_RUNTIME_ARRAY: u16 = 29;
    pub const TYPE_STRUCT: u16 = 30;
    pub const TYPE_POINTER: u16 = 32;
    pub const TYPE_FUNCTION: u16 = 33;
    pub const TYPE_FORWARD_POINTER: u16 = 39;
    pub const CONSTANT_TRUE: u16 = 41;
    pub const CONSTANT_FALSE: u16 = 42;
    pub const CONSTANT: u16 = 43;
    pub const CONSTANT_COMPOSITE: u16 = 44;
    pub const CONSTANT_NULL: u16 = 46;
    pub const FUNCTION: u16 = 54;
    pub const FUNCTION_PARAMETER: u16 = 55;
    pub const FUNCTION_END: u16 = 56;
    pub const FUNCTION_CALL: u16 = 57;
    pub const VARIABLE: u16 = 59;
    pub const LOAD: u16 = 61;
    pub const STORE: u16 = 62;
    pub const ACCESS_CHAIN: u16 = 65;
    pub const DECORATE: u16 = 71;
    pub const MEMBER_DECORATE: u16 = 72;
    pub const DECORATION_GROUP: u16 = 73;
    pub const GROUP_DECORATE: u16 = 74;
    pub const GROUP_MEMBER_DECORATE: u16 = 75;
    pub const COMPOSITE_EXTRACT: u16 = 81;
    pub const IMAGE_WRITE: u16 = 99;
    pub const CONVERT_F_TO_U: u16 = 109;
    pub const U_CONVERT: u16 = 113;
    pub const S_CONVERT: u16 = 114;
    pub const F_CONVERT: u16 = 115;
    pub const BITCAST: u16 = 124;
    pub const I_ADD: u16 = 128;
    pub const F_ADD: u16 = 129;
    pub const F_DIV: u16 = 136;
    pub const F_REM: u16 = 140;
    pub const F_MOD: u16 = 141;
    pub const LOGICAL_NOT: u16 = 168;
    pub const LOGICAL_OR: u16 = 166;
    pub const LOGICAL_AND: u16 = 167;
    pub const SELECT: u16 = 169;
    pub const I_EQUAL: u16 = 170;
    pub const I_NOT_EQUAL: u16 = 171;
    pub const U_GREATER_THAN_EQUAL: u16 = 174;
    pub const U_LESS_THAN: u16 = 176;
    pub const U_LESS_THAN_EQUAL: u16 = 178;
    pub const SHIFT_LEFT_LOGICAL: u16 = 196;
    pub const BITWISE_OR: u16 = 197;
    pub const BITWISE_AND: u16 = 199;
    pub const ATOMIC_I_ADD: u16 = 234;
    pub const LOOP_MERGE: u16 = 246;
    pub const SELECTION_MERGE: u16 = 247;
    pub const LABEL: u16 = 248;
    pub const BRANCH: u16 = 249;
    pub const BRANCH_CONDITIONAL: u16 = 250;
    pub const RETURN: u16 = 253;
    pub const RETURN_VALUE: u16 = 254;
    pub const UNREACHABLE: u16 = 255;
    pub const SWITCH: u16 = 251;
    pub const KILL: u16 = 252;
    pub const TERMINATE_INVOCATION: u16 = 4416;
    pub const IGNORE_INTERSECTION_KHR: u16 = 4448;
    pub const TERMINATE_RAY_KHR: u16 = 4449;
    pub const EMIT_MESH_TASKS_EXT: u16 = 5294;
    pub const DEMOTE_TO_HELPER_INVOCATION: u16 = 5380;
    pub const NO_LINE: u16 = 317;
    pub const MODULE_PROCESSED: u16 = 330;
    pub const EXECUTION_MODE_ID: u16 = 331;
    pub const DECORATE_ID: u16 = 332;
    pub const EXT_INST_WITH_FORWARD_REFS: u16 = 4433;
    pub const DECORATE_STRING: u16 = 5632;
    pub const MEMBER_DECORATE_STRING: u16 = 5633;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_result_layout() {
        let load = op_info(op::LOAD);
        assert!(load.known && load.has_type && load.has_result);
        let store = op_info(op::STORE);
        assert!(store.known && !store.has_type && !store.has_result);
        let ty = op_info(op::TYPE_INT);
        assert!(ty.known && !ty.has_type && ty.has_result);
        let ext = op_info(op::EXT_INST_WITH_FORWARD_REFS);
        assert!(ext.known && ext.has_type && ext.has_result);
        let unknown = op_info(0xfff0);
        assert!(!unknown.known && !unknown.has_type && !unknown.has_result);
    }
}
