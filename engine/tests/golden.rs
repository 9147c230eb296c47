//! Golden outputs: the disassembly of what each pass makes of a few small modules of the own corpus, kept
//! in `engine/tests/out/` and reviewed like code. Any change to emitted code shows there, in review, and
//! this test fails until the files are blessed again:
//!
//! ```sh
//! BLACKBOX_BLESS=1 cargo test -p blackbox-engine --test golden
//! ```
//!
//! Each output also passes spirv-val for the environment its input was compiled for. The inputs are corpus
//! variants (`common::shaders`, compiled by the system's glslang); each golden file starts with the input's
//! hash, so a different compiler shows as a changed input rather than as a mysterious engine change.

mod common;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use blackbox_engine::{instrument, ClockScope, LoopClock, LoopMode, NanLevel, Options, ShaderId};
use common::shaders;

/// One golden output: an input variant (by its corpus name) and what it is instrumented with.
struct Golden {
    /// The file name in `tests/out/`, without `.spvasm`.
    file: &'static str,
    /// The corpus variant.
    variant: &'static str,
    /// What the output shows, for the file's header.
    shows: &'static str,
    options: Options,
}

/// The options of the corpus test (`tests/corpus.rs`), at a NaN level.
fn options(nan: NanLevel) -> Options {
    Options {
        error_buffer_address: 0x0000_7f00_dead_b000,
        site_base: 40,
        nan,
        ..Options::default()
    }
}

fn goldens() -> Vec<Golden> {
    vec![
        Golden {
            file: "rare_flash.comp-1.0-g.nan-outputs",
            variant: "rare_flash.comp vulkan1.0 -g",
            shows: "compute, NaN outputs: a storage-buffer store checked, with OpLine",
            options: options(NanLevel::Outputs),
        },
        Golden {
            file: "rare_flash.comp-1.0.nan-ops",
            variant: "rare_flash.comp vulkan1.0",
            shows: "compute, NaN ops: normalize checked, then the store",
            options: options(NanLevel::Ops),
        },
        Golden {
            file: "rare_flash.comp-1.0-gVS.strip",
            variant: "rare_flash.comp vulkan1.0 -gVS",
            shows: "compute without asserts or printf: only NonSemantic.Shader.DebugInfo.100 stripped",
            options: options(NanLevel::Off),
        },
        Golden {
            file: "printf_formats.comp-1.0.printf",
            variant: "printf_formats.comp vulkan1.0",
            shows: "compute, printf: every conversion's value types recorded",
            options: options(NanLevel::Off),
        },
        Golden {
            file: "storage16.comp-1.2.nan-ops",
            variant: "storage16.comp vulkan1.2",
            shows: "compute, NaN ops: a division, and an f16 store widened to f32 for its check",
            options: options(NanLevel::Ops),
        },
        Golden {
            file: "transform.vert-1.0.asserts",
            variant: "transform.vert vulkan1.0",
            shows: "vertex, asserts: BB_ASSERT1 with gl_VertexIndex; the prologue reads VertexIndex and InstanceIndex",
            options: options(NanLevel::Off),
        },
        Golden {
            file: "transform.vert-1.0.assert-crash",
            variant: "transform.vert vulkan1.0",
            shows: "vertex, asserts in crash mode: the store through the crash address after the record",
            options: Options {
                assert_crash: true,
                ..options(NanLevel::Off)
            },
        },
        Golden {
            file: "skin.vert.hlsl-1.0.nan-outputs",
            variant: "skin.vert.hlsl vulkan1.0",
            shows: "vertex (HLSL), NaN outputs: the stage outputs checked",
            options: options(NanLevel::Outputs),
        },
        Golden {
            file: "lit.frag.hlsl-1.0.asserts",
            variant: "lit.frag.hlsl vulkan1.0",
            shows: "fragment (HLSL), asserts: a vector value; the prologue reads FragCoord",
            options: options(NanLevel::Off),
        },
        Golden {
            file: "lit.frag.hlsl-1.0.nan-outputs",
            variant: "lit.frag.hlsl vulkan1.0",
            shows: "fragment (HLSL), NaN outputs: the color output checked",
            options: options(NanLevel::Outputs),
        },
        Golden {
            file: "loops.comp.hlsl-1.0.loops-break-clock",
            variant: "loops.comp.hlsl vulkan1.0",
            shows: "compute (HLSL), loop budgets at break with a subgroup clock: a counter phi and a helper call \
                    per header, the header's branch leaving for the merge block on the stop flag",
            options: Options {
                loops: LoopMode::Break,
                loop_clock: Some(LoopClock {
                    scope: ClockScope::Subgroup,
                    budget_ticks: 4_000_000_000,
                }),
                ..options(NanLevel::Off)
            },
        },
        Golden {
            file: "int_ub.comp.hlsl-1.0.int-checks",
            variant: "int_ub.comp.hlsl vulkan1.0",
            shows: "compute (HLSL), integer checks with records where they fire (GPUs): divisions, a remainder, \
                    shifts, a dynamic vector index and an array index, each checked inline before the \
                    operation with a guarded record call",
            options: Options {
                int_checks: true,
                records_at_end: false,
                ..options(NanLevel::Off)
            },
        },
        Golden {
            file: "int_ub.comp.hlsl-1.0.int-checks-at-end",
            variant: "int_ub.comp.hlsl vulkan1.0",
            shows: "compute (HLSL), integer checks with records at the invocation's end (CPU devices): the same \
                    checks, each guarded call counting and keeping its operands in bb_pending, one flush \
                    before main returns",
            options: Options {
                int_checks: true,
                ..options(NanLevel::Off)
            },
        },
        Golden {
            file: "light.rcall-1.2.nan-ops",
            variant: "light.rcall vulkan1.2",
            shows: "callable, NaN ops: atan2 and asin quick-tested inline, one group call for both; the store \
                    of the incoming callable data checked",
            options: options(NanLevel::Ops),
        },
        Golden {
            file: "payload.rmiss-1.2.nan-outputs",
            variant: "payload.rmiss vulkan1.2",
            shows: "miss, NaN outputs: the store into the incoming ray payload checked",
            options: options(NanLevel::Outputs),
        },
        Golden {
            file: "bitcast.comp-1.0.nan-outputs",
            variant: "bitcast.comp vulkan1.0",
            shows: "compute, NaN outputs: integer stores of floatBitsToUint values check the floats (a uvec4 \
                    of bitcasts on its float parts, a splatted one once, a double's bits as f64)",
            options: options(NanLevel::Outputs),
        },
        Golden {
            file: "copy.comp.spvasm-1.2.nan-outputs",
            variant: "copy.comp.spvasm vulkan1.2",
            shows: "compute (assembly), NaN outputs: OpCopyMemory into a buffer, the source loaded before the \
                    copy (with the copy's source alignment, for a device address) and its float members checked",
            options: options(NanLevel::Outputs),
        },
        Golden {
            file: "atomic_float.comp-1.2.nan-outputs",
            variant: "atomic_float.comp vulkan1.2",
            shows: "compute, NaN outputs: the values of a float atomic add and exchange, and of a \
                    compare-exchange of a float's bits",
            options: options(NanLevel::Outputs),
        },
    ]
}

