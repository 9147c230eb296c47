//! What Blackbox writes to disk, kept private: folders it creates are `0700` and files `0600`, whatever the
//! umask (reports hold the app's labels, names and printf output), and the report folder is decided once,
//! at start-up, by [`resolve`].
//!
//! The chosen folder (`VK_BLACKBOX_OUTPUT`, else the XDG state folder) is created where missing and used.
//! When it cannot be written, reports go under the temp dir, where other local users can create names
//! first: the per-user folder `<temp>/blackbox-<uid>` is made with a plain `mkdir` and then checked with
//! `lstat` ([`private_temp_dir`]): a real folder, not a symbolic link, owned by this user, not writable by
//! group or others. Anything else means someone else may read or plant reports there, so a fresh folder
//! with a random name is made instead, and the warning says why.
//!
//! Each report then goes into a folder of its own, made with `mkdir` (never reused), so even a shared
//! output folder never lets another user into a report.

use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode of every folder Blackbox creates.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file Blackbox creates.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` with `mkdir` (failing if it exists) and sets it to [`DIR_MODE`] whatever the umask.
pub fn create_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new().mode(DIR_MODE).create(dir)?;
    // The umask may have taken bits away (even the owner's): the mode is set, not left to it.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE))
}

/// Creates `dir` and any missing folder above it, each [`DIR_MODE`]; existing folders are left as they are.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} is not a folder", at.display()),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                missing.push(at);
                match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => at = p,
                    _ => break,
                }
            }
            Err(e) => return Err(e),
        }
    }
    for folder in missing.into_iter().rev() {
        match create_dir(folder) {
            // Another process made it in between: fine, it is a folder.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && folder.is_dir() => {}
            other => other?,
        }
    }
    Ok(())
}

/// Creates the new file `path` ([`FILE_MODE`], failing if anything, a symbolic link included, is there).
fn create_new(path: &Path) -> io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    Ok(file)
}

/// Creates the new file `path` ([`FILE_MODE`], failing if anything, a symbolic link included, is there),
/// writes `bytes` and syncs it.
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_new(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Writes through a temporary name, syncs, renames: readers see the whole file or none; the file is
/// [`FILE_MODE`]. A failed write leaves no temporary file of its own behind (and removes nothing else).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut file = create_new(&tmp)?;
    let result = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Checks that files can be created in `dir`: creates and removes a probe file of a random name, never
/// following a link planted under that name.
pub fn check_writable(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!(".blackbox-write-test-{:016x}", random_u64()));
    write_new(&probe, b"")?;
    std::fs::remove_file(&probe)
}

/// Where reports go, and what the log should say about it.
#[derive(Debug)]
pub struct Resolved {
    /// The report folder.
    pub dir: PathBuf,
    /// Warnings to log (why the chosen folder was not used, or what is unsafe about it).
    pub warnings: Vec<String>,
}

/// `<temp>/blackbox-<uid>`: the per-user folder under the temp dir.
pub fn per_user_temp_dir(temp: &Path, uid: u32) -> PathBuf {
    temp.join(format!("blackbox-{uid}"))
}

/// Decides the report folder once: `chosen` (named `what` in warnings, e.g. `VK_BLACKBOX_OUTPUT=/x`),
/// created where missing; else a private folder under `temp` for `uid` ([`private_temp_dir`]). The
/// per-user temp folder is always checked as the fallback is, even when it is the one chosen.
pub fn resolve(chosen: &Path, what: &str, temp: &Path, uid: u32) -> Resolved {
    let mut warnings = Vec::new();
    if chosen == per_user_temp_dir(temp, uid) {
        return fallback(temp, uid, warnings);
    }
    match create_dir_all(chosen).and_then(|()| check_writable(chosen)) {
        Ok(()) => {
            if let Some(why) = shared_with_others(chosen, uid) {
                warnings.push(format!(
                    "{what}: the report folder {why}: each report in it is a private folder (mode 700), but \
                     they can see its name and remove it"
                ));
            }
            Resolved {
                dir: chosen.to_path_buf(),
                warnings,
            }
        }
        Err(e) => {
            let fallback = fallback(temp, uid, Vec::new());
            warnings.push(format!(
                "{what}: cannot create or write the report folder ({e}); accepted: a writable folder; reports \
                 go to {} instead",
                fallback.dir.display()
            ));
            warnings.extend(fallback.warnings);
            Resolved {
                dir: fallback.dir,
                warnings,
            }
        }
    }
}

fn fallback(temp: &Path, uid: u32, mut warnings: Vec<String>) -> Resolved {
    match private_temp_dir(temp, uid) {
        Ok((dir, None)) => Resolved { dir, warnings },
        Ok((dir, Some(why))) => {
            warnings.push(format!(
                "{} {why}, so another user may read or plant reports there: reports go to the new private \
                 folder {} instead",
                per_user_temp_dir(temp, uid).display(),
                dir.display()
            ));
            Resolved { dir, warnings }
        }
        Err(e) => {
            let dir = per_user_temp_dir(temp, uid);
            warnings.push(format!(
                "no private report folder can be made under {} ({e}): reports cannot be written; their text \
                 goes to the log",
                temp.display()
            ));
            Resolved { dir, warnings }
        }
    }
}

/// A private folder under `temp` for the user `uid`: `<temp>/blackbox-<uid>` when it is safe (made here
/// with `mkdir`, or found as a real folder owned by `uid` that neither group nor others can write; one only
/// others can read is made `0700`), else a fresh `<temp>/blackbox-<uid>-<random>` and the reason the
/// per-user folder was not used.
pub fn private_temp_dir(temp: &Path, uid: u32) -> io::Result<(PathBuf, Option<String>)> {
    let per_user = per_user_temp_dir(temp, uid);
    let why = match create_dir(&per_user) {
        Ok(()) => None,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => unsafe_to_use(&per_user, uid),
        Err(e) => Some(format!("cannot be created ({e})")),
    };
    let why = why.or_else(|| {
        check_writable(&per_user)
            .err()
            .map(|e| format!("cannot be written ({e})"))
    });
    let Some(why) = why else {
        return Ok((per_user, None));
    };
    // A name nobody can have planted: mkdir fails on anything already there, links included.
    for _ in 0..16 {
        let fresh = temp.join(format!("blackbox-{uid}-{:016x}", random_u64()));
        match create_dir(&fresh) {
            Ok(()) => return Ok((fresh, Some(why))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "16 random folder names were all taken",
    ))
}

/// Why an existing per-user folder must not be used, from `lstat` (a link is not followed); `None` when it
/// is safe. A safe folder that others can read or enter is made `0700`: it is this user's.
fn unsafe_to_use(dir: &Path, uid: u32) -> Option<String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) => return Some(format!("cannot be examined ({e})")),
    };
    if meta.file_type().is_symlink() {
        return Some("is a symbolic link".to_owned());
    }
    if !meta.is_dir() {
        return Some("is not a folder".to_owned());
    }
    if meta.uid() != uid {
        return Some(format!("belongs to user {}, not {uid}", meta.uid()));
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Some(format!("can be written by other users (mode {mode:o})"));
    }
    if mode & 0o077 != 0 {
        if let Err(e) = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE)) {
            return Some(format!(
                "can be read by other users and its mode cannot be changed ({e})"
            ));
        }
    }
    None
}

/// Why a folder Blackbox writes into is shared with other users, if it is: owned by another user, or
/// writable by group or others.
fn shared_with_others(dir: &Path, uid: u32) -> Option<String> {
    let meta = std::fs::metadata(dir).ok()?;
    let mode = meta.mode() & 0o7777;
    if meta.uid() != uid {
        Some(format!("belongs to user {}", meta.uid()))
    } else if mode & 0o022 != 0 {
        Some(format!("can be written by other users (mode {mode:o})"))
    } else {
        None
    }
}

/// 64 random bits from the kernel; if it cannot give them, the time and the process id (a name made of
/// them still only ever goes to `mkdir`, which refuses anything planted).
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `len` bytes into the buffer it is given.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == bytes.len() as isize {
        return u64::from_ne_bytes(bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// The user running this process.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// A fresh folder for one test, as the temp dir Blackbox is given.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "blackbox-output-test-{}-{name}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn uid() -> u32 {
        current_uid()
    }

    /// Runs `body` with the process umask set to `mask` (tests in this module that change it take a lock).
    fn with_umask<R>(mask: libc::mode_t, body: impl FnOnce() -> R) -> R {
        static UMASK: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _held = UMASK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: umask only swaps the process's mask.
        let old = unsafe { libc::umask(mask) };
        let result = body();
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        result
    }

    #[test]
    fn folders_and_files_are_private_whatever_the_umask() {
        let tmp = Scratch::new("modes");
        for (i, mask) in [0o000, 0o022, 0o777].into_iter().enumerate() {
            let dir = tmp.0.join(format!("u{i}/a/b"));
            with_umask(mask, || {
                create_dir_all(&dir).unwrap();
                write_atomic(&dir.join("report.json"), b"{}").unwrap();
            });
            for folder in [
                tmp.0.join(format!("u{i}")),
                tmp.0.join(format!("u{i}/a")),
                dir.clone(),
            ] {
                assert_eq!(
                    mode(&folder),
                    0o700,
                    "{} under umask {mask:o}",
                    folder.display()
                );
            }
            assert_eq!(mode(&dir.join("report.json")), 0o600, "umask {mask:o}");
            assert!(!dir.join("report.tmp").exists());
        }
        // An existing folder keeps its mode: it is the user's.
        let existing = tmp.0.join("existing");
        std::fs::create_dir(&existing).unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_dir_all(&existing.join("new")).unwrap();
        assert_eq!(mode(&existing), 0o755);
        assert_eq!(mode(&existing.join("new")), 0o700);
    }

    #[test]
    fn a_planted_link_is_never_written_through() {
        let tmp = Scratch::new("link");
        let victim = tmp.0.join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let dir = tmp.0.join("reports");
        create_dir(&dir).unwrap();
        symlink(&victim, dir.join("report.tmp")).unwrap();
        assert!(write_atomic(&dir.join("report.json"), b"{}").is_err());
        assert!(write_new(&dir.join("report.tmp"), b"x").is_err());
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn the_per_user_temp_folder_is_made_private_and_reused() {
        let tmp = Scratch::new("fresh");
        let (dir, why) = with_umask(0o022, || private_temp_dir(&tmp.0, uid())).unwrap();
        assert_eq!((dir.clone(), why), (per_user_temp_dir(&tmp.0, uid()), None));
        assert_eq!(mode(&dir), 0o700);
        // Found again, as this user's own: used.
        assert_eq!(
            private_temp_dir(&tmp.0, uid()).unwrap(),
            (dir.clone(), None)
        );
        // Readable by others only: tightened, then used.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            private_temp_dir(&tmp.0, uid()).unwrap(),
            (dir.clone(), None)
        );
        assert_eq!(mode(&dir), 0o700);
    }

    /// Plants `what` as the per-user folder, resolves an unwritable chosen folder, and returns where the
    /// reports go with the warnings.
    fn resolve_with_planted(
        name: &str,
        plant: impl FnOnce(&Path),
        user: u32,
    ) -> (Scratch, Resolved) {
        let tmp = Scratch::new(name);
        plant(&per_user_temp_dir(&tmp.0, user));
        // A folder below a file can never be created.
        std::fs::write(tmp.0.join("file"), b"").unwrap();
        let chosen = tmp.0.join("file/reports");
        let resolved = resolve(&chosen, "VK_BLACKBOX_OUTPUT=x", &tmp.0, user);
        (tmp, resolved)
    }

    fn assert_fresh_private(tmp: &Scratch, resolved: &Resolved, user: u32, why: &str) {
        let per_user = per_user_temp_dir(&tmp.0, user);
        assert_ne!(resolved.dir, per_user);
        let name = resolved
            .dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with(&format!("blackbox-{user}-")), "{name}");
        assert_eq!(resolved.dir.parent(), Some(tmp.0.as_path()));
        let meta = std::fs::symlink_metadata(&resolved.dir).unwrap();
        assert!(meta.is_dir() && !meta.file_type().is_symlink());
        assert_eq!(meta.mode() & 0o7777, 0o700);
        let all = resolved.warnings.join("\n");
        assert!(
            all.contains("cannot create or write the report folder"),
            "{all}"
        );
        assert!(
            all.contains(&format!("reports go to {} instead", resolved.dir.display())),
            "{all}"
        );
        assert!(
            all.contains(&format!(
                "{} {why}, so another user may read or plant reports there",
                per_user.display()
            )),
            "{all}"
        );
    }

    #[test]
    fn a_symbolic_link_planted_as_the_per_user_folder_is_not_followed() {
        let target = Scratch::new("attacker");
        let (tmp, resolved) =
            resolve_with_planted("symlink", |p| symlink(&target.0, p).unwrap(), uid());
        assert_fresh_private(&tmp, &resolved, uid(), "is a symbolic link");
        assert_eq!(
            std::fs::read_dir(&target.0).unwrap().count(),
            0,
            "nothing written through the link"
        );
        // A dangling link too: mkdir does not create its target.
        let (tmp, resolved) = resolve_with_planted(
            "dangling",
            |p| symlink(Path::new("/nonexistent/blackbox"), p).unwrap(),
            uid(),
        );
        assert_fresh_private(&tmp, &resolved, uid(), "is a symbolic link");
    }

    #[test]
    fn a_per_user_folder_others_can_write_or_own_is_not_used() {
        let (tmp, resolved) = resolve_with_planted(
            "world-writable",
            |p| {
                std::fs::create_dir(p).unwrap();
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
            },
            uid(),
        );
        assert_fresh_private(
            &tmp,
            &resolved,
            uid(),
            "can be written by other users (mode 777)",
        );
        let (tmp, resolved) = resolve_with_planted(
            "group-writable",
            |p| {
                std::fs::create_dir(p).unwrap();
                std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o770)).unwrap();
            },
            uid(),
        );
        assert_fresh_private(
            &tmp,
            &resolved,
            uid(),
            "can be written by other users (mode 770)",
        );
        // A folder of another user's (the uid is injected: this process's own folder, seen as user 4242's).
        let other = if uid() == 4242 { 4243 } else { 4242 };
        let (tmp, resolved) =
            resolve_with_planted("other-owner", |p| create_dir(p).unwrap(), other);
        assert_fresh_private(
            &tmp,
            &resolved,
            other,
            &format!("belongs to user {}, not {other}", uid()),
        );
        // A file in its place.
        let (tmp, resolved) =
            resolve_with_planted("file", |p| std::fs::write(p, b"").unwrap(), uid());
        assert_fresh_private(&tmp, &resolved, uid(), "is not a folder");
    }

    #[test]
    fn a_writable_chosen_folder_is_used_and_a_shared_one_is_warned_about() {
        let tmp = Scratch::new("chosen");
        let chosen = tmp.0.join("state/blackbox");
        let resolved = resolve(&chosen, "VK_BLACKBOX_OUTPUT=x", &tmp.0, uid());
        assert_eq!(resolved.dir, chosen);
        assert!(resolved.warnings.is_empty(), "{:?}", resolved.warnings);
        assert_eq!(mode(&chosen), 0o700);
        assert_eq!(
            std::fs::read_dir(&chosen).unwrap().count(),
            0,
            "the probe is gone"
        );

        let shared = tmp.0.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let resolved = resolve(&shared, "VK_BLACKBOX_OUTPUT=/shared", &tmp.0, uid());
        assert_eq!(resolved.dir, shared);
        assert_eq!(
            resolved.warnings,
            ["VK_BLACKBOX_OUTPUT=/shared: the report folder can be written by other users (mode 1777): each \
              report in it is a private folder (mode 700), but they can see its name and remove it"]
        );
        // The per-user temp folder chosen by name is checked like the fallback.
        let per_user = per_user_temp_dir(&tmp.0, uid());
        symlink(&shared, &per_user).unwrap();
        let resolved = resolve(&per_user, "VK_BLACKBOX_OUTPUT=x", &tmp.0, uid());
        assert_ne!(resolved.dir, per_user);
        assert!(
            resolved.warnings[0].contains("is a symbolic link"),
            "{:?}",
            resolved.warnings
        );
    }
}
