//! A Java program with a Vulkan device through Blackbox, on lavapipe, with the validation layer below:
//! `apps/jvm/VulkanFromJava.java` and its JNI half `vulkan_device.c`, built here with Debian 12's OpenJDK
//! 17 (openjdk-17-jdk-headless) and the C compiler. The JVM makes faults on purpose and resolves them in its
//! own signal handler (about 120 SIGSEGVs a run: null checks of compiled code, safepoint polls), which
//! Blackbox's fatal-signal handler, installed after it, sees first. A healthy Java program must get no
//! report and no error line; one that really crashes must still get its report.

use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use blackbox_integration::*;

/// Debian 12's OpenJDK 17 (scripts/setup.sh).
const JAVA_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// Builds the program into `dir`: the JNI library with `cc`, the class with `javac`.
fn build(dir: &Path) {
    let sources = workspace_root().join("tests/integration/apps/jvm");
    let java_home = Path::new(JAVA_HOME);
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(dir.join("libvulkan_device.so"))
        .arg(sources.join("vulkan_device.c"))
        .arg(format!("-I{}", java_home.join("include").display()))
        .arg(format!("-I{}", java_home.join("include/linux").display()))
        .arg("-lvulkan")
        .output()
        .expect("cc");
    assert!(
        cc.status.success(),
        "cc: {}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let javac = Command::new(java_home.join("bin/javac"))
        .arg("-d")
        .arg(dir)
        .arg(sources.join("VulkanFromJava.java"))
        .output()
        .expect("javac (openjdk-17-jdk-headless: scripts/setup.sh)");
    assert!(
        javac.status.success(),
        "javac: {}",
        String::from_utf8_lossy(&javac.stderr)
    );
}

/// The program with `args`, in `dir` (where the JVM writes its hs_err file), without core dumps: with the
/// validation layer alone, or through Blackbox with `vars`.
fn java(home: &TempDir, dir: &Path, args: &[&str], blackbox: Option<&[(&str, &str)]>) -> Run {
    let mut cmd = vulkan_command(Path::new(JAVA_HOME).join("bin/java"), home.path());
    cmd.current_dir(dir)
        .arg(format!("-Djava.library.path={}", dir.display()))
        .args(["-cp", "."])
        .arg("VulkanFromJava")
        .args(args);
    // SAFETY: setrlimit is async-signal-safe; a crashing JVM writes no core file.
    unsafe {
        cmd.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        });
    }
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    run(&mut cmd)
}

/// The program's own lines.
fn program_lines(run: &Run) -> Vec<&str> {
    run.stdout
        .lines()
        .filter(|l| l.starts_with("java: "))
        .collect()
}

fn build_dir(home: &TempDir) -> PathBuf {
    let dir = home.path().join("build");
    std::fs::create_dir_all(&dir).unwrap();
    build(&dir);
    dir
}

#[test]
fn a_healthy_java_program_gets_no_report_for_the_faults_its_jvm_resolves() {
    let home = TempDir::new("jvm");
    let dir = build_dir(&home);
    let reference = java(&home, &dir, &[], None);
    reference.assert_success();
    let lines = program_lines(&reference);
    assert!(
        lines.len() == 3
            && lines[0] == "java: device 0"
            && lines[1].starts_with("java: 2000 null pointer exceptions, sum ")
            && lines[2] == "java: done",
        "{}",
        reference.dump()
    );
    let vars = [
        ("VK_BLACKBOX_LOG", "debug"),
        ("VK_BLACKBOX_NAN", "ops"),
        ("VK_BLACKBOX_BREADCRUMBS", "command"),
    ];
    let run = java(&home, &dir, &[], Some(&vars));
    let problems = run.problems_against(&reference, "jvm", false);
    assert!(problems.is_empty(), "{problems:#?}\n{}", run.dump());
    assert_eq!(program_lines(&run), program_lines(&reference));
    // The JVM's handler was recognised, and none of its faults became an error line or a report.
    assert!(
        run.stderr.contains(
            "SIGSEGV's handler is the Java VM's: it gets the signal first, and Blackbox reports the faults it does not resolve"
        ),
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

#[test]
fn a_java_program_whose_jvm_gives_up_on_a_native_fault_gets_its_report() {
    let home = TempDir::new("jvm-crash");
    let dir = build_dir(&home);
    let reference = java(&home, &dir, &["crash"], None);
    // The JVM writes its hs_err file and aborts.
    assert_eq!(
        reference.status.signal(),
        Some(libc::SIGABRT),
        "{}",
        reference.dump()
    );
    let run = java(&home, &dir, &["crash"], Some(&[]));
    assert_eq!(run.status.signal(), Some(libc::SIGABRT), "{}", run.dump());
    assert!(
        run.stdout.contains("SIGSEGV (0xb)") || run.stderr.contains("SIGSEGV (0xb)"),
        "the JVM's own crash message\n{}",
        run.dump()
    );
    // Blackbox's report names the fault the JVM gave up on, not the abort that followed.
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let signal = reports[0].1.signal.as_ref().expect("a signal report");
    assert_eq!(signal.name, "SIGSEGV");
    assert_eq!(signal.address.as_deref(), Some("0x10"));
    assert!(
        run.stderr.contains("[blackbox] error: SIGSEGV in thread "),
        "{}",
        run.dump()
    );
}
