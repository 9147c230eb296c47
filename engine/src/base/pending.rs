//! NaN and integer check records kept until the invocation ends.
//!
//! A NaN check whose record is written where it fires puts a record writer (loads, atomics and stores
//! through a device address) into the app's code at each site: drivers inline every call, so pipeline
//! creation pays for one writer per site, and llvmpipe turns each access through a device address into a
//! loop over the SIMD lanes, which also splits the app's code around it and changes which multiplies and
//! adds it fuses (SPIR-V lets it fuse them where it likes), so results could change by a few bits (or more,
//! in chaotic code) with a change of code that never runs.
//!
//! So, with [`crate::Options::records_at_end`], a NaN or integer check that fires only counts the firing
//! and, the first time, keeps its payload, in `Private` arrays (`bb_pending_counts`, one count per site,
//! and `bb_pending_words`, the payloads), and sets a `Private` flag. A *flush* (`bb_flush`, one function per
//! module: one loop over the sites around one record writer) writes what is pending: for each site with a
//! count, the count is added to the site's counter and, under the site's cap, one record with its first
//! payload is written. It is called before each return of an entry point function and before each
//! instruction that ends the invocation or makes it a helper (`OpKill` and the like), so the app's own
//! code gets no device access at all. Every array word is read at a constant index and picked by selects:
//! an index known only when the shader runs makes llvmpipe compile each access as a chain of branches.
//! The payload is stored by a loop (one store, which llvmpipe turns into a loop over its SIMD lanes: a
//! case per site with straight stores compiled slower, 7.7 -> 8.9-10.0 s over 49 modules at NaN `ops`);
//! only a module with one pending site gets a flush without loops.
//!
//! What this changes: an invocation writes at most one record per site (its first firing), and the
//! records are written when it ends, so a device fault or an endless loop before then loses them (the
//! counts of what ended stay exact). Sites past [`MAX_PENDING_WORDS`] or [`MAX_PENDING_SITES`] write at
//! once, as asserts, printf and loop budgets always do (an assert may crash the device right after its
//! record).
//!
//! The layer turns it on for CPU devices only. On llvmpipe (Mesa 22.3) it took pipeline creation at NaN
//! `ops` from a median of 2.7x to 1.7x of no layer and the benchmark shader's run time from 20.6x to 1.4x,
//! and kept the generated shaders' results bit for bit where code that never ran had changed them. On
//! NVIDIA's compiler (H200, 580.159) the flush cost as much to compile as a writer per site in every shape
//! tried (4.2x, and 5.3x with the loop bound hidden from its unroller; 1.4x with the flush left empty),
//! and so did one writer per module for the invocation's first record (5.2x against 5.0x): there a site
//! costs its exact test and whatever keeps or writes its values (README, "Pipeline creation per module").

use spirv::{Op, SelectionControl, StorageClass};

use super::builder::{Builder, FnBuilder};
use super::Base;
use crate::module::{Instruction, Module};
use crate::record::{header, RECORD_HEADER_WORDS};

/// The memory operand `Aligned` that loads through the buffer's pointers need.
const ALIGNED: u32 = spirv::MemoryAccess::ALIGNED.bits();

/// The payload words of `bb_pending_words` a module may use, and its sites (the counts): each invocation
/// holds them (in registers or local memory on a GPU). Every site past them has a writer of its own in the
/// app's code: VkFFT's largest kernel, 192 index checks, compiled on llvmpipe in 21.4 s with 64 sites
/// waiting and the rest writing, and in 1.08 s with all 192 waiting (0.55 s without checks; README).
pub(crate) const MAX_PENDING_WORDS: u32 = 1024;
pub(crate) const MAX_PENDING_SITES: u32 = 256;

const NO_SELECTION_CONTROL: u32 = SelectionControl::NONE.bits();

/// A few ids per pending site or payload word, kept inline.
type Words = smallvec::SmallVec<[u32; 16]>;

