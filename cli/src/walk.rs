//! Reading folders and files the CLI did not create, as untrusted: `blackbox report` and `blackbox triage`
//! are given folders of reports from other machines and other users.
//!
//! The walk goes through open folder descriptors (`openat` with `O_NOFOLLOW`), so below a folder given on
//! the command line no symbolic link is ever followed, not even one swapped in while the walk runs: links
//! are skipped and said, like anything else that is not read ([`Skip`]). Folders deeper than
//! [`MAX_DEPTH`] are skipped too, which bounds the descriptors held open. A file is read only if it is a
//! regular file of at most [`MAX_REPORT_BYTES`], opened without blocking (a FIFO named `report.json`
//! cannot stall the walk), and at most that many bytes are read whatever its size says.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The most bytes of one `report.json` read: the layer writes tens of KiB; larger files are skipped.
pub const MAX_REPORT_BYTES: u64 = 16 << 20;
/// The deepest folder below a given one that is read.
pub const MAX_DEPTH: usize = 64;

/// Why an entry was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skip {
    /// A symbolic link below the folder given: never followed.
    Link,
    /// Not a regular file (a FIFO, a socket, a device).
    NotAFile,
    /// Bigger than [`MAX_REPORT_BYTES`].
    TooLarge(u64),
    /// A folder deeper than [`MAX_DEPTH`] below the one given.
    TooDeep,
    /// It could not be opened or read.
    Unreadable(String),
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Skip::Link => write!(
                f,
                "a symbolic link (links below the folder given are not followed)"
            ),
            Skip::NotAFile => write!(f, "not a regular file"),
            Skip::TooLarge(n) => write!(
                f,
                "{n} bytes, more than a report can be ({} MiB)",
                MAX_REPORT_BYTES >> 20
            ),
            Skip::TooDeep => write!(f, "a folder more than {MAX_DEPTH} levels down"),
            Skip::Unreadable(why) => write!(f, "cannot be read: {why}"),
        }
    }
}

impl Skip {
    /// A short name of the kind of skip, for the summary.
    pub fn kind(&self) -> &'static str {
        match self {
            Skip::Link => "symbolic links",
            Skip::NotAFile => "not regular files",
            Skip::TooLarge(_) => "too large",
            Skip::TooDeep => "too deep",
            Skip::Unreadable(_) => "unreadable",
        }
    }
}

/// An I/O error in words, without Rust's `(os error N)` suffix.
pub fn io_reason(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_lowercase(),
        None => text,
    }
}

/// An open folder.
pub struct Dir {
    fd: OwnedFd,
}

/// One entry of a folder.
pub struct Entry {
    /// Its name.
    pub name: CString,
    /// What the folder listing says it is (`DT_*`); `DT_UNKNOWN` when the file system does not say.
    pub kind: u8,
}

