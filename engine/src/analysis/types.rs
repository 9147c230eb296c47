//! Types and constants: what each type id is, and finding or adding types and constants without emitting
//! duplicates (spirv-val rejects two identical non-aggregate types).

use std::collections::hash_map::Entry;

use spirv::{Op, StorageClass};

use crate::module::{Instruction, Module};
use crate::util::FastMap;

/// What a type id is, as far as the engine cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
        /// `None` for a storage class the `spirv` grammar does not know.
        storage: Option<StorageClass>,
        pointee: u32,
    },
    /// `OpTypeUntypedPointerKHR` (`SPV_KHR_untyped_pointers`): a pointer whose accesses name their type.
    UntypedPointer {
        /// `None` for a storage class the `spirv` grammar does not know.
        storage: Option<StorageClass>,
    },
    Struct {
        /// Read with [`TypeTable::members`].
        members: MemberList,
    },
    Array {
        element: u32,
        length: u32,
    },
    RuntimeArray,
    Function,
    Other,
}

/// Where a struct's member types lie in its [`TypeTable`]: a range of one list for all structs, so that a
/// [`Type`] owns nothing (a list per struct cost an allocation each, and dropping the table a walk over it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemberList {
    start: u32,
    count: u32,
}

/// The type and constant tables of a module, kept up to date as the engine adds types and constants.
#[derive(Default)]
pub(crate) struct TypeTable {
    /// What each id is: one table for types and integer values rather than one each (a module's tables
    /// are small, and each table costs an allocation and a free per module).
    by_id: FastMap<u32, Known>,
    /// Non-aggregate type declarations by [opcode, operands...] (the first one wins) and non-spec
    /// constants by [opcode, type, operands...]: one table, as their opcodes tell them apart.
    by_key: KeyedIds,
    /// The member types of every struct, one struct after another ([`MemberList`]).
    struct_members: Vec<u32>,
}

/// What the table knows of an id. Both parts, as a damaged module may declare one id twice.
#[derive(Default)]
struct Known {
    ty: Option<Type>,
    /// The value of a 32-bit (or narrower) scalar integer constant, spec constants excluded.
    int_value: Option<u32>,
}

/// Ids by key: an opcode, for a constant its type, then the operand words.
#[derive(Default)]
struct KeyedIds {
    /// Keys of up to [`SHORT_KEY_WORDS`] words: most of them.
    short: FastMap<ShortKey, u32>,
    /// Longer keys (struct-like function types, large composites).
    long: FastMap<Vec<u32>, u32>,
}

/// The most words a [`ShortKey`] holds: enough for the function types of the helpers the engine builds
/// (a return type and up to six parameters).
const SHORT_KEY_WORDS: usize = 8;

/// A key of at most [`SHORT_KEY_WORDS`] words, zero-padded, its length in the top half of the first word
/// (an opcode, below 2^16), so that keys differing only in trailing zeros stay apart. A fixed-size array
/// rather than a list: hashed and compared in a few instructions, nothing to free when the table goes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct ShortKey([u32; SHORT_KEY_WORDS]);

impl std::hash::Hash for ShortKey {
    /// Two words at a time, and no length prefix (the length is in the key): four steps of the hasher.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        for pair in self.0.chunks_exact(2) {
            state.write_u64(u64::from(pair[0]) | u64::from(pair[1]) << 32);
        }
    }
}

/// The short key of `head` (an opcode first) followed by `tail`, `None` when it is too long for one.
#[inline]
fn short_key(head: &[u32], tail: &[u32]) -> Option<ShortKey> {
    let n = head.len() + tail.len();
    if n > SHORT_KEY_WORDS {
        return None;
    }
    let mut key = [0; SHORT_KEY_WORDS];
    // Word by word: a few words, fewer than a `memcpy` call is worth; the head (one or two words) and
    // the tail each in a loop of its own (one loop over both asked at each word which it was in).
    for (slot, &word) in key.iter_mut().zip(head) {
        *slot = word;
    }
    for (slot, &word) in key[head.len()..].iter_mut().zip(tail) {
        *slot = word;
    }
    key[0] |= (n as u32) << 16;
    Some(ShortKey(key))
}

impl KeyedIds {
    fn with_capacity(n: usize) -> KeyedIds {
        KeyedIds {
            short: FastMap::with_capacity_and_hasher(n, Default::default()),
            long: FastMap::default(),
        }
    }

    /// The id under the key `head` followed by `tail`, or else the one `new_id` gives, now stored under
    /// it; `true` when it is new. One hash and probe for the lookup and the insertion.
    #[inline]
    fn find_or_add(
        &mut self,
        head: &[u32],
        tail: &[u32],
        new_id: impl FnOnce() -> u32,
    ) -> (u32, bool) {
        fn entry<K: Eq + std::hash::Hash>(
            map: &mut FastMap<K, u32>,
            key: K,
            new_id: impl FnOnce() -> u32,
        ) -> (u32, bool) {
            match map.entry(key) {
                Entry::Occupied(e) => (*e.get(), false),
                Entry::Vacant(e) => (*e.insert(new_id()), true),
            }
        }
        match short_key(head, tail) {
            Some(key) => entry(&mut self.short, key, new_id),
            None => entry(
                &mut self.long,
                head.iter().chain(tail).copied().collect(),
                new_id,
            ),
        }
    }
}

