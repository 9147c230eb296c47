//! NaN checks of operations, grouped per stretch of a block.
//!
//! A check right after each operation costs a branch (and, on GPUs, a reconvergence point) per operation.
//! Instead, after each checked operation the base emits a *quick* test of its result inline (a few integer
//! instructions: is the sum of the components NaN or Inf?), ORs it into the group's flag, and keeps the
//! site's call aside. Where the group ends (before a merge instruction, a terminator or a call, which may
//! not come back) it emits one call of a *group helper* that, when the flag is set, runs the kept calls in
//! order; each still makes its exact test. So the common path has one branch per group, and a group never
//! outlives its block, so the application's control flow is not touched. A group of one call is that call
//! alone: its helper makes the quick test first, so the group's inline test is taken out again. (The tests
//! stay right after their operations: emitted at the group's end instead, NVIDIA's compiler made the NaN
//! `ops` fragment benchmark 2% slower.)

use spirv::{Op, SelectionControl};

use super::builder::{Emit, FnBuilder};
use super::values::{self, Shape};
use super::{Base, Edit};
use crate::module::{Instruction, Operands};
use crate::record::ScalarType;

/// Calls beyond this many arguments start a new group (drivers limit function parameters).
const MAX_GROUP_ARGUMENTS: usize = 48;

/// The checks kept aside in the current group. One group serves every block of a module in turn (it is
/// empty between them), so its list of calls is allocated once.
#[derive(Default)]
pub(crate) struct Group {
    /// The OR of the quick tests so far.
    flag: Option<u32>,
    /// Where the first call's quick test lies in the block's new list: taken out if the group ends with
    /// that one call.
    first_test: std::ops::Range<usize>,
    /// The kept calls.
    calls: Vec<Instruction>,
    arguments: usize,
}

/// Whether a group must end before `inst`: merges and terminators end the block; a call may not return
/// (a `discard` in the callee) and its own sites must come after the ones before it.
pub(crate) fn ends_group(inst: &Instruction) -> bool {
    matches!(
        inst.op(),
        Some(
            Op::SelectionMerge
                | Op::LoopMerge
                | Op::FunctionCall
                | Op::Branch
                | Op::BranchConditional
                | Op::Switch
                | Op::Return
                | Op::ReturnValue
                | Op::Unreachable
                | Op::Kill
                | Op::TerminateInvocation
                | Op::DemoteToHelperInvocation
                | Op::IgnoreIntersectionKHR
                | Op::TerminateRayKHR
                | Op::EmitMeshTasksEXT
        )
    )
}

/// A group's parameter types or arguments: a few dozen at most (a little over [`MAX_GROUP_ARGUMENTS`]),
/// kept inline.
type GroupIds = smallvec::SmallVec<[u32; 64]>;

/// The values a grouped NaN check tests, with their shapes: most check one (an operation's result), kept
/// inline rather than in a list allocated per site.
pub(crate) type TestedValues = smallvec::SmallVec<[(u32, Shape); 1]>;

