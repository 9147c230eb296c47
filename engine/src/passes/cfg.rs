//! The control-flow facts the loop pass needs about one function: each block's successors and
//! predecessors, and each structured loop (an `OpLoopMerge` header) with its blocks, back edges and
//! nesting depth.
//!
//! A loop's blocks are those reachable from its header without passing its merge block. In structured
//! control flow a loop is left only through its merge block (or by a return, a kill, an `OpUnreachable`),
//! so this is the loop construct, continue construct included. A predecessor of the header among them is a
//! back-edge block; every other predecessor enters the loop.

use spirv::Op;

use crate::analysis::{Analysis, Type, TypeTable};
use crate::module::{Function, Instruction};
use crate::util::{FastMap, FastSet};

/// One structured loop of a function.
#[derive(Clone, Debug)]
pub(crate) struct Loop {
    /// The header's label id.
    pub header: u32,
    /// The merge block's label id.
    pub merge: u32,
    /// The continue target's label id (the header itself for a one-block loop).
    pub continue_target: u32,
    /// The header's predecessors, each with whether it is a back-edge block (inside the loop).
    pub preds: Vec<(u32, bool)>,
    /// The loop's blocks, the header included, in the function's block order.
    pub blocks: Vec<u32>,
    /// How many other loops of the function contain this one.
    pub depth: u32,
}

/// The control flow of one function.
pub(crate) struct Cfg {
    /// Block label id -> index in the function's blocks.
    pub index: FastMap<u32, usize>,
    /// Successors of each block, by index (duplicates removed, in terminator order).
    pub succs: Vec<Vec<u32>>,
    /// Predecessors of each block, by index, in block order.
    pub preds: Vec<Vec<u32>>,
    /// The loops, in the order of their headers.
    pub loops: Vec<Loop>,
}

/// The branch targets of a terminator. `OpSwitch` literals take one or two words each, by the width of
/// the selector's type.
pub(crate) fn targets(an: &Analysis, types: &TypeTable, term: &Instruction) -> Vec<u32> {
    let o = &term.operands;
    let mut out: Vec<u32> = match term.op() {
        Some(Op::Branch) => o.first().copied().into_iter().collect(),
        Some(Op::BranchConditional) => o.get(1..3).map(<[u32]>::to_vec).unwrap_or_default(),
        Some(Op::Switch) => {
            let literal = match o
                .first()
                .and_then(|&s| an.type_of(s))
                .and_then(|t| types.get(t))
            {
                Some(Type::Int { width: 64, .. }) => 2,
                _ => 1,
            };
            let mut t: Vec<u32> = o.get(1).copied().into_iter().collect();
            let mut i = 2 + literal;
            while let Some(&label) = o.get(i) {
                t.push(label);
                i += literal + 1;
            }
            t
        }
        _ => Vec::new(),
    };
    let mut seen = FastSet::default();
    out.retain(|t| seen.insert(*t));
    out
}

impl Cfg {
    /// The control flow of `f`.
    pub(crate) fn new(an: &Analysis, types: &TypeTable, f: &Function) -> Cfg {
        let index: FastMap<u32, usize> = f
            .blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (b.id(), i))
            .collect();
        let succs: Vec<Vec<u32>> = f
            .blocks
            .iter()
            .map(|b| {
                b.instructions
                    .last()
                    .map(|t| targets(an, types, t))
                    .unwrap_or_default()
            })
            .collect();
        let mut preds = vec![Vec::new(); f.blocks.len()];
        for (i, s) in succs.iter().enumerate() {
            for t in s {
                if let Some(&j) = index.get(t) {
                    preds[j].push(f.blocks[i].id());
                }
            }
        }
        let mut cfg = Cfg {
            index,
            succs,
            preds,
            loops: Vec::new(),
        };
        for (i, block) in f.blocks.iter().enumerate() {
            let Some(merge_inst) = block
                .instructions
                .iter()
                .rev()
                .find(|x| x.is(Op::LoopMerge))
            else {
                continue;
            };
            let (Some(merge), Some(continue_target)) =
                (merge_inst.operand(0), merge_inst.operand(1))
            else {
                continue;
            };
            let header = block.id();
            let inside = cfg.reach(header, merge);
            let preds = cfg.preds[i]
                .iter()
                .map(|&p| (p, inside.contains(&p)))
                .collect();
            let blocks = f
                .blocks
                .iter()
                .map(|b| b.id())
                .filter(|b| inside.contains(b))
                .collect();
            cfg.loops.push(Loop {
                header,
                merge,
                continue_target,
                preds,
                blocks,
                depth: 0,
            });
        }
        // A loop's depth is the number of other loops whose blocks hold its header: each loop's blocks are
        // walked once (searching every loop's list for every header took cubic time in the nesting depth:
        // 28 s for a damaged module of 5,000 nested loops).
        let by_header: FastMap<u32, usize> = cfg
            .loops
            .iter()
            .enumerate()
            .map(|(i, l)| (l.header, i))
            .collect();
        let mut depths = vec![0u32; cfg.loops.len()];
        // The loop that last counted each one: a damaged module may list a block twice.
        let mut counted_by = vec![usize::MAX; cfg.loops.len()];
        for (outer, l) in cfg.loops.iter().enumerate() {
            for b in &l.blocks {
                match by_header.get(b) {
                    Some(&inner) if *b != l.header && counted_by[inner] != outer => {
                        counted_by[inner] = outer;
                        depths[inner] += 1;
                    }
                    _ => {}
                }
            }
        }
        for (l, d) in cfg.loops.iter_mut().zip(depths) {
            l.depth = d;
        }
        cfg
    }

    /// The blocks reachable from `from` (itself included) without entering `avoid`.
    pub(crate) fn reach(&self, from: u32, avoid: u32) -> FastSet<u32> {
        let mut seen = FastSet::default();
        let mut stack = vec![from];
        while let Some(b) = stack.pop() {
            if b == avoid || !seen.insert(b) {
                continue;
            }
            if let Some(&i) = self.index.get(&b) {
                stack.extend(self.succs[i].iter().copied());
            }
        }
        seen
    }
}
