//! The helper functions the base builds, and the module-level changes that give shaders the error buffer.

use spirv::{
    AddressingModel, BuiltIn, Capability, Decoration, LoopControl, MemoryAccess, MemorySemantics,
    Op, Scope, SelectionControl, StorageClass,
};

use super::builder::{Builder, Emit, FnBuilder};
use super::values::{self, Shape};
use super::{Base, HelperKind};
use crate::analysis::Type;
use crate::error::NotInstrumented;
use crate::info::Stage;
use crate::module::{Instruction, Module, Operands};
use crate::record::{header, CRASH_ADDRESS, NO_STAGE, RECORD_HEADER_WORDS, STAGE_SHIFT};
use crate::util::{string_is, string_words};

/// The extension that brings `PhysicalStorageBufferAddresses` below SPIR-V 1.5.
const EXT_PSB: &str = "SPV_KHR_physical_storage_buffer";
/// [`EXT_PSB`] as the words of a literal string, encoded once rather than for every module.
const EXT_PSB_WORDS: [u32; 8] = literal_string(EXT_PSB);

/// The words of the literal string `s` (what [`crate::module::encode_string`] makes), for a constant: `N` must be the
/// count of words, `s.len() / 4 + 1`.
const fn literal_string<const N: usize>(s: &str) -> [u32; N] {
    let bytes = s.as_bytes();
    assert!(
        bytes.len() / 4 + 1 == N,
        "N is not the string's count of words"
    );
    let mut words = [0; N];
    let mut i = 0;
    while i < bytes.len() {
        words[i / 4] |= (bytes[i] as u32) << (8 * (i % 4));
        i += 1;
    }
    words
}
/// The memory operand `Aligned` (followed by the alignment in bytes) that loads and stores through the
/// buffer's pointers need.
const ALIGNED: u32 = MemoryAccess::ALIGNED.bits();
/// The selection control of every `OpSelectionMerge` the helpers write.
const NO_SELECTION_CONTROL: u32 = SelectionControl::NONE.bits();

