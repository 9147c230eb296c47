//! FFmpeg's Vulkan filters through Blackbox, on lavapipe, with the validation layer below it: Debian's
//! `ffmpeg` (5.1), whose filters compile their GLSL to SPIR-V at run time with glslang, and whose
//! `libplacebo` filter runs libplacebo's own shaders. Each chain filters ten frames of FFmpeg's `testsrc2`
//! pattern and prints each frame's MD5 (`-f framemd5`), without Blackbox (the reference) and through it.
//!
//! Two things these programs showed that no test of ours had:
//! - libplacebo names its objects and labels its command buffers through `VK_EXT_debug_utils` on an
//!   instance that did not enable it. The validation layer reports every such call; Blackbox used to drop
//!   them (its dispatch had no next command to call), so the app's error vanished from the validation
//!   layer's output and `vkSetDebugUtilsObjectNameEXT` returned an error it never returns without Blackbox.
//! - `chromaber_vulkan`'s shader divides 0 by 0 at the centre of the chroma planes, every frame: a NaN in
//!   real shader code, which NaN `ops` names with its function and invocation.
//! - libplacebo's decode of HDR10 takes `pow()` of negative numbers when its contrast option pushes the
//!   signal past the top of PQ's range: NaNs in libplacebo's own generated shaders, named by NaN `ops`.

use blackbox_integration::*;
use std::process::Command;

/// The frames every chain starts from: FFmpeg's test pattern, 320x240, uploaded to a Vulkan image.
const SOURCE: &str = "testsrc2=size=320x240:rate=10";

/// How many frames each run filters.
const FRAMES: usize = 10;

/// libplacebo's filter: a scale with an EWA (compute) upscaler and debanding.
const LIBPLACEBO: &str = "format=yuv420p,hwupload,\
    libplacebo=w=480:h=360:upscaler=ewa_lanczos:deband=1:format=yuv420p,hwdownload,format=yuv420p";

/// libplacebo's filter turning an HDR10 frame (PQ, BT.2020) into SDR with its brightness and contrast raised
/// (its own options). libplacebo folds these into the colour matrix, so they act on the PQ-encoded signal,
/// and values pushed past the top of PQ's range reach its decode, `pow(max(x - c1, 0) / (c2 - c3 x), 1/m1)`,
/// whose divisor is negative there: `pow()` of a negative number, NaN.
const LIBPLACEBO_HDR: &str = "setparams=color_primaries=bt2020:color_trc=smpte2084:colorspace=bt2020nc,\
    format=yuv420p10le,hwupload,libplacebo=w=320:h=240:colorspace=bt709:color_primaries=bt709:\
    color_trc=bt709:tonemapping=hable:brightness=0.2:contrast=1.5:format=yuv420p,hwdownload,format=yuv420p";

/// PQ's `1/m1` (SMPTE ST 2084: m1 = 2610/16384), the exponent of the decode's last `pow()`, as Blackbox
/// prints it.
const PQ_INVERSE_M1: &str = "6.277395";

/// FFmpeg's own Vulkan filters, one after another.
const FILTERS: &str = "format=yuv420p,hwupload,avgblur_vulkan,chromaber_vulkan,transpose_vulkan,\
    flip_vulkan,scale_vulkan=w=160:h=120,hwdownload,format=yuv420p";

/// Best practices' warning for a submit whose `pWaitSemaphores` is set with a count of 0: FFmpeg's own
/// submits, once per such batch, and their number varies from run to run (60-79 in 24 runs of the
/// libplacebo chain; 87 once, through Blackbox on a loaded machine). So every run counts those batches
/// itself, above all the layers ([`count_submits_above_the_layers`]), and the warning must come exactly
/// that often: Blackbox adds none and loses none.
const SEMAPHORE_COUNT: &str = "UNASSIGNED-BestPractices-SemaphoreCount";

/// The validation layer's error for a command of an extension the app did not enable.
const EXTENSION_NOT_ENABLED: &str = "UNASSIGNED-GeneralParameterError-ExtensionNotEnabled";