/// The constants the table keeps (non-spec).
fn is_constant(op: Op) -> bool {
    matches!(
        op,
        Op::Constant
            | Op::ConstantTrue
            | Op::ConstantFalse
            | Op::ConstantComposite
            | Op::ConstantNull
    )
}

/// What a type declaration (opcode and operands after the result id) declares; `None` for what is not one.
// Inlined into `observe`, which runs for every global of every module.
// `struct_members` takes a struct's member types.
#[inline(always)]
fn declared_type(op: Op, o: &[u32], struct_members: &mut Vec<u32>) -> Option<Type> {
    Some(match op {
        Op::TypeVoid => Type::Void,
        Op::TypeBool => Type::Bool,
        // Only the shapes SPIR-V allows are read as what they say; anything else (a damaged module's
        // vector of 70 million components, say) is `Other`, which no pass builds code for: the checks'
        // code and constants are made per component and per bit, and must stay in proportion to the input.
        Op::TypeInt if o.len() >= 2 && matches!(o[0], 8 | 16 | 32 | 64) => Type::Int {
            width: o[0],
            signed: o[1] != 0,
        },
        Op::TypeFloat if o.len() == 1 && matches!(o[0], 16 | 32 | 64) => {
            Type::Float { width: o[0] }
        }
        Op::TypeVector if o.len() >= 2 && matches!(o[1], 2 | 3 | 4 | 8 | 16) => Type::Vector {
            component: o[0],
            count: o[1],
        },
        Op::TypeMatrix if o.len() >= 2 && (2..=4).contains(&o[1]) => Type::Matrix {
            column: o[0],
            count: o[1],
        },
        Op::TypePointer if o.len() >= 2 => Type::Pointer {
            storage: StorageClass::from_u32(o[0]),
            pointee: o[1],
        },
        Op::TypeUntypedPointerKHR if !o.is_empty() => Type::UntypedPointer {
            storage: StorageClass::from_u32(o[0]),
        },
        Op::TypeStruct => {
            if struct_members.capacity() == 0 {
                // Room for the few structs of most modules at once, rather than grown from nothing.
                struct_members.reserve(64);
            }
            let members = MemberList {
                start: struct_members.len() as u32,
                count: o.len() as u32,
            };
            struct_members.extend_from_slice(o);
            Type::Struct { members }
        }
        Op::TypeArray if o.len() >= 2 => Type::Array {
            element: o[0],
            length: o[1],
        },
        Op::TypeRuntimeArray => Type::RuntimeArray,
        Op::TypeFunction => Type::Function,
        // The other types of the core range (images, samplers, forward pointers...), and the
        // declarations above with too few operands or a shape SPIR-V does not allow.
        _ if (Op::TypeVoid..=Op::TypeForwardPointer).contains(&op) => Type::Other,
        _ => return None,
    })
}

fn is_keyed_type(op: Op) -> bool {
    matches!(
        op,
        Op::TypeVoid
            | Op::TypeBool
            | Op::TypeInt
            | Op::TypeFloat
            | Op::TypeVector
            | Op::TypeMatrix
            | Op::TypePointer
            | Op::TypeFunction
    )
}

impl TypeTable {
    /// Reads the types and constants of a module's global section.
    pub(crate) fn new(module: &Module) -> TypeTable {
        // Sized for the module's globals and what the engine adds (dozens of types and constants at the
        // NaN levels, where 64 more left some tables to regrow), so the tables seldom regrow.
        let n = module.globals.len() + 128;
        let mut t = TypeTable {
            by_id: FastMap::with_capacity_and_hasher(n, Default::default()),
            by_key: KeyedIds::with_capacity(n),
            struct_members: Vec::new(),
        };
        for inst in &module.globals {
            t.observe(inst);
        }
        t
    }

    /// Records one global instruction (a type or constant the module has or the engine just added).
    pub(crate) fn observe(&mut self, inst: &Instruction) {
        let Some(id) = inst.result_id else { return };
        let Some(op) = inst.op() else { return };
        self.observe_parts(op, inst.result_type, id, &inst.operands);
    }

    /// [`TypeTable::observe`] for an instruction given by its parts.
    #[inline]
    pub(crate) fn observe_parts(&mut self, op: Op, result_type: Option<u32>, id: u32, o: &[u32]) {
        let ty = match declared_type(op, o, &mut self.struct_members) {
            Some(ty) => ty,
            None if is_constant(op) => {
                if let Some(ty) = result_type {
                    // The first one wins the key; a later equal one still has its value.
                    let (_, new) = self.find_or_add_constant(op, ty, o, || id);
                    if !new {
                        self.note_int_value(op, ty, id, o);
                    }
                }
                return;
            }
            None => return,
        };
        if is_keyed_type(op) {
            self.by_key.find_or_add(&[op as u32], o, || id);
        }
        self.by_id.entry(id).or_default().ty = Some(ty);
    }

