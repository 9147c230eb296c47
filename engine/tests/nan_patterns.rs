//! NaN `ops` on shapes a driver rewrites while each step has one use, each checked as one site:
//!
//! - `pow` written as `exp2(y * log2(x))` or `exp(y * log(x))` (`tests/asm/pow_pattern.spvasm`): zink writes
//!   `pow` that way, and shaders do by hand. `log2(0)` is -inf there on purpose (`exp2(-inf)` is 0), so such
//!   a pair is one `pow` site at its exponential, with x and y as operands; a logarithm used anywhere else
//!   keeps its own check.
//! - `exp(a) / exp(b)` and `exp2(a) * exp2(b)` (`tests/asm/exp_pair.spvasm`): one site at the division or
//!   product, on the two exponentials; an exponential used anywhere else keeps its own check.
//! - selects of NaN constants (`tests/asm/constant_choices.spvasm`) and products by powers of two built
//!   from their bits (`tests/asm/built_powers.spvasm`): how IREE, through MLIR, writes `log`'s domain
//!   error and scales an expanded `exp`; each is a site of its own.
//! - divisions whose result only selects may keep (`tests/asm/selected_results.spvasm`): `c ? x / d : 0`,
//!   checked after the last select on what the selects keep, so that a NaN they throw away is no report.
//!
//! And NaN `outputs` on a fragment shader instrumented for one pipeline (`tests/asm/kept_outputs.spvasm`):
//! only the components the pipeline's attachments keep are checked.

mod common;

use blackbox_engine::module::Module;
use blackbox_engine::{instrument, Instrumented, NanLevel, Options, SiteKind};

/// `asm` instrumented with `options` (at the test error buffer's address) and checked with spirv-val.
fn instrumented(asm: &str, options: Options) -> Instrumented {
    let words = common::assemble(asm, "vulkan1.1");
    let options = Options {
        error_buffer_address: 0x0000_7f00_dead_b000,
        ..options
    };
    let out = instrument(&words, &options).expect("instruments");
    // A file of its own for each call: tests running at once instrument the same module alike.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!(
        "{asm}.{:?}.{:x?}.{}.{call}.spv",
        options.nan,
        options.fragment_output_components,
        std::process::id()
    );
    common::assert_valid(&out.words, &name, "vulkan1.1");
    out
}

/// The names of the values each NaN `ops` site of `out` records, in order.
fn nan_op_value_names(out: &Instrumented) -> Vec<Vec<&str>> {
    out.info
        .sites
        .iter()
        .filter(|s| matches!(s.kind, SiteKind::NanOp { .. }))
        .map(|s| s.values.iter().map(|v| v.name.as_str()).collect())
        .collect()
}

/// `asm` instrumented at NaN `ops`; its NaN `ops` sites as (operation, instruction) in order.
fn ops_sites(asm: &str) -> (Instrumented, Vec<(&'static str, String)>) {
    let out = instrumented(
        asm,
        Options {
            nan: NanLevel::Ops,
            ..Options::default()
        },
    );
    let ops = out
        .info
        .sites
        .iter()
        .filter_map(|s| match s.kind {
            SiteKind::NanOp { op } => Some((op, s.instruction.clone())),
            _ => None,
        })
        .collect();
    (out, ops)
}

#[test]
fn exp2_of_y_times_log2_of_x_is_checked_as_one_pow() {
    let (out, ops) = ops_sites("pow_pattern.spvasm");
    let described: Vec<String> = ops.iter().map(|(op, i)| format!("{op}: {i}")).collect();
    // The zink-shaped pair (through a uint and back) and the natural one are pows at their exponentials;
    // the third pair's logarithm is stored too, so both of its steps keep their own checks.
    assert_eq!(
        ops.iter().map(|(op, _)| *op).collect::<Vec<_>>(),
        ["pow", "pow", "log2", "exp2"],
        "{described:#?}"
    );
    assert!(
        ops[0].1.contains("Exp2") && ops[1].1.contains(" Exp "),
        "{described:#?}"
    );
    // The pow's operands are x and y, then the result.
    let pow = out
        .info
        .sites
        .iter()
        .find(|s| matches!(s.kind, SiteKind::NanOp { op: "pow" }))
        .unwrap();
    let names: Vec<&str> = pow.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["operand 0", "operand 1", "result"]);
}

