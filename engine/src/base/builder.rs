//! Building new module content: fresh ids, types and constants found or added once, decorations, and
//! functions made block by block. Nothing is written into the module until [`Builder::finish`].

use spirv::{Decoration, FunctionControl, Op, StorageClass};

use crate::analysis::TypeTable;
use crate::error::NotInstrumented;
use crate::module::{self, operands_of, Instruction, Module, MAX_BOUND};

/// New ids, types, constants, globals, decorations and functions for one module.
pub(crate) struct Builder {
    next_id: u32,
    /// The module's types and constants and the new ones: empty until [`Builder::read_types`] when the
    /// builder was made by [`Builder::deferred`].
    pub types: TypeTable,
    types_read: bool,
    /// New types, constants and variables, and new decorations, as words: instructions that nothing reads
    /// back once made, only writes out.
    globals: Vec<u32>,
    annotations: Vec<u32>,
    /// The functions added, one after another, as words, in the order they were added. A [`FnBuilder`]
    /// takes the list and writes its function at its end (a list allocated per helper, then copied,
    /// cost more than the helper's words).
    functions: Vec<u32>,
    /// `type_uint`, `type_bool`, `type_void` and `const_u32`, asked for many times at every site and in
    /// every helper: remembered here rather than looked up in the type table each time, small constants
    /// without even a hash (0, never an id, where not made yet).
    uint: u32,
    bool_type: u32,
    void: u32,
    small_u32_constants: [u32; SMALL_CONSTANTS],
    /// Larger `const_u32` values (record kinds, pending slots, NaN masks) asked for lately, and the other
    /// non-aggregate types ([`Builder::keyed_type`]: vectors, pointers, floats): a slot each by a hash of
    /// the value or key, (0 where empty), in front of the type table, which hashes and compares a
    /// 32-byte key per lookup. A type's or constant's id never changes once found or added, so a slot
    /// holds it as long as nothing else takes the slot.
    u32_cache: [(u32, u32); U32_CACHE],
    type_cache: [TypeCacheEntry; TYPE_CACHE],
}

/// `const_u32` values below this are remembered in an array.
const SMALL_CONSTANTS: usize = 64;

/// Slots of [`Builder`]'s caches of larger constants and of keyed types (powers of two): 16 hold what a
/// module asks for most; with 64, zeroing and moving the builder (every module makes one) cost more than
/// the extra hits saved.
const U32_CACHE: usize = 16;
const TYPE_CACHE: usize = 16;

/// A slot of the keyed type cache: the opcode with the operand count in its top half, up to two operands,
/// and the id (0 where empty).
#[derive(Clone, Copy, Default, PartialEq, Eq)]
struct TypeCacheEntry {
    op: u32,
    a: u32,
    b: u32,
    id: u32,
}

/// A slot index for `words` in a cache of `slots` slots (a power of two).
#[inline]
fn cache_slot(words: [u32; 3], slots: usize) -> usize {
    let mut h: u32 = 0;
    for w in words {
        h = (h.rotate_left(5) ^ w).wrapping_mul(0x9e37_79b9);
    }
    (h >> (32 - slots.trailing_zeros())) as usize
}

impl Builder {
    /// A builder for `module`: new ids start at its bound.
    #[cfg(test)]
    pub(crate) fn new(module: &Module) -> Builder {
        let mut b = Builder::deferred(module);
        b.read_types(module);
        b
    }

    /// [`Builder::new`] without the module's types and constants yet: reading them is much of the cost of
    /// a module that gets nothing (most, at the default options), so it waits for
    /// [`Builder::read_types`], which must come before anything is found or added.
    pub(crate) fn deferred(module: &Module) -> Builder {
        Builder {
            next_id: module.header.bound,
            types: TypeTable::default(),
            types_read: false,
            globals: Vec::new(),
            annotations: Vec::new(),
            functions: Vec::new(),
            uint: 0,
            bool_type: 0,
            void: 0,
            small_u32_constants: [0; SMALL_CONSTANTS],
            u32_cache: [(0, 0); U32_CACHE],
            type_cache: [TypeCacheEntry::default(); TYPE_CACHE],
        }
    }

