//! The Debian package (issue 14, part 4): `scripts/package.sh` builds `blackbox_<version>_amd64.deb` from
//! this build, and `scripts/test-package.sh` installs it with `apt install ./blackbox_*.deb` in a clean
//! Debian 12 root (debootstrap minbase, with Debian's loader and lavapipe), runs `blackbox doctor`, an app
//! with `VK_BLACKBOX_ENABLE=1` (its NaN line, a hang report, `blackbox report` on it), purges it and checks
//! that the root holds what it held before. It needs root and Debian's package mirror, as CI has them; the
//! first run makes the minbase root (kept under target/debian-root).

use blackbox_integration::*;
use std::process::Command;

#[test]
fn the_debian_package_installs_works_and_leaves_nothing() {
    let out = bin_dir().join("e2e/package");
    let _ = std::fs::remove_dir_all(&out);
    let root = workspace_root();
    let package = Command::new(root.join("scripts/package.sh"))
        .env(
            "PROFILE",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
        )
        .env("BUILD", "0")
        .env("OUT_DIR", &out)
        .output()
        .expect("scripts/package.sh");
    assert!(
        package.status.success(),
        "scripts/package.sh: {}{}",
        String::from_utf8_lossy(&package.stdout),
        String::from_utf8_lossy(&package.stderr)
    );
    let deb = out.join(format!("blackbox_{}_amd64.deb", env!("CARGO_PKG_VERSION")));
    assert!(deb.is_file(), "{} is not there", deb.display());

    let test = Command::new(root.join("scripts/test-package.sh"))
        .arg(&deb)
        .arg(testapp())
        .output()
        .expect("scripts/test-package.sh");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&test.stdout),
        String::from_utf8_lossy(&test.stderr)
    );
    println!("{log}");
    assert!(
        test.status.success(),
        "scripts/test-package.sh failed:\n{log}"
    );
    assert!(
        String::from_utf8_lossy(&test.stdout).ends_with("passed\n"),
        "{log}"
    );
}
