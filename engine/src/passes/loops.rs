//! Loop budgets: every structured loop (each `OpLoopMerge` header) counts its iterations per invocation,
//! and an invocation that passes the budget records once (`report`) and, at `break`, leaves the loop.
//!
//! # What is added to a loop
//!
//! - **A counter**, an `OpPhi` at the top of the header: 0 from every block that enters the loop, `count + 1`
//!   (computed in the header) from every back-edge block. It counts the iterations this invocation has
//!   completed since it entered the loop, and starts again from 0 at each entry. A phi is valid for every
//!   structured shape: a continue target that is the header itself, headers with phis of their own (after
//!   `spirv-opt`), several entering blocks, an unreachable continue target.
//! - **One call per iteration**, at the end of the header (before `OpLoopMerge`), of the loop's helper
//!   `bb_loop(count, values...)`. The helper holds every conditional, so in `report` mode the loop's own
//!   blocks keep their control flow; drivers inline it to a compare and a branch on the common path. When
//!   `count` reaches [`crate::Options::loop_limit`] (or, with [`crate::Options::loop_clock`], at every
//!   [`CLOCK_INTERVAL`]-th iteration, when the invocation has run past its time budget), the helper records,
//!   once per invocation and loop (a `Private` flag per loop), the payload of [`crate::record`]'s loop
//!   records: iterations so far, the reason, the clock ticks elapsed, and the loop's induction values.
//! - **At `break`**: the helper also sets a `Private` stop flag and returns it, and the header's branch
//!   leaves for the merge block while the flag is set. Every loop tests the same flag, so the loops around
//!   the one that hit its budget exit too, at their next iteration (and a loop the invocation enters later
//!   runs one header pass). See [`LoopPass::finish`] for how each header shape is rewritten.
//!
//! # Induction values
//!
//! Recorded after the three fixed values, at most [`MAX_VALUES`] of them (scalars and vectors up to four
//! words), in this order:
//!
//! 1. the values the loop's exit conditions are computed from: the condition of each conditional branch to
//!    the merge block from the header, from the blocks the header reaches by unconditional branches, and
//!    from the back-edge blocks, followed through arithmetic, comparisons, logic and conversions to the
//!    header's phis and to loads of `Function`/`Private` variables and pointer parameters (the induction
//!    variables of unoptimized code: `i` in `for (int i = 0; i < n; ++i)`, loaded again in the header);
//! 2. the variables stored in the continue construct (`++i`);
//! 3. the header's other integer scalar phis fed from a back edge (the counters of optimized code).
//!
//! Each is named after its `OpName` (`i`), else `%<id>`; a name that is one of the three fixed values
//! (`iterations`) gets ` %<id>` after it.

use spirv::{Op, SelectionControl, StorageClass};

use super::cfg::{targets, Cfg, Loop};
use crate::analysis::disasm::id_positions;
use crate::analysis::Type;
use crate::base::builder::{Builder, FnBuilder};
use crate::base::values::shape;
use crate::base::{At, Base, Edit, HelperKind, Pass};
use crate::error::NotInstrumented;
use crate::info::SiteKind;
use crate::module::{Block, Function, Instruction, Module};
use crate::record::{LOOP_REASON_ITERATIONS, LOOP_REASON_TIME};
use crate::util::{FastMap, FastSet};
use crate::{LoopClock, LoopMode, Options};

/// With a clock, the helper reads it at every this many iterations (a power of two).
pub(crate) const CLOCK_INTERVAL: u32 = 256;

/// The largest number of induction values recorded per loop.
pub(crate) const MAX_VALUES: usize = 8;

/// The largest value recorded as an induction value, in payload words.
const MAX_VALUE_WORDS: usize = 4;

/// The names of the values every loop record starts with (see [`crate::record`]).
const FIXED_VALUES: [&str; 3] = ["iterations", "reason", "elapsed ticks"];

/// How far the condition of an exit is followed back to its sources.
const MAX_WALK: usize = 64;

const NO_SELECTION_CONTROL: u32 = SelectionControl::NONE.bits();

/// An induction value, as found before the pass runs.
#[derive(Clone, Debug)]
enum Value {
    /// A phi of the header.
    Phi { id: u32, name: String },
    /// A variable (or pointer parameter) to load in the header.
    Var { pointer: u32, ty: u32, name: String },
}

/// A loop found before the pass runs.
struct Found {
    info: Loop,
    values: Vec<Value>,
}

/// A loop the pass instrumented, for [`LoopPass::finish`].
struct Done {
    function: u32,
    info: Loop,
    /// The counter phi's id and the `count + 1` id.
    count: u32,
    next: u32,
    /// At `break`: the helper call's result, the stop flag.
    stop: Option<u32>,
}

/// The loop pass.
pub(crate) struct LoopPass {
    mode: LoopMode,
    limit: u32,
    clock: Option<LoopClock>,
    /// Loops by (function, merge block): a merge block belongs to one construct.
    found: FastMap<(u32, u32), Found>,
    done: Vec<Done>,
    /// `Private` variables made (stop flag, clock start, recorded flags), for the entry points' interfaces.
    privates: Vec<u32>,
    stop: Option<u32>,
    clock_start: Option<u32>,
}