    /// Reads the module's types and constants into [`Builder::types`], once.
    pub(crate) fn read_types(&mut self, module: &Module) {
        if !self.types_read {
            debug_assert!(
                self.globals.is_empty() && self.next_id == module.header.bound,
                "types read after something was built"
            );
            self.types = TypeTable::new(module);
            self.types_read = true;
        }
    }

    /// Whether [`Builder::read_types`] has run.
    pub(crate) fn types_read(&self) -> bool {
        self.types_read
    }

    /// A fresh id.
    pub(crate) fn id(&mut self) -> u32 {
        take_id(&mut self.next_id)
    }

    /// Appends a new type, constant or variable. A module that gets any gets a few dozen: room for those
    /// is made at the first rather than grown from nothing (a module that gets none allocates nothing).
    fn push_global(&mut self, op: Op, result_type: Option<u32>, id: u32, operands: &[u32]) {
        if self.globals.capacity() == 0 {
            self.globals.reserve(256);
        }
        let count = 2 + usize::from(result_type.is_some()) + operands.len();
        let first = first_word(op, count);
        // Fixed-size pieces, as `Instruction::write` does: a `memcpy` call costs more than these few words.
        // The whole instruction as one piece for what the engine adds most (a `uint` constant, a type of
        // one or two operands): one capacity check rather than two.
        match (result_type, operands) {
            (Some(ty), &[value]) => self.globals.extend_from_slice(&[first, ty, id, value]),
            (None, &[a]) => self.globals.extend_from_slice(&[first, id, a]),
            (None, &[a, b]) => self.globals.extend_from_slice(&[first, id, a, b]),
            (Some(ty), _) => {
                self.globals.extend_from_slice(&[first, ty, id]);
                module::extend_short(&mut self.globals, operands);
            }
            (None, _) => {
                self.globals.extend_from_slice(&[first, id]);
                module::extend_short(&mut self.globals, operands);
            }
        }
    }

    /// Adds a global instruction with a fresh result id.
    fn global(&mut self, op: Op, result_type: Option<u32>, operands: &[u32]) -> u32 {
        let id = self.id();
        self.define(id, op, result_type, operands);
        id
    }

    /// Adds a global instruction whose result id was taken earlier (with [`Builder::id`]), for what can
    /// only be made once something else is known (an array's length).
    pub(crate) fn define(&mut self, id: u32, op: Op, result_type: Option<u32>, operands: &[u32]) {
        self.types.observe_parts(op, result_type, id, operands);
        self.push_global(op, result_type, id, operands);
    }

    /// A non-aggregate type, found or added.
    #[inline]
    fn keyed_type(&mut self, op: Op, operands: &[u32]) -> u32 {
        let key = match *operands {
            [] => Some((0, 0)),
            [a] => Some((a, 0)),
            [a, b] => Some((a, b)),
            _ => None,
        };
        let Some((a, b)) = key else {
            return self.find_or_add_type(op, operands);
        };
        let op_word = (operands.len() as u32) << 16 | op as u32;
        let slot = cache_slot([op_word, a, b], TYPE_CACHE);
        let entry = self.type_cache[slot];
        if entry.id != 0 && (entry.op, entry.a, entry.b) == (op_word, a, b) {
            return entry.id;
        }
        let id = self.find_or_add_type(op, operands);
        self.type_cache[slot] = TypeCacheEntry {
            op: op_word,
            a,
            b,
            id,
        };
        id
    }

    /// [`Builder::keyed_type`] from the type table.
    #[inline(never)]
    fn find_or_add_type(&mut self, op: Op, operands: &[u32]) -> u32 {
        let next_id = &mut self.next_id;
        let (id, new) = self
            .types
            .find_or_add_type(op, operands, || take_id(next_id));
        if new {
            self.push_global(op, None, id, operands);
        }
        id
    }