/// How far the count of [`EXTENSION_NOT_ENABLED`] errors through Blackbox may be from the one without it:
/// libplacebo names each fence it makes, and makes a few more or fewer as the GPU keeps up (666-668 names
/// in 18 runs on an idle machine, 661 in a reference run during the whole test suite, with 666 through
/// Blackbox).
const EXTENSION_NOT_ENABLED_VARIES: usize = 15;

/// `ffmpeg` filtering [`FRAMES`] frames of [`SOURCE`] through `chain` on lavapipe, printing their MD5s:
/// with the validation layer alone, or through Blackbox with `vars` when `blackbox`.
fn ffmpeg(home: &TempDir, chain: &str, blackbox: Option<&[(&str, &str)]>) -> Command {
    let mut cmd = vulkan_command("ffmpeg", home.path());
    cmd.args([
        "-hide_banner",
        "-loglevel",
        "warning",
        "-init_hw_device",
        "vulkan=vk:0",
        "-filter_hw_device",
        "vk",
        "-f",
        "lavfi",
        "-i",
        SOURCE,
        "-frames:v",
        &FRAMES.to_string(),
        "-vf",
        chain,
        "-f",
        "framemd5",
        "-",
    ]);
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    count_submits_above_the_layers(&mut cmd, home);
    cmd
}

/// Puts the test-only fault layer above every other layer, logging each batch FFmpeg submits with
/// `pWaitSemaphores` set and a count of 0 (`BB_FAULT_LOG_SUBMITS`, no fault): the batches
/// [`SEMAPHORE_COUNT`] is about, counted where nothing of Blackbox's is seen.
fn count_submits_above_the_layers(cmd: &mut Command, home: &TempDir) {
    let dir = home.path().join("fault-manifest");
    write_fault_manifest(&dir);
    let env = |key: &str| {
        cmd.get_envs()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v)
            .map(|v| v.to_string_lossy().into_owned())
    };
    let layers = env("VK_INSTANCE_LAYERS").expect("the validation layer is enabled");
    let paths = match env("VK_ADD_LAYER_PATH") {
        Some(paths) => format!("{}:{paths}", dir.display()),
        None => dir.display().to_string(),
    };
    cmd.env("VK_INSTANCE_LAYERS", format!("{FAULT_LAYER}:{layers}"))
        .env("VK_ADD_LAYER_PATH", paths)
        .env("BB_FAULT_LOG_SUBMITS", "1");
}

/// How many batches FFmpeg submitted with `pWaitSemaphores` set and a count of 0 (the fault layer's
/// lines), and how many times the validation layer warned of it ([`SEMAPHORE_COUNT`]).
fn waits_set_without_count(run: &Run) -> (usize, usize) {
    let submitted = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[fault-layer] vkQueueSubmit: "))
        .count();
    let warned = run
        .validation()
        .counts()
        .get(SEMAPHORE_COUNT)
        .copied()
        .unwrap_or(0);
    (submitted, warned)
}

/// The frames' MD5s (`framemd5`'s lines: stream, timestamps, size, MD5).
fn frames(run: &Run) -> Vec<&str> {
    run.stdout.lines().filter(|l| l.starts_with("0,")).collect()
}

/// How many times the validation layer said "Attempted to call `command`()" (its text for a command of
/// an extension that is not enabled).
fn calls_reported(run: &Run, command: &str) -> usize {
    let text = format!("Attempted to call {command}()");
    run.stdout.lines().filter(|l| l.contains(&text)).count()
}

/// Runs `chain` without Blackbox, checks it made its frames with the validation layer on.
fn reference(home: &TempDir, chain: &str) -> Run {
    let reference = run(&mut ffmpeg(home, chain, None));
    reference.assert_success().assert_validation_on();
    assert_eq!(frames(&reference).len(), FRAMES, "{}", reference.dump());
    // The count above the layers is the validation layer's, without Blackbox: it counts what the
    // warning is about.
    let (submitted, warned) = waits_set_without_count(&reference);
    assert_eq!(
        warned,
        submitted,
        "{SEMAPHORE_COUNT} against batches submitted so\n{}",
        reference.dump()
    );
    reference
}

