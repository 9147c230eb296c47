//! Types and constants: what each type id is, and finding or adding types and constants without emitting
//! duplicates (spirv-val rejects two identical non-aggregate types).

use crate::util::{with_key, FastMap};

use crate::grammar::op;
use crate::module::{Instruction, Module};

/// What a type id is, as far as the engine cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Type {
    Void,
    Bool,
    Int {
        width: u32,
        signed: bool,
    },
    /// A plain IEEE float (no `FPEncoding` operand).
    Float {
        width: u32,
    },
    Vector {
        component: u32,
        count: u32,
    },
    Matrix {
        column: u32,
        count: u32,
    },
    Pointer {
        storage: u32,
        pointee: u32,
    },
    Struct {
        members: Vec<u32>,
    },
    Array {
        element: u32,
        length: u32,
    },
    RuntimeArray,
    Function,
    Other,
}

/// The type and constant tables of a module, kept up to date as the engine adds types and constants.
#[derive(Default)]
pub(crate) struct TypeTable {
    types: FastMap<u32, Type>,
    /// Non-aggregate type declarations by [opcode, operands...]: the first one wins.
    by_key: FastMap<Key, u32>,
    /// Non-spec constants by [opcode, type, operands...].
    constants: FastMap<Key, u32>,
    /// 32-bit (or narrower) scalar integer constants: id -> value, spec constants excluded.
    int_values: FastMap<u32, u32>,
}

/// A type or constant key: most fit inline, so building the tables allocates once per table, not per entry.
type Key = smallvec::SmallVec<[u32; 6]>;

fn is_keyed_type(opcode: u16) -> bool {
    matches!(
        opcode,
        op::TYPE_VOID
            | op::TYPE_BOOL
            | op::TYPE_INT
            | op::TYPE_FLOAT
            | op::TYPE_VECTOR
            | op::TYPE_MATRIX
            | op::TYPE_POINTER
            | op::TYPE_FUNCTION
    )
}

impl TypeTable {
    /// Reads the types and constants of a module's global section.
    pub(crate) fn new(module: &Module) -> TypeTable {
        // Sized for the module's globals (and the few the engine adds), so the tables never regrow.
        let n = module.globals.len() + 64;
        let mut t = TypeTable {
            types: FastMap::with_capacity_and_hasher(n, Default::default()),
            by_key: FastMap::with_capacity_and_hasher(n, Default::default()),
            constants: FastMap::with_capacity_and_hasher(n, Default::default()),
            int_values: FastMap::default(),
        };
        for inst in &module.globals {
            t.observe(inst);
        }
        t
    }

    /// Records one global instruction (a type or constant the module has or the engine just added).
    pub(crate) fn observe(&mut self, inst: &Instruction) {
        let Some(id) = inst.result_id else { return };
        let o = &inst.operands;
        let ty = match inst.opcode {
            op::TYPE_VOID => Type::Void,
            op::TYPE_BOOL => Type::Bool,
            op::TYPE_INT if o.len() >= 2 => Type::Int {
                width: o[0],
                signed: o[1] != 0,
            },
            op::TYPE_FLOAT if o.len() == 1 => Type::Float { width: o[0] },
            op::TYPE_VECTOR if o.len() >= 2 => Type::Vector {
                component: o[0],
                count: o[1],
            },
            op::TYPE_MATRIX if o.len() >= 2 => Type::Matrix {
                column: o[0],
                count: o[1],
            },
            op::TYPE_POINTER if o.len() >= 2 => Type::Pointer {
                storage: o[0],
                pointee: o[1],
            },
            op::TYPE_STRUCT => Type::Struct {
                members: o.to_vec(),
            },
            op::TYPE_ARRAY if o.len() >= 2 => Type::Array {
                element: o[0],
                length: o[1],
            },
            op::TYPE_RUNTIME_ARRAY => Type::RuntimeArray,
            op::TYPE_FUNCTION => Type::Function,
            op::CONSTANT
            | op::CONSTANT_TRUE
            | op::CONSTANT_FALSE
            | op::CONSTANT_COMPOSITE
            | op::CONSTANT_NULL => {
                if let Some(ty) = inst.result_type {
                    if self.find_constant(inst.opcode, ty, o).is_none() {
                        let mut key: Key = smallvec::smallvec![u32::from(inst.opcode), ty];
                        key.extend_from_slice(o);
                        self.constants.insert(key, id);
                    }
                    if inst.opcode == op::CONSTANT && o.len() == 1 {
                        if let Some(Type::Int { width, .. }) = self.types.get(&ty) {
                            if *width <= 32 {
                                self.int_values.insert(id, o[0]);
                            }
                        }
                    }
                }
                return;
            }
            _ => {
                if !(op::TYPE_VOID..=op::TYPE_FORWARD_POINTER).contains(&inst.opcode) {
                    return;
                }
                Type::Other
            }
        };
        if is_keyed_type(inst.opcode) && self.find(inst.opcode, o).is_none() {
            let mut key: Key = smallvec::smallvec![u32::from(inst.opcode)];
            key.extend_from_slice(o);
            self.by_key.insert(key, id);
        }
        self.types.insert(id, ty);
    }

    /// The type with this id.
    pub(crate) fn get(&self, id: u32) -> Option<&Type> {
        self.types.get(&id)
    }

    /// An existing non-aggregate type declared by (opcode, operands).
    pub(crate) fn find(&self, opcode: u16, operands: &[u32]) -> Option<u32> {
        with_key(&[u32::from(opcode)], operands, |k| {
            self.by_key.get(k).copied()
        })
    }

    /// An existing constant.
    pub(crate) fn find_constant(&self, opcode: u16, ty: u32, operands: &[u32]) -> Option<u32> {
        with_key(&[u32::from(opcode), ty], operands, |k| {
            self.constants.get(k).copied()
        })
    }

    /// The value of a non-spec scalar integer constant of 32 bits or fewer.
    pub(crate) fn int_value(&self, id: u32) -> Option<u32> {
        self.int_values.get(&id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::Builder;
    use crate::module::tests::tiny;

    #[test]
    fn finds_existing_types_and_adds_each_once() {
        let mut module = Module::parse(&tiny()).unwrap();
        let mut b = Builder::new(&module);
        let void = b.type_void();
        assert_eq!(void, 2, "the module's own OpTypeVoid");
        let uint = b.type_int(32, false);
        let uint_again = b.type_int(32, false);
        assert_eq!(uint, uint_again);
        let v2 = b.type_vector(uint, 2);
        assert_eq!(v2, b.type_vector(uint, 2));
        let c = b.const_u32(7);
        assert_eq!(c, b.const_u32(7));
        assert_ne!(c, b.const_u32(8));
        let f = b.type_function(void, &[]);
        assert_eq!(f, 3, "the module's own function type");
        b.finish(&mut module).unwrap();
        let ints = module
            .globals
            .iter()
            .filter(|i| i.opcode == op::TYPE_INT)
            .count();
        let vectors = module
            .globals
            .iter()
            .filter(|i| i.opcode == op::TYPE_VECTOR)
            .count();
        let consts = module
            .globals
            .iter()
            .filter(|i| i.opcode == op::CONSTANT)
            .count();
        assert_eq!((ints, vectors, consts), (1, 1, 2));
        assert!(module.header.bound > uint);
        // The result still parses and round-trips.
        let words = module.to_words();
        assert_eq!(Module::parse(&words).unwrap().to_words(), words);
    }
}
