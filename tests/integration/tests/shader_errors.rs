//! Shader instrumentation end to end on lavapipe: NaN/Inf origins, asserts and printf reach the log with
//! their source lines, operands and invocations; shaders that report nothing compute what they computed
//! without the layer; the validation layer below Blackbox stays silent.

use blackbox_integration::*;
use std::process::Command;

/// The 1-based line of `shaders/testapp/<file>` holding `marker`.
fn line_of(file: &str, marker: &str) -> usize {
    let text = std::fs::read_to_string(workspace_root().join("shaders/testapp").join(file))
        .expect("shader source");
    text.lines()
        .position(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("{marker} not in {file}"))
        + 1
}

/// Both ways of writing NaN records (`VK_BLACKBOX_NAN_RECORDS`): `end`, what lavapipe gets by default,
/// and `fired`, what GPUs get.
const NAN_RECORDS: [&str; 2] = ["end", "fired"];

#[test]
fn nan_ops_names_the_first_operation_with_its_line_operands_invocation_and_count() {
    let cases = [
        (
            "normalize",
            "NaN from normalize() at nan.comp:{L}: operands (0, 0, 0) -> (NaN, NaN, NaN)",
        ),
        (
            "pow",
            "NaN from pow() at nan.comp:{L}: operands -0.5, 0.3 -> NaN",
        ),
        (
            "div",
            "Inf from division() at nan.comp:{L}: operands 1, 0 -> inf",
        ),
    ];
    for ((op, expected), records) in cases
        .into_iter()
        .flat_map(|case| NAN_RECORDS.map(|records| (case, records)))
    {
        let home = TempDir::new(&format!("nan-{op}"));
        let run = run(&mut testapp_with_blackbox(
            &home,
            &["nan-compute", "--nan-op", op],
            &[
                ("VK_BLACKBOX_NAN", "ops"),
                ("VK_BLACKBOX_NAN_RECORDS", records),
            ],
        ));
        run.assert_success().assert_no_validation_messages();
        let line = line_of("nan.comp", &format!("NAN-SITE {op}"));
        let expected = expected.replace("{L}", &line.to_string());
        let warns = run.warnings();
        // One line: the operation; its store is the same NaN and is not reported again.
        assert_eq!(warns.len(), 1, "{}", run.dump());
        let w = warns[0];
        assert!(
            w.contains(&expected),
            "{records}: expected `{expected}` in\n{w}"
        );
        // One invocation of one dispatch among 100: invocation (12,0,0), counted once.
        assert!(
            w.contains("invocation (12, 0, 0)")
                && w.contains(" x1 ")
                && w.contains("[pipeline \"nan-compute\"]"),
            "{w}"
        );
    }
}

#[test]
fn nan_ops_in_a_fragment_shader_names_the_pixel() {
    let home = TempDir::new("nan-frag");
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["nan-fragment"],
        &[("VK_BLACKBOX_NAN", "ops")],
    ));
    run.assert_success().assert_no_validation_messages();
    let line = line_of("nan.frag", "NAN-SITE normalize");
    let warns = run.warnings();
    assert_eq!(warns.len(), 1, "{}", run.dump());
    assert!(
        warns[0].contains(&format!(
            "NaN from normalize() at nan.frag:{line}: operands (0, 0, 0)"
        )),
        "{}",
        warns[0]
    );
    assert!(
        warns[0].contains("pixel (12, 34)") && warns[0].contains(" x1 "),
        "{}",
        warns[0]
    );
}

/// The bad pixel discards itself after its NaN: the record is written before the discard, both ways.
#[test]
fn nan_ops_in_a_fragment_that_then_discards_is_reported() {
    for records in NAN_RECORDS {
        let home = TempDir::new("nan-frag-discard");
        let run = run(&mut testapp_with_blackbox(
            &home,
            &["nan-fragment", "--nan-discard"],
            &[
                ("VK_BLACKBOX_NAN", "ops"),
                ("VK_BLACKBOX_NAN_RECORDS", records),
            ],
        ));
        run.assert_success().assert_no_validation_messages();
        let line = line_of("nan.frag", "NAN-SITE normalize");
        let warns = run.warnings();
        assert_eq!(warns.len(), 1, "{records}: {}", run.dump());
        assert!(
            warns[0].contains(&format!("NaN from normalize() at nan.frag:{line}"))
                && warns[0].contains("pixel (12, 34)")
                && warns[0].contains(" x1 "),
            "{records}: {}",
            warns[0]
        );
    }
}

