//! The helper functions the base builds, and the module-level changes that give shaders the error buffer.

use super::builder::{storage, Builder, FnBuilder};
use super::values::{self, Shape};
use super::{Base, HelperKind};
use crate::analysis::Type;
use crate::error::NotInstrumented;
use crate::grammar::op;
use crate::info::Stage;
use crate::module::{decode_string, encode_string, Instruction, Module};
use crate::record::{header, CRASH_ADDRESS, RECORD_HEADER_WORDS};

/// `PhysicalStorageBuffer64` addressing model.
pub(crate) const ADDRESSING_PSB64: u32 = 5348;
/// The `PhysicalStorageBufferAddresses` capability.
const CAP_PSB: u32 = 5347;
/// The extension that brings it below SPIR-V 1.5.
const EXT_PSB: &str = "SPV_KHR_physical_storage_buffer";
/// Memory operand `Aligned`.
const ALIGNED: u32 = 0x2;

/// Decorations.
const DECORATION_BLOCK: u32 = 2;
const DECORATION_ARRAY_STRIDE: u32 = 6;
const DECORATION_BUILTIN: u32 = 11;
const DECORATION_OFFSET: u32 = 35;

/// Builtins the prologues read.
const BUILTIN_PRIMITIVE_ID: u32 = 7;
const BUILTIN_INVOCATION_ID: u32 = 8;
const BUILTIN_FRAG_COORD: u32 = 15;
const BUILTIN_GLOBAL_INVOCATION_ID: u32 = 28;
const BUILTIN_VERTEX_INDEX: u32 = 42;
const BUILTIN_INSTANCE_INDEX: u32 = 43;
const BUILTIN_LAUNCH_ID: u32 = 5319;

/// What generated code needs to reach the error buffer.
#[derive(Clone, Copy)]
pub(crate) struct BufferAccess {
    /// The buffer address, a `uvec2` constant.
    address: u32,
    /// Pointer to the buffer struct `{ uint words[]; }`.
    struct_ptr: u32,
    /// Pointer to one of its words.
    uint_ptr: u32,
    /// The scope of the atomics.
    scope: u32,
    /// Their memory semantics (relaxed).
    semantics: u32,
}

/// The two `Private` variables the prologue fills and the writer reads.
#[derive(Clone, Copy)]
pub(crate) struct PrivateVars {
    /// `uvec4`: the invocation words.
    invocation: u32,
    /// `uint`: the stage code.
    stage: u32,
}