    pub(crate) fn type_void(&mut self) -> u32 {
        if self.void != 0 {
            return self.void;
        }
        let id = self.keyed_type(Op::TypeVoid, &[]);
        self.void = id;
        id
    }

    pub(crate) fn type_bool(&mut self) -> u32 {
        if self.bool_type != 0 {
            return self.bool_type;
        }
        let id = self.keyed_type(Op::TypeBool, &[]);
        self.bool_type = id;
        id
    }

    pub(crate) fn type_int(&mut self, width: u32, signed: bool) -> u32 {
        self.keyed_type(Op::TypeInt, &[width, u32::from(signed)])
    }

    pub(crate) fn type_uint(&mut self) -> u32 {
        if self.uint != 0 {
            return self.uint;
        }
        let id = self.type_int(32, false);
        self.uint = id;
        id
    }

    pub(crate) fn type_float(&mut self, width: u32) -> u32 {
        self.keyed_type(Op::TypeFloat, &[width])
    }

    pub(crate) fn type_vector(&mut self, component: u32, count: u32) -> u32 {
        self.keyed_type(Op::TypeVector, &[component, count])
    }

    pub(crate) fn type_pointer(&mut self, storage: StorageClass, pointee: u32) -> u32 {
        self.keyed_type(Op::TypePointer, &[storage as u32, pointee])
    }

    pub(crate) fn type_function(&mut self, ret: u32, params: &[u32]) -> u32 {
        // On the stack for a few parameters: a `vec!` grown by the rest allocated twice.
        let mut operands: smallvec::SmallVec<[u32; 8]> = smallvec::smallvec![ret];
        operands.extend_from_slice(params);
        self.keyed_type(Op::TypeFunction, &operands)
    }

    /// A new runtime array type (aggregates are never shared: their decorations are the engine's own).
    pub(crate) fn new_runtime_array(&mut self, element: u32) -> u32 {
        self.global(Op::TypeRuntimeArray, None, &[element])
    }

    /// A new struct type.
    pub(crate) fn new_struct(&mut self, members: &[u32]) -> u32 {
        self.global(Op::TypeStruct, None, members)
    }

    /// A constant (`OpConstant`, `OpConstantTrue`, `OpConstantComposite`, ...) of type `ty`, found or added.
    pub(crate) fn constant(&mut self, op: Op, ty: u32, operands: &[u32]) -> u32 {
        let next_id = &mut self.next_id;
        let (id, new) = self
            .types
            .find_or_add_constant(op, ty, operands, || take_id(next_id));
        if new {
            self.push_global(op, Some(ty), id, operands);
        }
        id
    }

    /// A 32-bit unsigned integer constant.
    #[inline]
    pub(crate) fn const_u32(&mut self, value: u32) -> u32 {
        match self.small_u32_constants.get(value as usize) {
            Some(&id) if id != 0 => return id,
            Some(_) => {}
            None => {
                let (cached, id) = self.u32_cache[cache_slot([value, 0, 0], U32_CACHE)];
                if id != 0 && cached == value {
                    return id;
                }
            }
        }
        self.find_or_add_u32(value)
    }

    /// [`Builder::const_u32`] from the type table.
    #[inline(never)]
    fn find_or_add_u32(&mut self, value: u32) -> u32 {
        let uint = self.type_uint();
        let next_id = &mut self.next_id;
        let (id, new) = self.types.find_or_add_u32(uint, value, || take_id(next_id));
        if new {
            self.push_global(Op::Constant, Some(uint), id, &[value]);
        }
        match self.small_u32_constants.get_mut(value as usize) {
            Some(slot) => *slot = id,
            None => self.u32_cache[cache_slot([value, 0, 0], U32_CACHE)] = (value, id),
        }
        id
    }