#[test]
fn nan_outputs_catches_the_value_where_it_is_stored() {
    for (scenario, file, what) in [
        ("nan-compute", "nan.comp", "storage buffer store"),
        ("nan-fragment", "nan.frag", "output"),
    ] {
        for (op, records) in ["normalize", "pow", "div"]
            .into_iter()
            .flat_map(|op| NAN_RECORDS.map(|records| (op, records)))
        {
            let home = TempDir::new("nan-out");
            let run = run(&mut testapp_with_blackbox(
                &home,
                &[scenario, "--nan-op", op],
                &[
                    ("VK_BLACKBOX_NAN", "outputs"),
                    ("VK_BLACKBOX_NAN_RECORDS", records),
                ],
            ));
            run.assert_success().assert_no_validation_messages();
            let warns = run.warnings();
            assert_eq!(warns.len(), 1, "{}", run.dump());
            let kind = if op == "div" { "Inf" } else { "NaN" };
            let line = line_of(file, "NAN-STORE");
            assert!(
                warns[0].contains(&format!("{kind} in {what} at {file}:{line}")),
                "{records}: {}",
                warns[0]
            );
            assert!(
                !warns[0].contains(" from "),
                "outputs level does not look at operations: {}",
                warns[0]
            );
        }
    }
}

#[test]
fn source_lines_come_from_opline_and_from_nonsemantic_debug_info() {
    let line = line_of("nan.comp", "NAN-SITE normalize");
    for debug in ["opline", "nonsemantic"] {
        let home = TempDir::new(debug);
        let run = run(&mut testapp_with_blackbox(
            &home,
            &["nan-compute", "--shader-debug", debug],
            &[("VK_BLACKBOX_NAN", "ops")],
        ));
        run.assert_success().assert_no_validation_messages();
        assert!(
            run.warnings()
                .iter()
                .any(|w| w.contains(&format!("normalize() at nan.comp:{line}"))),
            "{debug}:\n{}",
            run.dump()
        );
    }
}

#[test]
fn instrumented_shaders_that_report_nothing_compute_the_same_results() {
    let reference = {
        let home = TempDir::new("plain");
        let mut cmd = vulkan_command(testapp(), home.path());
        cmd.args(["all", "nan-compute", "nan-fragment"])
            .env("VK_INSTANCE_LAYERS", VALIDATION);
        let run = run(&mut cmd);
        run.assert_success().assert_no_validation_messages();
        run.checksums()
    };
    for level in ["outputs", "ops"] {
        let home = TempDir::new("instrumented");
        let run = run(&mut testapp_with_blackbox(
            &home,
            &["all", "nan-compute", "nan-fragment"],
            &[("VK_BLACKBOX_NAN", level)],
        ));
        run.assert_success().assert_no_validation_messages();
        assert_eq!(run.checksums(), reference, "NaN {level}\n{}", run.dump());
    }
}

#[test]
fn printf_formats_every_conversion() {
    let home = TempDir::new("printf");
    let first = run(&mut testapp_with_blackbox(&home, &["printf"], &[]));
    let run = &first;
    run.assert_success().assert_no_validation_messages();
    for expected in [
        "bb-printf d=-7",
        "bb-printf i=42",
        "bb-printf u=4000000000",
        "bb-printf x=ff",
        "bb-printf X=BEEF",
        "bb-printf o=777",
        "bb-printf f=3.500000",
        "bb-printf e=1.000000e-03",
        "bb-printf g=0.001",
        "bb-printf a=0x1.cp+1",
        "bb-printf c=A",
        "bb-printf prec=3.142",
        "bb-printf v2f=1.500000, -2.000000",
        "bb-printf v3u=1, 2, 3",
        "bb-printf v4d=-1, 0, 1, 2",
        "bb-printf mixed -7 42 3.500000 ff",
        "bb-printf lu=1099511627777",
        "bb-printf lx=deadbeefcafe",
    ] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains(&format!("{expected} ")));
        let line = line.unwrap_or_else(|| panic!("`{expected}` missing\n{}", run.dump()));
        assert!(
            line.starts_with("[blackbox] info: printf at printf.comp:"),
            "{line}"
        );
    }
    // Off: no printf lines, and the module still loads on a driver without VK_KHR_shader_non_semantic_info.
    let run = blackbox_integration::run(&mut testapp_with_blackbox(
        &home,
        &["printf"],
        &[("VK_BLACKBOX_PRINTF", "off")],
    ));
    run.assert_success().assert_no_validation_messages();
    assert!(!run.stderr.contains("bb-printf"), "{}", run.dump());
}

#[test]
fn failing_asserts_are_logged_with_values_and_lines() {
    for (scenario, file, who) in [
        ("assert-compute", "assert.comp", "invocation (12, 34, 0)"),
        ("assert-fragment", "assert.frag", "pixel (12, 34)"),
    ] {
        let home = TempDir::new(scenario);
        let run = run(&mut testapp_with_blackbox(&home, &[scenario], &[]));
        run.assert_success().assert_no_validation_messages();
        let line = line_of(file, "ASSERT-SITE");
        let warns = run.warnings();
        assert_eq!(warns.len(), 1, "{}", run.dump());
        let expected =
            format!("assert 7 failed at {file}:{line}: size 0.300000 too big, delta -22, {who}");
        assert!(
            warns[0].contains(&expected),
            "expected `{expected}` in\n{}",
            warns[0]
        );
        assert!(warns[0].contains(" x1 "), "{}", warns[0]);
    }
}