#[test]
fn a_division_or_product_of_two_exponentials_is_checked_as_one_site() {
    let (out, ops) = ops_sites("exp_pair.spvasm");
    let described: Vec<String> = ops.iter().map(|(op, i)| format!("{op}: {i}")).collect();
    assert_eq!(
        ops.iter().map(|(op, _)| *op).collect::<Vec<_>>(),
        [
            "exp() / exp()",
            "exp2() * exp2()",
            "exp",
            "exp2",
            "division",
            "exp",
            "exp",
            "division",
            "exp",
            "exp",
            "division",
        ],
        "{described:#?}"
    );
    assert!(
        ops[0].1.contains("OpFDiv") && ops[1].1.contains("OpFMul"),
        "{described:#?}"
    );
    // The pair's operands are the two exponentials (what is divided), then the result: its arguments are
    // not used, or a driver could not rewrite `k * d1 - k * d2` either.
    let pair = &out.info.sites[out
        .info
        .sites
        .iter()
        .position(|s| {
            matches!(
                s.kind,
                SiteKind::NanOp {
                    op: "exp() / exp()"
                }
            )
        })
        .unwrap()];
    let names: Vec<&str> = pair.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["operand 0", "operand 1", "result"]);
}

/// The values of each NaN output site, with the components a pipeline keeps per location.
fn output_values(kept: &[u8]) -> Vec<Vec<String>> {
    let out = instrumented(
        "kept_outputs.spvasm",
        Options {
            nan: NanLevel::Ops,
            fragment_output_components: kept.to_vec(),
            ..Options::default()
        },
    );
    assert!(
        out.info
            .sites
            .iter()
            .any(|s| matches!(s.kind, SiteKind::NanOp { op: "division" })),
        "the operation is checked whatever the attachments"
    );
    let outputs: Vec<(u32, u32, u32)> = out
        .info
        .fragment_outputs
        .iter()
        .map(|o| (o.location, o.component, o.count))
        .collect();
    assert_eq!(outputs, [(0, 0, 4), (1, 2, 2), (2, 0, 4), (3, 0, 4)]);
    out.info
        .sites
        .iter()
        .filter(|s| matches!(s.kind, SiteKind::NanOutput { what: "output" }))
        .map(|s| s.values.iter().map(|v| v.name.clone()).collect())
        .collect()
}

#[test]
fn fragment_outputs_are_checked_on_the_components_the_pipeline_keeps() {
    // No pipeline: each of the six stores is checked whole.
    assert_eq!(output_values(&[]), vec![vec!["value"]; 6]);
    // Location 0 keeps x, location 1 z (the vec2's first component), location 2 has no attachment,
    // location 3 keeps all: the vec4 at 0 is checked on x, the vec2 on its x, nothing at 2, all at 3; of
    // the two one-component stores at 0, y is dropped and x checked.
    assert_eq!(
        output_values(&[0b0001, 0b0100, 0, 0b1111]),
        [
            vec!["value.x"],
            vec!["value.x"],
            vec!["value"],
            vec!["value"]
        ]
    );
    // Location 1 keeping both of the vec2's components (z and w) checks it whole; x and w at location 0
    // are picked by a shuffle.
    assert_eq!(
        output_values(&[0b1001, 0b1100, 0, 0b1111]),
        [
            vec!["value.xw"],
            vec!["value"],
            vec!["value"],
            vec!["value"]
        ]
    );
}

#[test]
fn a_select_of_a_nan_constant_is_checked_against_its_other_choice_and_what_it_compares() {
    let (out, ops) = ops_sites("constant_choices.spvasm");
    let described: Vec<String> = ops.iter().map(|(op, i)| format!("{op}: {i}")).collect();
    // The three selects of a NaN, in order; those of an Inf, of a finite float and of integers are not
    // sites.
    assert_eq!(
        ops.iter().map(|(op, _)| *op).collect::<Vec<_>>(),
        ["select (choosing a NaN constant)"; 3],
        "{described:#?}"
    );
    assert!(
        ops.iter().all(|(_, i)| i.contains("= OpSelect ")),
        "{described:#?}"
    );
    // The values each is checked against, by name: the other choice (none where both are constants),
    // then the floats its condition compares, once each (x, for the vector select; z, the other choice
    // already, and x through the logical or, for the scalar one); the constants themselves never.
    let values = nan_op_value_names(&out);
    assert_eq!(
        values,
        [
            vec!["operand 0", "operand 1", "result"],
            vec!["operand 0", "operand 1", "result"],
            vec!["result"],
        ]
    );
}

