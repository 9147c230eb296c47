//! Building new module content: fresh ids, types and constants found or added once, decorations, and
//! functions made block by block. Nothing is written into the module until [`Builder::finish`].

use crate::analysis::TypeTable;
use crate::error::NotInstrumented;
use crate::grammar::op;
use crate::module::{Block, Function, Instruction, Module, Operands, MAX_BOUND};
use crate::util::FastMap;

/// Storage classes the engine uses.
pub(crate) mod storage {
    pub const INPUT: u32 = 1;
    pub const UNIFORM: u32 = 2;
    pub const OUTPUT: u32 = 3;
    pub const PRIVATE: u32 = 6;
    pub const STORAGE_BUFFER: u32 = 12;
    pub const PHYSICAL_STORAGE_BUFFER: u32 = 5349;
}

/// New ids, types, constants, globals, decorations and functions for one module.
pub(crate) struct Builder {
    next_id: u32,
    pub types: TypeTable,
    globals: Vec<Instruction>,
    annotations: Vec<Instruction>,
    functions: Vec<Function>,
    /// `type_uint` and `const_u32`, asked for many times at every site: remembered here rather than
    /// looked up in the type table each time.
    uint: Option<u32>,
    u32_constants: FastMap<u32, u32>,
}

impl Builder {
    /// A builder for `module`: new ids start at its bound.
    pub(crate) fn new(module: &Module) -> Builder {
        Builder {
            next_id: module.header.bound,
            types: TypeTable::new(module),
            globals: Vec::new(),
            annotations: Vec::new(),
            functions: Vec::new(),
            uint: None,
            u32_constants: FastMap::default(),
        }
    }

    /// A fresh id.
    pub(crate) fn id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.saturating_add(1);
        id
    }

    /// Adds a global instruction with a fresh result id.
    fn global(&mut self, opcode: u16, result_type: Option<u32>, operands: &[u32]) -> u32 {
        let id = self.id();
        let operands = Operands::from_slice(operands);
        let inst = Instruction::new(opcode, result_type, Some(id), operands);
        self.types.observe(&inst);
        self.globals.push(inst);
        id
    }

    /// A non-aggregate type, found or added.
    fn keyed_type(&mut self, opcode: u16, operands: &[u32]) -> u32 {
        match self.types.find(opcode, operands) {
            Some(id) => id,
            None => self.global(opcode, None, operands),
        }
    }

    pub(crate) fn type_void(&mut self) -> u32 {
        self.keyed_type(op::TYPE_VOID, &[])
    }

    pub(crate) fn type_bool(&mut self) -> u32 {
        self.keyed_type(op::TYPE_BOOL, &[])
    }

    pub(crate) fn type_int(&mut self, width: u32, signed: bool) -> u32 {
        self.keyed_type(op::TYPE_INT, &[width, u32::from(signed)])
    }

    pub(crate) fn type_uint(&mut self) -> u32 {
        if let Some(id) = self.uint {
            return id;
        }
        let id = self.type_int(32, false);
        self.uint = Some(id);
        id
    }

    pub(crate) fn type_float(&mut self, width: u32) -> u32 {
        self.keyed_type(op::TYPE_FLOAT, &[width])
    }

    pub(crate) fn type_vector(&mut self, component: u32, count: u32) -> u32 {
        self.keyed_type(op::TYPE_VECTOR, &[component, count])
    }

    pub(crate) fn type_pointer(&mut self, storage: u32, pointee: u32) -> u32 {
        self.keyed_type(op::TYPE_POINTER, &[storage, pointee])
    }

    pub(crate) fn type_function(&mut self, ret: u32, params: &[u32]) -> u32 {
        let mut operands = vec![ret];
        operands.extend_from_slice(params);
        self.keyed_type(op::TYPE_FUNCTION, &operands)
    }

    /// A new runtime array type (aggregates are never shared: their decorations are the engine's own).
    pub(crate) fn new_runtime_array(&mut self, element: u32) -> u32 {
        self.global(op::TYPE_RUNTIME_ARRAY, None, &[element])
    }

    /// A new struct type.
    pub(crate) fn new_struct(&mut self, members: &[u32]) -> u32 {
        self.global(op::TYPE_STRUCT, None, members)
    }

    fn constant(&mut self, opcode: u16, ty: u32, operands: &[u32]) -> u32 {
        match self.types.find_constant(opcode, ty, operands) {
            Some(id) => id,
            None => self.global(opcode, Some(ty), operands),
        }
    }

    /// A 32-bit unsigned integer constant.
    pub(crate) fn const_u32(&mut self, value: u32) -> u32 {
        if let Some(&id) = self.u32_constants.get(&value) {
            return id;
        }
        let uint = self.type_uint();
        let id = self.constant(op::CONSTANT, uint, &[value]);
        self.u32_constants.insert(value, id);
        id
    }

    /// A composite constant.
    pub(crate) fn const_composite(&mut self, ty: u32, parts: &[u32]) -> u32 {
        self.constant(op::CONSTANT_COMPOSITE, ty, parts)
    }

    /// A null constant.
    pub(crate) fn const_null(&mut self, ty: u32) -> u32 {
        self.constant(op::CONSTANT_NULL, ty, &[])
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
        storage: u32,
        initializer: Option<u32>,
    ) -> u32 {
        let mut operands = vec![storage];
        operands.extend(initializer);
        self.global(op::VARIABLE, Some(pointer_type), &operands)
    }

    /// `OpDecorate target decoration extra...`.
    pub(crate) fn decorate(&mut self, target: u32, decoration: u32, extra: &[u32]) {
        let mut operands = vec![target, decoration];
        operands.extend_from_slice(extra);
        self.annotations
            .push(Instruction::new(op::DECORATE, None, None, operands));
    }

    /// `OpMemberDecorate target member decoration extra...`.
    pub(crate) fn member_decorate(
        &mut self,
        target: u32,
        member: u32,
        decoration: u32,
        extra: &[u32],
    ) {
        let mut operands = vec![target, member, decoration];
        operands.extend_from_slice(extra);
        self.annotations
            .push(Instruction::new(op::MEMBER_DECORATE, None, None, operands));
    }

    /// Adds a finished function.
    pub(crate) fn add_function(&mut self, function: Function) {
        self.functions.push(function);
    }

    /// Writes what was built into the module and raises its id bound.
    pub(crate) fn finish(self, module: &mut Module) -> Result<(), NotInstrumented> {
        if self.next_id > MAX_BOUND {
            return Err(NotInstrumented::unsupported(
                "instrumenting would exceed SPIR-V's id limit",
            ));
        }
        module.globals.extend(self.globals);
        module.annotations.extend(self.annotations);
        module.functions.extend(self.functions);
        module.header.bound = module.header.bound.max(self.next_id);
        Ok(())
    }
}