/// Each scenario runs several times with the monitor thread polling every 20 ms (a 200 ms watchdog): when
/// the monitor finds the assert first, the app's own wait must not return while the monitor writes the
/// report (before that was fixed, about one run in twenty printed its checksums before the abort).
#[test]
fn abort_mode_stops_at_the_first_failing_assert_with_a_report() {
    let runs = ["assert-compute", "assert-fragment"]
        .into_iter()
        .flat_map(|scenario| std::iter::repeat_n(scenario, 4));
    for scenario in runs {
        let home = TempDir::new("abort");
        let run = run(&mut testapp_with_blackbox(
            &home,
            &[scenario],
            &[
                ("VK_BLACKBOX_ASSERT", "abort"),
                ("VK_BLACKBOX_WATCHDOG_MS", "200"),
            ],
        ));
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            run.status.signal(),
            Some(libc_sigabrt()),
            "stopped like a CPU assert\n{}",
            run.dump()
        );
        assert!(
            run.checksums().is_empty(),
            "the app did not get to finish\n{}",
            run.dump()
        );
        let reports = reports_in(&home.path().join("reports"));
        assert_eq!(
            reports.len(),
            1,
            "one report, no second one from the abort signal\n{}",
            run.dump()
        );
        let report = &reports[0].1;
        assert_eq!(report.kind, blackbox_report::Kind::Assert);
        assert!(
            report.reason.contains("assert 7 failed"),
            "{}",
            report.reason
        );
        let errors = &report.shader_errors;
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!((errors[0].kind.as_str(), errors[0].count), ("assert", 1));
        assert!(errors[0]
            .location
            .as_deref()
            .is_some_and(|l| l.starts_with(&format!(
                "{}:",
                if scenario == "assert-compute" {
                    "assert.comp"
                } else {
                    "assert.frag"
                }
            ))));
    }
}

fn libc_sigabrt() -> i32 {
    6
}

/// The shader id the log names for the NaN in `nan-compute`.
fn logged_shader_id(run: &Run) -> String {
    let w = run
        .warnings()
        .into_iter()
        .find(|w| w.contains("NaN from"))
        .unwrap_or_else(|| panic!("{}", run.dump()));
    let id = w
        .split(" in shader ")
        .nth(1)
        .and_then(|rest| rest.split([' ', ',']).next())
        .unwrap();
    assert_eq!(id.len(), 16, "{w}");
    id.to_owned()
}

#[test]
fn shader_filter_selects_by_id_prefix_or_source_name() {
    let home = TempDir::new("filter");
    let all = run(&mut testapp_with_blackbox(
        &home,
        &["nan-compute"],
        &[("VK_BLACKBOX_NAN", "ops")],
    ));
    all.assert_success();
    let id = logged_shader_id(&all);
    // With the entries that select none of the app's one module: a warning names them when the device goes
    // (a name typed wrong would otherwise read as "no NaN there").
    for (filter, reported, unmatched) in [
        (&id[..6], true, ""),
        ("nan.comp", true, ""),
        ("compute.comp,nan.comp", true, "compute.comp"),
        ("0123456789abcdef", false, "0123456789abcdef"),
        ("draw.frag", false, "draw.frag"),
    ] {
        let run = run(&mut testapp_with_blackbox(
            &home,
            &["nan-compute"],
            &[("VK_BLACKBOX_NAN", "ops"), ("VK_BLACKBOX_SHADERS", filter)],
        ));
        run.assert_success().assert_no_validation_messages();
        assert_eq!(
            run.warnings()
                .iter()
                .any(|w| w.contains("NaN from normalize()")),
            reported,
            "filter {filter}\n{}",
            run.dump()
        );
        let warnings = run.warnings();
        let said: Vec<_> = warnings
            .iter()
            .filter(|w| w.contains("VK_BLACKBOX_SHADERS:"))
            .collect();
        if unmatched.is_empty() {
            assert!(said.is_empty(), "filter {filter}\n{}", run.dump());
        } else {
            assert!(
                said.len() == 1
                    && said[0].contains(&format!(
                        "VK_BLACKBOX_SHADERS: {unmatched} selected none of the 1 shader module(s) the app \
                         created"
                    )),
                "filter {filter}\n{}",
                run.dump()
            );
        }
        assert_eq!(
            run.checksums(),
            all.checksums(),
            "the app's results do not depend on the filter"
        );
    }
}