impl Base<'_> {
    fn buffer(&mut self) -> BufferAccess {
        if let Some(a) = self.buffer {
            return a;
        }
        {
            let b = &mut self.b;
            let uint = b.type_uint();
            let array = b.new_runtime_array(uint);
            b.decorate(array, DECORATION_ARRAY_STRIDE, &[4]);
            let st = b.new_struct(&[array]);
            b.decorate(st, DECORATION_BLOCK, &[]);
            b.member_decorate(st, 0, DECORATION_OFFSET, &[0]);
            let struct_ptr = b.type_pointer(storage::PHYSICAL_STORAGE_BUFFER, st);
            let uint_ptr = b.type_pointer(storage::PHYSICAL_STORAGE_BUFFER, uint);
            let address = b.const_address(self.options.error_buffer_address);
            // Device scope; queue-family scope under the Vulkan memory model, where device scope needs
            // an extra capability.
            let scope = b.const_u32(if self.vulkan_memory_model { 5 } else { 1 });
            let semantics = b.const_u32(0);
            let a = BufferAccess {
                address,
                struct_ptr,
                uint_ptr,
                scope,
                semantics,
            };
            self.buffer = Some(a);
            a
        }
    }

    fn private_vars(&mut self) -> PrivateVars {
        if let Some(p) = self.private {
            return p;
        }
        let b = &mut self.b;
        let uint = b.type_uint();
        let v4 = b.type_vector(uint, 4);
        let p_v4 = b.type_pointer(storage::PRIVATE, v4);
        let p_uint = b.type_pointer(storage::PRIVATE, uint);
        let zero4 = b.const_null(v4);
        let unknown_stage = b.const_u32(0xFF);
        let invocation = b.variable(p_v4, storage::PRIVATE, Some(zero4));
        let stage = b.variable(p_uint, storage::PRIVATE, Some(unknown_stage));
        let p = PrivateVars { invocation, stage };
        self.private = Some(p);
        p
    }

    /// A pointer to `words[index]` of the buffer.
    fn word_ptr(&mut self, fb: &mut FnBuilder, buf: u32, index: u32) -> u32 {
        let uint_ptr = self.buffer().uint_ptr;
        let zero = self.b.const_u32(0);
        fb.op(&mut self.b, op::ACCESS_CHAIN, uint_ptr, &[buf, zero, index])
    }

    fn load_header(&mut self, fb: &mut FnBuilder, buf: u32, word: usize) -> u32 {
        let index = self.b.const_u32(word as u32);
        let p = self.word_ptr(fb, buf, index);
        let uint = self.b.type_uint();
        fb.op(&mut self.b, op::LOAD, uint, &[p, ALIGNED, 4])
    }

    fn atomic_add(&mut self, fb: &mut FnBuilder, pointer: u32, value: u32) -> u32 {
        let BufferAccess {
            scope, semantics, ..
        } = self.buffer();
        let uint = self.b.type_uint();
        fb.op(
            &mut self.b,
            op::ATOMIC_I_ADD,
            uint,
            &[pointer, scope, semantics, value],
        )
    }

    /// The record writer, one per module: `uint bb_begin(uint kind_word, uint site, uint cap, uint size)`.
    /// It counts the site; when the count is under the cap it allocates `size` words and, when they fit,
    /// writes the record header there and returns the word index where the payload goes. It returns 0
    /// (never a payload index: the buffer header is there) when nothing is to be written, after counting a
    /// drop if the buffer was full (see [`crate::record`]).
    fn begin_writer(&mut self) -> u32 {
        if let Some(f) = self.begin {
            return f;
        }
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let v4 = self.b.type_vector(uint, 4);
        let private = self.private_vars();
        let (mut fb, id, p) = FnBuilder::new(&mut self.b, uint, &[uint, uint, uint, uint]);
        let (kind_word, site, cap, size) = (p[0], p[1], p[2], p[3]);
        let BufferAccess {
            address,
            struct_ptr,
            ..
        } = self.buffer();
        let buf = fb.op(&mut self.b, op::BITCAST, struct_ptr, &[address]);
        let zero = self.b.const_u32(0);
        let one = self.b.const_u32(1);
        let labels: Vec<u32> = (0..8).map(|_| self.b.id()).collect();
        let [l_count, l_alloc, l_write, l_drop, m_alloc, m_count, m_site, l_return] = [
            labels[0], labels[1], labels[2], labels[3], labels[4], labels[5], labels[6], labels[7],
        ];

        // if (site < counter_count)
        let count = self.load_header(&mut fb, buf, header::COUNTER_COUNT);
        let in_range = fb.op(&mut self.b, op::U_LESS_THAN, bool_t, &[site, count]);
        fb.op_void(op::SELECTION_MERGE, &[m_site, 0]);
        fb.op_void(op::BRANCH_CONDITIONAL, &[in_range, l_count, m_site]);

        // prev = atomicAdd(counters[site], 1); if (prev < cap)
        fb.block(l_count);
        let counters = self.load_header(&mut fb, buf, header::COUNTERS_OFFSET);
        let index = fb.op(&mut self.b, op::I_ADD, uint, &[counters, site]);
        let counter = self.word_ptr(&mut fb, buf, index);
        let prev = self.atomic_add(&mut fb, counter, one);
        let below = fb.op(&mut self.b, op::U_LESS_THAN, bool_t, &[prev, cap]);
        fb.op_void(op::SELECTION_MERGE, &[m_count, 0]);
        fb.op_void(op::BRANCH_CONDITIONAL, &[below, l_alloc, m_count]);

        // off = atomicAdd(cursor, size); if (off + size <= capacity) write else drop
        fb.block(l_alloc);
        let cursor_index = self.b.const_u32(header::CURSOR as u32);
        let cursor = self.word_ptr(&mut fb, buf, cursor_index);
        let off = self.atomic_add(&mut fb, cursor, size);
        let capacity = self.load_header(&mut fb, buf, header::RECORDS_CAPACITY);
        let end = fb.op(&mut self.b, op::I_ADD, uint, &[off, size]);
        let fits = fb.op(&mut self.b, op::U_LESS_THAN_EQUAL, bool_t, &[end, capacity]);
        let no_wrap = fb.op(&mut self.b, op::U_GREATER_THAN_EQUAL, bool_t, &[end, off]);
        let ok = fb.op(&mut self.b, op::LOGICAL_AND, bool_t, &[fits, no_wrap]);
        fb.op_void(op::SELECTION_MERGE, &[m_alloc, 0]);
        fb.op_void(op::BRANCH_CONDITIONAL, &[ok, l_write, l_drop]);

        fb.block(l_write);
        let records = self.load_header(&mut fb, buf, header::RECORDS_OFFSET);
        let base = fb.op(&mut self.b, op::I_ADD, uint, &[records, off]);
        let stage = fb.op(&mut self.b, op::LOAD, uint, &[private.stage]);
        let shift = self.b.const_u32(24);
        let stage_bits = fb.op(&mut self.b, op::SHIFT_LEFT_LOGICAL, uint, &[stage, shift]);
        let sized = fb.op(&mut self.b, op::BITWISE_OR, uint, &[kind_word, size]);
        let first = fb.op(&mut self.b, op::BITWISE_OR, uint, &[sized, stage_bits]);
        let invocation = fb.op(&mut self.b, op::LOAD, v4, &[private.invocation]);
        let mut words = vec![first, site];
        for i in 0..4 {
            words.push(fb.op(&mut self.b, op::COMPOSITE_EXTRACT, uint, &[invocation, i]));
        }
        words.push(zero);
        self.store_words(&mut fb, buf, base, &words);
        let header_words = self.b.const_u32(RECORD_HEADER_WORDS as u32);
        let payload = fb.op(&mut self.b, op::I_ADD, uint, &[base, header_words]);
        fb.op_void(op::RETURN_VALUE, &[payload]);

        fb.block(l_drop);
        let dropped_index = self.b.const_u32(header::DROPPED as u32);
        let dropped = self.word_ptr(&mut fb, buf, dropped_index);
        self.atomic_add(&mut fb, dropped, one);
        fb.op_void(op::BRANCH, &[m_alloc]);

        fb.block(m_alloc);
        fb.op_void(op::BRANCH, &[m_count]);
        fb.block(m_count);
        fb.op_void(op::BRANCH, &[m_site]);
        fb.block(m_site);
        fb.op_void(op::BRANCH, &[l_return]);
        fb.block(l_return);
        fb.op_void(op::RETURN_VALUE, &[zero]);
        self.b.add_function(fb.finish());
        self.begin = Some(id);
        id
    }

    /// Stores `words` at `buf.words[base + k]`.
    fn store_words(&mut self, fb: &mut FnBuilder, buf: u32, base: u32, words: &[u32]) {
        let uint = self.b.type_uint();
        for (k, &w) in words.iter().enumerate() {
            let index = if k == 0 {
                base
            } else {
                let k = self.b.const_u32(k as u32);
                fb.op(&mut self.b, op::I_ADD, uint, &[base, k])
            };
            let ptr = self.word_ptr(fb, buf, index);
            fb.op_void(op::STORE, &[ptr, w, ALIGNED, 4]);
        }
    }

    /// The helper for a site with values of `types` (`words` payload words in all):
    /// `void bb_values(uint kind_word, uint site, uint cap, T0 v0, ...)`. It turns the values into payload
    /// words, asks `bb_begin` for a record and stores them; a [`HelperKind::NanCheck`] helper first tests the
    /// values and does nothing unless they show a new NaN or Inf.
    pub(super) fn value_helper(
        &mut self,
        kind: HelperKind,
        types: &[u32],
        words: usize,
    ) -> Result<u32, NotInstrumented> {
        let key = (kind, types.to_vec());
        if let Some(&f) = self.helpers.get(&key) {
            return Ok(f);
        }
        let begin = self.begin_writer();
        let uint = self.b.type_uint();
        let void = self.b.type_void();
        let bool_t = self.b.type_bool();
        let mut params = vec![uint, uint, uint];
        params.extend_from_slice(types);
        let (mut fb, id, p) = FnBuilder::new(&mut self.b, void, &params);
        let mut shapes: Vec<Shape> = Vec::new();
        for &t in types {
            shapes.push(values::shape(&self.b.types, t).ok_or_else(|| {
                NotInstrumented::unsupported("value helper for an unrecordable type")
            })?);
        }
        let mut comps: Vec<Vec<u32>> = Vec::new();
        for (i, shape) in shapes.iter().enumerate() {
            comps.push(values::components(&mut fb, &mut self.b, p[3 + i], shape));
        }
        let end = self.b.id();
        if let HelperKind::NanCheck { inputs } = kind {
            // The output first: almost always finite, and then the helper returns after a few integer
            // ops. Only a non-finite output pays for the test of the inputs (a NaN that came in is not new).
            let non_finite_any =
                |fb: &mut FnBuilder, b: &mut Builder, range: std::ops::Range<usize>| {
                    let mut any: Option<u32> = None;
                    for i in range {
                        if !shapes[i].is_float() {
                            continue;
                        }
                        for &c in &comps[i] {
                            let nf = values::non_finite(fb, b, c, &shapes[i]);
                            any = Some(match any {
                                None => nf,
                                Some(prev) => fb.op(b, op::LOGICAL_OR, bool_t, &[prev, nf]),
                            });
                        }
                    }
                    any
                };
            // Quick test of the output first (see `values::maybe_non_finite`).
            let mut quick: Option<u32> = None;
            for i in (inputs..shapes.len()).filter(|&i| shapes[i].is_float()) {
                let nf = values::maybe_non_finite(&mut fb, &mut self.b, &comps[i], &shapes[i]);
                quick = Some(match quick {
                    None => nf,
                    Some(prev) => fb.op(&mut self.b, op::LOGICAL_OR, bool_t, &[prev, nf]),
                });
            }
            let Some(maybe_bad) = quick else {
                return Err(NotInstrumented::unsupported(
                    "NaN check without a float value to check",
                ));
            };
            let exact = self.b.id();
            let finite = self.b.id();
            fb.op_void(op::SELECTION_MERGE, &[finite, 0]);
            fb.op_void(op::BRANCH_CONDITIONAL, &[maybe_bad, exact, finite]);
            fb.block(finite);
            fb.op_void(op::RETURN, &[]);
            fb.block(exact);
            // Exact: some output component is not finite, and every input is (a NaN that came in is not new).
            let bad_output = non_finite_any(&mut fb, &mut self.b, inputs..shapes.len())
                .expect("a float output, tested above");
            let fire = match non_finite_any(&mut fb, &mut self.b, 0..inputs) {
                None => bad_output,
                Some(bad_input) => {
                    let finite_in = fb.op(&mut self.b, op::LOGICAL_NOT, bool_t, &[bad_input]);
                    fb.op(
                        &mut self.b,
                        op::LOGICAL_AND,
                        bool_t,
                        &[finite_in, bad_output],
                    )
                }
            };
            let record = self.b.id();
            fb.op_void(op::SELECTION_MERGE, &[end, 0]);
            fb.op_void(op::BRANCH_CONDITIONAL, &[fire, record, end]);
            fb.block(record);
        }
        let size = self.b.const_u32((RECORD_HEADER_WORDS + words) as u32);
        let at = fb.op(
            &mut self.b,
            op::FUNCTION_CALL,
            uint,
            &[begin, p[0], p[1], p[2], size],
        );
        if words > 0 {
            let zero = self.b.const_u32(0);
            let writing = fb.op(&mut self.b, op::I_NOT_EQUAL, bool_t, &[at, zero]);
            let store = self.b.id();
            let stored = self.b.id();
            fb.op_void(op::SELECTION_MERGE, &[stored, 0]);
            fb.op_void(op::BRANCH_CONDITIONAL, &[writing, store, stored]);
            fb.block(store);
            let mut payload = Vec::with_capacity(words);
            for (i, shape) in shapes.iter().enumerate() {
                for &c in &comps[i] {
                    payload.extend(values::component_words(&mut fb, &mut self.b, c, shape));
                }
            }
            let BufferAccess {
                address,
                struct_ptr,
                ..
            } = self.buffer();
            let buf = fb.op(&mut self.b, op::BITCAST, struct_ptr, &[address]);
            self.store_words(&mut fb, buf, at, &payload);
            fb.op_void(op::BRANCH, &[stored]);
            fb.block(stored);
        }
        fb.op_void(op::BRANCH, &[end]);
        fb.block(end);
        fb.op_void(op::RETURN, &[]);
        self.b.add_function(fb.finish());
        self.helpers.insert(key, id);
        Ok(id)
    }

    /// `void bb_crash()`: a store through [`CRASH_ADDRESS`].
    pub(super) fn crash_helper(&mut self) -> u32 {
        if let Some(f) = self.crash {
            return f;
        }
        let void = self.b.type_void();
        let uint = self.b.type_uint();
        let ptr = self.b.type_pointer(storage::PHYSICAL_STORAGE_BUFFER, uint);
        let address = self.b.const_address(CRASH_ADDRESS);
        let (mut fb, id, _) = FnBuilder::new(&mut self.b, void, &[]);
        let p = fb.op(&mut self.b, op::BITCAST, ptr, &[address]);
        let value = self.b.const_u32(0xdead);
        fb.op_void(op::STORE, &[p, value, ALIGNED, 4]);
        fb.op_void(op::RETURN, &[]);
        self.b.add_function(fb.finish());
        self.crash = Some(id);
        id
    }

    /// The Input variable of a builtin: the module's own, or a new one of `new_type`. Returns the variable
    /// and its pointee type.
    fn builtin_var(&mut self, builtin: u32, new_type: u32) -> Result<(u32, u32), NotInstrumented> {
        for &(b, var) in &self.an.builtin_vars {
            if b != builtin {
                continue;
            }
            let Some(ptr) = self.an.type_of(var) else {
                continue;
            };
            if let Some(Type::Pointer {
                storage: storage::INPUT,
                pointee,
            }) = self.b.types.get(ptr)
            {
                return Ok((var, *pointee));
            }
        }
        let ptr = self.b.type_pointer(storage::INPUT, new_type);
        let var = self.b.variable(ptr, storage::INPUT, None);
        self.b.decorate(var, DECORATION_BUILTIN, &[builtin]);
        self.an.builtin_vars.push((builtin, var));
        Ok((var, new_type))
    }

    /// Loads a builtin and returns its first `count` components as `uint`s.
    fn read_builtin(
        &mut self,
        fb: &mut FnBuilder,
        builtin: u32,
        new_type: u32,
        count: usize,
        used: &mut Vec<u32>,
    ) -> Result<Vec<u32>, NotInstrumented> {
        let (var, ty) = self.builtin_var(builtin, new_type)?;
        used.push(var);
        let shape = values::shape(&self.b.types, ty)
            .filter(|s| s.width == 32 && s.rows == 0 && s.components() as usize >= count)
            .ok_or_else(|| {
                NotInstrumented::unsupported(format!(
                    "builtin {builtin} is declared with an unexpected type"
                ))
            })?;
        let value = fb.op(&mut self.b, op::LOAD, ty, &[var]);
        let comps = values::components(fb, &mut self.b, value, &shape);
        let uint = self.b.type_uint();
        let mut out = Vec::new();
        for &c in comps.iter().take(count) {
            out.push(if shape.is_float() {
                fb.op(&mut self.b, op::CONVERT_F_TO_U, uint, &[c])
            } else if shape.signed {
                fb.op(&mut self.b, op::BITCAST, uint, &[c])
            } else {
                c
            });
        }
        Ok(out)
    }

    /// `void bb_prologue()` for a stage: stores the invocation words and the stage code into the Private
    /// variables. Returns the function and the builtin variables it reads.
    fn prologue(&mut self, stage: Stage) -> Result<(u32, Vec<u32>), NotInstrumented> {
        let void = self.b.type_void();
        let uint = self.b.type_uint();
        let v3 = self.b.type_vector(uint, 3);
        let v4 = self.b.type_vector(uint, 4);
        let f32t = self.b.type_float(32);
        let vec4 = self.b.type_vector(f32t, 4);
        let private = self.private_vars();
        let (mut fb, id, _) = FnBuilder::new(&mut self.b, void, &[]);
        let mut used = Vec::new();
        let zero = self.b.const_u32(0);
        let words: Vec<u32> = match stage {
            Stage::Compute | Stage::Task | Stage::Mesh => {
                self.read_builtin(&mut fb, BUILTIN_GLOBAL_INVOCATION_ID, v3, 3, &mut used)?
            }
            Stage::Fragment => {
                self.read_builtin(&mut fb, BUILTIN_FRAG_COORD, vec4, 2, &mut used)?
            }
            Stage::Vertex => {
                let mut w = self.read_builtin(&mut fb, BUILTIN_VERTEX_INDEX, uint, 1, &mut used)?;
                w.extend(self.read_builtin(&mut fb, BUILTIN_INSTANCE_INDEX, uint, 1, &mut used)?);
                w
            }
            Stage::TessellationControl | Stage::Geometry => {
                let mut w =
                    self.read_builtin(&mut fb, BUILTIN_INVOCATION_ID, uint, 1, &mut used)?;
                w.extend(self.read_builtin(&mut fb, BUILTIN_PRIMITIVE_ID, uint, 1, &mut used)?);
                w
            }
            Stage::TessellationEvaluation => {
                let mut w = vec![zero];
                w.extend(self.read_builtin(&mut fb, BUILTIN_PRIMITIVE_ID, uint, 1, &mut used)?);
                w
            }
            _ => self.read_builtin(&mut fb, BUILTIN_LAUNCH_ID, v3, 3, &mut used)?,
        };
        let mut parts = words;
        parts.resize(4, zero);
        let inv = fb.op(&mut self.b, 80 /* OpCompositeConstruct */, v4, &parts);
        fb.op_void(op::STORE, &[private.invocation, inv]);
        let code = self.b.const_u32(u32::from(stage.code()));
        fb.op_void(op::STORE, &[private.stage, code]);
        fb.op_void(op::RETURN, &[]);
        self.b.add_function(fb.finish());
        Ok((id, used))
    }

    /// Calls a prologue at the start of every entry point function and lists the variables it uses in the
    /// entry points' interfaces.
    pub(super) fn add_prologues(&mut self, module: &mut Module) -> Result<(), NotInstrumented> {
        let private = self.private_vars();
        let all_globals = self.version >= (1, 4);
        let entry_points = self.an.entry_points.clone();
        let mut done: Vec<(u32, Stage)> = Vec::new();
        let mut prologues: Vec<(Stage, u32, Vec<u32>)> = Vec::new();
        for e in &entry_points {
            if let Some((_, s)) = done.iter().find(|(f, _)| *f == e.function) {
                if *s != e.stage {
                    return Err(NotInstrumented::unsupported(format!(
                        "function %{} is the entry point of both a {s} and a {} shader",
                        e.function, e.stage
                    )));
                }
            }
            let (prologue, used) = match prologues.iter().find(|(s, _, _)| *s == e.stage) {
                Some((_, f, used)) => (*f, used.clone()),
                None => {
                    let (f, used) = self.prologue(e.stage)?;
                    prologues.push((e.stage, f, used.clone()));
                    (f, used)
                }
            };
            let mut interface = used;
            if all_globals {
                interface.extend([private.invocation, private.stage]);
            }
            if let Some(inst) = module.entry_points.get_mut(e.index) {
                add_interface(inst, &interface);
            }
            if done.iter().any(|(f, _)| *f == e.function) {
                continue;
            }
            done.push((e.function, e.stage));
            let Some(function) = module.functions.iter_mut().find(|f| f.id() == e.function) else {
                return Err(NotInstrumented::malformed(format!(
                    "entry point function %{} is missing",
                    e.function
                )));
            };
            let Some(block) = function.blocks.first_mut() else {
                return Err(NotInstrumented::malformed(
                    "an entry point function has no body",
                ));
            };
            let void = self.b.type_void();
            let call = Instruction::new(
                op::FUNCTION_CALL,
                Some(void),
                Some(self.b.id()),
                smallvec::smallvec![prologue],
            );
            let at = block
                .instructions
                .iter()
                .position(|i| !(i.opcode == op::VARIABLE || i.is_line() || self.is_non_semantic(i)))
                .unwrap_or(block.instructions.len());
            block.instructions.insert(at, call);
        }
        Ok(())
    }

    /// `true` for an `OpExtInst` of a `NonSemantic.*` set.
    pub(crate) fn is_non_semantic(&self, inst: &Instruction) -> bool {
        matches!(inst.opcode, op::EXT_INST | op::EXT_INST_WITH_FORWARD_REFS)
            && inst
                .operand(0)
                .and_then(|s| self.an.ext_set(s))
                .is_some_and(|s| s.starts_with("NonSemantic."))
    }
}