/// Runs `chain` through Blackbox with `vars`; returns the run and what differs from `reference`: the exit
/// status, the frames, Blackbox not active, validation messages added or lost.
fn through_blackbox(
    home: &TempDir,
    chain: &str,
    vars: &[(&str, &str)],
    reference: &Run,
) -> (Run, Vec<String>) {
    let run = run(&mut ffmpeg(home, chain, Some(vars)));
    let mut problems = run.problems_through_blackbox(&format!("{vars:?}"));
    if frames(&run) != frames(reference) {
        problems.push(format!(
            "{vars:?}: frames differ from the run without Blackbox:\n{:#?}\nwithout:\n{:#?}",
            frames(&run),
            frames(reference)
        ));
    }
    // Exactly one warning per batch FFmpeg submitted so in this run; between the runs, its count may
    // differ by what FFmpeg's own number of such batches did.
    let (submitted, warned) = waits_set_without_count(&run);
    if warned != submitted {
        problems.push(format!(
            "{vars:?}: {SEMAPHORE_COUNT} {warned} times, for {submitted} batches FFmpeg submitted so"
        ));
    }
    let ffmpeg_varied = submitted.abs_diff(waits_set_without_count(reference).0);
    if let Err(e) = run.validation_messages_changed_beyond(
        reference,
        &[
            (SEMAPHORE_COUNT, ffmpeg_varied),
            (EXTENSION_NOT_ENABLED, EXTENSION_NOT_ENABLED_VARIES),
        ],
    ) {
        problems.push(format!("{vars:?}: {e}"));
    }
    (run, problems)
}

#[test]
fn libplacebo_frames_are_unchanged_and_its_debug_utils_calls_still_reach_the_validation_layer() {
    let home = TempDir::new("ffmpeg-libplacebo");
    let reference = reference(&home, LIBPLACEBO);
    // libplacebo's calls without VK_EXT_debug_utils: the error this test is about must be there to lose.
    let labels = calls_reported(&reference, "vkCmdBeginDebugUtilsLabelEXT");
    let names = calls_reported(&reference, "vkSetDebugUtilsObjectNameEXT");
    assert!(labels > 0 && names > 0, "{}", reference.dump());
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    for vars in [
        &[][..],
        &[
            ("VK_BLACKBOX_NAN", "ops"),
            ("VK_BLACKBOX_BREADCRUMBS", "command"),
        ][..],
    ] {
        let (run, mut found) = through_blackbox(&home, LIBPLACEBO, vars, &reference);
        // Every label call reaches the validation layer, as without Blackbox: libplacebo labels each
        // command buffer it records, a number fixed by the frames.
        for command in ["vkCmdBeginDebugUtilsLabelEXT", "vkCmdEndDebugUtilsLabelEXT"] {
            let (with, without) = (
                calls_reported(&run, command),
                calls_reported(&reference, command),
            );
            if with != without {
                found.push(format!(
                    "{vars:?}: {EXTENSION_NOT_ENABLED} for {command}: {with} with Blackbox, {without} without"
                ));
            }
        }
        // Names: libplacebo names each fence it makes, and makes a few more or fewer as the GPU keeps up
        // ([`EXTENSION_NOT_ENABLED_VARIES`]); all of them, not none, must be reported.
        let with = calls_reported(&run, "vkSetDebugUtilsObjectNameEXT");
        if with + EXTENSION_NOT_ENABLED_VARIES < names {
            found.push(format!(
                "{vars:?}: {EXTENSION_NOT_ENABLED} for vkSetDebugUtilsObjectNameEXT: {with} with \
                 Blackbox, {names} without"
            ));
        }
        if !run.warnings().is_empty() {
            found.push(format!("{vars:?}: Blackbox warned: {:#?}", run.warnings()));
        }
        problems.extend(found);
        runs.push(run);
    }
    assert!(
        problems.is_empty(),
        "{}\n=== without Blackbox ===\n{}\n=== through Blackbox, last run ===\n{}",
        problems.join("\n\n"),
        reference.dump(),
        runs.last().unwrap().dump()
    );
}