#[test]
fn dumped_shaders_are_the_original_and_a_valid_instrumented_module() {
    let home = TempDir::new("dump");
    let dump = home.path().join("dump");
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["nan-compute"],
        &[
            ("VK_BLACKBOX_NAN", "ops"),
            ("VK_BLACKBOX_DUMP_SHADERS", dump.to_str().unwrap()),
        ],
    ));
    run.assert_success().assert_no_validation_messages();
    let id = logged_shader_id(&run);
    let original = std::fs::read(dump.join(format!("{id}.spv"))).expect("original module dumped");
    let instrumented = dump.join(format!("{id}.instrumented.spv"));
    assert!(instrumented.is_file(), "instrumented module dumped");
    let sites =
        std::fs::read_to_string(dump.join(format!("{id}.sites.txt"))).expect("site table dumped");
    assert!(sites.contains("normalize"), "{sites}");
    // The dump is the app's own module: its hash is the id.
    assert_eq!(
        format!("{:016x}", blackbox_report::signature::fnv1a(&original)),
        id
    );
    let spirv_val = workspace_root().join(".venv/bin/spirv-val");
    assert!(
        spirv_val.is_file(),
        "{} missing: run scripts/setup.sh",
        spirv_val.display()
    );
    let out = Command::new(spirv_val)
        .args(["--target-env", "vulkan1.2"])
        .arg(&instrumented)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "spirv-val: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bad_values_of_the_shader_and_breadcrumb_variables_warn_and_the_app_runs() {
    let home = TempDir::new("bad-values");
    let vars = [
        ("VK_BLACKBOX_NAN", "everything"),
        ("VK_BLACKBOX_ASSERT", "loud"),
        ("VK_BLACKBOX_PRINTF", "yes"),
        ("VK_BLACKBOX_BREADCRUMBS", "draws"),
        ("VK_BLACKBOX_WATCHDOG_MS", "ten"),
    ];
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["compute", "assert-compute"],
        &vars,
    ));
    run.assert_success().assert_no_validation_messages();
    for (name, value) in vars {
        let expected = format!("[blackbox] warn: {name}=\"{value}\" is not valid; accepted: ");
        assert!(
            run.stderr.contains(&expected),
            "`{expected}` missing\n{}",
            run.dump()
        );
    }
    // The defaults are in force: asserts are logged, breadcrumbs per command, watchdog 10 s.
    assert!(run.stderr.contains("assert 7 failed"), "{}", run.dump());
    assert!(
        run.stderr.contains("breadcrumbs command") && run.stderr.contains("watchdog 10000 ms"),
        "{}",
        run.dump()
    );
}

#[test]
fn crash_mode_faults_the_device_at_the_failing_assert_and_the_report_names_it() {
    let home = TempDir::new("crash");
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["assert-compute"],
        &[("VK_BLACKBOX_ASSERT", "crash")],
    ));
    use std::os::unix::process::ExitStatusExt;
    // On lavapipe the deliberate fault is a SIGSEGV in a driver thread; on a GPU it is a device fault.
    assert_eq!(run.status.signal(), Some(11), "{}", run.dump());
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let report = &reports[0].1;
    assert_eq!(report.kind, blackbox_report::Kind::Signal);
    let asserts: Vec<_> = report
        .shader_errors
        .iter()
        .filter(|e| e.kind == "assert")
        .collect();
    assert_eq!(asserts.len(), 1, "{:?}", report.shader_errors);
    assert!(
        asserts[0]
            .message
            .starts_with("assert 7 failed at assert.comp:"),
        "{}",
        asserts[0].message
    );
    assert_eq!(report.in_flight[0].command, "vkCmdDispatch");
}

