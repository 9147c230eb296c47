//! NaN `ops` on `pow` written as `exp2(y * log2(x))` or `exp(y * log(x))` (`tests/asm/pow_pattern.spvasm`):
//! zink writes `pow` that way, and shaders do by hand. `log2(0)` is -inf there on purpose (`exp2(-inf)` is
//! 0), so such a pair is one `pow` site at its exponential, with x and y as operands; a logarithm used
//! anywhere else keeps its own check.

mod common;

use blackbox_engine::{instrument, NanLevel, Options, SiteKind};

#[test]
fn exp2_of_y_times_log2_of_x_is_checked_as_one_pow() {
    let words = common::assemble("pow_pattern.spvasm", "vulkan1.1");
    let out = instrument(
        &words,
        &Options {
            nan: NanLevel::Ops,
            error_buffer_address: 0x0000_7f00_dead_b000,
            ..Options::default()
        },
    )
    .expect("instruments");
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pow_pattern.ops.spv");
    common::write_words(&path, &out.words);
    let job = common::ValJob {
        path,
        env: "vulkan1.1".into(),
    };
    if let Some(e) = &common::validate_all(&[job])[0] {
        panic!("fails spirv-val: {e}");
    }
    let ops: Vec<(&str, &str)> = out
        .info
        .sites
        .iter()
        .filter_map(|s| match s.kind {
            SiteKind::NanOp { op } => Some((op, s.instruction.as_str())),
            _ => None,
        })
        .collect();
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
    let words = common::assemble("exp_pair.spvasm", "vulkan1.1");
    let out = instrument(
        &words,
        &Options {
            nan: NanLevel::Ops,
            error_buffer_address: 0x0000_7f00_dead_b000,
            ..Options::default()
        },
    )
    .expect("instruments");
    let path = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("exp_pair.ops.spv");
    common::write_words(&path, &out.words);
    let job = common::ValJob {
        path,
        env: "vulkan1.1".into(),
    };
    if let Some(e) = &common::validate_all(&[job])[0] {
        panic!("fails spirv-val: {e}");
    }
    let ops: Vec<(&str, &str)> = out
        .info
        .sites
        .iter()
        .filter_map(|s| match s.kind {
            SiteKind::NanOp { op } => Some((op, s.instruction.as_str())),
            _ => None,
        })
        .collect();
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