    /// A composite constant.
    pub(crate) fn const_composite(&mut self, ty: u32, parts: &[u32]) -> u32 {
        self.constant(Op::ConstantComposite, ty, parts)
    }

    /// A null constant.
    pub(crate) fn const_null(&mut self, ty: u32) -> u32 {
        self.constant(Op::ConstantNull, ty, &[])
    }

    /// A `uvec2` constant holding a 64-bit value (low word first), as a device address is written.
    pub(crate) fn const_address(&mut self, address: u64) -> u32 {
        let uint = self.type_uint();
        let v2 = self.type_vector(uint, 2);
        let lo = self.const_u32(address as u32);
        let hi = self.const_u32((address >> 32) as u32);
        self.const_composite(v2, &[lo, hi])
    }

    /// A new global variable.
    pub(crate) fn variable(
        &mut self,
        pointer_type: u32,
        storage: StorageClass,
        initializer: Option<u32>,
    ) -> u32 {
        match initializer {
            Some(value) => self.global(Op::Variable, Some(pointer_type), &[storage as u32, value]),
            None => self.global(Op::Variable, Some(pointer_type), &[storage as u32]),
        }
    }

    /// `OpDecorate target decoration extra...`.
    pub(crate) fn decorate(&mut self, target: u32, decoration: Decoration, extra: &[u32]) {
        if self.annotations.capacity() == 0 {
            // The buffer's three decorations and a builtin or two: grown from nothing, the list was
            // reallocated three times.
            self.annotations.reserve(32);
        }
        self.annotations.extend_from_slice(&[
            first_word(Op::Decorate, 3 + extra.len()),
            target,
            decoration as u32,
        ]);
        self.annotations.extend_from_slice(extra);
    }

    /// `OpMemberDecorate target member decoration extra...`.
    pub(crate) fn member_decorate(
        &mut self,
        target: u32,
        member: u32,
        decoration: Decoration,
        extra: &[u32],
    ) {
        self.annotations.extend_from_slice(&[
            first_word(Op::MemberDecorate, 4 + extra.len()),
            target,
            member,
            decoration as u32,
        ]);
        self.annotations.extend_from_slice(extra);
    }

    /// Adds a finished function ([`FnBuilder::finish`]), after those added before it.
    pub(crate) fn add_function(&mut self, function: FinishedFn) {
        let FinishedFn { mut words, start } = function;
        if !self.functions.is_empty() {
            // Functions were finished while this one was built (a helper made for a site inside another
            // helper), in a list of their own: they go before it.
            let own = words.split_off(start);
            words.append(&mut self.functions);
            words.extend_from_slice(&own);
        }
        self.functions = words;
    }

    /// Writes what was built into the module and raises its id bound.
    pub(crate) fn finish(self, module: &mut Module) -> Result<(), NotInstrumented> {
        if self.next_id > MAX_BOUND {
            return Err(NotInstrumented::unsupported(
                "instrumenting would exceed SPIR-V's id limit",
            ));
        }
        append_words(&mut module.added_globals, self.globals);
        append_words(&mut module.added_annotations, self.annotations);
        if !self.functions.is_empty() {
            module.added_functions.push(self.functions);
        }
        module.header.bound = module.header.bound.max(self.next_id);
        Ok(())
    }
}

/// Appends `words` to `list`: moved there, not copied, when it is empty (as it is after parsing).
fn append_words(list: &mut Vec<u32>, words: Vec<u32>) {
    if list.is_empty() {
        *list = words;
    } else {
        list.extend_from_slice(&words);
    }
}

/// The id `next_id` holds, moving it on (the bound check is [`Builder::finish`]'s).
fn take_id(next_id: &mut u32) -> u32 {
    let id = *next_id;
    *next_id = next_id.saturating_add(1);
    id
}