/// Issue 11: a module without debug info (glslang without `-g`, as most apps ship) still gets one log line
/// per site, none alike: each names its site number (the one of `<id>.sites.txt` and `blackbox shader-info
/// --sites`), the entry point, and the instruction as `spirv-dis --raw-id` writes it.
#[test]
fn sites_without_debug_info_are_named_by_number_entry_point_and_instruction() {
    let home = TempDir::new("no-debug-info");
    let dir = home.path().join("spv");
    std::fs::create_dir_all(&dir).unwrap();
    // Every invocation makes two NaNs (sqrt and log of a negative number, from the buffer spirv-run fills
    // with values in [-2, 3)) and stores each into a buffer it does not read. (When the shader wrote them
    // into the buffer it read, at other invocations' indices, an invocation could read another's NaN and
    // store it with no operation of its own making it: a third warning, in some runs.)
    std::fs::write(
        dir.join("two_nans.comp"),
        in_out_compute(
            "float x = -abs(v[i]) - 1.0;\n\
             o[2u * i] = sqrt(x);\n\
             o[2u * i + 1u] = log(x);\n",
        ),
    )
    .unwrap();
    let spv = dir.join("two_nans.comp.spv");
    glslang(
        &dir,
        &["-V", "--target-env", "vulkan1.2"],
        "two_nans.comp",
        &spv,
    );
    let dump = home.path().join("dump");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("spirv-run")
        .arg("--spirv")
        .arg(&spv)
        .env("VK_BLACKBOX_NAN", "ops")
        .env("VK_BLACKBOX_DUMP_SHADERS", &dump)
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"));
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    run.assert_testapp_finished();

    let disassembly = Command::new(workspace_root().join(".venv/bin/spirv-dis"))
        .arg("--raw-id")
        .arg(&spv)
        .output()
        .expect("spirv-dis (scripts/setup.sh installs it)");
    let disassembly = String::from_utf8_lossy(&disassembly.stdout).into_owned();
    let nan_lines: Vec<&str> = run
        .warnings()
        .into_iter()
        .filter(|l| l.contains("NaN"))
        .collect();
    // Two operations and two stores; the stores' lines are debug lines when the operation above made the
    // NaN, so two warnings, one per operation.
    assert_eq!(nan_lines.len(), 2, "{}", run.dump());
    assert_ne!(nan_lines[0], nan_lines[1]);
    for (line, op) in nan_lines.iter().zip(["Sqrt", "Log"]) {
        let instruction = line
            .split_once(" at instruction ")
            .and_then(|(_, rest)| rest.split_once(": operands"))
            .map(|(inst, _)| inst)
            .unwrap_or_else(|| panic!("no instruction in {line}"));
        assert!(instruction.contains(&format!(" {op} ")), "{line}");
        assert!(
            disassembly.lines().any(|l| l.trim() == instruction),
            "{instruction:?} is not a line of spirv-dis --raw-id\n{disassembly}"
        );
        assert!(line.contains("(entry point main (comp))"), "{line}");
    }
    // The site numbers are those of the dumped site table and of `blackbox shader-info --sites`.
    let table = std::fs::read_dir(&dump)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".sites.txt"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .expect("a dumped site table");
    let info = run_cli_sites(&spv);
    assert_eq!(
        table.trim_end(),
        info.trim_end(),
        "the dump and the CLI list the same sites"
    );
    for line in &nan_lines {
        let n: u32 = line
            .split_once(", site ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no site number in {line}"));
        let row = table
            .lines()
            .find(|r| r.starts_with(&format!("site {n}: ")))
            .unwrap_or_else(|| panic!("site {n} not in\n{table}"));
        let instruction = row
            .split_once(" at instruction ")
            .and_then(|(_, rest)| rest.split_once(" in entry point"))
            .map(|(inst, _)| inst)
            .unwrap();
        assert!(line.contains(instruction), "{line}\n{row}");
    }
}

