//! Deferred NaN records: what keeps the cost of compiling an instrumented module in proportion to the code
//! added.
//!
//! Drivers inline every function, so a record writer called from each site is compiled once per site; and a
//! writer is expensive to compile: llvmpipe (Mesa 22.3) turns every load, store and atomic through a device
//! address into a loop over the SIMD lanes, about twenty of them per record (the buffer header, three
//! atomics, seven header words and the payload), and LLVM's code generation grows with all that code. So a
//! NaN check that fires does not write its record where it fires: it keeps its payload words in `Private`
//! slots of its own and sets its bit in a `Private` pending mask (register work, no device address). A
//! *flush*, a call of a `bb_flush` function, writes the pending records later, in site order, with one
//! load, one atomic and one store through the device address in all (see [`Base::flush_function`]).
//!
//! In each function with deferred sites, a flush comes
//!
//! - before each return;
//! - at the end of each block that branches back to the header of a loop that contains such a site, so once
//!   per iteration (before the `OpLoopMerge` of a header that is its own continue target); and in the
//!   blocks that enter a loop that contains none, so that what was pending before a loop that never ends
//!   is written. Not in the header: a flush there (never run, its code only) made llvmpipe compute one of
//!   the generated shaders' 32-bit results with other bits (`gen28.comp`, `tests/integration/tests/
//!   generated.rs`), as a change of the code around a float operation may (SPIR-V lets a driver contract
//!   a multiply and an add where it likes); at the back edge its bits stay;
//! - before a call to a function that may end the invocation (`OpKill` and the like in it or in what it
//!   calls), and before each instruction that ends the invocation or makes it a helper (`OpKill`,
//!   `OpTerminateInvocation`, `OpDemoteToHelperInvocation`, `OpTerminateRayKHR`,
//!   `OpIgnoreIntersectionKHR` and their NV forms, `OpEmitMeshTasksEXT`).
//!
//! A forward data-flow over the function's blocks gives each of these points the sites that may be pending
//! there (fired since the last flush on some path); a point with none gets no flush, and each flush function
//! handles only its own sites, so its size follows them and not the module's.
//!
//! Every cycle of the control flow passes a back edge (a branch to a loop header from inside the loop), so
//! a site fires at most once between two flushes: one bit and one set of slots per site are enough, the
//! counts stay exact, and every firing still gets its record (up to the site's cap), as when records were
//! written on the spot. What changes is when: at the next flush point, a loop iteration or a function exit
//! away. A device fault (or an endless loop in a
//! function called in between) after a site and before that flush loses its record. A function's own flushes
//! write its own sites: a callee writes its sites before it returns, its caller's stay pending meanwhile. The
//! common path costs a `Private` bool tested at each flush.
//!
//! Asserts and printf write at once (`bb_begin`): an assert may crash the device right after its record, and
//! printf's records may be many. NaN sites beyond [`MAX_SITES`] or [`MAX_SLOT_WORDS`] write at once too.

use spirv::{LoopControl, Op, SelectionControl, StorageClass};

use super::builder::FnBuilder;
use super::helpers::BufferAccess;
use super::Base;
use crate::module::{Block, Function, Instruction, Module};
use crate::record::{header, RECORD_HEADER_WORDS, STAGE_SHIFT};
use crate::util::{FastMap, FastSet};

/// Deferred sites a module may have; NaN sites after them write their records at once.
pub(crate) const MAX_SITES: usize = 1024;
/// Payload words the deferred sites of a module keep, all together (each invocation holds them in
/// `Private` memory); NaN sites that do not fit write their records at once.
pub(crate) const MAX_SLOT_WORDS: u32 = 512;

const NO_SELECTION_CONTROL: u32 = SelectionControl::NONE.bits();
const NO_LOOP_CONTROL: u32 = LoopControl::NONE.bits();
const FUNCTION: u32 = StorageClass::Function as u32;
/// The memory operand that stores through the buffer's pointers need, and the alignment.
const ALIGNED_4: [u32; 2] = [spirv::MemoryAccess::ALIGNED.bits(), 4];

/// What an iteration of a flush's loop does: 0 to 3 read the buffer header's words.
#[derive(Clone, Copy)]
enum Phase {
    /// Look at the next site.
    Pick = 4,
    /// Count the site.
    Count = 5,
    /// Allocate its record.
    Alloc = 6,
    /// Count a record that did not fit.
    Drop = 7,
    /// Store a word of the record.
    Write = 8,
    /// Every site looked at.
    Done = 9,
}

