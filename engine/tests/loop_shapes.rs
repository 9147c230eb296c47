//! Loop and integer cases that glslang does not write, assembled from `tests/asm/*.spvasm` with spirv-as:
//! each instruments in every loop mode (with and without a clock) and with integer checks, passes
//! spirv-val, and the rewritten branches and checks are where they should be.

mod common;

use std::path::PathBuf;

use blackbox_engine::module::{Function, Module};
use blackbox_engine::{instrument, ClockScope, LoopClock, LoopMode, Options, ScalarType, SiteKind};
use spirv::Op;

use common::assemble;

fn options(loops: LoopMode, clock: bool, int_checks: bool) -> Options {
    Options {
        error_buffer_address: 0x0000_7f00_dead_b000,
        site_base: 3,
        loops,
        loop_limit: 1000,
        loop_clock: clock.then_some(LoopClock {
            scope: ClockScope::Device,
            budget_ticks: 0x1_0000_0000,
        }),
        int_checks,
        ..Options::default()
    }
}

/// Instruments `words` with every combination, validates each output, and returns them by name.
fn every_mode(
    name: &str,
    words: &[u32],
    env: &str,
) -> Vec<(String, blackbox_engine::Instrumented)> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("loop_shapes");
    let mut outs = Vec::new();
    let mut jobs = Vec::new();
    for mode in [LoopMode::Report, LoopMode::Break] {
        for clock in [false, true] {
            let label = format!("{name} {mode} clock {clock}");
            let out = instrument(words, &options(mode, clock, true))
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            let path = dir.join(format!("{name}.{mode}.{clock}.spv"));
            common::write_words(&path, &out.words);
            jobs.push(common::ValJob {
                path,
                env: env.into(),
            });
            outs.push((label, out));
        }
    }
    for (r, (label, _)) in common::validate_all(&jobs).iter().zip(&outs) {
        assert!(
            r.is_none(),
            "{label} fails spirv-val: {}",
            r.as_deref().unwrap_or("")
        );
    }
    outs
}

fn function(module: &Module, name_id: u32) -> &Function {
    module
        .functions
        .iter()
        .find(|f| f.id() == name_id)
        .expect("the function")
}

fn block(f: &Function, id: u32) -> &blackbox_engine::module::Block {
    f.blocks.iter().find(|b| b.id() == id).expect("the block")
}

#[test]
fn headers_branching_to_their_continue_target_and_endless_loops_break() {
    let words = assemble("loop_shapes.spvasm", "vulkan1.0");
    let input = Module::parse(&words).unwrap();
    let outs = every_mode("loop_shapes", &words, "vulkan1.0");
    for (label, out) in &outs {
        let headers: Vec<u32> = out
            .info
            .sites
            .iter()
            .filter_map(|s| match s.kind {
                SiteKind::LoopBudget { header, .. } => Some(header),
                _ => None,
            })
            .collect();
        assert_eq!(headers.len(), 3, "{label}");
        assert_eq!(out.info.sites[0].local_index, 0);
    }
    // At break: the first two headers send their body side through a gate block to the merge block.
    let (_, brk) = &outs[2];
    let module = Module::parse(&brk.words).unwrap();
    let main = function(&module, input.functions[0].id());
    let in_main = &input.functions[0];
    let headers: Vec<(u32, u32, u32)> = in_main
        .blocks
        .iter()
        .filter_map(|b| {
            let m = b.instructions.iter().find(|i| i.is(Op::LoopMerge))?;
            Some((b.id(), m.operands[0], m.operands[1]))
        })
        .collect();
    assert_eq!(headers.len(), 2);
    for (h, merge, cont) in headers {
        let term = block(main, h).instructions.last().unwrap();
        assert!(term.is(Op::BranchConditional));
        assert!(
            term.operands[1..3].contains(&cont),
            "%{h} keeps its continue target"
        );
        let gate = term.operands[1..3]
            .iter()
            .copied()
            .find(|&t| t != cont)
            .unwrap();
        let gate_block = block(main, gate);
        assert_eq!(gate_block.instructions.len(), 1);
        let g = &gate_block.instructions[0];
        assert!(
            g.is(Op::BranchConditional) && g.operands[1] == merge,
            "%{h}: {g:?}"
        );
    }
    // The merge block's phi got a value for the gate's edge.
    let first_merge = in_main
        .blocks
        .iter()
        .find_map(|b| b.instructions.iter().find(|i| i.is(Op::LoopMerge)))
        .unwrap()
        .operands[0];
    let phi = &block(main, first_merge).instructions[0];
    assert!(phi.is(Op::Phi));
    assert_eq!(
        phi.operands.len(),
        4,
        "two incoming edges: the break and the gate"
    );
    // The endless loop's OpUnreachable merge block returns (a null int) instead.
    let endless = &input.functions[1];
    let merge = endless.blocks.last().unwrap().id();
    let out_endless = function(&module, endless.id());
    assert!(block(out_endless, merge)
        .instructions
        .last()
        .unwrap()
        .is(Op::ReturnValue));
    // At report, the same loops keep their branches and the OpUnreachable.
    let (_, report) = &outs[0];
    let module = Module::parse(&report.words).unwrap();
    let out_endless = function(&module, endless.id());
    assert!(block(out_endless, merge)
        .instructions
        .last()
        .unwrap()
        .is(Op::Unreachable));
    // With a clock, the module asks for it.
    let (_, clocked) = &outs[3];
    let module = Module::parse(&clocked.words).unwrap();
    assert!(module.has_capability(spirv::Capability::ShaderClockKHR));
    assert!(module.all_instructions().any(|i| i.is(Op::ReadClockKHR)));
    let (_, unclocked) = &outs[2];
    let module = Module::parse(&unclocked.words).unwrap();
    assert!(!module.has_capability(spirv::Capability::ShaderClockKHR));
}