/// `blackbox shader-info --sites FILE` (NaN ops), its stdout's site lines.
fn run_cli_sites(spv: &std::path::Path) -> String {
    let out = Command::new(blackbox())
        .args(["shader-info", "--sites"])
        .arg(spv)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("site "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The SPIR-V assembly of `copy_nan.comp.spvasm` in the test below: a NaN made in a Function variable and
/// copied into a storage buffer with `OpCopyMemory`, as vkd3d-shader writes its outputs. No compiler here
/// writes `OpCopyMemory` into a buffer, hence assembly.
const COPY_NAN_SPVASM: &str = r#"; copy_nan.comp.spvasm
               OpCapability Shader
          %1 = OpExtInstImport "GLSL.std.450"
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 64 1 1
       %file = OpString "copy_nan.comp.spvasm"
               OpSource Unknown 0 %file
               OpName %main "main"
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %arr ArrayStride 4
               OpDecorate %Buf Block
               OpMemberDecorate %Buf 0 Offset 0
               OpDecorate %in DescriptorSet 0
               OpDecorate %in Binding 0
               OpDecorate %out DescriptorSet 0
               OpDecorate %out Binding 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
      %float = OpTypeFloat 32
       %uint = OpTypeInt 32 0
     %v3uint = OpTypeVector %uint 3
     %uint_0 = OpConstant %uint 0
        %arr = OpTypeRuntimeArray %float
        %Buf = OpTypeStruct %arr
 %ptr_sb_Buf = OpTypePointer StorageBuffer %Buf
%ptr_sb_float = OpTypePointer StorageBuffer %float
%ptr_fn_float = OpTypePointer Function %float
%ptr_in_v3uint = OpTypePointer Input %v3uint
%ptr_in_uint = OpTypePointer Input %uint
        %gid = OpVariable %ptr_in_v3uint Input
         %in = OpVariable %ptr_sb_Buf StorageBuffer
        %out = OpVariable %ptr_sb_Buf StorageBuffer
       %main = OpFunction %void None %fn
      %entry = OpLabel
        %tmp = OpVariable %ptr_fn_float Function
        %gxp = OpAccessChain %ptr_in_uint %gid %uint_0
          %i = OpLoad %uint %gxp
        %src = OpAccessChain %ptr_sb_float %in %uint_0 %i
          %x = OpLoad %float %src
          %s = OpExtInst %float %1 Sqrt %x
               OpStore %tmp %s
        %dst = OpAccessChain %ptr_sb_float %out %uint_0 %i
               OpLine %file 40 0
               OpCopyMemory %dst %tmp
               OpReturn
               OpFunctionEnd
"#;

/// Issue 11 part 1, end to end: at `VK_BLACKBOX_NAN=outputs`, NaNs that leave a shader as an integer's bits
/// (taichi's stores), through `OpCopyMemory` (vkd3d's) and through a float atomic add are reported with
/// their lines. Each shader takes the square root of spirv-run's buffer pattern, which holds negative values.
#[test]
fn nan_outputs_see_floats_stored_as_bits_copied_and_added_atomically() {
    let home = TempDir::new("nan-output-kinds");
    let dir = home.path().join("spv");
    std::fs::create_dir_all(&dir).unwrap();
    let sources = [
        (
            "bitcast_nan.comp",
            "#version 450\n\
             layout(local_size_x = 64) in;\n\
             layout(std430, set = 0, binding = 0) readonly buffer In { float v[]; };\n\
             layout(std430, set = 0, binding = 1) buffer Out { uint bits[]; };\n\
             void main() {\n\
                 uint i = gl_GlobalInvocationID.x;\n\
                 bits[i] = floatBitsToUint(sqrt(v[i]));\n\
             }\n",
        ),
        (
            "atomic_nan.comp",
            "#version 450\n\
             #extension GL_EXT_shader_atomic_float : require\n\
             layout(local_size_x = 64) in;\n\
             layout(std430, set = 0, binding = 0) readonly buffer In { float v[]; };\n\
             layout(std430, set = 0, binding = 1) buffer Sum { float total; };\n\
             void main() {\n\
                 atomicAdd(total, sqrt(v[gl_GlobalInvocationID.x]));\n\
             }\n",
        ),
    ];
    let mut files = Vec::new();
    for (name, text) in sources {
        std::fs::write(dir.join(name), text).unwrap();
        let spv = dir.join(format!("{name}.spv"));
        glslang(&dir, &["-V", "--target-env", "vulkan1.2", "-g"], name, &spv);
        files.push(spv);
    }
    std::fs::write(dir.join("copy_nan.comp.spvasm"), COPY_NAN_SPVASM).unwrap();
    let copy = dir.join("copy_nan.comp.spv");
    let assembled = Command::new(workspace_root().join(".venv/bin/spirv-as"))
        .args(["--target-env", "vulkan1.1", "-o"])
        .arg(&copy)
        .arg(dir.join("copy_nan.comp.spvasm"))
        .output()
        .expect("spirv-as (scripts/setup.sh installs it)");
    assert!(
        assembled.status.success(),
        "{}",
        String::from_utf8_lossy(&assembled.stderr)
    );
    files.push(copy);

    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("spirv-run")
        .env("VK_BLACKBOX_NAN", "outputs")
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"));
    for f in &files {
        cmd.arg("--spirv").arg(f);
    }
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    run.assert_testapp_finished();
    let skipped: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains(" skipped"))
        .collect();
    assert!(
        skipped.is_empty(),
        "every shader runs: {skipped:?}\n{}",
        run.dump()
    );
    let warnings = run.warnings();
    for expected in [
        "NaN in storage buffer store of a bitcast float at bitcast_nan.comp:7",
        "NaN in atomic float add at atomic_nan.comp:7",
        "NaN in copy to storage buffer at copy_nan.comp.spvasm:40",
    ] {
        assert!(
            warnings.iter().any(|w| w.contains(expected)),
            "`{expected}` missing\n{}",
            run.dump()
        );
    }
}

/// An exponential shadow map's test, `exp(k * d1) / exp(k * d2)`, is one NaN `ops` site at the division on
/// the two exponentials (a check of each `exp` stopped drivers from computing `exp(k * (d1 - d2))`, and
/// changed what Qt Quick 3D rendered: tests/qt_quick.rs). Here both exponentials are finite and their
/// quotient is not: the site reports it under its own name, with the exponentials as operands.
#[test]
fn nan_ops_checks_a_ratio_of_exponentials_as_one_site() {
    let home = TempDir::new("nan-exp-ratio");
    let dir = home.path().join("spv");
    std::fs::create_dir_all(&dir).unwrap();
    let name = "exp_ratio.comp";
    std::fs::write(
        dir.join(name),
        in_out_compute(
            "float d = 0.5 + 0.0 * v[i];\n\
             o[i] = exp(100.0 * d) / exp(-100.0 * d);\n",
        ),
    )
    .unwrap();
    let spv = dir.join(format!("{name}.spv"));
    glslang(&dir, &["-V", "--target-env", "vulkan1.2", "-g"], name, &spv);
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["spirv-run", "--spirv", spv.to_str().unwrap()],
        &[("VK_BLACKBOX_NAN", "ops")],
    ));
    run.assert_testapp_finished();
    let warnings = run.warnings();
    // e^50 and e^-50, as closely as the driver's `exp` gets them (lavapipe: 5.184699e21, 1.928752e-22).
    let expected = "Inf from exp() / exp() at exp_ratio.comp:8: operands 5.18";
    assert!(
        warnings
            .iter()
            .any(|w| w.contains(expected) && w.contains("e21, 1.92") && w.contains("e-22 -> inf")),
        "`{expected}e21, 1.92...e-22 -> inf` missing\n{}",
        run.dump()
    );
    // Neither exponential is checked alone.
    assert!(
        !warnings.iter().any(|w| w.contains("from exp() at")),
        "{}",
        run.dump()
    );
}