/// Adds ids to an `OpEntryPoint`'s interface, skipping those already there.
fn add_interface(entry_point: &mut Instruction, ids: &[u32]) {
    let name_words = entry_point
        .operands
        .get(2..)
        .map_or(0, |w| decode_string(w).1);
    let start = (2 + name_words).min(entry_point.operands.len());
    for &id in ids {
        if !entry_point.operands[start..].contains(&id) {
            entry_point.operands.push(id);
        }
    }
}

/// Declares what device addresses need: the capability, the extension below SPIR-V 1.5, and the
/// `PhysicalStorageBuffer64` addressing model.
pub(super) fn enable_buffer_addresses(module: &mut Module) {
    if !module
        .capabilities
        .iter()
        .any(|c| c.operand(0) == Some(CAP_PSB))
    {
        module.capabilities.push(Instruction::new(
            op::CAPABILITY,
            None,
            None,
            smallvec::smallvec![CAP_PSB],
        ));
    }
    if module.version() < (1, 5)
        && !module
            .extensions
            .iter()
            .any(|e| decode_string(&e.operands).0 == EXT_PSB)
    {
        module.extensions.push(Instruction::new(
            op::EXTENSION,
            None,
            None,
            encode_string(EXT_PSB),
        ));
    }
    if let Some(model) = module.memory_model.first_mut() {
        if let Some(addressing) = model.operands.first_mut() {
            *addressing = ADDRESSING_PSB64;
        }
    }
}