#[test]
fn a_product_by_a_power_of_two_built_from_its_bits_is_checked_as_an_exponential() {
    let (out, ops) = ops_sites("built_powers.spvasm");
    let described: Vec<String> = ops.iter().map(|(op, i)| format!("{op}: {i}")).collect();
    // IREE's vector `exp`, the `double` one (the power as the first factor), then `ldexp`; no product by
    // bits loaded, an integer exponent, bits shifted by 13, shifted and or-ed or shifted for another width,
    // and no plain product.
    let product = "product by 2^k (built from exponent bits: an expanded exp)";
    assert_eq!(
        ops.iter().map(|(op, _)| *op).collect::<Vec<_>>(),
        [product, product, "ldexp"],
        "{described:#?}"
    );
    assert!(
        ops[..2].iter().all(|(_, i)| i.contains("= OpFMul ")),
        "{described:#?}"
    );
    // The products are checked against the float k their power is built from (a NaN argument reaches it
    // through the clamps), not against their factors; `ldexp` on its float operand.
    let values = nan_op_value_names(&out);
    assert_eq!(
        values,
        [
            vec!["operand 0", "result"],
            vec!["operand 0", "result"],
            vec!["operand 0", "result"],
        ]
    );
    // At `outputs` none of them is a site: only the store.
    let outputs = instrumented(
        "built_powers.spvasm",
        Options {
            nan: NanLevel::Outputs,
            ..Options::default()
        },
    );
    assert!(outputs
        .info
        .sites
        .iter()
        .all(|s| !matches!(s.kind, SiteKind::NanOp { .. })));
}

#[test]
fn a_division_only_selects_may_keep_is_checked_after_them_on_what_they_keep() {
    let (out, ops) = ops_sites("selected_results.spvasm");
    let described: Vec<String> = ops.iter().map(|(op, i)| format!("{op}: {i}")).collect();
    // Every division is a site, named at its own instruction, with both operands and the result.
    assert_eq!(ops.len(), 9, "{described:#?}");
    assert!(
        ops.iter()
            .all(|(op, i)| *op == "division" && i.contains("= OpFDiv ")),
        "{described:#?}"
    );
    assert!(
        nan_op_value_names(&out)
            .iter()
            .all(|v| v == &["operand 0", "operand 1", "result"]),
        "{described:#?}"
    );
    // The two chains get a select of their own for each of theirs, on the same condition, choosing the
    // division's result or 0 where the original chooses its chain or the other value: one for the first
    // division, two for the second, one each for the one `isnan` tests, the one tested through an or and
    // the one kept in a variable. The stored division, the one a phi takes, the one whose test decides
    // another select and the one whose variable is loaded again elsewhere get none.
    let module = Module::parse(&out.words).expect("the output parses");
    let main = &module.functions[0];
    let selects: Vec<&blackbox_engine::module::Instruction> = main
        .blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .filter(|i| i.is(spirv::Op::Select))
        .collect();
    assert_eq!(selects.len(), 11 + 6, "{selects:#?}");
    let input = Module::parse(&common::assemble("selected_results.spvasm", "vulkan1.1"))
        .expect("the input parses");
    // The input's ids by what defines them (spirv-as keeps no names): the entry block's conditions and
    // first two divisions.
    let entry = &input.functions[0].blocks[0].instructions;
    let result_of = |op: spirv::Op, nth: usize| {
        entry
            .iter()
            .filter(|i| i.is(op))
            .nth(nth)
            .and_then(|i| i.result_id)
            .expect("an instruction of the input")
    };
    let (q1, q2, q6) = (
        result_of(spirv::Op::FDiv, 0),
        result_of(spirv::Op::FDiv, 1),
        result_of(spirv::Op::FDiv, 2),
    );
    let (bad, bad2) = (
        result_of(spirv::Op::IsNan, 0),
        result_of(spirv::Op::IsNan, 2),
    );
    let q10 = result_of(spirv::Op::FDiv, 4);
    let (q9, or) = (
        result_of(spirv::Op::FDiv, 3),
        result_of(spirv::Op::LogicalOr, 0),
    );
    let (nz, big) = (
        result_of(spirv::Op::FOrdNotEqual, 0),
        result_of(spirv::Op::FOrdGreaterThan, 0),
    );
    // The new selects (ids past the input's bound), in order: q1's (kept as the first choice), then q2's
    // two, the first choice under `nz`, then the second choice under `big`, of the first; then q6's, the
    // second choice under its own `isnan`; then q9's, under the or; then the division kept in a variable,
    // under the `isnan` of its second load (the third `isnan`: the or tests one too).
    let new: Vec<[u32; 4]> = selects
        .iter()
        .filter(|s| s.result_id.unwrap() >= input.header.bound)
        .map(|s| {
            [
                s.result_id.unwrap(),
                s.operands[0],
                s.operands[1],
                s.operands[2],
            ]
        })
        .collect();
    assert_eq!(new.len(), 6, "{new:?}");
    assert_eq!(new[0][1..3], [nz, q1], "{new:?}");
    assert_eq!(new[1][1..3], [nz, q2], "{new:?}");
    assert_eq!([new[2][1], new[2][3]], [big, new[1][0]], "{new:?}");
    assert_eq!([new[3][1], new[3][3]], [bad, q6], "{new:?}");
    assert_eq!([new[4][1], new[4][3]], [or, q9], "{new:?}");
    assert_eq!([new[5][1], new[5][3]], [bad2, q10], "{new:?}");
}