impl Base<'_> {
    /// The edit for a NaN check's `site` (from [`Base::site`] with [`super::HelperKind::NanCheck`] and these
    /// `inputs`) right after its instruction: in the group ([`Edit::CheckLater`]) when every value it tests
    /// (those after its inputs) is a 32- or 64-bit float scalar or vector, else its own call right after
    /// the instruction ([`Edit::After`]).
    pub(crate) fn check_later(&self, site: Vec<Instruction>, inputs: usize) -> Edit {
        match self.tested_values(&site, inputs) {
            Some(tested) => Edit::CheckLater { site, tested },
            None => Edit::After(site),
        }
    }

    /// The values a grouped NaN check tests, with their shapes: the call's values after its `inputs`.
    /// (The caller made the site and knows its inputs: looking its helper up by id walked every helper.)
    fn tested_values(&self, site: &[Instruction], inputs: usize) -> Option<TestedValues> {
        let call = site.last()?;
        let tested: TestedValues = call
            .operands
            .get(4 + inputs..)?
            .iter()
            .map(|&v| {
                let shape = values::shape(&self.b.types, self.an.type_of(v)?)?;
                (matches!(shape.scalar, ScalarType::F32 | ScalarType::F64) && shape.rows == 0)
                    .then_some((v, shape))
            })
            .collect::<Option<_>>()?;
        (!tested.is_empty()).then_some(tested)
    }

    /// Adds a site's instructions to the group: all but the last (the call) go to `out` now, with the
    /// quick test of the values it tests (`tested`, from [`Base::check_later`]); the call waits for
    /// [`Base::end_group`].
    pub(crate) fn defer(
        &mut self,
        group: &mut Group,
        out: &mut Vec<Instruction>,
        mut site: Vec<Instruction>,
        tested: TestedValues,
    ) {
        let Some(call) = site.pop() else { return };
        out.extend(site);
        let start = out.len();
        let bool_t = self.b.type_bool();
        for (value, shape) in tested {
            let comps = values::components(out, &mut self.b, value, &shape);
            let test = values::maybe_non_finite(out, &mut self.b, &comps, &shape);
            group.flag = Some(match group.flag {
                None => test,
                Some(prev) => out.emit(&mut self.b, Op::LogicalOr, bool_t, &[prev, test]),
            });
        }
        if group.calls.is_empty() {
            group.first_test = start..out.len();
        }
        group.arguments += call.operands.len().saturating_sub(4);
        group.calls.push(call);
        if group.arguments >= MAX_GROUP_ARGUMENTS {
            self.end_group(group, out);
        }
    }

    /// Emits the group's call, if it has kept calls, and starts a new group.
    #[inline]
    pub(crate) fn end_group(&mut self, group: &mut Group, out: &mut Vec<Instruction>) {
        // Asked before every merge, branch and call and at every block's end; most groups are empty.
        if !group.calls.is_empty() {
            self.end_kept_group(group, out);
        }
    }

    /// [`Base::end_group`] for a group with kept calls.
    #[inline(never)]
    fn end_kept_group(&mut self, group: &mut Group, out: &mut Vec<Instruction>) {
        let values = std::mem::take(&mut group.arguments);
        let flag = group.flag.take();
        if group.calls.len() == 1 {
            // One check: its own call is as cheap (the helper tests the result first), and nothing would
            // read the flag, so its quick test goes (nothing else in the block uses those ids).
            out.drain(std::mem::take(&mut group.first_test));
            out.append(&mut group.calls);
            return;
        }
        self.emit_group(flag, &group.calls, values, out);
        // The list stays with the group, emptied, for the next one (a list per group cost an allocation each).
        group.calls.clear();
    }

    /// [`Base::end_group`] for the group's flag, calls and count of values.
    fn emit_group(
        &mut self,
        flag: Option<u32>,
        calls: &[Instruction],
        values: usize,
        out: &mut Vec<Instruction>,
    ) {
        let Some(flag) = flag else { return };
        // Parameters: the flag, then every call's values (operands after the callee and three constants).
        let bool_t = self.b.type_bool();
        let mut param_types = GroupIds::with_capacity(1 + values);
        param_types.push(bool_t);
        let mut arguments = GroupIds::with_capacity(1 + values);
        arguments.push(flag);
        for call in calls.iter() {
            for &value in &call.operands[4..] {
                param_types.push(self.an.type_of(value).expect("site values have types"));
                arguments.push(value);
            }
        }
        let void = self.b.type_void();
        let (mut fb, group_fn, params) = FnBuilder::new(&mut self.b, void, &param_types);
        let (run, end) = (self.b.id(), self.b.id());
        fb.op_void(Op::SelectionMerge, &[end, SelectionControl::NONE.bits()]);
        fb.op_void(Op::BranchConditional, &[params[0], run, end]);
        fb.block(run);
        let mut next_param = 1;
        for call in calls.iter() {
            // On the stack: a call's callee and constants and its few values (an `Operands` of more
            // than five words is allocated).
            let mut operands = GroupIds::from_slice(&call.operands[..4]);
            let n = call.operands.len() - 4;
            operands.extend_from_slice(&params[next_param..next_param + n]);
            next_param += n;
            fb.op(&mut self.b, Op::FunctionCall, void, &operands);
        }
        fb.op_void(Op::Branch, &[end]);
        fb.block(end);
        fb.op_void(Op::Return, &[]);
        self.b.add_function(fb.finish());
        // The call's operands made once, in place (not copied from a list on the stack).
        let mut operands = Operands::with_capacity(1 + arguments.len());
        operands.push(group_fn);
        operands.extend_from_slice(&arguments);
        let call_id = self.b.id();
        out.push(Instruction::new(
            Op::FunctionCall,
            Some(void),
            Some(call_id),
            operands,
        ));
    }
}
