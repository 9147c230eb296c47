//! Programs of managed runtimes with a Vulkan device through Blackbox, on lavapipe, with the validation
//! layer below: `apps/vulkan-device/VulkanFromJava.java` (Debian 12's OpenJDK 17, the device through JNI) and
//! `VulkanFromCSharp.cs` (Debian 12's Mono 6.8, through P/Invoke), both over `vulkan_device.c`, built here
//! with the C compiler, javac and mcs; and `vulkan_from_windows.c`, a Windows program built with MinGW-w64
//! and run under Debian 12's Wine 8 (its device through winevulkan). A runtime makes faults on purpose and
//! resolves them in its own signal handler (the JVM about 120 SIGSEGVs a run: null checks of compiled code,
//! safepoint polls; Mono one per NullReferenceException; Wine one per access violation a Windows program
//! handles), which Blackbox's fatal-signal handler, installed after it, sees first. A healthy program must
//! get no report and no error line; one that really crashes must still get its report.

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use blackbox_integration::*;

/// Debian 12's OpenJDK 17 (scripts/setup.sh).
const JAVA_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

#[derive(Clone, Copy, Debug)]
enum Runtime {
    Java,
    Mono,
}

impl Runtime {
    /// The prefix of the program's own output lines.
    fn prefix(self) -> &'static str {
        match self {
            Runtime::Java => "java: ",
            Runtime::Mono => "csharp: ",
        }
    }

    /// The middle line of a healthy run, up to its sum.
    fn exceptions_line(self) -> &'static str {
        match self {
            Runtime::Java => "java: 2000 null pointer exceptions, sum ",
            Runtime::Mono => "csharp: 200 null reference exceptions, sum ",
        }
    }
}

/// Builds `runtime`'s program into a folder of `home`: the native library with `cc`, the program with
/// javac or mcs.
fn build(home: &TempDir, runtime: Runtime) -> PathBuf {
    let dir = home.path().join("build");
    std::fs::create_dir_all(&dir).unwrap();
    let sources = workspace_root().join("tests/integration/apps/vulkan-device");
    let java_home = Path::new(JAVA_HOME);
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(dir.join("libvulkan_device.so"))
        .arg(sources.join("vulkan_device.c"))
        .arg("-lvulkan");
    if let Runtime::Java = runtime {
        cc.arg("-DBB_JNI")
            .arg(format!("-I{}", java_home.join("include").display()))
            .arg(format!("-I{}", java_home.join("include/linux").display()));
    }
    run(&mut cc).assert_success();
    let mut compile = match runtime {
        Runtime::Java => {
            let mut javac = Command::new(java_home.join("bin/javac"));
            javac
                .arg("-d")
                .arg(&dir)
                .arg(sources.join("VulkanFromJava.java"));
            javac
        }
        Runtime::Mono => {
            let mut mcs = Command::new("mcs");
            mcs.arg(format!(
                "-out:{}",
                dir.join("VulkanFromCSharp.exe").display()
            ))
            .arg(sources.join("VulkanFromCSharp.cs"));
            mcs
        }
    };
    run(&mut compile).assert_success();
    dir
}

/// `runtime`'s program with `args`, in `dir` (where the JVM writes its hs_err file), without core dumps:
/// with the validation layer alone, or through Blackbox with `vars`.
fn program(
    home: &TempDir,
    runtime: Runtime,
    dir: &Path,
    args: &[&str],
    blackbox: Option<&[(&str, &str)]>,
) -> Run {
    let mut cmd = match runtime {
        Runtime::Java => {
            let mut cmd = vulkan_command(Path::new(JAVA_HOME).join("bin/java"), home.path());
            cmd.arg(format!("-Djava.library.path={}", dir.display()))
                .args(["-cp", ".", "VulkanFromJava"]);
            cmd
        }
        Runtime::Mono => {
            let mut cmd = vulkan_command("mono", home.path());
            cmd.env("LD_LIBRARY_PATH", dir)
                .arg(dir.join("VulkanFromCSharp.exe"));
            cmd
        }
    };
    without_core_dumps(cmd.current_dir(dir).args(args));
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    run(&mut cmd)
}

/// A healthy run through Blackbox: as with the validation layer alone, the runtime's handler recognised,
/// no error line and no report.
fn assert_quiet(runtime: Runtime, recognised_as: &str) {
    let home = TempDir::new(&format!("{runtime:?}"));
    let dir = build(&home, runtime);
    let reference = program(&home, runtime, &dir, &[], None);
    reference.assert_success();
    let lines = reference.stdout_lines(runtime.prefix());
    let prefix = runtime.prefix();
    assert!(
        lines.len() == 3
            && lines[0] == format!("{prefix}device 0")
            && lines[1].starts_with(runtime.exceptions_line())
            && lines[2] == format!("{prefix}done"),
        "{}",
        reference.dump()
    );
    let vars = [
        ("VK_BLACKBOX_LOG", "debug"),
        ("VK_BLACKBOX_NAN", "ops"),
        ("VK_BLACKBOX_BREADCRUMBS", "command"),
    ];
    let run = program(&home, runtime, &dir, &[], Some(&vars));
    let problems = run.problems_against(&reference, &format!("{runtime:?}"), false);
    assert!(problems.is_empty(), "{problems:#?}\n{}", run.dump());
    assert_eq!(run.stdout_lines(runtime.prefix()), lines);
    assert_recognised_and_quiet(&run, &home, recognised_as);
}