fn out_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/out")
}

fn blessing() -> bool {
    std::env::var_os("BLACKBOX_BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// The disassembly of a module file.
fn disassemble(path: &Path) -> String {
    let dis = common::venv_tool("spirv-dis");
    let out = Command::new(&dis)
        .arg("--no-color")
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", dis.display()));
    assert!(
        out.status.success(),
        "spirv-dis {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("spirv-dis writes UTF-8")
}

/// The file's header: what it shows and what it was made from.
fn header(g: &Golden, input: &[u32]) -> String {
    let o = &g.options;
    format!(
        "; Golden output of engine/tests/golden.rs: {}.\n\
         ; Input: {} (shader id {}).\n\
         ; Options: nan {:?}, asserts {}, printf {}, assert_crash {}, strip_non_semantic {}, site_base {}, \
         error buffer {:#x}.\n",
        g.shows,
        g.variant,
        ShaderId::of(input),
        o.nan,
        o.asserts,
        o.printf,
        o.assert_crash,
        o.strip_non_semantic,
        o.site_base,
        o.error_buffer_address,
    ) + &if o.loops != LoopMode::Off || o.int_checks {
        format!(
            "; Loops: {}, limit {}, clock {:?}; integer checks {}, records at the end {}.\n",
            o.loops, o.loop_limit, o.loop_clock, o.int_checks, o.records_at_end
        )
    } else {
        String::new()
    }
}

/// Where two texts first differ, as a short report: the lines around the first difference, the differing
/// stretch of each side (common lines at both ends trimmed off), and the line counts.
fn first_difference(expected: &str, actual: &str) -> String {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let prefix = e.iter().zip(&a).take_while(|(x, y)| x == y).count();
    let suffix = e[prefix..]
        .iter()
        .rev()
        .zip(a[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    const CONTEXT: usize = 3;
    const SHOWN: usize = 12;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "first difference at line {} ({} lines expected, {} lines now):",
        prefix + 1,
        e.len(),
        a.len()
    );
    for (i, line) in e
        .iter()
        .enumerate()
        .take(prefix)
        .skip(prefix.saturating_sub(CONTEXT))
    {
        let _ = writeln!(out, "  {:5}   {line}", i + 1);
    }
    for (sign, side) in [('-', &e), ('+', &a)] {
        let changed = &side[prefix..side.len() - suffix];
        for (i, line) in changed.iter().enumerate().take(SHOWN) {
            let _ = writeln!(out, "  {:5} {sign} {line}", prefix + i + 1);
        }
        if changed.len() > SHOWN {
            let _ = writeln!(out, "          {sign} ... {} more", changed.len() - SHOWN);
        }
    }
    for (i, line) in e.iter().enumerate().skip(e.len() - suffix).take(CONTEXT) {
        let _ = writeln!(out, "  {:5}   {line}", i + 1);
    }
    out
}

#[test]
fn instrumented_disassembly_matches_the_golden_files() {
    let bless = blessing();
    let variants = shaders::variants();
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("golden");
    std::fs::create_dir_all(&work).expect("creating target/tmp/golden");
    std::fs::create_dir_all(out_dir()).expect("creating tests/out");
    let goldens = goldens();
    let mut jobs = Vec::new();
    let mut failures = Vec::new();
    for g in &goldens {
        let v = variants
            .iter()
            .find(|v| v.name == g.variant)
            .unwrap_or_else(|| panic!("{}: no corpus variant named {}", g.file, g.variant));
        let input = common::read_words(&v.path);
        let out = instrument(&input, &g.options)
            .unwrap_or_else(|e| panic!("{}: instrumenting {}: {e}", g.file, g.variant));
        let spv = work.join(format!("{}.spv", g.file));
        common::write_words(&spv, &out.words);
        jobs.push(common::ValJob {
            path: spv.clone(),
            env: v.env.into(),
        });
        let text = header(g, &input) + &disassemble(&spv);
        let golden = out_dir().join(format!("{}.spvasm", g.file));
        if bless {
            std::fs::write(&golden, &text)
                .unwrap_or_else(|e| panic!("writing {}: {e}", golden.display()));
            continue;
        }
        match std::fs::read_to_string(&golden) {
            Ok(expected) if expected == text => {}
            Ok(expected) => failures.push(format!(
                "{} differs from the engine's output now ({}):\n{}",
                golden.display(),
                if expected.lines().nth(1) == text.lines().nth(1) {
                    "the engine's output changed"
                } else {
                    "the input changed too: another glslang?"
                },
                first_difference(&expected, &text)
            )),
            Err(e) => failures.push(format!("{}: {e}", golden.display())),
        }
    }
    // A golden file nothing makes any more is a stale review artefact.
    let known: Vec<String> = goldens
        .iter()
        .map(|g| format!("{}.spvasm", g.file))
        .collect();
    for entry in std::fs::read_dir(out_dir()).expect("reading tests/out") {
        let name = entry.expect("tests/out entry").file_name();
        let name = name.to_string_lossy();
        if !known.iter().any(|k| *k == name) {
            if bless {
                std::fs::remove_file(out_dir().join(&*name)).expect("removing a stale golden file");
            } else {
                failures.push(format!("tests/out/{name} is not made by any golden entry"));
            }
        }
    }
    for (result, g) in common::validate_all(&jobs).iter().zip(&goldens) {
        if let Some(error) = result {
            failures.push(format!("{}: the output fails spirv-val: {error}", g.file));
        }
    }
    assert!(
        failures.is_empty(),
        "{} golden output(s) wrong; review the change, then bless with BLACKBOX_BLESS=1:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_difference_report_names_the_first_differing_lines() {
    let expected = "a\nb\nc\nd\ne\n";
    let actual = "a\nb\nX\nd\ne\n";
    let report = first_difference(expected, actual);
    assert!(report.contains("first difference at line 3"), "{report}");
    assert!(report.contains("    3 - c"), "{report}");
    assert!(report.contains("    3 + X"), "{report}");
    assert!(report.contains("    4   d"), "{report}");
    // Lines only added.
    let report = first_difference("a\nb\n", "a\nnew\nb\n");
    assert!(report.contains("    2 + new"), "{report}");
    assert!(!report.contains(" - "), "{report}");
}