#[test]
fn values_the_body_defines_reach_the_code_after_the_loop_through_phis_at_break() {
    let words = assemble("loop_escaping.spvasm", "vulkan1.0");
    let input = Module::parse(&words).unwrap();
    // Before the fix the break edge left %v and %f without a definition that dominates their uses:
    // spirv-val, which `every_mode` runs on every output, refused the module.
    let outs = every_mode("loop_escaping", &words, "vulkan1.0");
    let in_main = &input.functions[0];
    // (header, merge, body) of each loop, and the ids the first body defines, in order.
    let loops: Vec<(u32, u32, u32)> = in_main
        .blocks
        .iter()
        .filter_map(|b| {
            let m = b.instructions.iter().find(|i| i.is(Op::LoopMerge))?;
            let body = b.instructions.last()?.operands[0];
            Some((b.id(), m.operands[0], body))
        })
        .collect();
    assert_eq!(loops.len(), 2);
    let (h1, m1, b1) = loops[0];
    let defined: Vec<u32> = block(in_main, b1)
        .instructions
        .iter()
        .filter_map(|i| i.result_id)
        .collect();
    let (v, f) = (defined[0], defined[2]);
    let (_, brk) = &outs[2];
    let module = Module::parse(&brk.words).unwrap();
    let main = function(&module, in_main.id());
    // Loop 1 breaks from its header, and its merge block starts with a phi for each escaping value: the
    // value from the body's break, a null value from the header.
    let term = block(main, h1).instructions.last().unwrap();
    assert!(term.is(Op::BranchConditional) && term.operands[1] == m1);
    let phis: Vec<&blackbox_engine::module::Instruction> = block(main, m1)
        .instructions
        .iter()
        .take_while(|i| i.is(Op::Phi))
        .collect();
    assert_eq!(phis.len(), 2, "{phis:?}");
    let phi_of = |value: u32| {
        phis.iter()
            .find(|p| p.operands[0] == value)
            .unwrap_or_else(|| panic!("no phi for %{value}: {phis:?}"))
    };
    for value in [v, f] {
        let phi = phi_of(value);
        assert_eq!(phi.operands.len(), 4, "{phi:?}");
        assert_eq!(phi.operands[3], h1, "{phi:?}");
    }
    // The uses after the loop, in the merge block and the block after it, take the phis.
    let uses_after: Vec<u32> = main
        .blocks
        .iter()
        .skip_while(|b| b.id() != m1)
        .take(2)
        .flat_map(|b| b.instructions.iter().filter(|i| !i.is(Op::Phi)))
        .flat_map(|i| i.operands.iter().copied())
        .collect();
    assert!(!uses_after.contains(&v) && !uses_after.contains(&f));
    assert!(uses_after.contains(&phi_of(v).result_id.unwrap()));
    assert!(uses_after.contains(&phi_of(f).result_id.unwrap()));
    // Loop 2's escaping value is a pointer: no null to give the header's edge, so it keeps its branch.
    let (h2, _, b2) = loops[1];
    let term = block(main, h2).instructions.last().unwrap();
    assert!(
        term.is(Op::Branch) && term.operands[0] == b2,
        "loop 2 keeps its branch: {term:?}"
    );
}

#[test]
fn narrow_and_wide_integers_vector_inserts_and_spec_constant_lengths() {
    let words = assemble("int_edges.spvasm", "vulkan1.2");
    let outs = every_mode("int_edges", &words, "vulkan1.2");
    let (_, out) = &outs[1];
    let kinds: Vec<&SiteKind> = out.info.sites.iter().map(|s| &s.kind).collect();
    assert_eq!(
        kinds,
        [
            &SiteKind::IntOp { op: "SDiv" },
            &SiteKind::IntOp { op: "SRem" },
            &SiteKind::IntOp {
                op: "ShiftLeftLogical"
            },
            &SiteKind::IndexOutOfRange {
                op: "VectorInsertDynamic"
            },
            &SiteKind::IndexOutOfRange { op: "AccessChain" },
            &SiteKind::LoopBudget {
                header: kinds_header(&words),
                depth: 0
            },
        ],
        "the 64-bit division and shift by constants and the division by a constant vector of ones need no \
         check"
    );
    let shift = &out.info.sites[2];
    assert_eq!(
        (shift.values[0].scalar, shift.values[1].scalar),
        (ScalarType::I64, ScalarType::I32)
    );
    // The spec-constant length is recorded as the constant's own value (a uint).
    let chain = &out.info.sites[4];
    assert_eq!(chain.values[1].name, "length 0");
    assert_eq!(chain.values[1].scalar, ScalarType::U32);
    // SPIR-V 1.5: both entry points list the loop pass's Private variables.
    let module = Module::parse(&out.words).unwrap();
    let privates: Vec<u32> = module
        .globals
        .iter()
        .filter(|i| i.is(Op::Variable) && i.operands[0] == spirv::StorageClass::Private as u32)
        .filter_map(|i| i.result_id)
        .collect();
    for ep in &module.entry_points {
        for p in &privates {
            assert!(ep.operands.contains(p), "%{p} in {ep:?}");
        }
    }
}

/// The header of the one loop of `int_edges.spvasm`.
fn kinds_header(words: &[u32]) -> u32 {
    let m = Module::parse(words).unwrap();
    m.functions
        .iter()
        .flat_map(|f| f.blocks.iter())
        .find(|b| b.instructions.iter().any(|i| i.is(Op::LoopMerge)))
        .unwrap()
        .id()
}