/// A few ids (a builtin's components, the variables a prologue reads), kept inline: the prologues made a
/// handful of small lists per module otherwise.
type Ids = smallvec::SmallVec<[u32; 4]>;

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
    /// The buffer's types and constants, made at the first call.
    #[inline]
    pub(super) fn buffer(&mut self) -> BufferAccess {
        // Asked for at every access the helpers make: the answer inline, the making out of line.
        match self.buffer {
            Some(a) => a,
            None => self.make_buffer(),
        }
    }

    #[inline(never)]
    fn make_buffer(&mut self) -> BufferAccess {
        {
            let b = &mut self.b;
            let uint = b.type_uint();
            let array = b.new_runtime_array(uint);
            b.decorate(array, Decoration::ArrayStride, &[4]);
            let st = b.new_struct(&[array]);
            b.decorate(st, Decoration::Block, &[]);
            b.member_decorate(st, 0, Decoration::Offset, &[0]);
            let struct_ptr = b.type_pointer(StorageClass::PhysicalStorageBuffer, st);
            let uint_ptr = b.type_pointer(StorageClass::PhysicalStorageBuffer, uint);
            let address = b.const_address(self.options.error_buffer_address);
            // Device scope; queue-family scope under the Vulkan memory model, where device scope needs
            // an extra capability.
            let scope = b.const_u32(if self.vulkan_memory_model {
                Scope::QueueFamily as u32
            } else {
                Scope::Device as u32
            });
            let semantics = b.const_u32(MemorySemantics::RELAXED.bits());
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

    /// [`crate::Options::nan_values_through_select`]: each of a NaN check's `args` (of `types`) becomes an
    /// `OpSelect` of it, on whether the invocation's first word (the prologue's) is `0xFFFFFFFF`, which no
    /// invocation's is, and of a null value. Below SPIR-V 1.4 a vector's condition is a vector too, and a
    /// matrix cannot be selected: it stays as it is.
    pub(super) fn values_through_select(
        &mut self,
        out: &mut Vec<Instruction>,
        args: &mut [u32],
        types: &[u32],
    ) {
        let invocation = self.private_vars().invocation;
        let uint = self.b.type_uint();
        let v4 = self.b.type_vector(uint, 4);
        let bool_t = self.b.type_bool();
        let all_ones = self.b.const_u32(u32::MAX);
        let words = out.emit(&mut self.b, Op::Load, v4, &[invocation]);
        let first = out.emit(&mut self.b, Op::CompositeExtract, uint, &[words, 0]);
        let never = out.emit(&mut self.b, Op::IEqual, bool_t, &[first, all_ones]);
        let scalar_condition = self.version >= (1, 4);
        for (arg, &ty) in args.iter_mut().zip(types) {
            let Some(shape) = values::shape(&self.b.types, ty) else {
                continue;
            };
            let condition = match (shape.rows, shape.outer) {
                (0, 0) => never,
                _ if scalar_condition => never,
                (0, n) => {
                    let bvec = self.b.type_vector(bool_t, n);
                    let conds: smallvec::SmallVec<[u32; 4]> = (0..n).map(|_| never).collect();
                    out.emit(&mut self.b, Op::CompositeConstruct, bvec, &conds)
                }
                _ => continue,
            };
            let null = self.b.const_null(ty);
            let selected = out.emit(&mut self.b, Op::Select, ty, &[condition, null, *arg]);
            self.an.set_type(selected, ty);
            *arg = selected;
        }
    }

    fn private_vars(&mut self) -> PrivateVars {
        if let Some(p) = self.private {
            return p;
        }
        let b = &mut self.b;
        let uint = b.type_uint();
        let v4 = b.type_vector(uint, 4);
        let p_v4 = b.type_pointer(StorageClass::Private, v4);
        let p_uint = b.type_pointer(StorageClass::Private, uint);
        let zero4 = b.const_null(v4);
        let unknown_stage = b.const_u32(u32::from(NO_STAGE));
        let invocation = b.variable(p_v4, StorageClass::Private, Some(zero4));
        let stage = b.variable(p_uint, StorageClass::Private, Some(unknown_stage));
        let p = PrivateVars { invocation, stage };
        self.private = Some(p);
        p
    }

    /// The buffer's struct pointer, made from its address in the current block.
    pub(super) fn buffer_pointer(&mut self, fb: &mut FnBuilder) -> u32 {
        let BufferAccess {
            address,
            struct_ptr,
            ..
        } = self.buffer();
        fb.op(&mut self.b, Op::Bitcast, struct_ptr, &[address])
    }

    /// A pointer to `words[index]` of the buffer.
    pub(super) fn word_ptr(&mut self, fb: &mut FnBuilder, buf: u32, index: u32) -> u32 {
        let uint_ptr = self.buffer().uint_ptr;
        let zero = self.b.const_u32(0);
        fb.op(&mut self.b, Op::AccessChain, uint_ptr, &[buf, zero, index])
    }

    /// Header word `word` of the error buffer: a constant where [`crate::Options::buffer_layout`] fixes
    /// it, else read from the buffer.
    fn load_header(&mut self, fb: &mut FnBuilder, buf: u32, word: usize) -> u32 {
        if let Some(value) = self.options.buffer_layout.and_then(|l| l.fixed_word(word)) {
            return self.b.const_u32(value);
        }
        let index = self.b.const_u32(word as u32);
        let p = self.word_ptr(fb, buf, index);
        let uint = self.b.type_uint();
        fb.op(&mut self.b, Op::Load, uint, &[p, ALIGNED, 4])
    }

    fn atomic_add(&mut self, fb: &mut FnBuilder, pointer: u32, value: u32) -> u32 {
        let BufferAccess {
            scope, semantics, ..
        } = self.buffer();
        let uint = self.b.type_uint();
        fb.op(
            &mut self.b,
            Op::AtomicIAdd,
            uint,
            &[pointer, scope, semantics, value],
        )
    }

    /// The record allocator, one per module and `with_header`:
    /// `uint bb_begin(uint kind_word, uint site, uint cap, uint size, uint firings)`. It adds `firings` to the
    /// site's counter; when the count before was under the cap it allocates `size` words and, when they fit,
    /// writes the record header there (`with_header`; else the caller does) and returns the word index
    /// where the payload goes. It returns 0 (never a payload index: the buffer header is there) when nothing
    /// is to be written, after counting a drop if the buffer was full (see [`crate::record`]).
    #[inline]
    pub(super) fn begin_writer(&mut self, with_header: bool) -> u32 {
        // Asked for by every value helper: the answer inline once made, the making out of line.
        let made = if with_header {
            self.begin
        } else {
            self.begin_no_header
        };
        match made {
            Some(f) => f,
            None => self.make_begin_writer(with_header),
        }
    }

    /// [`Base::begin_writer`] the first time.
    #[inline(never)]
    fn make_begin_writer(&mut self, with_header: bool) -> u32 {
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let (mut fb, id, p) = FnBuilder::new(&mut self.b, uint, &[uint, uint, uint, uint, uint]);
        let (kind_word, site, cap, size, firings) = (p[0], p[1], p[2], p[3], p[4]);
        let BufferAccess {
            address,
            struct_ptr,
            ..
        } = self.buffer();
        let buf = fb.op(&mut self.b, Op::Bitcast, struct_ptr, &[address]);
        let zero = self.b.const_u32(0);
        let one = self.b.const_u32(1);
        let [l_count, l_alloc, l_write, l_drop, m_alloc, m_count, m_site, l_return] =
            [(); 8].map(|()| self.b.id());

        // if (site < counter_count)
        let count = self.load_header(&mut fb, buf, header::COUNTER_COUNT);
        let in_range = fb.op(&mut self.b, Op::ULessThan, bool_t, &[site, count]);
        fb.op_void(Op::SelectionMerge, &[m_site, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[in_range, l_count, m_site]);

        // prev = atomicAdd(counters[site], 1); if (prev < cap)
        fb.block(l_count);
        let counters = self.load_header(&mut fb, buf, header::COUNTERS_OFFSET);
        let index = fb.op(&mut self.b, Op::IAdd, uint, &[counters, site]);
        let counter = self.word_ptr(&mut fb, buf, index);
        let prev = self.atomic_add(&mut fb, counter, firings);
        let below = fb.op(&mut self.b, Op::ULessThan, bool_t, &[prev, cap]);
        fb.op_void(Op::SelectionMerge, &[m_count, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[below, l_alloc, m_count]);

        // off = atomicAdd(cursor, size); if (off + size <= capacity) write else drop
        fb.block(l_alloc);
        let cursor_index = self.b.const_u32(header::CURSOR as u32);
        let cursor = self.word_ptr(&mut fb, buf, cursor_index);
        let off = self.atomic_add(&mut fb, cursor, size);
        let capacity = self.load_header(&mut fb, buf, header::RECORDS_CAPACITY);
        let end = fb.op(&mut self.b, Op::IAdd, uint, &[off, size]);
        let fits = fb.op(&mut self.b, Op::ULessThanEqual, bool_t, &[end, capacity]);
        let no_wrap = fb.op(&mut self.b, Op::UGreaterThanEqual, bool_t, &[end, off]);
        let ok = fb.op(&mut self.b, Op::LogicalAnd, bool_t, &[fits, no_wrap]);
        fb.op_void(Op::SelectionMerge, &[m_alloc, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[ok, l_write, l_drop]);

        fb.block(l_write);
        let records = self.load_header(&mut fb, buf, header::RECORDS_OFFSET);
        let base = fb.op(&mut self.b, Op::IAdd, uint, &[records, off]);
        if with_header {
            let words = self.record_header(&mut fb, kind_word, site, size);
            self.store_words(&mut fb, buf, base, &words);
        }
        let header_words = self.b.const_u32(RECORD_HEADER_WORDS as u32);
        let payload = fb.op(&mut self.b, Op::IAdd, uint, &[base, header_words]);
        fb.op_void(Op::ReturnValue, &[payload]);

        fb.block(l_drop);
        let dropped_index = self.b.const_u32(header::DROPPED as u32);
        let dropped = self.word_ptr(&mut fb, buf, dropped_index);
        self.atomic_add(&mut fb, dropped, one);
        fb.op_void(Op::Branch, &[m_alloc]);

        fb.block(m_alloc);
        fb.op_void(Op::Branch, &[m_count]);
        fb.block(m_count);
        fb.op_void(Op::Branch, &[m_site]);
        fb.block(m_site);
        fb.op_void(Op::Branch, &[l_return]);
        fb.block(l_return);
        fb.op_void(Op::ReturnValue, &[zero]);
        self.b.add_function(fb.finish());
        if with_header {
            self.begin = Some(id);
        } else {
            self.begin_no_header = Some(id);
        }
        id
    }

    /// The header words of a record of `size` words (see [`crate::record`]): the kind, size and stage word,
    /// the site and the invocation.
    fn record_header(
        &mut self,
        fb: &mut FnBuilder,
        kind_word: u32,
        site: u32,
        size: u32,
    ) -> [u32; RECORD_HEADER_WORDS] {
        let uint = self.b.type_uint();
        let v4 = self.b.type_vector(uint, 4);
        let private = self.private_vars();
        let stage = fb.op(&mut self.b, Op::Load, uint, &[private.stage]);
        let shift = self.b.const_u32(STAGE_SHIFT);
        let stage_bits = fb.op(&mut self.b, Op::ShiftLeftLogical, uint, &[stage, shift]);
        let sized = fb.op(&mut self.b, Op::BitwiseOr, uint, &[kind_word, size]);
        let first = fb.op(&mut self.b, Op::BitwiseOr, uint, &[sized, stage_bits]);
        let invocation = fb.op(&mut self.b, Op::Load, v4, &[private.invocation]);
        let mut words = [first, site, 0, 0, 0, 0, 0];
        for i in 0..4 {
            words[2 + i] = fb.op(
                &mut self.b,
                Op::CompositeExtract,
                uint,
                &[invocation, i as u32],
            );
        }
        words[6] = self.b.const_u32(0);
        words
    }

    /// `for (k = 0; k < count; k++) body(k)`, marked not to be unrolled: `body` emits its code into the
    /// current block (which it may end with blocks of its own) and returns with the last one open.
    pub(super) fn counted_loop(
        &mut self,
        fb: &mut FnBuilder,
        count: u32,
        body: impl FnOnce(&mut Self, &mut FnBuilder, u32),
    ) {
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let p_uint = self.b.type_pointer(StorageClass::Function, uint);
        let k_var = fb.local(&mut self.b, p_uint);
        let zero = self.b.const_u32(0);
        let one = self.b.const_u32(1);
        fb.op_void(Op::Store, &[k_var, zero]);
        let [header, test, first, next, merge] = [(); 5].map(|()| self.b.id());
        fb.op_void(Op::Branch, &[header]);
        fb.block(header);
        fb.op_void(
            Op::LoopMerge,
            &[merge, next, LoopControl::DONT_UNROLL.bits()],
        );
        fb.op_void(Op::Branch, &[test]);
        fb.block(test);
        let k = fb.op(&mut self.b, Op::Load, uint, &[k_var]);
        let more = fb.op(&mut self.b, Op::ULessThan, bool_t, &[k, count]);
        fb.op_void(Op::BranchConditional, &[more, first, merge]);
        fb.block(first);
        body(self, fb, k);
        fb.op_void(Op::Branch, &[next]);
        fb.block(next);
        let k_next = fb.op(&mut self.b, Op::IAdd, uint, &[k, one]);
        fb.op_void(Op::Store, &[k_var, k_next]);
        fb.op_void(Op::Branch, &[header]);
        fb.block(merge);
    }

    /// `for (k = 0; k < count; k++) buf.words[base + k] = word(k);` ([`Base::counted_loop`]); `word` emits
    /// the value of word `k` into the loop body.
    pub(super) fn store_loop(
        &mut self,
        fb: &mut FnBuilder,
        buf: u32,
        base: u32,
        count: u32,
        word: &dyn Fn(&mut FnBuilder, &mut Builder, u32) -> u32,
    ) {
        self.counted_loop(fb, count, |base_, fb, k| {
            let uint = base_.b.type_uint();
            let value = word(fb, &mut base_.b, k);
            let index = fb.op(&mut base_.b, Op::IAdd, uint, &[base, k]);
            let ptr = base_.word_ptr(fb, buf, index);
            fb.op_void(Op::Store, &[ptr, value, ALIGNED, 4]);
        });
    }

    /// Stores `words` at `buf.words[base + k]`.
    pub(super) fn store_words(&mut self, fb: &mut FnBuilder, buf: u32, base: u32, words: &[u32]) {
        let uint = self.b.type_uint();
        for (k, &w) in words.iter().enumerate() {
            let index = if k == 0 {
                base
            } else {
                let k = self.b.const_u32(k as u32);
                fb.op(&mut self.b, Op::IAdd, uint, &[base, k])
            };
            let ptr = self.word_ptr(fb, buf, index);
            fb.op_void(Op::Store, &[ptr, w, ALIGNED, 4]);
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
        let key = (kind, smallvec::SmallVec::from_slice(types));
        if let Some(&f) = self.helpers.get(&key) {
            return Ok(f);
        }
        // See `HelperKind::AssertRecord`.
        let header_here = matches!(kind, HelperKind::AssertRecord);
        let begin = self.begin_writer(!header_here);
        let uint = self.b.type_uint();
        let void = self.b.type_void();
        let bool_t = self.b.type_bool();
        let mut params: smallvec::SmallVec<[u32; 8]> = smallvec::smallvec![uint, uint, uint];
        params.extend_from_slice(types);
        let (mut fb, id, p) = FnBuilder::new(&mut self.b, void, &params);
        // On the stack for a few values, as the payload below: three lists allocated per helper otherwise.
        let mut shapes: smallvec::SmallVec<[Shape; 4]> = smallvec::SmallVec::new();
        for &t in types {
            shapes.push(values::shape(&self.b.types, t).ok_or_else(|| {
                NotInstrumented::unsupported("value helper for an unrecordable type")
            })?);
        }
        let mut comps: smallvec::SmallVec<[values::Components; 4]> = smallvec::SmallVec::new();
        for (i, shape) in shapes.iter().enumerate() {
            comps.push(values::components(&mut fb, &mut self.b, p[3 + i], shape));
        }
        let end = self.b.id();
        if let HelperKind::NanCheck { inputs } | HelperKind::PendingNanCheck { inputs } = kind {
            // The output first: almost always finite, and then the helper returns after a few integer
            // ops. Only a non-finite output pays for the test of the inputs (a NaN that came in is not new).
            // Quick test of the output first (see `values::maybe_non_finite`).
            let mut quick: Option<u32> = None;
            for i in (inputs..shapes.len()).filter(|&i| shapes[i].is_float()) {
                let nf = values::maybe_non_finite(&mut fb, &mut self.b, &comps[i], &shapes[i]);
                quick = Some(match quick {
                    None => nf,
                    Some(prev) => fb.op(&mut self.b, Op::LogicalOr, bool_t, &[prev, nf]),
                });
            }
            let Some(maybe_bad) = quick else {
                return Err(NotInstrumented::unsupported(
                    "NaN check without a float value to check",
                ));
            };
            let exact = self.b.id();
            let finite = self.b.id();
            fb.op_void(Op::SelectionMerge, &[finite, NO_SELECTION_CONTROL]);
            fb.op_void(Op::BranchConditional, &[maybe_bad, exact, finite]);
            fb.block(finite);
            fb.op_void(Op::Return, &[]);
            fb.block(exact);
            let fire = new_non_finite(&mut fb, &mut self.b, &shapes, &comps, inputs)
                .expect("a float output, tested above");
            let record = self.b.id();
            fb.op_void(Op::SelectionMerge, &[end, NO_SELECTION_CONTROL]);
            fb.op_void(Op::BranchConditional, &[fire, record, end]);
            fb.block(record);
        }
        if let HelperKind::PendingNanCheck { .. } | HelperKind::PendingRecord = kind {
            // The third parameter is the site's slot in bb_pending.
            let mut payload = values::Payload::new();
            for (i, shape) in shapes.iter().enumerate() {
                for &c in &comps[i] {
                    values::push_component_words(&mut fb, &mut self.b, c, shape, &mut payload);
                }
            }
            self.keep_pending(&mut fb, p[2], &payload);
        } else {
            let size = self.b.const_u32((RECORD_HEADER_WORDS + words) as u32);
            let one = self.b.const_u32(1);
            let at = fb.op(
                &mut self.b,
                Op::FunctionCall,
                uint,
                &[begin, p[0], p[1], p[2], size, one],
            );
            if words > 0 || header_here {
                let zero = self.b.const_u32(0);
                let writing = fb.op(&mut self.b, Op::INotEqual, bool_t, &[at, zero]);
                let store = self.b.id();
                let stored = self.b.id();
                fb.op_void(Op::SelectionMerge, &[stored, NO_SELECTION_CONTROL]);
                fb.op_void(Op::BranchConditional, &[writing, store, stored]);
                fb.block(store);
                let mut payload = values::Payload::new();
                for (i, shape) in shapes.iter().enumerate() {
                    for &c in &comps[i] {
                        values::push_component_words(&mut fb, &mut self.b, c, shape, &mut payload);
                    }
                }
                let buf = self.buffer_pointer(&mut fb);
                self.store_words(&mut fb, buf, at, &payload);
                if header_here {
                    // The header after the payload, its first word last: a drain that races the shader
                    // takes the record for written only once that word is there (`record::read_records`).
                    let header_words = self.b.const_u32(RECORD_HEADER_WORDS as u32);
                    let base = fb.op(&mut self.b, Op::ISub, uint, &[at, header_words]);
                    let header = self.record_header(&mut fb, p[0], p[1], size);
                    let one = self.b.const_u32(1);
                    let rest = fb.op(&mut self.b, Op::IAdd, uint, &[base, one]);
                    self.store_words(&mut fb, buf, rest, &header[1..]);
                    self.store_words(&mut fb, buf, base, &header[..1]);
                }
                fb.op_void(Op::Branch, &[stored]);
                fb.block(stored);
            }
        }
        fb.op_void(Op::Branch, &[end]);
        fb.block(end);
        fb.op_void(Op::Return, &[]);
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
        let ptr = self
            .b
            .type_pointer(StorageClass::PhysicalStorageBuffer, uint);
        let address = self.b.const_address(CRASH_ADDRESS);
        let (mut fb, id, _) = FnBuilder::new(&mut self.b, void, &[]);
        let p = fb.op(&mut self.b, Op::Bitcast, ptr, &[address]);
        let value = self.b.const_u32(0xdead);
        fb.op_void(Op::Store, &[p, value, ALIGNED, 4]);
        fb.op_void(Op::Return, &[]);
        self.b.add_function(fb.finish());
        self.crash = Some(id);
        id
    }

    /// The Input variable of a builtin: the module's own, or a new one of `new_type`. Returns the variable
    /// and its pointee type.
    fn builtin_var(
        &mut self,
        builtin: BuiltIn,
        new_type: u32,
    ) -> Result<(u32, u32), NotInstrumented> {
        for &(b, var) in &self.an.builtin_vars {
            if b != Some(builtin) {
                continue;
            }
            let Some(ptr) = self.an.type_of(var) else {
                continue;
            };
            if let Some(Type::Pointer {
                storage: Some(StorageClass::Input),
                pointee,
            }) = self.b.types.get(ptr)
            {
                return Ok((var, *pointee));
            }
        }
        let ptr = self.b.type_pointer(StorageClass::Input, new_type);
        let var = self.b.variable(ptr, StorageClass::Input, None);
        self.b.decorate(var, Decoration::BuiltIn, &[builtin as u32]);
        self.an.builtin_vars.push((Some(builtin), var));
        Ok((var, new_type))
    }

    /// Loads a builtin and returns its first `count` components as `uint`s.
    fn read_builtin(
        &mut self,
        fb: &mut FnBuilder,
        builtin: BuiltIn,
        new_type: u32,
        count: usize,
        used: &mut Ids,
    ) -> Result<Ids, NotInstrumented> {
        let (var, ty) = self.builtin_var(builtin, new_type)?;
        used.push(var);
        let shape = values::shape(&self.b.types, ty)
            .filter(|s| s.width == 32 && s.rows == 0 && s.components() as usize >= count)
            .ok_or_else(|| {
                NotInstrumented::unsupported(format!(
                    "builtin {} is declared with an unexpected type",
                    builtin as u32
                ))
            })?;
        let value = fb.op(&mut self.b, Op::Load, ty, &[var]);
        let comps = values::components(fb, &mut self.b, value, &shape);
        let uint = self.b.type_uint();
        let mut out = Ids::new();
        for &c in comps.iter().take(count) {
            out.push(if shape.is_float() {
                fb.op(&mut self.b, Op::ConvertFToU, uint, &[c])
            } else if shape.signed {
                fb.op(&mut self.b, Op::Bitcast, uint, &[c])
            } else {
                c
            });
        }
        Ok(out)
    }

    /// `void bb_prologue()` for a stage: stores the invocation words and the stage code into the Private
    /// variables. Returns the function and the builtin variables it reads.
    fn prologue(&mut self, stage: Stage) -> Result<(u32, Ids), NotInstrumented> {
        let void = self.b.type_void();
        let uint = self.b.type_uint();
        let v3 = self.b.type_vector(uint, 3);
        let v4 = self.b.type_vector(uint, 4);
        let f32t = self.b.type_float(32);
        let vec4 = self.b.type_vector(f32t, 4);
        let private = self.private_vars();
        let (mut fb, id, _) = FnBuilder::new(&mut self.b, void, &[]);
        let mut used = Ids::new();
        let zero = self.b.const_u32(0);
        let words: Ids = match stage {
            Stage::Compute | Stage::Task | Stage::Mesh => {
                self.read_builtin(&mut fb, BuiltIn::GlobalInvocationId, v3, 3, &mut used)?
            }
            Stage::Fragment => {
                self.read_builtin(&mut fb, BuiltIn::FragCoord, vec4, 2, &mut used)?
            }
            Stage::Vertex => {
                let mut w = self.read_builtin(&mut fb, BuiltIn::VertexIndex, uint, 1, &mut used)?;
                w.extend(self.read_builtin(&mut fb, BuiltIn::InstanceIndex, uint, 1, &mut used)?);
                w
            }
            Stage::TessellationControl | Stage::Geometry => {
                let mut w =
                    self.read_builtin(&mut fb, BuiltIn::InvocationId, uint, 1, &mut used)?;
                w.extend(self.read_builtin(&mut fb, BuiltIn::PrimitiveId, uint, 1, &mut used)?);
                w
            }
            Stage::TessellationEvaluation => {
                let mut w: Ids = smallvec::smallvec![zero];
                w.extend(self.read_builtin(&mut fb, BuiltIn::PrimitiveId, uint, 1, &mut used)?);
                w
            }
            _ => self.read_builtin(&mut fb, BuiltIn::LaunchIdKHR, v3, 3, &mut used)?,
        };
        let mut parts = words;
        parts.resize(4, zero);
        let inv = fb.op(&mut self.b, Op::CompositeConstruct, v4, &parts);
        fb.op_void(Op::Store, &[private.invocation, inv]);
        let code = self.b.const_u32(u32::from(stage.code()));
        fb.op_void(Op::Store, &[private.stage, code]);
        fb.op_void(Op::Return, &[]);
        self.b.add_function(fb.finish());
        Ok((id, used))
    }

    /// Calls a prologue at the start of every entry point function and lists the variables it uses in the
    /// entry points' interfaces.
    pub(super) fn add_prologues(&mut self, module: &mut Module) -> Result<(), NotInstrumented> {
        let private = self.private_vars();
        let all_globals = self.version >= (1, 4);
        let mut done: smallvec::SmallVec<[(u32, Stage); 2]> = smallvec::SmallVec::new();
        let mut prologues: smallvec::SmallVec<[(Stage, u32, Ids); 2]> = smallvec::SmallVec::new();
        // By index, not over a copy of the list (its names are strings).
        for k in 0..self.an.entry_points.len() {
            let e = &self.an.entry_points[k];
            let (function, stage, index) = (e.function, e.stage, e.index);
            if let Some((_, s)) = done.iter().find(|(f, _)| *f == function) {
                if *s != stage {
                    return Err(NotInstrumented::unsupported(format!(
                        "function %{function} is the entry point of both a {s} and a {stage} shader"
                    )));
                }
            }
            let (prologue, used) = match prologues.iter().find(|(s, _, _)| *s == stage) {
                Some((_, f, used)) => (*f, used.clone()),
                None => {
                    let (f, used) = self.prologue(stage)?;
                    prologues.push((stage, f, used.clone()));
                    (f, used)
                }
            };
            let mut interface: smallvec::SmallVec<[u32; 8]> = smallvec::SmallVec::from_slice(&used);
            if all_globals {
                interface.extend([private.invocation, private.stage]);
                interface.extend(self.pending.iter().flat_map(|p| p.variables()));
            }
            if let Some(inst) = module.entry_points.get_mut(index) {
                add_interface(inst, &interface);
            }
            if done.iter().any(|(f, _)| *f == function) {
                continue;
            }
            done.push((function, stage));
            let Some(function) = module.functions.iter_mut().find(|f| f.id() == function) else {
                return Err(NotInstrumented::malformed(format!(
                    "entry point function %{function} is missing"
                )));
            };
            let Some(block) = function.blocks.first_mut() else {
                return Err(NotInstrumented::malformed(
                    "an entry point function has no body",
                ));
            };
            let void = self.b.type_void();
            let call = Instruction::new(
                Op::FunctionCall,
                Some(void),
                Some(self.b.id()),
                smallvec::smallvec![prologue],
            );
            let at = block
                .instructions
                .iter()
                .position(|i| !(i.is(Op::Variable) || i.is_line() || self.is_non_semantic(i)))
                .unwrap_or(block.instructions.len());
            block.instructions.insert(at, call);
        }
        Ok(())
    }

    /// `true` for an `OpExtInst` of a `NonSemantic.*` set.
    pub(crate) fn is_non_semantic(&self, inst: &Instruction) -> bool {
        (inst.is(Op::ExtInst) || inst.is(Op::ExtInstWithForwardRefsKHR))
            && inst
                .operand(0)
                .and_then(|s| self.an.ext_set(s))
                .is_some_and(|s| s.starts_with("NonSemantic."))
    }
}

/// Adds ids to an `OpEntryPoint`'s interface, skipping those already there.
fn add_interface(entry_point: &mut Instruction, ids: &[u32]) {
    let name_words = entry_point.operands.get(2..).map_or(0, string_words);
    let start = (2 + name_words).min(entry_point.operands.len());
    // Room for all at once: grown id by id, the list was reallocated several times.
    entry_point.operands.reserve(ids.len());
    for &id in ids {
        if !entry_point.operands[start..].contains(&id) {
            entry_point.operands.push(id);
        }
    }
}

/// Declares what device addresses need: the capability, the extension below SPIR-V 1.5, and the
/// `PhysicalStorageBuffer64` addressing model.
pub(super) fn enable_buffer_addresses(module: &mut Module) {
    let capability = Capability::PhysicalStorageBufferAddresses;
    if !module.has_capability(capability) {
        module.capabilities.push(Instruction::new(
            Op::Capability,
            None,
            None,
            smallvec::smallvec![capability as u32],
        ));
    }
    if module.version() < (1, 5)
        && !module
            .extensions
            .iter()
            .any(|e| string_is(&e.operands, EXT_PSB))
    {
        module.extensions.push(Instruction::new(
            Op::Extension,
            None,
            None,
            Operands::from_slice(&EXT_PSB_WORDS),
        ));
    }
    if let Some(model) = module.memory_model.first_mut() {
        if let Some(addressing) = model.operands.first_mut() {
            *addressing = AddressingModel::PhysicalStorageBuffer64 as u32;
        }
    }
}

/// `words[index]` for an `index` known only when the shader runs: a chain of selects, the last word when
/// `index` is past the others. A word the same as the one picked after it needs no select.
pub(super) fn pick(fb: &mut FnBuilder, b: &mut Builder, words: &[u32], index: u32) -> u32 {
    let uint = b.type_uint();
    let bool_t = b.type_bool();
    let (&last, rest) = words.split_last().expect("words to pick from");
    rest.iter().enumerate().rev().fold(last, |later, (j, &w)| {
        if w == later {
            return later;
        }
        let j = b.const_u32(j as u32);
        fb.select_if_equal(b, [bool_t, uint], [index, j], [w, later])
    })
}

/// The exact NaN test of a [`HelperKind::NanCheck`] site: some component of a value from `inputs` on is NaN
/// or Inf, and every float component of the values before it is finite (a NaN that came in is not new).
/// `None` when no value from `inputs` on is a float.
pub(super) fn new_non_finite(
    fb: &mut FnBuilder,
    b: &mut Builder,
    shapes: &[Shape],
    comps: &[values::Components],
    inputs: usize,
) -> Option<u32> {
    let bool_t = b.type_bool();
    let mut non_finite_any = |fb: &mut FnBuilder, range: std::ops::Range<usize>| {
        let mut any: Option<u32> = None;
        for i in range.filter(|&i| shapes[i].is_float()) {
            for &c in &comps[i] {
                let nf = values::non_finite(fb, b, c, &shapes[i]);
                any = Some(match any {
                    None => nf,
                    Some(prev) => fb.op(b, Op::LogicalOr, bool_t, &[prev, nf]),
                });
            }
        }
        any
    };
    let bad_output = non_finite_any(fb, inputs..shapes.len())?;
    Some(match non_finite_any(fb, 0..inputs) {
        None => bad_output,
        Some(bad_input) => {
            let finite_in = fb.op(b, Op::LogicalNot, bool_t, &[bad_input]);
            fb.op(b, Op::LogicalAnd, bool_t, &[finite_in, bad_output])
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_extension_name_is_encoded_as_at_run_time() {
        assert_eq!(
            EXT_PSB_WORDS.to_vec(),
            crate::module::encode_string(EXT_PSB)
        );
    }
}