/// Where new instructions with a result go: a function being built, or a list of instructions to be
/// placed in the app's code.
pub(crate) trait Emit {
    /// Appends an instruction with a result of type `ty`; returns the result id.
    fn emit(&mut self, b: &mut Builder, op: Op, ty: u32, operands: &[u32]) -> u32;
}

impl Emit for FnBuilder {
    fn emit(&mut self, b: &mut Builder, op: Op, ty: u32, operands: &[u32]) -> u32 {
        self.op(b, op, ty, operands)
    }
}

impl Emit for Vec<Instruction> {
    fn emit(&mut self, b: &mut Builder, op: Op, ty: u32, operands: &[u32]) -> u32 {
        let (id, inst) = with_result(b, op, ty, operands);
        self.push(inst);
        id
    }
}

/// An instruction with a fresh result id of type `ty`, and that id.
fn with_result(b: &mut Builder, op: Op, ty: u32, operands: &[u32]) -> (u32, Instruction) {
    let id = b.id();
    let operands = operands_of(operands);
    (id, Instruction::new(op, Some(ty), Some(id), operands))
}

/// A function under construction, kept as the words it is written as: `OpFunction`, its parameters, then
/// each block's label and instructions ([`FnBuilder::finish`] adds `OpFunctionEnd`). Helpers are most of an
/// instrumented module's new code: an [`Instruction`] each, split into blocks and written back one by one,
/// cost an allocation and several copies per instruction; words cost a few stores.
pub(crate) struct FnBuilder {
    /// The builder's list of added functions, taken from it; this function's words start at `start`.
    words: Vec<u32>,
    start: usize,
    /// Where the next [`FnBuilder::local`] goes: the end of the `OpVariable`s at the start of the first
    /// block.
    locals_end: usize,
}

/// A function [`FnBuilder::finish`] ended: its words are `words[start..]`, after the functions added before
/// it began.
pub(crate) struct FinishedFn {
    words: Vec<u32>,
    start: usize,
}

/// A new function's parameter ids: a few, kept inline (a list of their own cost an allocation per helper).
pub(crate) type Params = smallvec::SmallVec<[u32; 8]>;

/// The first word of an instruction of `op` and `word_count` words.
fn first_word(op: Op, word_count: usize) -> u32 {
    module::first_word(op as u16, word_count)
}

impl FnBuilder {
    /// Starts a function returning `ret` with parameters of `param_types`; returns the builder, the function
    /// id and the parameter ids. The first block is started.
    pub(crate) fn new(b: &mut Builder, ret: u32, param_types: &[u32]) -> (FnBuilder, u32, Params) {
        let fn_type = b.type_function(ret, param_types);
        let id = b.id();
        let mut words = std::mem::take(&mut b.functions);
        if words.capacity() == 0 {
            // Room for the few helpers most modules get: from a few dozen to a few hundred instructions
            // each, of about four words.
            words.reserve(4096);
        }
        let start = words.len();
        words.extend_from_slice(&[
            first_word(Op::Function, 5),
            ret,
            id,
            FunctionControl::NONE.bits(),
            fn_type,
        ]);
        let mut ids = Params::new();
        for &t in param_types {
            let p = b.id();
            words.extend_from_slice(&[first_word(Op::FunctionParameter, 3), t, p]);
            ids.push(p);
        }
        let mut f = FnBuilder {
            words,
            start,
            locals_end: 0,
        };
        let entry = b.id();
        f.block(entry);
        f.locals_end = f.words.len();
        (f, id, ids)
    }

    /// A new `Function` variable of `pointer_type` (a pointer in the `Function` storage class), declared at
    /// the start of the first block as SPIR-V requires.
    pub(crate) fn local(&mut self, b: &mut Builder, pointer_type: u32) -> u32 {
        let id = b.id();
        let var = [
            first_word(Op::Variable, 4),
            pointer_type,
            id,
            StorageClass::Function as u32,
        ];
        // Room at the end, the rest of the function moved up into it, the variable written in the gap: a
        // copy within the list (`Vec::splice` costs several times more for these few words).
        let (at, end) = (self.locals_end, self.words.len());
        self.words.extend_from_slice(&var);
        self.words.copy_within(at..end, at + var.len());
        self.words[at..at + var.len()].copy_from_slice(&var);
        self.locals_end += var.len();
        id
    }