impl LoopPass {
    /// The pass for `module`; finds its loops when `options.loops` is on (nothing otherwise).
    pub(crate) fn new(module: &Module, base: &Base<'_>, options: &Options) -> LoopPass {
        let mut pass = LoopPass {
            mode: options.loops,
            limit: options.loop_limit,
            clock: options.loop_clock,
            found: FastMap::default(),
            done: Vec::new(),
            privates: Vec::new(),
            stop: None,
            clock_start: None,
        };
        if pass.mode == LoopMode::Off {
            return pass;
        }
        for f in &module.functions {
            let cfg = Cfg::new(&base.an, &base.b.types, f);
            for info in cfg.loops.iter().cloned() {
                let values = induction_values(base, f, &cfg, &info);
                pass.found
                    .insert((f.id(), info.merge), Found { info, values });
            }
        }
        pass
    }

    fn private(&mut self, base: &mut Base<'_>, ty: u32, init: u32) -> u32 {
        let ptr = base.b.type_pointer(StorageClass::Private, ty);
        let var = base.b.variable(ptr, StorageClass::Private, Some(init));
        self.privates.push(var);
        var
    }

    fn stop_flag(&mut self, base: &mut Base<'_>) -> u32 {
        if let Some(v) = self.stop {
            return v;
        }
        let bool_t = base.b.type_bool();
        let f = base.b.const_null(bool_t);
        let v = self.private(base, bool_t, f);
        self.stop = Some(v);
        v
    }

    fn clock_start(&mut self, base: &mut Base<'_>) -> u32 {
        if let Some(v) = self.clock_start {
            return v;
        }
        let uint = base.b.type_uint();
        let v2 = base.b.type_vector(uint, 2);
        let zero = base.b.const_null(v2);
        let v = self.private(base, v2, zero);
        self.clock_start = Some(v);
        v
    }