/// A site whose record waits in `bb_pending`, as numbers: the flush makes of each field a constant, an
/// expression of the site's position or a pick, whichever the sites' values allow.
struct PendingSite {
    /// The record's kind word, the global site index, its record cap, the record size.
    kind_word: u32,
    site: u32,
    cap: u32,
    size: u32,
    /// Where its payload words start in `bb_pending_words`.
    offset: u32,
}

/// The module's pending records: the variables (their types made when the module is finished, once the
/// arrays' lengths are known) and the sites.
pub(crate) struct Pending {
    /// Reserved ids: `uint bb_pending_counts[sites]` (its array type, `Private` pointer type, null
    /// constant and variable) and `uint bb_pending_words[words]` (array type, pointer type, variable;
    /// not initialized: a word is read only when its site's count says it was written).
    counts_array: u32,
    counts_ptr: u32,
    counts_null: u32,
    counts: u32,
    words_array: u32,
    words_ptr: u32,
    words_var: u32,
    /// `bool bb_pending_any`: some site has fired since the last flush.
    any: u32,
    /// The constant `true`, 0 until a helper first sets `any`: every NaN helper stores it, and finding it in
    /// the type table took a hash and probe each time.
    yes: u32,
    sites: Vec<PendingSite>,
    words: u32,
}

impl Pending {
    /// The `Private` variables each entry point's interface must list (SPIR-V 1.4 and later).
    pub(crate) fn variables(&self) -> [u32; 3] {
        [self.counts, self.words_var, self.any]
    }
}

/// Whether `inst` ends the invocation or makes it a helper: what is pending is written before it.
fn ends_invocation(inst: &Instruction) -> bool {
    matches!(
        inst.op(),
        Some(
            Op::Kill
                | Op::TerminateInvocation
                | Op::DemoteToHelperInvocation
                | Op::IgnoreIntersectionKHR
                | Op::TerminateRayKHR
                | Op::IgnoreIntersectionNV
                | Op::TerminateRayNV
                | Op::EmitMeshTasksEXT
        )
    )
}