/// A deferred site's record, as a flush writes it.
struct Entry {
    /// The record's first word without the stage: kind code and size.
    first: u32,
    /// The global site index.
    site: u32,
    /// Full records kept for the site.
    cap: u32,
    /// Where its payload words start in the slots.
    slot: u32,
    /// Payload words.
    words: u32,
}

/// The `Private` variables of deferred records.
#[derive(Clone, Copy)]
struct Vars {
    /// `bool`: some site may be pending.
    any: u32,
    /// `uint[]`: one bit per site.
    mask: u32,
    /// `uint[]`: the payload words of every site.
    slots: u32,
    /// Pointer to a `Private` `uint`.
    p_uint: u32,
}

/// The deferred sites of a module, and where they are.
#[derive(Default)]
pub(crate) struct Pending {
    entries: Vec<Entry>,
    slot_words: u32,
    vars: Option<Vars>,
    /// Functions, and blocks, that got a deferred site.
    functions: FastSet<u32>,
    blocks: FastSet<u32>,
    /// The sites each call placed in the module's functions may make pending, by the call's result id.
    calls: FastMap<u32, Vec<u32>>,
}

/// A set of deferred sites, one bit each.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
struct Sites(Vec<u64>);

impl Sites {
    fn insert(&mut self, i: u32) {
        let w = (i / 64) as usize;
        if self.0.len() <= w {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << (i % 64);
    }

    /// Adds `other`; whether that changed anything.
    fn add(&mut self, other: &Sites) -> bool {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        let mut changed = false;
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            changed |= *b & !*a != 0;
            *a |= b;
        }
        changed
    }

    /// The same set without trailing empty words (one spelling per set, for lookups).
    fn trimmed(mut self) -> Sites {
        while self.0.last() == Some(&0) {
            self.0.pop();
        }
        self
    }

    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// The sites, in order.
    fn members(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for (w, &bits) in self.0.iter().enumerate() {
            for b in 0..64 {
                if bits & (1 << b) != 0 {
                    out.push(w as u32 * 64 + b);
                }
            }
        }
        out
    }
}