/// Where new instructions with a result go: a function being built, or a list of instructions to be
/// placed in the app's code.
pub(crate) trait Emit {
    /// Appends an instruction with a result of type `ty`; returns the result id.
    fn emit(&mut self, b: &mut Builder, opcode: u16, ty: u32, operands: &[u32]) -> u32;
}

impl Emit for FnBuilder {
    fn emit(&mut self, b: &mut Builder, opcode: u16, ty: u32, operands: &[u32]) -> u32 {
        self.op(b, opcode, ty, operands)
    }
}

impl Emit for Vec<Instruction> {
    fn emit(&mut self, b: &mut Builder, opcode: u16, ty: u32, operands: &[u32]) -> u32 {
        let (id, inst) = with_result(b, opcode, ty, operands);
        self.push(inst);
        id
    }
}

/// An instruction with a fresh result id of type `ty`, and that id.
fn with_result(b: &mut Builder, opcode: u16, ty: u32, operands: &[u32]) -> (u32, Instruction) {
    let id = b.id();
    let operands = Operands::from_slice(operands);
    (id, Instruction::new(opcode, Some(ty), Some(id), operands))
}

/// A function under construction.
pub(crate) struct FnBuilder {
    def: Instruction,
    params: Vec<Instruction>,
    blocks: Vec<Block>,
}

impl FnBuilder {
    /// Starts a function returning `ret` with parameters of `param_types`; returns the builder, the function
    /// id and the parameter ids. The first block is started.
    pub(crate) fn new(
        b: &mut Builder,
        ret: u32,
        param_types: &[u32],
    ) -> (FnBuilder, u32, Vec<u32>) {
        let fn_type = b.type_function(ret, param_types);
        let id = b.id();
        let def = Instruction::new(
            op::FUNCTION,
            Some(ret),
            Some(id),
            smallvec::smallvec![0, fn_type],
        );
        let mut params = Vec::new();
        let mut ids = Vec::new();
        for &t in param_types {
            let p = b.id();
            params.push(Instruction::new(
                op::FUNCTION_PARAMETER,
                Some(t),
                Some(p),
                smallvec::smallvec![],
            ));
            ids.push(p);
        }
        let mut f = FnBuilder {
            def,
            params,
            blocks: Vec::new(),
        };
        let entry = b.id();
        f.block(entry);
        (f, id, ids)
    }

    /// Starts a new block with this label id.
    pub(crate) fn block(&mut self, label: u32) {
        self.blocks.push(Block {
            label: Instruction::new(op::LABEL, None, Some(label), smallvec::smallvec![]),
            instructions: Vec::new(),
        });
    }

    fn push(&mut self, inst: Instruction) {
        if let Some(block) = self.blocks.last_mut() {
            block.instructions.push(inst);
        }
    }

    /// An instruction with a result; returns the result id.
    pub(crate) fn op(&mut self, b: &mut Builder, opcode: u16, ty: u32, operands: &[u32]) -> u32 {
        let (id, inst) = with_result(b, opcode, ty, operands);
        self.push(inst);
        id
    }

    /// An instruction without a result.
    pub(crate) fn op_void(&mut self, opcode: u16, operands: &[u32]) {
        self.push(Instruction::new(
            opcode,
            None,
            None,
            Operands::from_slice(operands),
        ));
    }

    /// The finished function.
    pub(crate) fn finish(self) -> Function {
        Function {
            prefix: Vec::new(),
            def: self.def,
            params: self.params,
            blocks: self.blocks,
            end: Instruction::new(op::FUNCTION_END, None, None, smallvec::smallvec![]),
        }
    }
}