/// A NaN that a select throws away is no line at NaN `ops`; one it keeps is named at the operation that
/// made it. HLSL's `d != 0 ? x / d : 0` and GLSL's `mix(x / d, 0.0, d == 0.0)` compute the division in
/// every invocation and select 0 where it is 0 / 0 (IREE's `expm1` does the same through a product and
/// three selects): each such division was a "NaN from division()" line about a value the program never
/// used. Here every invocation with a 0 in spirv-run's pattern divides 0 by 0, in six shapes: thrown away
/// directly, after a product and a second select, where `isnan` says so, and by a select whose result is
/// used in another block; kept where the quotient is also added to the output, and where the select picks
/// it. The same results as without Blackbox each time.
#[test]
fn nan_ops_leaves_a_nan_a_select_throws_away_and_names_one_it_keeps() {
    let home = TempDir::new("nan-selected");
    let dir = home.path().join("spv");
    std::fs::create_dir_all(&dir).unwrap();
    // (file, main's body, the expected line). Unoptimized, glslang keeps each local (`q`, `r`) in a
    // variable: the chain goes through it.
    let cases = [
        (
            "thrown.comp",
            "o[i] = mix(v[i] / v[i], 1.0, v[i] == 0.0);\n",
            None,
        ),
        (
            "thrown_chain.comp",
            "float q = mix(2.0 * (v[i] / v[i]), 1.0, v[i] == 0.0);\n\
             o[i] = mix(q, 3.0, v[i] > 100.0);\n",
            None,
        ),
        (
            "thrown_isnan.comp",
            "float q = v[i] / v[i];\n\
             o[i] = mix(q, 0.0, isnan(q));\n",
            None,
        ),
        (
            "thrown_later.comp",
            "float r = mix(v[i] / v[i], 0.0, v[i] == 0.0);\n\
             if (v[i] > 0.5) { o[i] = r; }\n",
            None,
        ),
        (
            "kept_too.comp",
            "float q = v[i] / v[i];\n\
             o[i] = mix(q, 0.0, isnan(q)) + q * 0.0;\n",
            Some("NaN from division() at kept_too.comp:7: operands 0, 0 -> NaN"),
        ),
        (
            "kept.comp",
            "o[i] = mix(v[i] / v[i], 1.0, v[i] > 100.0);\n",
            Some("NaN from division() at kept.comp:7: operands 0, 0 -> NaN"),
        ),
    ];
    for (name, body, expected) in cases {
        std::fs::write(dir.join(name), in_out_compute(body)).unwrap();
        let spv = dir.join(format!("{name}.spv"));
        glslang(&dir, &["-V", "--target-env", "vulkan1.2", "-g"], name, &spv);
        let args = ["spirv-run", "--spirv", spv.to_str().unwrap()];
        let reference = run(&mut testapp_with_validation_only(&home, &args));
        reference.assert_testapp_finished();
        let run = run(&mut testapp_with_blackbox(
            &home,
            &args,
            &[("VK_BLACKBOX_NAN", "ops")],
        ));
        run.assert_testapp_finished();
        if let Err(e) = run.validation_messages_changed(&reference) {
            panic!("{name}: {e}\n{}", run.dump());
        }
        let checksums = run.stdout_lines("spirv ");
        assert_eq!(
            checksums,
            reference.stdout_lines("spirv "),
            "{}",
            run.dump()
        );
        assert!(
            checksums.len() == 1 && checksums[0].contains(" checksum "),
            "{}",
            run.dump()
        );
        let warnings = run.warnings();
        match expected {
            None => assert!(warnings.is_empty(), "{name}: {}", run.dump()),
            Some(expected) => assert!(
                warnings.len() == 1 && warnings[0].contains(expected),
                "{name}: expected one line with `{expected}`\n{}",
                run.dump()
            ),
        }
    }
}