    /// Builds the loop's helper (and its site): `bool|void bb_loop(uint count, T0 v0, ...)`, returning the
    /// stop flag at `break`.
    fn helper(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        info: &Loop,
        values: &[(String, u32)],
    ) -> Result<u32, NotInstrumented> {
        let uint = base.b.type_uint();
        let bool_t = base.b.type_bool();
        let v2 = base.b.type_vector(uint, 2);
        let brk = self.mode == LoopMode::Break;
        let ret = if brk { bool_t } else { base.b.type_void() };
        let mut types = vec![uint];
        for (_, v) in values {
            types.push(
                base.an
                    .type_of(*v)
                    .ok_or_else(|| NotInstrumented::malformed(format!("value %{v} has no type")))?,
            );
        }
        let (mut fb, id, params) = FnBuilder::new(&mut base.b, ret, &types);
        for (&p, &t) in params.iter().zip(&types) {
            base.an.set_type(p, t);
        }
        let count = params[0];
        let no = base.b.const_null(bool_t);
        let yes = base.b.constant(Op::ConstantTrue, bool_t, &[]);
        let at_limit = if self.limit > 0 {
            let limit = base.b.const_u32(self.limit);
            fb.op(&mut base.b, Op::IEqual, bool_t, &[count, limit])
        } else {
            no
        };
        let check = match self.clock {
            Some(_) => {
                let mask = base.b.const_u32(CLOCK_INTERVAL - 1);
                let low = fb.op(&mut base.b, Op::BitwiseAnd, uint, &[count, mask]);
                let tick = fb.op(&mut base.b, Op::IEqual, bool_t, &[low, mask]);
                fb.op(&mut base.b, Op::LogicalOr, bool_t, &[at_limit, tick])
            }
            None => at_limit,
        };
        let (slow, done) = (base.b.id(), base.b.id());
        fb.op_void(Op::SelectionMerge, &[done, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[check, slow, done]);
        fb.block(slow);
        let (fire, reason, elapsed) = match self.clock {
            Some(clock) => self.read_clock(base, &mut fb, clock, at_limit)?,
            None => {
                let reason = base.b.const_u32(LOOP_REASON_ITERATIONS);
                (None, reason, base.b.const_null(v2))
            }
        };
        base.an.set_type(reason, uint);
        base.an.set_type(elapsed, v2);
        let fired = base.b.id();
        if let Some(fire) = fire {
            let firing = base.b.id();
            fb.op_void(Op::SelectionMerge, &[fired, NO_SELECTION_CONTROL]);
            fb.op_void(Op::BranchConditional, &[fire, firing, fired]);
            fb.block(firing);
        }
        // Once per invocation and loop.
        let recorded = self.private(base, bool_t, no);
        let was = fb.op(&mut base.b, Op::Load, bool_t, &[recorded]);
        let (write, written) = (base.b.id(), base.b.id());
        fb.op_void(Op::SelectionMerge, &[written, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[was, written, write]);
        fb.block(write);
        fb.op_void(Op::Store, &[recorded, yes]);
        let mut payload = vec![
            (FIXED_VALUES[0].to_string(), count),
            (FIXED_VALUES[1].to_string(), reason),
            (FIXED_VALUES[2].to_string(), elapsed),
        ];
        payload.extend(
            values
                .iter()
                .zip(&params[1..])
                .map(|((name, _), &p)| (name.clone(), p)),
        );
        let kind = SiteKind::LoopBudget {
            header: info.header,
            depth: info.depth,
        };
        let call = base.site(at, kind, None, payload, HelperKind::Record, None)?;
        for inst in call.unwrap_or_default() {
            fb.push(inst);
        }
        fb.op_void(Op::Branch, &[written]);
        fb.block(written);
        if brk {
            let stop = self.stop_flag(base);
            fb.op_void(Op::Store, &[stop, yes]);
        }
        if fire.is_some() {
            fb.op_void(Op::Branch, &[fired]);
            fb.block(fired);
        }
        fb.op_void(Op::Branch, &[done]);
        fb.block(done);
        if brk {
            let stop = self.stop_flag(base);
            let s = fb.op(&mut base.b, Op::Load, bool_t, &[stop]);
            fb.op_void(Op::ReturnValue, &[s]);
        } else {
            fb.op_void(Op::Return, &[]);
        }
        base.b.add_function(fb.finish());
        Ok(id)
    }

    /// The clock part of a loop helper's slow path: reads the clock; the first reading of the invocation
    /// becomes its start, later ones compare the ticks since then with the budget. Returns whether to fire
    /// (at the limit or past the budget), the reason bits and the elapsed ticks (`uvec2`, low word first).
    fn read_clock(
        &mut self,
        base: &mut Base<'_>,
        fb: &mut FnBuilder,
        clock: LoopClock,
        at_limit: u32,
    ) -> Result<(Option<u32>, u32, u32), NotInstrumented> {
        let uint = base.b.type_uint();
        let bool_t = base.b.type_bool();
        let v2 = base.b.type_vector(uint, 2);
        let bv2 = base.b.type_vector(bool_t, 2);
        let zero = base.b.const_u32(0);
        let one = base.b.const_u32(1);
        let no = base.b.const_null(bool_t);
        let zero2 = base.b.const_null(v2);
        let scope = base.b.const_u32(clock.scope.spirv() as u32);
        let start_var = self.clock_start(base);
        let b = &mut base.b;
        let now = fb.op(b, Op::ReadClockKHR, v2, &[scope]);
        let start = fb.op(b, Op::Load, v2, &[start_var]);
        let eq = fb.op(b, Op::IEqual, bv2, &[start, zero2]);
        let unset = fb.op(b, Op::All, bool_t, &[eq]);
        let (first, measure, timed) = (b.id(), b.id(), b.id());
        fb.op_void(Op::SelectionMerge, &[timed, NO_SELECTION_CONTROL]);
        fb.op_void(Op::BranchConditional, &[unset, first, measure]);
        fb.block(first);
        fb.op_void(Op::Store, &[start_var, now]);
        fb.op_void(Op::Branch, &[timed]);
        fb.block(measure);
        let now_lo = fb.op(b, Op::CompositeExtract, uint, &[now, 0]);
        let now_hi = fb.op(b, Op::CompositeExtract, uint, &[now, 1]);
        let start_lo = fb.op(b, Op::CompositeExtract, uint, &[start, 0]);
        let start_hi = fb.op(b, Op::CompositeExtract, uint, &[start, 1]);
        let lo = fb.op(b, Op::ISub, uint, &[now_lo, start_lo]);
        let borrow = fb.op(b, Op::ULessThan, bool_t, &[now_lo, start_lo]);
        let borrow = fb.op(b, Op::Select, uint, &[borrow, one, zero]);
        let hi = fb.op(b, Op::ISub, uint, &[now_hi, start_hi]);
        let hi = fb.op(b, Op::ISub, uint, &[hi, borrow]);
        let el = fb.op(b, Op::CompositeConstruct, v2, &[lo, hi]);
        let budget_lo = b.const_u32(clock.budget_ticks as u32);
        let budget_hi = b.const_u32((clock.budget_ticks >> 32) as u32);
        let above_hi = fb.op(b, Op::UGreaterThan, bool_t, &[hi, budget_hi]);
        let same_hi = fb.op(b, Op::IEqual, bool_t, &[hi, budget_hi]);
        let above_lo = fb.op(b, Op::UGreaterThan, bool_t, &[lo, budget_lo]);
        let above_lo = fb.op(b, Op::LogicalAnd, bool_t, &[same_hi, above_lo]);
        let over = fb.op(b, Op::LogicalOr, bool_t, &[above_hi, above_lo]);
        fb.op_void(Op::Branch, &[timed]);
        fb.block(timed);
        let elapsed = fb.op(b, Op::Phi, v2, &[zero2, first, el, measure]);
        let over = fb.op(b, Op::Phi, bool_t, &[no, first, over, measure]);
        let fire = fb.op(b, Op::LogicalOr, bool_t, &[at_limit, over]);
        let iterations = b.const_u32(LOOP_REASON_ITERATIONS);
        let time = b.const_u32(LOOP_REASON_TIME);
        let r1 = fb.op(b, Op::Select, uint, &[at_limit, iterations, zero]);
        let r2 = fb.op(b, Op::Select, uint, &[over, time, zero]);
        let reason = fb.op(b, Op::BitwiseOr, uint, &[r1, r2]);
        Ok((Some(fire), reason, elapsed))
    }
}

impl Pass for LoopPass {
    fn visit(
        &mut self,
        base: &mut Base<'_>,
        at: &At<'_>,
        inst: &Instruction,
    ) -> Result<Edit, NotInstrumented> {
        if self.mode == LoopMode::Off || !inst.is(Op::LoopMerge) {
            return Ok(Edit::Keep);
        }
        let Some(merge) = inst.operand(0) else {
            return Ok(Edit::Keep);
        };
        let Some(found) = self.found.remove(&(at.function, merge)) else {
            return Ok(Edit::Keep);
        };
        let uint = base.b.type_uint();
        let one = base.b.const_u32(1);
        let mut out = Vec::new();
        let count = base.b.id();
        base.an.set_type(count, uint);
        let next = base.b.id();
        out.push(Instruction::new(
            Op::IAdd,
            Some(uint),
            Some(next),
            smallvec::smallvec![count, one],
        ));
        let mut values = Vec::new();
        for v in &found.values {
            match v {
                Value::Phi { id, name } => values.push((name.clone(), *id)),
                Value::Var { pointer, ty, name } => {
                    let id = base.b.id();
                    out.push(Instruction::new(
                        Op::Load,
                        Some(*ty),
                        Some(id),
                        smallvec::smallvec![*pointer],
                    ));
                    base.an.set_type(id, *ty);
                    values.push((name.clone(), id));
                }
            }
        }
        let helper = self.helper(base, at, &found.info, &values)?;
        let ret = if self.mode == LoopMode::Break {
            base.b.type_bool()
        } else {
            base.b.type_void()
        };
        let result = base.b.id();
        let mut operands = vec![helper, count];
        operands.extend(values.iter().map(|(_, id)| *id));
        out.push(Instruction::new(
            Op::FunctionCall,
            Some(ret),
            Some(result),
            operands,
        ));
        out.push(inst.clone());
        self.done.push(Done {
            function: at.function,
            info: found.info,
            count,
            next,
            stop: (self.mode == LoopMode::Break).then_some(result),
        });
        Ok(Edit::Replace(out))
    }

    /// Off: no counters.
    fn active(&self, _base: &Base<'_>) -> bool {
        self.mode != LoopMode::Off
    }
}

impl LoopPass {
    /// After the walk: puts each counter's phi at the top of its header and, at `break`, rewrites the
    /// header's branch so that it leaves for the merge block while the stop flag `s` is set:
    ///
    /// - `OpBranch %X` becomes `OpBranchConditional %s %merge %X`;
    /// - `OpBranchConditional %c %X %merge` becomes `(%c && !%s) ? %X : %merge`, and `%c %merge %X`
    ///   becomes `(%c || %s) ? %merge : %X`;
    /// - `OpBranchConditional %c %X %continue` (and `%c %continue %X`) sends the `%X` side through a new
    ///   block `OpBranchConditional %s %merge %X`: a branch to the merge block is a break, valid without a
    ///   merge instruction of its own, while a loop header's conditional branch must keep one target the
    ///   merge block or the continue target;
    /// - a header that can newly reach the merge block gives each `OpPhi` there a null value for the new
    ///   edge, and a merge block that was `OpUnreachable` (an endless loop's) returns instead (a null
    ///   value, in a function that returns one);
    /// - a value the loop's body defines and code after the loop uses (NIR's loops, `loop { body; if (c)
    ///   break; }`, which zink's shaders are made of: the body dominated the merge block until the header's
    ///   new edge) reaches its uses through a new phi at the top of the merge block, the value from the old
    ///   edges and a null value from the new one.
    ///
    /// A loop whose merge block has a phi of a type without a null constant (a pointer), whose function
    /// returns one, or whose body defines one that is used after the loop (or a value used there by an
    /// instruction whose ids the grammar cannot tell from literals), keeps its branch: it records but does
    /// not break. Then declares what the helpers use:
    /// the `Private` variables in the entry points' interfaces (SPIR-V 1.4 and later), and, with a clock,
    /// `ShaderClockKHR` and `SPV_KHR_shader_clock`.
    pub(crate) fn finish(self, base: &mut Base<'_>, module: &mut Module) {
        if self.done.is_empty() {
            return;
        }
        let uint = base.b.type_uint();
        let zero = base.b.const_u32(0);
        for d in &self.done {
            let Some(f) = module.functions.iter_mut().find(|f| f.id() == d.function) else {
                continue;
            };
            let Some(h) = f.blocks.iter().position(|b| b.id() == d.info.header) else {
                continue;
            };
            let mut phi = smallvec::SmallVec::<[u32; 5]>::new();
            for &(pred, back) in &d.info.preds {
                phi.push(if back { d.next } else { zero });
                phi.push(pred);
            }
            f.blocks[h]
                .instructions
                .insert(0, Instruction::new(Op::Phi, Some(uint), Some(d.count), phi));
            if let Some(stop) = d.stop {
                break_out(base, f, h, &d.info, stop);
            }
        }
        if module.version() >= (1, 4) {
            for ep in &mut module.entry_points {
                add_interface(ep, &self.privates);
            }
        }
        if self.clock.is_some() {
            let capability = spirv::Capability::ShaderClockKHR;
            if !module.has_capability(capability) {
                module.capabilities.push(Instruction::new(
                    Op::Capability,
                    None,
                    None,
                    smallvec::smallvec![capability as u32],
                ));
            }
            let ext = "SPV_KHR_shader_clock";
            if !module
                .extensions
                .iter()
                .any(|e| crate::util::string_is(&e.operands, ext))
            {
                module.extensions.push(Instruction::new(
                    Op::Extension,
                    None,
                    None,
                    crate::module::encode_string(ext),
                ));
            }
        }
    }
}

/// Adds ids to an `OpEntryPoint`'s interface, skipping those already there.
fn add_interface(entry_point: &mut Instruction, ids: &[u32]) {
    let name_words = entry_point
        .operands
        .get(2..)
        .map_or(0, crate::util::string_words);
    let start = (2 + name_words).min(entry_point.operands.len());
    for &id in ids {
        if !entry_point.operands[start..].contains(&id) {
            entry_point.operands.push(id);
        }
    }
}

/// A null constant of `ty`, for the types that have one here (numbers, bools, their vectors and matrices,
/// arrays and structs of them).
fn null_of(base: &mut Base<'_>, ty: u32, depth: usize) -> Option<u32> {
    let ok = nullable(base, ty, depth);
    ok.then(|| base.b.const_null(ty))
}

fn nullable(base: &Base<'_>, ty: u32, depth: usize) -> bool {
    if depth > 8 {
        return false;
    }
    match base.b.types.get(ty) {
        Some(
            Type::Bool
            | Type::Int { .. }
            | Type::Float { .. }
            | Type::Vector { .. }
            | Type::Matrix { .. },
        ) => true,
        Some(Type::Array { element, .. }) => nullable(base, *element, depth + 1),
        Some(Type::Struct { members }) => base
            .b
            .types
            .members(*members)
            .iter()
            .all(|&m| nullable(base, m, depth + 1)),
        _ => false,
    }
}

/// The `break` rewrite of one loop's header branch (see [`LoopPass::finish`]).
fn break_out(base: &mut Base<'_>, f: &mut Function, h: usize, info: &Loop, stop: u32) {
    let merge = info.merge;
    let Some(term) = f.blocks[h].instructions.last().cloned() else {
        return;
    };
    let Some(m) = f.blocks.iter().position(|b| b.id() == merge) else {
        return;
    };
    // What the merge block needs first: null values for its phis, a return for an OpUnreachable.
    let mut phi_nulls = Vec::new();
    for inst in &f.blocks[m].instructions {
        if !inst.is(Op::Phi) {
            continue;
        }
        let Some(ty) = inst.result_type else { return };
        let Some(null) = null_of(base, ty, 0) else {
            return;
        };
        phi_nulls.push(null);
    }
    let unreachable = f.blocks[m]
        .instructions
        .last()
        .is_some_and(|t| t.is(Op::Unreachable));
    let ret = if unreachable {
        let Some(ret_ty) = f.def.result_type else {
            return;
        };
        if matches!(base.b.types.get(ret_ty), Some(Type::Void)) {
            Some(Instruction::new(
                Op::Return,
                None,
                None,
                smallvec::smallvec![],
            ))
        } else {
            let Some(null) = null_of(base, ret_ty, 0) else {
                return;
            };
            Some(Instruction::new(
                Op::ReturnValue,
                None,
                None,
                smallvec::smallvec![null],
            ))
        }
    } else {
        None
    };
    let header = info.header;
    let o = term.operands.clone();
    // The new terminator, instructions before it, the blocks that newly branch to the merge block, and a
    // gate block (with the target whose phis now come from it).
    let mut before = Vec::new();
    let mut new_preds = Vec::new();
    let mut gate: Option<(Block, u32)> = None;
    let new_term = match term.op() {
        Some(Op::Branch) if o.first() == Some(&merge) => return,
        Some(Op::Branch) => {
            let Some(&x) = o.first() else { return };
            new_preds.push(header);
            Instruction::new(
                Op::BranchConditional,
                None,
                None,
                smallvec::smallvec![stop, merge, x],
            )
        }
        Some(Op::BranchConditional) if o.len() >= 3 => {
            let (c, a, b) = (o[0], o[1], o[2]);
            let weights = &o[3..];
            let branch = |c: u32, t: u32, e: u32| {
                let mut ops: smallvec::SmallVec<[u32; 5]> = smallvec::smallvec![c, t, e];
                ops.extend_from_slice(weights);
                Instruction::new(Op::BranchConditional, None, None, ops)
            };
            let b_ = &mut base.b;
            if a == b {
                if a == merge {
                    return;
                }
                new_preds.push(header);
                Instruction::new(
                    Op::BranchConditional,
                    None,
                    None,
                    smallvec::smallvec![stop, merge, a],
                )
            } else if a == merge {
                branch(logic(b_, &mut before, Op::LogicalOr, &[c, stop]), a, b)
            } else if b == merge {
                let go = logic(b_, &mut before, Op::LogicalNot, &[stop]);
                branch(logic(b_, &mut before, Op::LogicalAnd, &[c, go]), a, b)
            } else if a == info.continue_target || b == info.continue_target {
                let g = b_.id();
                let (other, t) = if b == info.continue_target {
                    let leave = logic(b_, &mut before, Op::LogicalOr, &[c, stop]);
                    (a, branch(leave, g, b))
                } else {
                    let go = logic(b_, &mut before, Op::LogicalNot, &[stop]);
                    let stay = logic(b_, &mut before, Op::LogicalAnd, &[c, go]);
                    (b, branch(stay, a, g))
                };
                new_preds.push(g);
                gate = Some((
                    Block {
                        label: Instruction::new(Op::Label, None, Some(g), smallvec::smallvec![]),
                        instructions: vec![Instruction::new(
                            Op::BranchConditional,
                            None,
                            None,
                            smallvec::smallvec![stop, merge, other],
                        )],
                    },
                    other,
                ));
                t
            } else {
                return;
            }
        }
        _ => return,
    };
    // Values the loop's body defines and code after the loop uses: the body dominated the merge block,
    // and the new edge from the header does not pass it. Each gets a phi at the top of the merge block
    // (itself from the old edges, a null value from the new ones), and the uses after the loop take it.
    let Some(escaping) = escaping_values(f, info) else {
        return;
    };
    let old_preds: Vec<u32> = if escaping.is_empty() {
        Vec::new()
    } else {
        f.blocks
            .iter()
            .filter(|b| {
                b.instructions
                    .last()
                    .is_some_and(|t| targets(&base.an, &base.b.types, t).contains(&merge))
            })
            .map(Block::id)
            .collect()
    };
    let mut escaping_phis = Vec::with_capacity(escaping.len());
    let mut renamed: FastMap<u32, u32> = FastMap::default();
    for &(value, ty) in &escaping {
        let Some(null) = null_of(base, ty, 0) else {
            return;
        };
        let phi = base.b.id();
        let mut operands = smallvec::SmallVec::<[u32; 5]>::new();
        for &p in &old_preds {
            operands.extend_from_slice(&[value, p]);
        }
        for &p in &new_preds {
            operands.extend_from_slice(&[null, p]);
        }
        escaping_phis.push(Instruction::new(Op::Phi, Some(ty), Some(phi), operands));
        renamed.insert(value, phi);
    }
    // Apply: the header's branch (conditions before the OpLoopMerge), the gate, the merge block.
    let insts = &mut f.blocks[h].instructions;
    let at = insts
        .iter()
        .rposition(|i| i.is(Op::LoopMerge))
        .unwrap_or(insts.len().saturating_sub(1));
    let n = insts.len();
    insts[n - 1] = new_term;
    for (k, inst) in before.into_iter().enumerate() {
        insts.insert(at + k, inst);
    }
    if let Some((block, other)) = gate {
        let g = block.id();
        if let Some(target) = f.blocks.iter_mut().find(|b| b.id() == other) {
            for inst in target.instructions.iter_mut().filter(|i| i.is(Op::Phi)) {
                for pair in inst.operands.chunks_mut(2) {
                    if pair.len() == 2 && pair[1] == header {
                        pair[1] = g;
                    }
                }
            }
        }
        f.blocks.insert(h + 1, block);
    }
    let Some(m) = f.blocks.iter().position(|b| b.id() == merge) else {
        return;
    };
    let already: FastSet<u32> = f.blocks[m]
        .instructions
        .iter()
        .filter(|i| i.is(Op::Phi))
        .flat_map(|i| i.operands.chunks(2).filter_map(|p| p.get(1).copied()))
        .collect();
    if !renamed.is_empty() {
        rename_after_loop(f, info, &renamed);
        let m = f
            .blocks
            .iter()
            .position(|b| b.id() == merge)
            .expect("found above");
        f.blocks[m].instructions.splice(0..0, escaping_phis);
    }
    let mut nulls = phi_nulls.into_iter();
    for inst in f.blocks[m]
        .instructions
        .iter_mut()
        .filter(|i| i.is(Op::Phi))
    {
        let Some(null) = nulls.next() else { break };
        for &p in &new_preds {
            if !already.contains(&p) {
                inst.operands.push(null);
                inst.operands.push(p);
            }
        }
    }
    if let Some(ret) = ret {
        if let Some(last) = f.blocks[m].instructions.last_mut() {
            *last = ret;
        }
    }
}

/// The values defined in `info`'s loop after its header and used outside it (a use being an id operand of
/// an instruction in a block outside the loop; the merge block's own phis take their values from the
/// loop's blocks, where the values still dominate), with their types. `None` where such a use cannot be
/// told from a literal ([`id_positions`]): the loop then keeps its branch.
fn escaping_values(f: &Function, info: &Loop) -> Option<Vec<(u32, u32)>> {
    let inside: FastSet<u32> = info.blocks.iter().copied().collect();
    let mut defined: FastMap<u32, u32> = FastMap::default();
    for b in f.blocks.iter().filter(|b| inside.contains(&b.id())) {
        if b.id() == info.header {
            // Its definitions come before the branch that now leaves: they still dominate the merge.
            continue;
        }
        for inst in &b.instructions {
            if let (Some(id), Some(ty)) = (inst.result_id, inst.result_type) {
                defined.insert(id, ty);
            }
        }
    }
    let mut escaping = Vec::new();
    if defined.is_empty() {
        return Some(escaping);
    }
    let mut seen = FastSet::default();
    for b in f.blocks.iter().filter(|b| !inside.contains(&b.id())) {
        for inst in &b.instructions {
            if b.id() == info.merge && inst.is(Op::Phi) {
                continue;
            }
            if !inst.operands.iter().any(|w| defined.contains_key(w)) {
                continue;
            }
            for at in id_positions(inst)? {
                let id = inst.operands[at];
                if let Some(&ty) = defined.get(&id) {
                    if seen.insert(id) {
                        escaping.push((id, ty));
                    }
                }
            }
        }
    }
    Some(escaping)
}

/// Gives the uses of each renamed value outside `info`'s loop (less the merge block's own phis) its new id.
fn rename_after_loop(f: &mut Function, info: &Loop, renamed: &FastMap<u32, u32>) {
    let inside: FastSet<u32> = info.blocks.iter().copied().collect();
    for b in f.blocks.iter_mut().filter(|b| !inside.contains(&b.id())) {
        let merge = b.id() == info.merge;
        for inst in &mut b.instructions {
            if merge && inst.is(Op::Phi) {
                continue;
            }
            if !inst.operands.iter().any(|w| renamed.contains_key(w)) {
                continue;
            }
            // Decoded by `escaping_values` already, so `Some`.
            for at in id_positions(inst).unwrap_or_default() {
                if let Some(&new) = renamed.get(&inst.operands[at]) {
                    inst.operands[at] = new;
                }
            }
        }
    }
}

/// A bool instruction for `before`; returns its id.
fn logic(b: &mut Builder, before: &mut Vec<Instruction>, op: Op, operands: &[u32]) -> u32 {
    let bool_t = b.type_bool();
    let id = b.id();
    before.push(Instruction::new(
        op,
        Some(bool_t),
        Some(id),
        smallvec::SmallVec::from_slice(operands),
    ));
    id
}

/// The loop's induction values (see the module docs), found in the input before the walk.
fn induction_values(base: &Base<'_>, f: &Function, cfg: &Cfg, info: &Loop) -> Vec<Value> {
    let an = &base.an;
    let types = &base.b.types;
    // Definitions of the function: id -> instruction; the header's phis.
    let mut defs: FastMap<u32, &Instruction> = FastMap::default();
    for b in &f.blocks {
        for inst in &b.instructions {
            if let Some(id) = inst.result_id {
                defs.insert(id, inst);
            }
        }
    }
    let params: FastSet<u32> = f.params.iter().filter_map(|p| p.result_id).collect();
    let block = |id: u32| cfg.index.get(&id).map(|&i| &f.blocks[i]);
    let Some(header) = block(info.header) else {
        return Vec::new();
    };
    let back: FastSet<u32> = info
        .preds
        .iter()
        .filter(|(_, b)| *b)
        .map(|(p, _)| *p)
        .collect();
    let header_phis: Vec<&Instruction> = header
        .instructions
        .iter()
        .filter(|i| i.is(Op::Phi))
        .collect();
    let recordable = |ty: u32| shape(types, ty).is_some_and(|s| s.words() <= MAX_VALUE_WORDS);
    // A variable named like one of the fixed values (`iterations`) gets its id as well.
    let name_of = |id: u32| match an.name(id).filter(|n| !n.is_empty()) {
        Some(n) if FIXED_VALUES.contains(&n.as_str()) => format!("{n} %{id}"),
        Some(n) => n,
        None => format!("%{id}"),
    };
    // A pointer the header may load from: a Function or Private variable, or a pointer parameter.
    let loadable = |p: u32| -> Option<u32> {
        let Some(Type::Pointer { storage, pointee }) = an.type_of(p).and_then(|t| types.get(t))
        else {
            return None;
        };
        let direct = params.contains(&p)
            || defs.get(&p).is_some_and(|i| i.is(Op::Variable))
            || (*storage == Some(StorageClass::Private) && !defs.contains_key(&p));
        let storage_ok = matches!(
            storage,
            Some(StorageClass::Function | StorageClass::Private)
        );
        (direct && storage_ok && recordable(*pointee)).then_some(*pointee)
    };
    let mut out: Vec<Value> = Vec::new();
    let mut seen: FastSet<u32> = FastSet::default();
    let add_phi = |out: &mut Vec<Value>, seen: &mut FastSet<u32>, id: u32| {
        if seen.insert(id) {
            out.push(Value::Phi {
                id,
                name: name_of(id),
            });
        }
    };
    let add_var = |out: &mut Vec<Value>, seen: &mut FastSet<u32>, pointer: u32, ty: u32| {
        if seen.insert(pointer) {
            out.push(Value::Var {
                pointer,
                ty,
                name: name_of(pointer),
            });
        }
    };
    // 1. The exit conditions' sources.
    let mut exits: Vec<u32> = vec![info.header];
    let mut at = info.header;
    for _ in 0..2 {
        match block(at).and_then(|b| b.instructions.last()) {
            Some(t) if t.is(Op::Branch) => match t.operand(0) {
                Some(x) if x != info.header && info.blocks.contains(&x) => {
                    exits.push(x);
                    at = x;
                }
                _ => break,
            },
            _ => break,
        }
    }
    for &(p, is_back) in &info.preds {
        if is_back && !exits.contains(&p) {
            exits.push(p);
        }
    }
    exits.sort_by_key(|b| cfg.index.get(b).copied());
    for e in exits {
        let Some(t) = block(e).and_then(|b| b.instructions.last()) else {
            continue;
        };
        let exits_loop = t
            .operands
            .get(1..3)
            .is_some_and(|targets| targets.contains(&info.merge));
        if !t.is(Op::BranchConditional) || !exits_loop {
            continue;
        }
        let mut stack = vec![t.operands[0]];
        let mut visited = FastSet::default();
        while let Some(id) = stack.pop() {
            if visited.len() >= MAX_WALK || !visited.insert(id) {
                continue;
            }
            let Some(def) = defs.get(&id) else { continue };
            match def.op() {
                Some(Op::Phi)
                    if header_phis.iter().any(|p| p.result_id == Some(id))
                        && def.result_type.is_some_and(recordable) =>
                {
                    add_phi(&mut out, &mut seen, id);
                }
                Some(Op::Load) => {
                    if let Some(p) = def.operand(0) {
                        if let Some(ty) = loadable(p) {
                            add_var(&mut out, &mut seen, p, ty);
                        }
                    }
                }
                Some(Op::CompositeExtract) => stack.extend(def.operand(0)),
                Some(op) if followed(op) => {
                    // Operands pushed in reverse, so the left operand's sources come first.
                    stack.extend(def.operands.iter().rev().copied());
                }
                _ => {}
            }
        }
    }
    // 2. Variables stored in the continue construct.
    if info.continue_target != info.header {
        let cont = cfg.reach(info.continue_target, info.header);
        for b in &info.blocks {
            if !cont.contains(b) {
                continue;
            }
            let Some(blk) = block(*b) else { continue };
            for inst in blk.instructions.iter().filter(|i| i.is(Op::Store)) {
                if let Some(p) = inst.operand(0) {
                    if let Some(ty) = loadable(p) {
                        add_var(&mut out, &mut seen, p, ty);
                    }
                }
            }
        }
    }
    // 3. The header's other integer scalar phis fed from a back edge.
    for p in &header_phis {
        let (Some(id), Some(ty)) = (p.result_id, p.result_type) else {
            continue;
        };
        let int = matches!(types.get(ty), Some(Type::Int { .. }));
        let carried = p
            .operands
            .chunks(2)
            .any(|pair| pair.len() == 2 && back.contains(&pair[1]));
        if int && carried {
            add_phi(&mut out, &mut seen, id);
        }
    }
    out.truncate(MAX_VALUES);
    out
}

/// The instructions an exit condition is followed through: every operand is an id.
fn followed(op: Op) -> bool {
    use Op as O;
    matches!(
        op,
        O::IAdd
            | O::ISub
            | O::IMul
            | O::SDiv
            | O::UDiv
            | O::SRem
            | O::SMod
            | O::UMod
            | O::FAdd
            | O::FSub
            | O::FMul
            | O::FDiv
            | O::FRem
            | O::FMod
            | O::SNegate
            | O::FNegate
            | O::IEqual
            | O::INotEqual
            | O::ULessThan
            | O::ULessThanEqual
            | O::UGreaterThan
            | O::UGreaterThanEqual
            | O::SLessThan
            | O::SLessThanEqual
            | O::SGreaterThan
            | O::SGreaterThanEqual
            | O::FOrdEqual
            | O::FOrdNotEqual
            | O::FOrdLessThan
            | O::FOrdLessThanEqual
            | O::FOrdGreaterThan
            | O::FOrdGreaterThanEqual
            | O::FUnordEqual
            | O::FUnordNotEqual
            | O::FUnordLessThan
            | O::FUnordLessThanEqual
            | O::FUnordGreaterThan
            | O::FUnordGreaterThanEqual
            | O::LogicalAnd
            | O::LogicalOr
            | O::LogicalNot
            | O::LogicalEqual
            | O::LogicalNotEqual
            | O::Select
            | O::Bitcast
            | O::SConvert
            | O::UConvert
            | O::FConvert
            | O::ConvertFToS
            | O::ConvertFToU
            | O::ConvertSToF
            | O::ConvertUToF
            | O::BitwiseAnd
            | O::BitwiseOr
            | O::BitwiseXor
            | O::Not
            | O::ShiftLeftLogical
            | O::ShiftRightLogical
            | O::ShiftRightArithmetic
            | O::Any
            | O::All
    )
}