impl Base<'_> {
    /// A place in `bb_pending` for a NaN or integer site of `words` payload words, if there is room: a
    /// constant id, the site's ordinal times 65536 plus its payload offset (the helper's parameter in place
    /// of the cap; drivers fold it). The site is flushed with its record's kind word, global index and cap.
    pub(super) fn pending_slot(
        &mut self,
        words: usize,
        kind_word: u32,
        site: u32,
        cap: u32,
    ) -> Option<u32> {
        let (used, sites) = self
            .pending
            .as_ref()
            .map_or((0, 0), |p| (p.words, p.sites.len() as u32));
        if used + words as u32 > MAX_PENDING_WORDS || sites >= MAX_PENDING_SITES {
            return None;
        }
        if self.pending.is_none() {
            let bool_t = self.b.type_bool();
            let p_bool = self.b.type_pointer(StorageClass::Private, bool_t);
            let no = self.b.constant(Op::ConstantFalse, bool_t, &[]);
            let any = self.b.variable(p_bool, StorageClass::Private, Some(no));
            let [counts_array, counts_ptr, counts_null, counts, words_array, words_ptr, words_var] =
                [(); 7].map(|()| self.b.id());
            self.pending = Some(Pending {
                counts_array,
                counts_ptr,
                counts_null,
                counts,
                words_array,
                words_ptr,
                words_var,
                any,
                yes: 0,
                sites: Vec::new(),
                words: 0,
            });
        }
        let slot = self.b.const_u32(sites << 16 | used);
        let pending = self.pending.as_mut().expect("made above");
        pending.words += words as u32;
        pending.sites.push(PendingSite {
            kind_word,
            site,
            cap,
            size: (RECORD_HEADER_WORDS + words) as u32,
            offset: used,
        });
        Some(slot)
    }

    /// In a NaN helper after its test fired, or in an integer check's helper: counts the firing and, on the
    /// first, keeps `payload`; sets the flag. `slot` is the parameter [`Base::pending_slot`] gave.
    pub(super) fn keep_pending(&mut self, fb: &mut FnBuilder, slot: u32, payload: &[u32]) {
        let pending = self.pending.as_ref().expect("a pending site");
        let (counts, words_var, any, yes) =
            (pending.counts, pending.words_var, pending.any, pending.yes);
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let p_uint = self.b.type_pointer(StorageClass::Private, uint);
        let zero = self.b.const_u32(0);
        let one = self.b.const_u32(1);
        let sixteen = self.b.const_u32(16);
        let low = self.b.const_u32(0xffff);
        let ordinal = fb.op(&mut self.b, Op::ShiftRightLogical, uint, &[slot, sixteen]);
        let offset = fb.op(&mut self.b, Op::BitwiseAnd, uint, &[slot, low]);
        let count_ptr = fb.op(&mut self.b, Op::AccessChain, p_uint, &[counts, ordinal]);
        let count = fb.op(&mut self.b, Op::Load, uint, &[count_ptr]);
        let counted = fb.op(&mut self.b, Op::IAdd, uint, &[count, one]);
        fb.op_void(Op::Store, &[count_ptr, counted]);
        let yes = match yes {
            0 => {
                let yes = self.b.constant(Op::ConstantTrue, bool_t, &[]);
                self.pending.as_mut().expect("a pending site").yes = yes;
                yes
            }
            made => made,
        };
        fb.op_void(Op::Store, &[any, yes]);
        let first = fb.op(&mut self.b, Op::IEqual, bool_t, &[count, zero]);
        let (keep, kept) = (self.b.id(), self.b.id());
        fb.op_void(Op::SelectionMerge, &[kept, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[first, keep, kept]);
        fb.block(keep);
        for (k, &word) in payload.iter().enumerate() {
            let k = self.b.const_u32(k as u32);
            let index = fb.op(&mut self.b, Op::IAdd, uint, &[offset, k]);
            let ptr = fb.op(&mut self.b, Op::AccessChain, p_uint, &[words_var, index]);
            fb.op_void(Op::Store, &[ptr, word]);
        }
        fb.op_void(Op::Branch, &[kept]);
        fb.block(kept);
    }

    /// `void bb_flush()`: when the flag is set, clears it and, for each site in a loop, when its count is
    /// not 0: clears it, adds it to the site's counter and, under the cap, writes the record with the kept
    /// payload (see [`Base::begin_writer`]). Every word of the arrays is read at a constant index and
    /// picked by selects: an index known only when the shader runs would make drivers keep the arrays in
    /// memory (llvmpipe compiles each such access as a chain of branches, for the sites' accesses too). A
    /// site's record fields are picked the same way only where they do not step evenly ([`pick_value`]).
    fn flush_function(&mut self) -> u32 {
        let pending = self.pending.as_ref().expect("pending sites");
        let (counts, words_var, any, words) = (
            pending.counts,
            pending.words_var,
            pending.any,
            pending.words,
        );
        // On the stack for a few sites: seven lists allocated per module otherwise.
        let field = |f: fn(&PendingSite) -> u32| pending.sites.iter().map(f).collect::<Words>();
        let (counts_null, site_count) = (pending.counts_null, pending.sites.len() as u32);
        let (kinds, sites, caps, sizes, offsets) = (
            field(|s| s.kind_word),
            field(|s| s.site),
            field(|s| s.cap),
            field(|s| s.size),
            field(|s| s.offset),
        );
        let begin = self.begin_writer(true);
        let void = self.b.type_void();
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let p_uint = self.b.type_pointer(StorageClass::Private, uint);
        let zero = self.b.const_u32(0);
        let no = self.b.constant(Op::ConstantFalse, bool_t, &[]);
        let (mut fb, id, _) = FnBuilder::new(&mut self.b, void, &[]);
        let [run, end] = [(); 2].map(|()| self.b.id());
        let fired = fb.op(&mut self.b, Op::Load, bool_t, &[any]);
        fb.op_void(Op::SelectionMerge, &[end, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[fired, run, end]);
        fb.block(run);
        fb.op_void(Op::Store, &[any, no]);
        let load_all = |fb: &mut FnBuilder, b: &mut super::Builder, var: u32, n: u32| -> Words {
            (0..n)
                .map(|c| {
                    let c = b.const_u32(c);
                    let ptr = fb.op(b, Op::AccessChain, p_uint, &[var, c]);
                    fb.op(b, Op::Load, uint, &[ptr])
                })
                .collect()
        };
        let all_counts = load_all(&mut fb, &mut self.b, counts, site_count);
        let all_words = load_all(&mut fb, &mut self.b, words_var, words.max(1));
        let buf = self.buffer_pointer(&mut fb);
        if site_count == 1 {
            // One site (about half of all modules at NaN `outputs`): its record written straight, with no
            // loop over the sites or over its payload. Loops are much of what llvmpipe's compile costs
            // (a module with one output check: vkCreateComputePipelines 2.3 -> 1.7 ms), and with one site
            // there is still one record writer to inline.
            let payload = sizes[0] as usize - RECORD_HEADER_WORDS;
            self.write_pending(
                &mut fb,
                begin,
                |_, _| all_counts[0],
                |base, _| {
                    let [kind, site, cap, size] =
                        [kinds[0], sites[0], caps[0], sizes[0]].map(|v| base.b.const_u32(v));
                    [kind, site, cap, size, zero]
                },
                // The payload is all of bb_pending_words.
                |base, fb, at, _| base.store_words(fb, buf, at, &all_words[..payload]),
            );
        } else {
            // The bound is the site count plus a header word that is always 0: no compiler sees a constant
            // trip count and unrolls the loop into a record writer per site (NVIDIA's did, DontUnroll
            // notwithstanding).
            let zero_word = self.b.const_u32(header::ZERO as u32);
            let zero_ptr = self.word_ptr(&mut fb, buf, zero_word);
            let opaque_zero = fb.op(&mut self.b, Op::Load, uint, &[zero_ptr, ALIGNED, 4]);
            let total = self.b.const_u32(site_count);
            let bound = fb.op(&mut self.b, Op::IAdd, uint, &[total, opaque_zero]);
            // for (j = 0; j < sites + 0; j++) if (count != 0) { at = bb_begin(..., count); if (at != 0) write }
            self.counted_loop(&mut fb, bound, |base, fb, j| {
                let pick = super::helpers::pick;
                base.write_pending(
                    fb,
                    begin,
                    |base, fb| pick(fb, &mut base.b, &all_counts, j),
                    |base, fb| {
                        [&kinds, &sites, &caps, &sizes, &offsets]
                            .map(|values| pick_value(fb, &mut base.b, values, j))
                    },
                    |base, fb, at, [.., size, offset]| {
                        // bb_begin wrote the header; payload word k is bb_pending_words[offset + k].
                        let header_words = base.b.const_u32(RECORD_HEADER_WORDS as u32);
                        let payload_words =
                            fb.op(&mut base.b, Op::ISub, uint, &[size, header_words]);
                        base.store_loop(fb, buf, at, payload_words, &|fb, b, k| {
                            let index = fb.op(b, Op::IAdd, uint, &[offset, k]);
                            pick(fb, b, &all_words, index)
                        });
                    },
                );
            });
        }
        // Counts are cleared for a later flush (after a demote, the invocation goes on as a helper): the
        // whole array at once, to its initializer.
        fb.op_void(Op::Store, &[counts, counts_null]);
        fb.op_void(Op::Branch, &[end]);
        fb.block(end);
        fb.op_void(Op::Return, &[]);
        self.b.add_function(fb.finish());
        id
    }

    /// `if (count != 0) { at = bb_begin(kind, site, cap, size, count); if (at != 0) payload(at) }`: the
    /// flush's record of one site. `count` makes the site's count; `fields` its kind, site, cap, size and
    /// payload offset, where the count is not 0; `payload` stores the payload from `at` on, given them.
    fn write_pending(
        &mut self,
        fb: &mut FnBuilder,
        begin: u32,
        count: impl FnOnce(&mut Self, &mut FnBuilder) -> u32,
        fields: impl FnOnce(&mut Self, &mut FnBuilder) -> [u32; 5],
        payload: impl FnOnce(&mut Self, &mut FnBuilder, u32, [u32; 5]),
    ) {
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let zero = self.b.const_u32(0);
        let [write, allocated, stored, written] = [(); 4].map(|()| self.b.id());
        let count = count(self, fb);
        let has = fb.op(&mut self.b, Op::INotEqual, bool_t, &[count, zero]);
        fb.op_void(Op::SelectionMerge, &[written, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[has, write, written]);
        fb.block(write);
        let made = fields(self, fb);
        let [kind, site, cap, size, _] = made;
        let at = fb.op(
            &mut self.b,
            Op::FunctionCall,
            uint,
            &[begin, kind, site, cap, size, count],
        );
        let writing = fb.op(&mut self.b, Op::INotEqual, bool_t, &[at, zero]);
        fb.op_void(Op::SelectionMerge, &[stored, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[writing, allocated, stored]);
        fb.block(allocated);
        payload(self, fb, at, made);
        fb.op_void(Op::Branch, &[stored]);
        fb.block(stored);
        fb.op_void(Op::Branch, &[written]);
        fb.block(written);
    }

    /// When sites are pending: defines the arrays (now that their lengths are known), builds the flush and
    /// calls it before each return of an entry point function and before each instruction that ends the
    /// invocation.
    pub(super) fn finish_pending(&mut self, module: &mut Module) {
        let Some((site_count, words)) = self
            .pending
            .as_ref()
            .map(|p| (p.sites.len() as u32, p.words))
        else {
            return;
        };
        let flush = self.flush_function();
        let p = self.pending.as_ref().expect("checked above");
        let ids = (
            p.counts_array,
            p.counts_ptr,
            p.counts_null,
            p.counts,
            p.words_array,
            p.words_ptr,
            p.words_var,
        );
        let (counts_array, counts_ptr, counts_null, counts, words_array, words_ptr, words_var) =
            ids;
        let uint = self.b.type_uint();
        let private = StorageClass::Private as u32;
        let n = self.b.const_u32(site_count);
        self.b.define(counts_array, Op::TypeArray, None, &[uint, n]);
        self.b
            .define(counts_ptr, Op::TypePointer, None, &[private, counts_array]);
        self.b
            .define(counts_null, Op::ConstantNull, Some(counts_array), &[]);
        self.b.define(
            counts,
            Op::Variable,
            Some(counts_ptr),
            &[private, counts_null],
        );
        let w = self.b.const_u32(words.max(1));
        self.b.define(words_array, Op::TypeArray, None, &[uint, w]);
        self.b
            .define(words_ptr, Op::TypePointer, None, &[private, words_array]);
        self.b
            .define(words_var, Op::Variable, Some(words_ptr), &[private]);
        let void = self.b.type_void();
        let entry_functions: Vec<u32> = self.an.entry_points.iter().map(|e| e.function).collect();
        // Every instruction of every function is looked at: a plain loop, with one list of positions for
        // all blocks (most blocks get no call).
        let mut at: Vec<usize> = Vec::new();
        for f in &mut module.functions {
            let entry = entry_functions.contains(&f.id());
            for block in &mut f.blocks {
                at.clear();
                for (k, i) in block.instructions.iter().enumerate() {
                    // Every opcode looked for is `OpKill` (252) or above, nearly every instruction's
                    // below: one compare for most.
                    if i.opcode() < Op::Kill as u16 {
                        continue;
                    }
                    if ends_invocation(i) || (entry && (i.is(Op::Return) || i.is(Op::ReturnValue)))
                    {
                        at.push(k);
                    }
                }
                // From the last: the positions before it stay valid (and the ids go in this order).
                for &k in at.iter().rev() {
                    let call_id = self.b.id();
                    block.instructions.insert(
                        k,
                        Instruction::new(
                            Op::FunctionCall,
                            Some(void),
                            Some(call_id),
                            smallvec::smallvec![flush],
                        ),
                    );
                }
            }
        }
    }
}

/// `values[index]` as a `uint`, for an `index` below `values.len()` known only when the shader runs: the
/// constant when all are equal, `a + s * index` when the values step evenly (site numbers, the offsets of
/// equal payloads), else a [`pick`](super::helpers::pick) among their constants. The flush picks five
/// fields per site: as selects alone they were most of its code.
fn pick_value(fb: &mut FnBuilder, b: &mut Builder, values: &[u32], index: u32) -> u32 {
    let first = values[0];
    let step = values.get(1).map_or(0, |v| v.wrapping_sub(first));
    let stepped = (0u32..)
        .zip(values)
        .all(|(j, &v)| v == first.wrapping_add(step.wrapping_mul(j)));
    if stepped && step == 0 {
        return b.const_u32(first);
    }
    // Selects take two instructions per value but the last; the expression one per step not 1 and per
    // start not 0.
    let arithmetic = u32::from(step != 1) + u32::from(first != 0);
    if !stepped || arithmetic as usize >= 2 * (values.len() - 1) {
        let ids: Words = values.iter().map(|&v| b.const_u32(v)).collect();
        return super::helpers::pick(fb, b, &ids, index);
    }
    let uint = b.type_uint();
    let scaled = match step {
        1 => index,
        _ => {
            let step = b.const_u32(step);
            fb.op(b, Op::IMul, uint, &[index, step])
        }
    };
    match first {
        0 => scaled,
        _ => {
            let first = b.const_u32(first);
            fb.op(b, Op::IAdd, uint, &[scaled, first])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::tests::tiny;

    /// What `pick_value` emits for `values` in a function of its own: the opcodes, and whether its result
    /// is the index itself, or the constant `Some(v)`.
    fn picked(values: &[u32]) -> (Vec<Op>, bool, Option<u32>) {
        let mut module = Module::parse(&tiny()).unwrap();
        let mut b = Builder::new(&module);
        let void = b.type_void();
        let uint = b.type_uint();
        let (mut fb, _, params) = FnBuilder::new(&mut b, void, &[uint]);
        let result = pick_value(&mut fb, &mut b, values, params[0]);
        let constant = values.iter().copied().find(|&v| b.const_u32(v) == result);
        fb.op_void(Op::Return, &[]);
        b.add_function(fb.finish());
        b.finish(&mut module).unwrap();
        let module = Module::parse(&module.to_words()).unwrap();
        let function = module.functions.last().unwrap();
        let ops = function.blocks[0]
            .instructions
            .iter()
            .filter_map(Instruction::op)
            .filter(|&op| op != Op::Return)
            .collect();
        (ops, result == params[0], constant)
    }

    #[test]
    fn record_fields_are_picked_by_selects_only_where_they_do_not_step_evenly() {
        // All equal: the constant, nothing emitted.
        assert_eq!(picked(&[262_144; 5]), (vec![], false, Some(262_144)));
        // Site numbers from 0: the position itself; from 7: one add.
        assert_eq!(picked(&[0, 1, 2, 3]), (vec![], true, None));
        assert_eq!(picked(&[7, 8, 9]).0, [Op::IAdd]);
        // Offsets of equal payloads: a multiply (and an add when they do not start at 0).
        assert_eq!(picked(&[0, 6, 12, 18]).0, [Op::IMul]);
        assert_eq!(picked(&[2, 5, 8]).0, [Op::IMul, Op::IAdd]);
        // Where the expression costs as much as the selects, or the values do not step evenly: selects.
        assert_eq!(picked(&[11, 9]).0, [Op::IEqual, Op::Select]);
        let uneven = picked(&[0, 3, 7]).0;
        assert_eq!(uneven, [Op::IEqual, Op::Select, Op::IEqual, Op::Select]);
        // A select between a word and the same word is left out.
        assert_eq!(picked(&[4, 9, 9]).0, [Op::IEqual, Op::Select]);
    }

    #[test]
    fn no_opcode_below_kill_ends_an_invocation() {
        // `finish_pending` skips every instruction below `OpKill` without asking `ends_invocation`.
        for opcode in 0..Op::Kill as u32 {
            if let Some(op) = Op::from_u32(opcode) {
                let inst = Instruction::new(op, None, None, smallvec::smallvec![]);
                assert!(!ends_invocation(&inst), "{op:?}");
            }
        }
    }
}