fn cstring(path: &OsStr) -> io::Result<CString> {
    CString::new(path.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the name"))
}

fn check(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        // SAFETY: a descriptor just returned by the kernel, owned by nothing else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

impl Dir {
    /// Opens a folder named on the command line (a link there is the user's choice, and followed).
    pub fn open(path: &Path) -> io::Result<Dir> {
        let name = cstring(path.as_os_str())?;
        // SAFETY: a NUL-terminated path.
        let fd = unsafe {
            libc::open(
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        Ok(Dir { fd: check(fd)? })
    }

    /// Opens the folder `name` in this one, never through a link.
    pub fn open_child(&self, name: &CStr) -> io::Result<Dir> {
        // SAFETY: a NUL-terminated name, relative to an open folder.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
        };
        Ok(Dir { fd: check(fd)? })
    }

    /// The folder's device and inode, to read each folder once.
    pub fn id(&self) -> io::Result<(u64, u64)> {
        let st = fstat(self.fd.as_raw_fd())?;
        Ok((st.st_dev, st.st_ino))
    }

    /// Calls `each` for every entry but `.` and `..`, in the order the folder lists them.
    pub fn for_each_entry(&self, mut each: impl FnMut(Entry)) -> io::Result<()> {
        // fdopendir takes the descriptor it is given: give it a duplicate, this Dir keeps its own.
        // SAFETY: dup of an open descriptor.
        let dup = check(unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) })?;
        // SAFETY: an open folder descriptor, owned by the DIR from here on.
        let stream = unsafe { libc::fdopendir(dup.as_raw_fd()) };
        if stream.is_null() {
            return Err(io::Error::last_os_error());
        }
        std::mem::forget(dup);
        let result = loop {
            // readdir reports an error only through errno: clear it first.
            // SAFETY: errno is this thread's.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: a stream from fdopendir, not yet closed.
            let entry = unsafe { libc::readdir64(stream) };
            if entry.is_null() {
                let e = io::Error::last_os_error();
                break if e.raw_os_error() == Some(0) {
                    Ok(())
                } else {
                    Err(e)
                };
            }
            // SAFETY: readdir's entry is valid until the next call; d_name is NUL-terminated.
            let (name, kind) = unsafe {
                let entry = &*entry;
                (CStr::from_ptr(entry.d_name.as_ptr()), entry.d_type)
            };
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            each(Entry {
                name: name.to_owned(),
                kind,
            });
        };
        // SAFETY: closes the stream (and its descriptor) once.
        unsafe { libc::closedir(stream) };
        result
    }

    /// `lstat` of `name` in this folder: what it is itself, a link not followed.
    pub fn kind_of(&self, name: &CStr) -> io::Result<u32> {
        // SAFETY: zeroed, then filled by fstatat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a NUL-terminated name relative to an open folder; the struct is the kernel's to fill.
        let r = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                &mut st,
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st.st_mode & libc::S_IFMT)
    }

    /// Reads the file `name` of this folder ([`read_capped`]), never through a link.
    pub fn read_file(&self, name: &CStr) -> Result<Vec<u8>, Skip> {
        // SAFETY: a NUL-terminated name relative to an open folder.
        let fd = unsafe {
            libc::openat(
                self.fd.as_raw_fd(),
                name.as_ptr(),
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        match check(fd) {
            Ok(fd) => read_capped(fd),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(Skip::Link),
            Err(e) => Err(Skip::Unreadable(io_reason(&e))),
        }
    }
}

fn fstat(fd: libc::c_int) -> io::Result<libc::stat> {
    // SAFETY: zeroed, then filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: an open descriptor; the struct is the kernel's to fill.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st)
}

/// Reads a file named on the command line ([`read_capped`]; a link there is the user's choice).
pub fn read_path(path: &Path) -> Result<Vec<u8>, Skip> {
    let name = cstring(path.as_os_str()).map_err(|e| Skip::Unreadable(io_reason(&e)))?;
    // SAFETY: a NUL-terminated path.
    let fd = unsafe {
        libc::open(
            name.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    read_capped(check(fd).map_err(|e| Skip::Unreadable(io_reason(&e)))?)
}

/// The bytes of an open file if it is a regular file of at most [`MAX_REPORT_BYTES`]; at most that many
/// are read, whatever its size said (it may grow while being read).
pub fn read_capped(fd: OwnedFd) -> Result<Vec<u8>, Skip> {
    let st = fstat(fd.as_raw_fd()).map_err(|e| Skip::Unreadable(io_reason(&e)))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(Skip::NotAFile);
    }
    let size = st.st_size.max(0) as u64;
    if size > MAX_REPORT_BYTES {
        return Err(Skip::TooLarge(size));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    let file = std::fs::File::from(fd);
    file.take(MAX_REPORT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Skip::Unreadable(io_reason(&e)))?;
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(Skip::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A folder being walked, shared by the entries below it still to be read.
struct Open {
    dir: Dir,
    path: PathBuf,
    depth: usize,
}

/// What the walk found: a file named `report.json` (its bytes, or why they were not read), or an entry it
/// skipped.
pub enum Found<'a> {
    /// A `report.json`, read or not.
    Report(&'a Path, Result<Vec<u8>, Skip>),
    /// An entry not looked into (a link, a folder too deep or unreadable).
    Skipped(&'a Path, Skip),
}

/// Walks `top` (opened by the caller) and every folder below it, depth first in name order, calling
/// `found` for each `report.json` and each entry skipped; `tick` for each entry seen. Folders already seen
/// (`seen`, by device and inode) are not read again, so overlapping arguments do not count twice.
pub fn walk(
    top: Dir,
    top_path: &Path,
    seen: &mut std::collections::HashSet<(u64, u64)>,
    tick: &mut dyn FnMut(),
    found: &mut dyn FnMut(Found<'_>),
) {
    // Folders still to read: each with the open folder it is in (folders share their parent's).
    let mut stack: Vec<(Rc<Open>, OsString)> = Vec::new();
    let top = Rc::new(Open {
        dir: top,
        path: top_path.to_path_buf(),
        depth: 0,
    });
    let mut next = Some(top);
    loop {
        let Some(folder) = next.take() else {
            let Some((parent, name)) = stack.pop() else {
                return;
            };
            let path = parent.path.join(&name);
            if parent.depth + 1 > MAX_DEPTH {
                found(Found::Skipped(&path, Skip::TooDeep));
                continue;
            }
            let Ok(cname) = cstring(&name) else { continue };
            match parent.dir.open_child(&cname) {
                Ok(dir) => {
                    next = Some(Rc::new(Open {
                        dir,
                        path,
                        depth: parent.depth + 1,
                    }))
                }
                Err(e)
                    if e.raw_os_error() == Some(libc::ELOOP)
                        || e.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    // Swapped for a link (or a file) since it was listed.
                    found(Found::Skipped(&path, Skip::Link))
                }
                Err(e) => found(Found::Skipped(&path, Skip::Unreadable(io_reason(&e)))),
            }
            continue;
        };
        match folder.dir.id() {
            Ok(id) if !seen.insert(id) => continue,
            Ok(_) => {}
            Err(e) => {
                found(Found::Skipped(
                    &folder.path,
                    Skip::Unreadable(io_reason(&e)),
                ));
                continue;
            }
        }
        let mut folders: Vec<OsString> = Vec::new();
        let mut report = false;
        let listed = folder.dir.for_each_entry(|entry| {
            tick();
            let mut kind = entry.kind;
            if kind == libc::DT_UNKNOWN {
                kind = match folder.dir.kind_of(&entry.name) {
                    Ok(libc::S_IFDIR) => libc::DT_DIR,
                    Ok(libc::S_IFLNK) => libc::DT_LNK,
                    Ok(libc::S_IFREG) => libc::DT_REG,
                    _ => libc::DT_UNKNOWN,
                };
            }
            let name = OsString::from_vec(entry.name.into_bytes());
            match kind {
                libc::DT_DIR => folders.push(name),
                libc::DT_LNK => found(Found::Skipped(&folder.path.join(&name), Skip::Link)),
                _ if name == crate::reports::REPORT_JSON => report = true,
                _ => {}
            }
        });
        if let Err(e) = listed {
            found(Found::Skipped(
                &folder.path,
                Skip::Unreadable(io_reason(&e)),
            ));
        }
        if report {
            let path = folder.path.join(crate::reports::REPORT_JSON);
            let bytes = folder.dir.read_file(c"report.json");
            found(Found::Report(&path, bytes));
        }
        folders.sort_unstable();
        stack.extend(folders.into_iter().rev().map(|name| (folder.clone(), name)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_say_why() {
        assert_eq!(
            Skip::TooLarge(20 << 20).to_string(),
            "20971520 bytes, more than a report can be (16 MiB)"
        );
        assert!(Skip::Link.to_string().contains("not followed"));
    }
}