    /// Starts a new block with this label id.
    pub(crate) fn block(&mut self, label: u32) {
        self.words
            .extend_from_slice(&[first_word(Op::Label, 2), label]);
    }

    /// Appends an instruction as it is (one a [`crate::base::Base::site`] call returned, say).
    pub(crate) fn push(&mut self, inst: Instruction) {
        inst.write(&mut self.words);
    }

    /// An instruction with a result; returns the result id.
    #[inline]
    pub(crate) fn op(&mut self, b: &mut Builder, op: Op, ty: u32, operands: &[u32]) -> u32 {
        // A variable pushed here would not be seen by `local`, which keeps them together.
        debug_assert!(op != Op::Variable, "function variables go through `local`");
        let id = b.id();
        let first = first_word(op, 3 + operands.len());
        // The whole instruction as one fixed-size piece for up to four operands (most): one capacity check
        // and a few stores (`extend_from_slice` of a list of any length is a `memcpy` call). Helpers are
        // most of what the engine writes.
        match *operands {
            [] => self.words.extend_from_slice(&[first, ty, id]),
            [x] => self.words.extend_from_slice(&[first, ty, id, x]),
            [x, y] => self.words.extend_from_slice(&[first, ty, id, x, y]),
            [x, y, z] => self.words.extend_from_slice(&[first, ty, id, x, y, z]),
            [x, y, z, w] => self.words.extend_from_slice(&[first, ty, id, x, y, z, w]),
            _ => {
                self.words.reserve(3 + operands.len());
                self.words.extend_from_slice(&[first, ty, id]);
                self.words.extend_from_slice(operands);
            }
        }
        id
    }

    /// `index == position ? word : otherwise`, of type `ty` (`OpIEqual` to `bool_type`, then `OpSelect`),
    /// appended as one piece: chains of these pick words by an index known only when the shader runs
    /// (`helpers::pick`), dozens per module at the NaN levels.
    #[inline]
    pub(crate) fn select_if_equal(
        &mut self,
        b: &mut Builder,
        [bool_type, ty]: [u32; 2],
        [index, position]: [u32; 2],
        [word, otherwise]: [u32; 2],
    ) -> u32 {
        let (equal, selected) = (b.id(), b.id());
        self.words.extend_from_slice(&[
            first_word(Op::IEqual, 5),
            bool_type,
            equal,
            index,
            position,
            first_word(Op::Select, 6),
            ty,
            selected,
            equal,
            word,
            otherwise,
        ]);
        selected
    }

    /// An instruction without a result.
    #[inline]
    pub(crate) fn op_void(&mut self, op: Op, operands: &[u32]) {
        let first = first_word(op, 1 + operands.len());
        // As in `op`: one fixed-size piece for up to four operands.
        match *operands {
            [] => self.words.push(first),
            [x] => self.words.extend_from_slice(&[first, x]),
            [x, y] => self.words.extend_from_slice(&[first, x, y]),
            [x, y, z] => self.words.extend_from_slice(&[first, x, y, z]),
            [x, y, z, w] => self.words.extend_from_slice(&[first, x, y, z, w]),
            _ => {
                self.words.reserve(1 + operands.len());
                self.words.push(first);
                self.words.extend_from_slice(operands);
            }
        }
    }

    /// The finished function, for [`Builder::add_function`].
    pub(crate) fn finish(mut self) -> FinishedFn {
        self.words.push(first_word(Op::FunctionEnd, 1));
        FinishedFn {
            words: self.words,
            start: self.start,
        }
    }
}