impl Base<'_> {
    /// Makes a NaN site deferred when there is room: returns its index and the three constants of its
    /// helper call (mask word, first slot, bit). `kind_word` is the record kind shifted into place, `words`
    /// the payload size.
    pub(super) fn defer_site(
        &mut self,
        function: u32,
        kind_word: u32,
        site: u32,
        cap: u32,
        words: usize,
    ) -> Option<(u32, [u32; 3])> {
        let p = &mut self.pending;
        let words = words as u32;
        if p.entries.len() >= MAX_SITES || p.slot_words + words > MAX_SLOT_WORDS {
            return None;
        }
        let index = p.entries.len() as u32;
        let slot = p.slot_words;
        p.entries.push(Entry {
            first: kind_word | (RECORD_HEADER_WORDS as u32 + words),
            site,
            cap,
            slot,
            words,
        });
        p.slot_words += words;
        p.functions.insert(function);
        p.blocks.insert(self.current_block);
        let constants = [
            self.b.const_u32(index / 32),
            self.b.const_u32(slot),
            self.b.const_u32(1 << (index % 32)),
        ];
        Some((index, constants))
    }

    /// Notes that the call `call` (placed in the module's code) may make `sites` pending.
    pub(super) fn note_deferred_call(&mut self, call: u32, sites: Vec<u32>) {
        if !sites.is_empty() {
            self.pending.calls.insert(call, sites);
        }
    }

    /// The deferred sites the call `call` may make pending (none for a call of a site that writes at once).
    pub(super) fn deferred_sites_of(&self, call: u32) -> &[u32] {
        self.pending.calls.get(&call).map_or(&[], Vec::as_slice)
    }

    fn pending_vars(&mut self) -> Vars {
        if let Some(v) = self.pending.vars {
            return v;
        }
        let bool_t = self.b.type_bool();
        let uint = self.b.type_uint();
        let p_bool = self.b.type_pointer(StorageClass::Private, bool_t);
        let p_uint = self.b.type_pointer(StorageClass::Private, uint);
        let no = self.b.const_bool(false);
        let any = self.b.variable(p_bool, StorageClass::Private, Some(no));
        // The arrays' sizes are known once every site is made: their ids now, their declarations at the end.
        let v = Vars {
            any,
            mask: self.b.id(),
            slots: self.b.id(),
            p_uint,
        };
        self.pending.vars = Some(v);
        v
    }

    /// In a deferred value helper: keeps `payload` in the slots from `slot` on and marks the site pending.
    pub(super) fn mark_pending(
        &mut self,
        fb: &mut FnBuilder,
        [mask_word, slot, bit]: [u32; 3],
        payload: &[u32],
    ) {
        let v = self.pending_vars();
        let uint = self.b.type_uint();
        for (j, &w) in payload.iter().enumerate() {
            let index = if j == 0 {
                slot
            } else {
                let j = self.b.const_u32(j as u32);
                fb.op(&mut self.b, Op::IAdd, uint, &[slot, j])
            };
            let p = fb.op(&mut self.b, Op::AccessChain, v.p_uint, &[v.slots, index]);
            fb.op_void(Op::Store, &[p, w]);
        }
        let p = fb.op(&mut self.b, Op::AccessChain, v.p_uint, &[v.mask, mask_word]);
        let m = fb.op(&mut self.b, Op::Load, uint, &[p]);
        let set = fb.op(&mut self.b, Op::BitwiseOr, uint, &[m, bit]);
        fb.op_void(Op::Store, &[p, set]);
        let yes = self.b.const_bool(true);
        fb.op_void(Op::Store, &[v.any, yes]);
    }

    /// When the module has deferred sites: declares their variables and calls a flush at each flush point
    /// of the module's own functions that may have sites pending, one flush function per set of sites.
    /// Returns the variables (for the entry points' interfaces).
    pub(super) fn finish_pending(&mut self, module: &mut Module) -> Vec<u32> {
        let Some(v) = self.pending.vars else {
            return Vec::new();
        };
        let uint = self.b.type_uint();
        let n = self.pending.entries.len() as u32;
        let mask_t = self.b.new_array(uint, n.div_ceil(32));
        let p_mask = self.b.type_pointer(StorageClass::Private, mask_t);
        let clear = self.b.const_null(mask_t);
        self.b
            .variable_with_id(v.mask, p_mask, StorageClass::Private, Some(clear));
        // At least one word, for a module whose deferred sites have no payload.
        let slots_t = self.b.new_array(uint, self.pending.slot_words.max(1));
        let p_slots = self.b.type_pointer(StorageClass::Private, slots_t);
        self.b
            .variable_with_id(v.slots, p_slots, StorageClass::Private, None);

        let terminating = terminating_functions(module);
        let void = self.b.type_void();
        // Flush functions by site set: looked up only; made in the order of their first use.
        let mut flushes: FastMap<Sites, u32> = FastMap::default();
        for f in &mut module.functions {
            if !self.pending.functions.contains(&f.id()) {
                continue;
            }
            let points = flush_points(f, &self.pending, &terminating);
            let mut calls = Vec::with_capacity(points.len());
            for (bi, ii, sites) in points {
                let flush = match flushes.get(&sites) {
                    Some(&flush) => flush,
                    None => {
                        let flush = self.flush_function(v, &sites.members());
                        flushes.insert(sites, flush);
                        flush
                    }
                };
                calls.push((bi, ii, flush));
            }
            for &(bi, ii, flush) in calls.iter().rev() {
                let call = Instruction::new(
                    Op::FunctionCall,
                    Some(void),
                    Some(self.b.id()),
                    smallvec::smallvec![flush],
                );
                f.blocks[bi].instructions.insert(ii, call);
            }
        }
        vec![v.any, v.mask, v.slots]
    }

    /// A flush of the deferred sites `members` (indices, ascending): `void bb_flush()` writes the record of
    /// each that is pending, in order, and clears it. Each record as [`crate::record`] says: count the site;
    /// under its cap, allocate; write, or count a drop.
    ///
    /// Written as one loop that makes one access to the buffer per iteration, so that a flush has one load,
    /// one atomic and one store through the device address, however many sites it writes (each such
    /// instruction costs drivers like llvmpipe a loop over the SIMD lanes to compile). A `phase` says what an
    /// iteration does ([`Phase`]). A site's row (first word, site, cap, first slot) and its payload words are
    /// picked by `OpSelect` chains from constants and from its slots, loaded once: an indexed `Private`
    /// array costs more to compile.
    fn flush_function(&mut self, v: Vars, members: &[u32]) -> u32 {
        let void = self.b.type_void();
        let uint = self.b.type_uint();
        let bool_t = self.b.type_bool();
        let v4 = self.b.type_vector(uint, 4);
        let p_fn = self.b.type_pointer(StorageClass::Function, uint);
        let private = self.private_vars();
        let BufferAccess {
            address,
            struct_ptr,
            ..
        } = self.buffer();
        // Per member: its row (with its first slot among the members' slots), its slots, its mask word and
        // bit.
        let mut rows: Vec<[u32; 4]> = Vec::new();
        let mut slot_indices: Vec<u32> = Vec::new();
        for &m in members {
            let e = &self.pending.entries[m as usize];
            rows.push([e.first, e.site, e.cap, slot_indices.len() as u32]);
            slot_indices.extend(e.slot..e.slot + e.words);
        }
        let n = rows.len() as u32;
        let mut words_of: Vec<u32> = members.iter().map(|m| m / 32).collect();
        words_of.dedup();
        let all_words = self.pending.entries.len().div_ceil(32) as u32;
        let c = |b: &mut Base<'_>, w: u32| b.b.const_u32(w);
        let (zero, one) = (c(self, 0), c(self, 1));
        let (mut fb, id, _) = FnBuilder::new(&mut self.b, void, &[]);
        // The loop's state: what to do next, the next site, the header words read, and the record.
        let [phase, next, count, counters, records, capacity, k, size, base, first, site, cap, slot] =
            std::array::from_fn(|_| fb.op(&mut self.b, Op::Variable, p_fn, &[FUNCTION]));
        let header_vars = [count, counters, records, capacity];
        let [work, head, body, load, other, pick_site, access, write, join] =
            std::array::from_fn(|_| self.b.id());
        let [m_other, m_access, cont, done, end, took, m_took] =
            std::array::from_fn(|_| self.b.id());

        // if (bb_any)
        let any = fb.op(&mut self.b, Op::Load, bool_t, &[v.any]);
        fb.op_void(Op::SelectionMerge, &[end, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[any, work, end]);

        // Once: the invocation, the mask (cleared) and the slots.
        fb.block(work);
        let buf = fb.op(&mut self.b, Op::Bitcast, struct_ptr, &[address]);
        let stage = fb.op(&mut self.b, Op::Load, uint, &[private.stage]);
        let shift = c(self, STAGE_SHIFT);
        let stage_bits = fb.op(&mut self.b, Op::ShiftLeftLogical, uint, &[stage, shift]);
        let invocation = fb.op(&mut self.b, Op::Load, v4, &[private.invocation]);
        let inv: Vec<u32> = (0..4)
            .map(|k| fb.op(&mut self.b, Op::CompositeExtract, uint, &[invocation, k]))
            .collect();
        // The mask words: the members' bits cleared; `bb_any` stays set while other bits are.
        let mut before: FastMap<u32, u32> = FastMap::default();
        let mut left = None;
        for w in 0..all_words {
            let wc = c(self, w);
            let p = fb.op(&mut self.b, Op::AccessChain, v.p_uint, &[v.mask, wc]);
            let m = fb.op(&mut self.b, Op::Load, uint, &[p]);
            let rest = if words_of.contains(&w) {
                before.insert(w, m);
                let bits = members
                    .iter()
                    .filter(|&&i| i / 32 == w)
                    .fold(0u32, |acc, i| acc | 1 << (i % 32));
                let keep = c(self, !bits);
                let rest = fb.op(&mut self.b, Op::BitwiseAnd, uint, &[m, keep]);
                fb.op_void(Op::Store, &[p, rest]);
                rest
            } else {
                m
            };
            left = Some(match left {
                None => rest,
                Some(l) => fb.op(&mut self.b, Op::BitwiseOr, uint, &[l, rest]),
            });
        }
        if let Some(left) = left {
            let more = fb.op(&mut self.b, Op::INotEqual, bool_t, &[left, zero]);
            fb.op_void(Op::Store, &[v.any, more]);
        }
        let member_masks: Vec<u32> = members.iter().map(|m| before[&(m / 32)]).collect();
        let member_bits: Vec<u32> = members.iter().map(|m| c(self, 1 << (m % 32))).collect();
        let mut slots = Vec::new();
        for &j in &slot_indices {
            let j = c(self, j);
            let p = fb.op(&mut self.b, Op::AccessChain, v.p_uint, &[v.slots, j]);
            slots.push(fb.op(&mut self.b, Op::Load, uint, &[p]));
        }
        fb.op_void(Op::Store, &[phase, zero]);
        fb.op_void(Op::Store, &[next, zero]);
        fb.op_void(Op::Branch, &[head]);

        // while (phase != DONE)
        fb.block(head);
        let phase_v = fb.op(&mut self.b, Op::Load, uint, &[phase]);
        let done_c = c(self, Phase::Done as u32);
        let going = fb.op(&mut self.b, Op::INotEqual, bool_t, &[phase_v, done_c]);
        fb.op_void(Op::LoopMerge, &[done, cont, NO_LOOP_CONTROL]);
        fb.op_void(Op::BranchConditional, &[going, body, done]);

        // Phases 0..4: load header word COUNTER_COUNT, COUNTERS_OFFSET, RECORDS_OFFSET, RECORDS_CAPACITY.
        fb.block(body);
        let header_phases = c(self, Phase::Pick as u32);
        let loading = fb.op(
            &mut self.b,
            Op::ULessThan,
            bool_t,
            &[phase_v, header_phases],
        );
        fb.op_void(Op::SelectionMerge, &[join, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[loading, load, other]);
        fb.block(load);
        let words = [
            header::COUNTER_COUNT,
            header::COUNTERS_OFFSET,
            header::RECORDS_OFFSET,
            header::RECORDS_CAPACITY,
        ]
        .map(|w| c(self, w as u32));
        let word = pick(&mut fb, self, phase_v, &words, zero);
        let p = self.word_ptr(&mut fb, buf, word);
        let value = fb.op(
            &mut self.b,
            Op::Load,
            uint,
            &[p, ALIGNED_4[0], ALIGNED_4[1]],
        );
        for (h, &var) in header_vars.iter().enumerate() {
            let h = c(self, h as u32);
            let is_h = fb.op(&mut self.b, Op::IEqual, bool_t, &[phase_v, h]);
            let old = fb.op(&mut self.b, Op::Load, uint, &[var]);
            let new = fb.op(&mut self.b, Op::Select, uint, &[is_h, value, old]);
            fb.op_void(Op::Store, &[var, new]);
        }
        let phase1 = fb.op(&mut self.b, Op::IAdd, uint, &[phase_v, one]);
        fb.op_void(Op::Store, &[phase, phase1]);
        fb.op_void(Op::Branch, &[join]);

        fb.block(other);
        let pick_c = c(self, Phase::Pick as u32);
        let write_c = c(self, Phase::Write as u32);
        let is_pick = fb.op(&mut self.b, Op::IEqual, bool_t, &[phase_v, pick_c]);
        fb.op_void(Op::SelectionMerge, &[m_other, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[is_pick, pick_site, access]);

        // Pick: member `next` (DONE past the last); if it is pending and has a counter, count it next.
        fb.block(pick_site);
        let next_v = fb.op(&mut self.b, Op::Load, uint, &[next]);
        let next1 = fb.op(&mut self.b, Op::IAdd, uint, &[next_v, one]);
        fb.op_void(Op::Store, &[next, next1]);
        let mask = pick(&mut fb, self, next_v, &member_masks, zero);
        let bit = pick(&mut fb, self, next_v, &member_bits, zero);
        let set = fb.op(&mut self.b, Op::BitwiseAnd, uint, &[mask, bit]);
        let pending = fb.op(&mut self.b, Op::INotEqual, bool_t, &[set, zero]);
        let field = |fb: &mut FnBuilder, b: &mut Base<'_>, f: usize| {
            let column: Vec<u32> = rows.iter().map(|r| b.b.const_u32(r[f])).collect();
            pick(fb, b, next_v, &column, zero)
        };
        let first_n = field(&mut fb, self, 0);
        let site_n = field(&mut fb, self, 1);
        let cap_n = field(&mut fb, self, 2);
        let slot_n = field(&mut fb, self, 3);
        let size_mask = c(self, 0xFFFF);
        let size_n = fb.op(&mut self.b, Op::BitwiseAnd, uint, &[first_n, size_mask]);
        let first_s = fb.op(&mut self.b, Op::BitwiseOr, uint, &[first_n, stage_bits]);
        for (var, value) in [
            (first, first_s),
            (site, site_n),
            (cap, cap_n),
            (slot, slot_n),
            (size, size_n),
        ] {
            fb.op_void(Op::Store, &[var, value]);
        }
        let count_v = fb.op(&mut self.b, Op::Load, uint, &[count]);
        let counted = fb.op(&mut self.b, Op::ULessThan, bool_t, &[site_n, count_v]);
        let take = fb.op(&mut self.b, Op::LogicalAnd, bool_t, &[pending, counted]);
        let n_c = c(self, n);
        let past = fb.op(&mut self.b, Op::UGreaterThanEqual, bool_t, &[next_v, n_c]);
        let count_c = c(self, Phase::Count as u32);
        let then = fb.op(&mut self.b, Op::Select, uint, &[take, count_c, pick_c]);
        let then = fb.op(&mut self.b, Op::Select, uint, &[past, done_c, then]);
        fb.op_void(Op::Store, &[phase, then]);
        fb.op_void(Op::Branch, &[m_other]);

        // Count, Alloc, Drop (one atomic) and Write (one store).
        fb.block(access);
        let is_write = fb.op(&mut self.b, Op::IEqual, bool_t, &[phase_v, write_c]);
        fb.op_void(Op::SelectionMerge, &[m_access, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[is_write, write, took]);

        // Write: word k of the record (first, site, the invocation, 0, then the payload).
        fb.block(write);
        let k_v = fb.op(&mut self.b, Op::Load, uint, &[k]);
        let header_words = c(self, RECORD_HEADER_WORDS as u32);
        let slot_v = fb.op(&mut self.b, Op::Load, uint, &[slot]);
        let from = fb.op(&mut self.b, Op::ISub, uint, &[k_v, header_words]);
        let at_slot = fb.op(&mut self.b, Op::IAdd, uint, &[slot_v, from]);
        let mut value = pick(&mut fb, self, at_slot, &slots, zero);
        let first_v = fb.op(&mut self.b, Op::Load, uint, &[first]);
        let site_v = fb.op(&mut self.b, Op::Load, uint, &[site]);
        let header_word = [first_v, site_v, inv[0], inv[1], inv[2], inv[3], zero];
        for (h, &hw) in header_word.iter().enumerate().rev() {
            let h = c(self, h as u32);
            let is_h = fb.op(&mut self.b, Op::IEqual, bool_t, &[k_v, h]);
            value = fb.op(&mut self.b, Op::Select, uint, &[is_h, hw, value]);
        }
        let base_v = fb.op(&mut self.b, Op::Load, uint, &[base]);
        let index = fb.op(&mut self.b, Op::IAdd, uint, &[base_v, k_v]);
        let dst = self.word_ptr(&mut fb, buf, index);
        fb.op_void(Op::Store, &[dst, value, ALIGNED_4[0], ALIGNED_4[1]]);
        let k1 = fb.op(&mut self.b, Op::IAdd, uint, &[k_v, one]);
        fb.op_void(Op::Store, &[k, k1]);
        let size_v = fb.op(&mut self.b, Op::Load, uint, &[size]);
        let written = fb.op(&mut self.b, Op::UGreaterThanEqual, bool_t, &[k1, size_v]);
        let then = fb.op(&mut self.b, Op::Select, uint, &[written, pick_c, write_c]);
        fb.op_void(Op::Store, &[phase, then]);
        fb.op_void(Op::Branch, &[m_access]);

        // Count: counters[site] += 1; Alloc: cursor += size; Drop: dropped += 1.
        fb.block(took);
        let alloc_c = c(self, Phase::Alloc as u32);
        let is_count = fb.op(&mut self.b, Op::IEqual, bool_t, &[phase_v, count_c]);
        let is_alloc = fb.op(&mut self.b, Op::IEqual, bool_t, &[phase_v, alloc_c]);
        let counters_v = fb.op(&mut self.b, Op::Load, uint, &[counters]);
        let site_v = fb.op(&mut self.b, Op::Load, uint, &[site]);
        let counter = fb.op(&mut self.b, Op::IAdd, uint, &[counters_v, site_v]);
        let cursor = c(self, header::CURSOR as u32);
        let dropped = c(self, header::DROPPED as u32);
        let target = fb.op(&mut self.b, Op::Select, uint, &[is_alloc, cursor, dropped]);
        let target = fb.op(&mut self.b, Op::Select, uint, &[is_count, counter, target]);
        let size_v = fb.op(&mut self.b, Op::Load, uint, &[size]);
        let add = fb.op(&mut self.b, Op::Select, uint, &[is_alloc, size_v, one]);
        let p = self.word_ptr(&mut fb, buf, target);
        let old = self.atomic_add(&mut fb, p, add);
        // After Count: Alloc while under the cap, else Pick. After Alloc: Write when the record fits
        // (off + size <= capacity, without wrapping), else Drop. After Drop: Pick.
        let cap_v = fb.op(&mut self.b, Op::Load, uint, &[cap]);
        let below = fb.op(&mut self.b, Op::ULessThan, bool_t, &[old, cap_v]);
        let after_count = fb.op(&mut self.b, Op::Select, uint, &[below, alloc_c, pick_c]);
        let last = fb.op(&mut self.b, Op::IAdd, uint, &[old, size_v]);
        let capacity_v = fb.op(&mut self.b, Op::Load, uint, &[capacity]);
        let fits = fb.op(&mut self.b, Op::ULessThanEqual, bool_t, &[last, capacity_v]);
        let no_wrap = fb.op(&mut self.b, Op::UGreaterThanEqual, bool_t, &[last, old]);
        let ok = fb.op(&mut self.b, Op::LogicalAnd, bool_t, &[fits, no_wrap]);
        let drop_c = c(self, Phase::Drop as u32);
        let after_alloc = fb.op(&mut self.b, Op::Select, uint, &[ok, write_c, drop_c]);
        let then = fb.op(
            &mut self.b,
            Op::Select,
            uint,
            &[is_alloc, after_alloc, pick_c],
        );
        let then = fb.op(
            &mut self.b,
            Op::Select,
            uint,
            &[is_count, after_count, then],
        );
        fb.op_void(Op::Store, &[phase, then]);
        // An allocated record is written from word 0 at records_offset + off.
        let start_write = fb.op(&mut self.b, Op::LogicalAnd, bool_t, &[is_alloc, ok]);
        fb.op_void(Op::SelectionMerge, &[m_took, NO_SELECTION_CONTROL]);
        let write_from = self.b.id();
        fb.op_void(Op::BranchConditional, &[start_write, write_from, m_took]);
        fb.block(write_from);
        let records_v = fb.op(&mut self.b, Op::Load, uint, &[records]);
        let at = fb.op(&mut self.b, Op::IAdd, uint, &[records_v, old]);
        fb.op_void(Op::Store, &[base, at]);
        fb.op_void(Op::Store, &[k, zero]);
        fb.op_void(Op::Branch, &[m_took]);
        fb.block(m_took);
        fb.op_void(Op::Branch, &[m_access]);

        fb.block(m_access);
        fb.op_void(Op::Branch, &[m_other]);
        fb.block(m_other);
        fb.op_void(Op::Branch, &[join]);
        fb.block(join);
        fb.op_void(Op::Branch, &[cont]);
        fb.block(cont);
        fb.op_void(Op::Branch, &[head]);
        fb.block(done);
        fb.op_void(Op::Branch, &[end]);
        fb.block(end);
        fb.op_void(Op::Return, &[]);
        self.b.add_function(fb.finish());
        id
    }
}

/// `values[index]`, or `fallback` when `index` is past them, as a chain of `OpSelect`s (no indexed memory).
fn pick(fb: &mut FnBuilder, b: &mut Base<'_>, index: u32, values: &[u32], fallback: u32) -> u32 {
    let uint = b.b.type_uint();
    let bool_t = b.b.type_bool();
    let mut value = fallback;
    for (j, &w) in values.iter().enumerate().rev() {
        let j = b.b.const_u32(j as u32);
        let is_j = fb.op(&mut b.b, Op::IEqual, bool_t, &[index, j]);
        value = fb.op(&mut b.b, Op::Select, uint, &[is_j, w, value]);
    }
    value
}

/// Instructions after which the invocation writes nothing any more.
fn ends_invocation(op: Op) -> bool {
    matches!(
        op,
        Op::Kill
            | Op::TerminateInvocation
            | Op::DemoteToHelperInvocation
            | Op::TerminateRayKHR
            | Op::IgnoreIntersectionKHR
            | Op::TerminateRayNV
            | Op::IgnoreIntersectionNV
            | Op::EmitMeshTasksEXT
    )
}

/// The module's functions that may end the invocation: an instruction of [`ends_invocation`] in them or in
/// a function they call.
fn terminating_functions(module: &Module) -> FastSet<u32> {
    let mut set: FastSet<u32> = module
        .functions
        .iter()
        .filter(|f| instructions(f).any(|i| i.op().is_some_and(ends_invocation)))
        .map(Function::id)
        .collect();
    loop {
        let before = set.len();
        for f in &module.functions {
            if !set.contains(&f.id())
                && instructions(f).any(|i| {
                    i.is(Op::FunctionCall) && i.operand(0).is_some_and(|c| set.contains(&c))
                })
            {
                set.insert(f.id());
            }
        }
        if set.len() == before {
            return set;
        }
    }
}

fn instructions(f: &Function) -> impl Iterator<Item = &Instruction> {
    f.blocks.iter().flat_map(|b| b.instructions.iter())
}

/// The labels a block's terminator may branch to (an over-estimate for `OpSwitch`, whose literals are read
/// as labels too: callers keep only ids of the function's blocks).
fn successors(block: &Block) -> &[u32] {
    match block.instructions.last() {
        Some(t) if t.is(Op::Branch) => &t.operands[..t.operands.len().min(1)],
        Some(t) if t.is(Op::BranchConditional) => {
            &t.operands[1.min(t.operands.len())..t.operands.len().min(3)]
        }
        Some(t) if t.is(Op::Switch) => &t.operands[1.min(t.operands.len())..],
        _ => &[],
    }
}

/// The flush points of a function with deferred sites that may have sites pending, with those sites, as
/// (block index, index of the instruction the flush goes before, sites), in order (see the module docs).
fn flush_points(
    f: &Function,
    pending: &Pending,
    terminating: &FastSet<u32>,
) -> Vec<(usize, usize, Sites)> {
    let index: FastMap<u32, usize> = f
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| (b.id(), i))
        .collect();
    let succ: Vec<Vec<usize>> = f
        .blocks
        .iter()
        .map(|b| {
            successors(b)
                .iter()
                .filter_map(|s| index.get(s).copied())
                .collect()
        })
        .collect();
    // Where a flush may go, per block: before returns, before what ends the invocation or may, and for loops.
    let mut at: Vec<Vec<usize>> = vec![Vec::new(); f.blocks.len()];
    for (bi, block) in f.blocks.iter().enumerate() {
        for (ii, inst) in block.instructions.iter().enumerate() {
            let here = match inst.op() {
                Some(Op::Return | Op::ReturnValue) => true,
                Some(Op::FunctionCall) => inst.operand(0).is_some_and(|c| terminating.contains(&c)),
                Some(op) => ends_invocation(op),
                None => false,
            };
            if here {
                at[bi].push(ii);
            }
        }
    }
    for (hi, header) in f.blocks.iter().enumerate() {
        let Some(merge_at) = header.instructions.iter().position(|i| i.is(Op::LoopMerge)) else {
            continue;
        };
        let Some(merge) = header.instructions[merge_at]
            .operand(0)
            .and_then(|m| index.get(&m).copied())
        else {
            continue;
        };
        // The loop's blocks: those reached from the header without passing its merge block.
        let mut inside = vec![false; f.blocks.len()];
        inside[hi] = true;
        let mut todo = vec![hi];
        while let Some(b) = todo.pop() {
            for &s in &succ[b] {
                if s != merge && !inside[s] {
                    inside[s] = true;
                    todo.push(s);
                }
            }
        }
        let has_sites =
            (0..f.blocks.len()).any(|b| inside[b] && pending.blocks.contains(&f.blocks[b].id()));
        // A loop with sites: a flush at the end of each block that branches back to the header (once per
        // iteration; the header itself when it is its own continue target). A loop without: one in each
        // block that enters it.
        for (pi, pred) in f.blocks.iter().enumerate() {
            if inside[pi] != has_sites || !succ[pi].contains(&hi) {
                continue;
            }
            if pi == hi {
                at[hi].push(merge_at);
                continue;
            }
            let n = pred.instructions.len();
            let merge_first = n >= 2
                && (pred.instructions[n - 2].is(Op::SelectionMerge)
                    || pred.instructions[n - 2].is(Op::LoopMerge));
            at[pi].push(if merge_first {
                n - 2
            } else {
                n.saturating_sub(1)
            });
        }
    }
    for points in &mut at {
        points.sort_unstable();
        points.dedup();
    }
    // Forward data-flow: the sites that may be pending at each point (fired since the last flush).
    let mut entry: Vec<Sites> = vec![Sites::default(); f.blocks.len()];
    let mut found: FastMap<(usize, usize), Sites> = FastMap::default();
    let mut todo: std::collections::VecDeque<usize> = (0..f.blocks.len()).collect();
    let mut queued = vec![true; f.blocks.len()];
    while let Some(b) = todo.pop_front() {
        queued[b] = false;
        let mut state = entry[b].clone();
        let mut points = at[b].iter().peekable();
        for (ii, inst) in f.blocks[b].instructions.iter().enumerate() {
            if points.next_if(|&&p| p == ii).is_some() {
                found.entry((b, ii)).or_default().add(&state);
                state = Sites::default();
            }
            if let Some(call) = inst.result_id.filter(|_| inst.is(Op::FunctionCall)) {
                for &s in pending.calls.get(&call).map_or(&[][..], Vec::as_slice) {
                    state.insert(s);
                }
            }
        }
        for &s in &succ[b] {
            if entry[s].add(&state) && !queued[s] {
                queued[s] = true;
                todo.push_back(s);
            }
        }
    }
    let mut out = Vec::new();
    for (bi, points) in at.iter().enumerate() {
        for &ii in points {
            if let Some(sites) = found.get(&(bi, ii)).filter(|s| !s.is_empty()) {
                out.push((bi, ii, sites.clone().trimmed()));
            }
        }
    }
    out
}