/// NaN `outputs` checks a fragment output on the components the pipeline's attachment keeps: a NaN in a
/// channel the attachment drops never reaches memory and is not reported (the operation that made it still
/// is, at `ops`); a NaN in a kept channel is reported with that channel alone. Each run draws the same
/// pixels as without Blackbox, with the validation layer silent.
#[test]
fn fragment_outputs_are_checked_on_the_components_the_attachment_keeps() {
    let home = TempDir::new("kept-components");
    // `tests/integration/shaders/kept_components.frag`: NaN green, or NaN red with -DRED_NAN.
    let shaders = workspace_root().join("tests/integration/shaders");
    let spv: Vec<std::path::PathBuf> = [("green_nan", "-DGREEN_NAN"), ("red_nan", "-DRED_NAN")]
        .iter()
        .map(|(name, define)| {
            let out = home.path().join(format!("{name}.spv"));
            let args = ["-V", "--target-env", "vulkan1.2", "-g", define];
            glslang(&shaders, &args, "kept_components.frag", &out);
            out
        })
        .collect();
    let draw = |spv: &std::path::Path, format: &str, nan: Option<&str>| {
        let args = [
            "spirv-run",
            "--spirv",
            spv.to_str().unwrap(),
            "--attachment-format",
            format,
        ];
        let mut cmd = match nan {
            None => testapp_with_validation_only(&home, &args),
            Some(level) => testapp_with_blackbox(&home, &args, &[("VK_BLACKBOX_NAN", level)]),
        };
        let run = run(&mut cmd);
        run.assert_success().assert_no_validation_messages();
        run
    };
    let [green, red] = [&spv[0], &spv[1]];
    for (spv, format, nan, expected) in [
        // The whole vec4 lands in rgba32f: its NaN green is reported.
        (
            green,
            "rgba32f",
            "outputs",
            &["NaN in output at kept_components.frag:11: (0.25390625, NaN, 0.5, 1), pixel (0, 0)"][..],
        ),
        // r8 keeps red alone: nothing NaN lands.
        (green, "r8", "outputs", &[]),
        // The division is still named where it makes the NaN.
        (
            green,
            "r8",
            "ops",
            &["NaN from division() at kept_components.frag:11: operands 0, 0 -> NaN, pixel (0, 0)"],
        ),
        // A NaN red lands in r8, and is reported as the one value that does.
        (
            red,
            "r8",
            "outputs",
            &["NaN in output at kept_components.frag:9: NaN, pixel (0, 0)"],
        ),
    ] {
        let reference = draw(spv, format, None);
        let run = draw(spv, format, Some(nan));
        let dump = run.dump();
        assert_eq!(
            run.checksums(),
            reference.checksums(),
            "{format} at {nan}: other pixels\n{dump}"
        );
        let lines: Vec<&str> = run
            .warnings()
            .into_iter()
            .filter(|l| l.contains("NaN"))
            .collect();
        assert_eq!(lines.len(), expected.len(), "{format} at {nan}\n{dump}");
        for (line, expected) in lines.iter().zip(expected) {
            assert!(
                line.contains(expected),
                "{format} at {nan}: {line}\nexpected {expected}"
            );
        }
    }
}

/// A compute shader of 64 invocations a group that reads spirv-run's pattern from `v` (binding 0) and
/// writes `o` (binding 1), a buffer it does not read: `body` follows `uint i = gl_GlobalInvocationID.x;`
/// in `main`, at line 7.
fn in_out_compute(body: &str) -> String {
    format!(
        "#version 450\n\
         layout(local_size_x = 64) in;\n\
         layout(std430, set = 0, binding = 0) readonly buffer In {{ float v[]; }};\n\
         layout(std430, set = 0, binding = 1) buffer Out {{ float o[]; }};\n\
         void main() {{\n\
             uint i = gl_GlobalInvocationID.x;\n\
             {body}\
         }}\n"
    )
}

/// A dispatch whose invocations store NaN as they end, over a few hundred milliseconds, is logged in one
/// line per site when it finishes, not split at whichever moment the monitor thread polled (every 100 ms):
/// records of work still running wait a second before a poll drains them. Before that rule every run here
/// gave two lines, and so did `fragment_outputs_are_checked_on_the_components_the_attachment_keeps` once
/// on a loaded CI machine. A run slower than a second may take a line per second it ran; the lines' counts
/// add up to the invocations.
#[test]
fn a_dispatch_that_runs_for_a_while_is_logged_once_per_site() {
    let home = TempDir::new("slow-nan");
    let spv = home.path().join("slow_nan.spv");
    let shaders = workspace_root().join("tests/integration/shaders");
    // SPIR-V 1.6: glslang gives older versions a `WorkgroupSize` built-in that best practices warns of.
    let flags = ["-V", "--target-env", "vulkan1.3", "-g"];
    glslang(&shaders, &flags, "slow_nan.comp", &spv);
    let args = ["spirv-run", "--spirv", spv.to_str().unwrap()];
    let reference = run(&mut testapp_with_validation_only(&home, &args));
    reference.assert_success().assert_no_validation_messages();
    let vars = [("VK_BLACKBOX_NAN", "outputs")];
    let started = std::time::Instant::now();
    let run = run(&mut testapp_with_blackbox(&home, &args, &vars));
    let seconds = started.elapsed().as_secs();
    run.assert_success().assert_no_validation_messages();
    let dump = run.dump();
    assert_eq!(run.checksums(), reference.checksums(), "{dump}");
    let lines: Vec<&str> = run
        .warnings()
        .into_iter()
        .filter(|l| l.contains("NaN in storage buffer store at slow_nan.comp:12: NaN"))
        .collect();
    assert!(!lines.is_empty(), "{dump}");
    assert!(
        lines.len() as u64 <= 1 + seconds,
        "{} lines in a run of {seconds} s\n{dump}",
        lines.len()
    );
    let total: u64 = lines
        .iter()
        .map(|l| {
            let count = l.rsplit(" x").next().unwrap().split(' ').next().unwrap();
            count
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("no count in {l}"))
        })
        .sum();
    assert_eq!(total, 4096, "{dump}");
}