/// With `nan_values_through_select` (the layer's choice on CPU devices), every value main hands a NaN
/// check is an `OpSelect` of it and a null on whether the invocation's first word is `0xFFFFFFFF`: one use
/// of a value the app also stores, whatever the check does with its components (lavapipe of Mesa 22.3
/// inlined a stored value used five times or more as a uniform, and crashed at the draw). Below SPIR-V 1.4
/// (this module is 1.3) a vector's condition is a vector of that test. The sites are the same as without.
#[test]
fn with_values_through_select_each_checked_value_is_one_select_of_it() {
    let at = |through_select: bool, at_end: bool| {
        instrumented(
            "kept_outputs.spvasm",
            Options {
                nan: NanLevel::Ops,
                records_at_end: at_end,
                nan_values_through_select: through_select,
                ..Options::default()
            },
        )
    };
    for at_end in [true, false] {
        let plain = at(false, at_end);
        let selected = at(true, at_end);
        assert_eq!(plain.info.sites, selected.info.sites);
        let module = Module::parse(&selected.words).unwrap();
        let plain_module = Module::parse(&plain.words).unwrap();
        let defined =
            |m: &Module| -> std::collections::HashMap<u32, blackbox_engine::module::Instruction> {
                m.globals
                    .iter()
                    .chain(m.functions[0].blocks.iter().flat_map(|b| &b.instructions))
                    .filter_map(|i| Some((i.result_id?, i.clone())))
                    .collect()
            };
        let main_instructions = |m: &Module| -> Vec<blackbox_engine::module::Instruction> {
            m.functions[0]
                .blocks
                .iter()
                .flat_map(|b| b.instructions.clone())
                .collect()
        };
        assert!(
            !main_instructions(&plain_module)
                .iter()
                .any(|i| i.is(spirv::Op::Select)),
            "no select without the option"
        );
        let by_id = defined(&module);
        let is = |id: u32, op: spirv::Op| by_id.get(&id).is_some_and(|i| i.is(op));
        let never = |condition: u32| {
            let test = match by_id.get(&condition) {
                Some(i) if i.is(spirv::Op::CompositeConstruct) => {
                    let first = i.operands[0];
                    assert!(i.operands.iter().all(|&c| c == first), "{i:?}");
                    first
                }
                _ => condition,
            };
            let test = &by_id[&test];
            assert!(test.is(spirv::Op::IEqual), "{test:?}");
            let all_ones = &by_id[&test.operands[1]];
            assert!(
                all_ones.is(spirv::Op::Constant) && all_ones.operands[0] == u32::MAX,
                "{all_ones:?}"
            );
        };
        let mut values = 0;
        for call in main_instructions(&module)
            .iter()
            .filter(|i| i.is(spirv::Op::FunctionCall))
        {
            for &arg in &call.operands[1..] {
                // A group's call has its quick test's result first: a bool, no value.
                let boolean = by_id[&arg]
                    .result_type
                    .is_some_and(|t| is(t, spirv::Op::TypeBool));
                if boolean || is(arg, spirv::Op::Constant) || is(arg, spirv::Op::ConstantNull) {
                    continue;
                }
                let select = &by_id[&arg];
                assert!(select.is(spirv::Op::Select), "{select:?} in {call:?}");
                never(select.operands[0]);
                assert!(
                    is(select.operands[1], spirv::Op::ConstantNull),
                    "{select:?}"
                );
                values += 1;
            }
        }
        assert!(values >= 7, "{values} values checked through a select");
    }
}