/// Runs `chain` without Blackbox, through it at the defaults and at NaN `ops`; checks the frames and
/// validation of both runs, that the defaults warn of nothing, and that at `ops` Blackbox warns of NaNs
/// only, every one `named` (`expected` describes them), and each of `stages` among them. Panics with
/// every problem found.
fn nan_ops_names(
    name: &str,
    chain: &str,
    expected: &str,
    named: impl Fn(&str) -> bool,
    stages: &[&str],
) {
    let home = TempDir::new(name);
    let reference = reference(&home, chain);
    let (defaults, mut problems) = through_blackbox(&home, chain, &[], &reference);
    if !defaults.warnings().is_empty() {
        problems.push(format!(
            "defaults: Blackbox warned, with NaN checks off: {:#?}",
            defaults.warnings()
        ));
    }
    let (ops, found) = through_blackbox(&home, chain, &[("VK_BLACKBOX_NAN", "ops")], &reference);
    problems.extend(found);
    let nan: Vec<&str> = ops
        .warnings()
        .into_iter()
        .filter(|w| w.starts_with("[blackbox] warn: NaN"))
        .collect();
    if nan.is_empty() || !nan.iter().all(|w| named(w)) {
        problems.push(format!("NaN ops: expected {expected}, got {nan:#?}"));
    }
    for stage in stages {
        if !nan.iter().any(|w| w.contains(stage)) {
            problems.push(format!("NaN ops: no NaN named in {stage}: {nan:#?}"));
        }
    }
    if ops.warnings().len() != nan.len() {
        problems.push(format!(
            "NaN ops: Blackbox warnings besides the NaNs: {:#?}",
            ops.warnings()
        ));
    }
    assert!(
        problems.is_empty(),
        "{}\n=== without Blackbox ===\n{}\n=== NaN ops ===\n{}",
        problems.join("\n\n"),
        reference.dump(),
        ops.dump()
    );
}

#[test]
fn chromaber_vulkan_divides_zero_by_zero_and_nan_ops_names_where() {
    // The chroma planes of a 320x240 frame are 160x120: the shader's distance from the centre is 0 there,
    // and it divides by it. Frame after frame the same invocation, so one line per drain.
    nan_ops_names(
        "ffmpeg-filters",
        FILTERS,
        "the division in distort_chroma at invocation (80, 60, 0)",
        |w| {
            w.contains("NaN from division()")
                && w.contains("OpFDiv")
                && w.contains("(0, 0), (0, 0) -> (NaN, NaN)")
                && w.contains("invocation (80, 60, 0)")
                && w.contains("function distort_chroma(")
        },
        &["entry point main (comp)"],
    );
}

#[test]
fn libplacebo_decoding_hdr10_pushed_past_its_range_takes_pow_of_a_negative_and_nan_ops_names_it() {
    // libplacebo's shaders carry no debug information: the site is named by its instruction, the
    // function glslang named and the entry point. It decodes in two shaders here: a compute one (a pass
    // of its own) and the fragment shader that renders the output.
    let exponent = format!("({PQ_INVERSE_M1}, {PQ_INVERSE_M1}, {PQ_INVERSE_M1})");
    nan_ops_names(
        "ffmpeg-libplacebo-hdr",
        LIBPLACEBO_HDR,
        &format!("pow() with PQ's exponent {PQ_INVERSE_M1}"),
        |w| {
            w.contains("NaN from pow() at instruction")
                && w.contains("OpExtInst")
                && w.contains(" Pow ")
                && w.contains(&exponent)
                && w.contains("function _main_")
        },
        &["entry point main (comp)", "entry point main (frag)"],
    );
}