    /// Remembers the value of a new scalar integer constant of 32 bits or fewer.
    #[inline]
    fn note_int_value(&mut self, op: Op, ty: u32, id: u32, operands: &[u32]) {
        if op == Op::Constant && operands.len() == 1 {
            if let Some(Type::Int { width, .. }) = self.get(ty) {
                if *width <= 32 {
                    self.by_id.entry(id).or_default().int_value = Some(operands[0]);
                }
            }
        }
    }

    /// The non-aggregate type declared by (opcode, operands), or a new one with the id `new_id` gives,
    /// recorded as [`TypeTable::observe`] would; `true` when it is new (the caller declares it). One hash
    /// and probe for the lookup and the insertion.
    pub(crate) fn find_or_add_type(
        &mut self,
        op: Op,
        operands: &[u32],
        new_id: impl FnOnce() -> u32,
    ) -> (u32, bool) {
        debug_assert!(is_keyed_type(op));
        let (id, new) = self.by_key.find_or_add(&[op as u32], operands, new_id);
        if new {
            if let Some(ty) = declared_type(op, operands, &mut self.struct_members) {
                self.by_id.entry(id).or_default().ty = Some(ty);
            }
        }
        (id, new)
    }

    /// [`TypeTable::find_or_add_constant`] for the `OpConstant` `value` of `uint`, the builder's 32-bit
    /// integer type. A new constant's value is not entered by id ([`TypeTable::int_value`] does not know
    /// it): the engine makes dozens of these per module at the NaN levels, a second hash insertion
    /// each, and passes only ask the values of constants the module's own instructions name.
    pub(crate) fn find_or_add_u32(
        &mut self,
        uint: u32,
        value: u32,
        new_id: impl FnOnce() -> u32,
    ) -> (u32, bool) {
        self.by_key
            .find_or_add(&[Op::Constant as u32, uint], &[value], new_id)
    }

    /// The constant (opcode, type, operands), or a new one with the id `new_id` gives, recorded as
    /// [`TypeTable::observe`] would; `true` when it is new (the caller declares it).
    pub(crate) fn find_or_add_constant(
        &mut self,
        op: Op,
        ty: u32,
        operands: &[u32],
        new_id: impl FnOnce() -> u32,
    ) -> (u32, bool) {
        debug_assert!(is_constant(op));
        let (id, new) = self.by_key.find_or_add(&[op as u32, ty], operands, new_id);
        if new {
            self.note_int_value(op, ty, id, operands);
        }
        (id, new)
    }

    /// The type with this id.
    pub(crate) fn get(&self, id: u32) -> Option<&Type> {
        self.by_id.get(&id)?.ty.as_ref()
    }

    /// The member types of a struct.
    pub(crate) fn members(&self, list: MemberList) -> &[u32] {
        let start = list.start as usize;
        &self.struct_members[start..start + list.count as usize]
    }

    /// The value of a non-spec scalar integer constant of 32 bits or fewer (one the module declares, or
    /// the engine added other than through [`TypeTable::find_or_add_u32`]).
    pub(crate) fn int_value(&self, id: u32) -> Option<u32> {
        self.by_id.get(&id)?.int_value
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
        assert!(module.header.bound > uint);
        // The result parses (what was added is words until then) and round-trips.
        let words = module.to_words();
        let module = Module::parse(&words).unwrap();
        assert_eq!(module.to_words(), words);
        let ints = module.globals.iter().filter(|i| i.is(Op::TypeInt)).count();
        let vectors = module
            .globals
            .iter()
            .filter(|i| i.is(Op::TypeVector))
            .count();
        let consts = module.globals.iter().filter(|i| i.is(Op::Constant)).count();
        assert_eq!((ints, vectors, consts), (1, 1, 2));
    }

    #[test]
    fn shapes_spirv_does_not_allow_are_other() {
        // Found by the fuzzer: an integer vector of 69,926,912 components made the integer checks build a
        // composite constant of as many words (560 MB). What a pass may build code for per component or
        // per bit keeps the shapes SPIR-V allows; the rest is `Other`.
        let vector = |component, count| Type::Vector { component, count };
        let int = |width, signed| Type::Int { width, signed };
        let cases = [
            (Op::TypeVector, [5, 0x042B_0000], Type::Other),
            (Op::TypeVector, [5, 1], Type::Other),
            (Op::TypeVector, [5, 16], vector(5, 16)),
            (Op::TypeMatrix, [5, 9], Type::Other),
            (Op::TypeInt, [0, 1], Type::Other),
            (Op::TypeInt, [100, 0], Type::Other),
            (Op::TypeInt, [64, 1], int(64, true)),
        ];
        let mut members = Vec::new();
        for (op, operands, expected) in cases {
            assert_eq!(
                declared_type(op, &operands, &mut members),
                Some(expected),
                "{op:?} {operands:?}"
            );
        }
        for (width, expected) in [(24, Type::Other), (16, Type::Float { width: 16 })] {
            assert_eq!(
                declared_type(Op::TypeFloat, &[width], &mut members),
                Some(expected)
            );
        }
    }
}