/// Asserts that Blackbox found `runtime`'s handler (its debug line), and wrote no error line and no
/// report under `home`.
fn assert_recognised_and_quiet(run: &Run, home: &TempDir, runtime: &str) {
    assert!(
        run.stderr.contains(&format!(
            "SIGSEGV's handler is {runtime}'s: it gets the signal first, and Blackbox reports the faults it does not resolve"
        )),
        "{}",
        run.dump()
    );
    let errors: Vec<_> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[blackbox] error"))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}\n{}", run.dump());
    assert!(
        reports_in(&home.path().join("reports")).is_empty(),
        "{}",
        run.dump()
    );
}

/// `mode`'s crash with the validation layer alone and through Blackbox: both abort (the runtime's own crash
/// output, then `abort`), and Blackbox writes one report, of a SIGSEGV at `address`.
fn assert_crash_reported(runtime: Runtime, mode: &str, address: &str) {
    let home = TempDir::new(&format!("{runtime:?}-{mode}"));
    let dir = build(&home, runtime);
    let reference = program(&home, runtime, &dir, &[mode], None);
    assert_eq!(
        reference.status.signal(),
        Some(libc::SIGABRT),
        "{}",
        reference.dump()
    );
    let run = program(&home, runtime, &dir, &[mode], Some(&[]));
    assert_eq!(run.status.signal(), Some(libc::SIGABRT), "{}", run.dump());
    // Blackbox's report names the fault, not the abort that followed.
    assert_one_signal_report(&home.path().join("reports"), &run, "SIGSEGV", address);
    assert!(
        run.stderr.contains("[blackbox] error: SIGSEGV in thread "),
        "{}",
        run.dump()
    );
}

#[test]
fn a_healthy_java_program_gets_no_report_for_the_faults_its_jvm_resolves() {
    assert_quiet(Runtime::Java, "the Java VM");
}

#[test]
fn a_java_program_crashing_in_native_code_gets_its_report() {
    // Reported before the JVM's handler runs: a fault in another object's code is not the runtime's.
    assert_crash_reported(Runtime::Java, "crash", "0x10");
}

#[test]
fn a_java_program_crashing_in_generated_code_gets_its_report_once_the_jvm_gives_up() {
    // Code of no loaded object, as a JIT's: the JVM's handler decides first, and its abort is reported as
    // the fault it gave up on.
    assert_crash_reported(Runtime::Java, "crash-generated", "0x18");
}

#[test]
fn a_healthy_csharp_program_gets_no_report_for_the_faults_mono_resolves() {
    // Debian's `mono` has the runtime linked in: its handler is found through the program's own file.
    assert_quiet(Runtime::Mono, "Mono");
}

#[test]
fn a_csharp_program_crashing_in_native_code_gets_its_report() {
    // Mono ends the process from its handler, with SIGABRT's default action put back first: only a report
    // written before its handler runs is written at all.
    assert_crash_reported(Runtime::Mono, "crash", "0x10");
}

/// Debian 12's Wine (wine64), which is not on the PATH.
const WINE64: &str = "/usr/lib/wine/wine64";

/// `vulkan_from_windows.exe` under Wine on `display`, with a prefix of its own in `home`: with the
/// validation layer alone, or through Blackbox with `vars`.
fn windows_program(
    home: &TempDir,
    exe: &Path,
    display: &str,
    blackbox: Option<&[(&str, &str)]>,
) -> Run {
    let mut cmd = vulkan_command(WINE64, home.path());
    cmd.arg(exe)
        .env("WINEPREFIX", home.path().join("wine-prefix"))
        .env("WINEDEBUG", "-all")
        // No Mono or Gecko installer prompts when the prefix is made.
        .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
        .env("DISPLAY", display);
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    run(&mut cmd)
}

#[test]
fn a_windows_program_under_wine_gets_no_report_for_the_access_violations_it_handles() {
    let home = TempDir::new("wine");
    let dir = home.path().join("build");
    // The Vulkan headers alone: the system include folder would bring glibc's headers into a Windows build.
    let include = dir.join("include");
    std::fs::create_dir_all(&include).unwrap();
    for headers in ["vulkan", "vk_video"] {
        std::os::unix::fs::symlink(
            Path::new("/usr/include").join(headers),
            include.join(headers),
        )
        .unwrap();
    }
    let exe = dir.join("vulkan_from_windows.exe");
    run(Command::new("x86_64-w64-mingw32-gcc")
        .args(["-O1", "-Wall", "-o"])
        .arg(&exe)
        .arg(format!("-I{}", include.display()))
        .arg(workspace_root().join("tests/integration/apps/vulkan-device/vulkan_from_windows.c")))
    .assert_success();
    let xvfb = Xvfb::start();
    let reference = windows_program(&home, &exe, &xvfb.display, None);
    reference.assert_success();
    assert_eq!(
        reference.stdout_lines("windows: "),
        [
            "windows: device 0",
            "windows: 100 access violations resolved",
            "windows: done"
        ],
        "{}",
        reference.dump()
    );
    let vars = [("VK_BLACKBOX_LOG", "debug"), ("VK_BLACKBOX_NAN", "ops")];
    let run = windows_program(&home, &exe, &xvfb.display, Some(&vars));
    let problems = run.problems_against(&reference, "wine", false);
    assert!(problems.is_empty(), "{problems:#?}\n{}", run.dump());
    assert_eq!(
        run.stdout_lines("windows: "),
        reference.stdout_lines("windows: ")
    );
    assert_recognised_and_quiet(&run, &home, "Wine");
}
