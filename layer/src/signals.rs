//! Fatal signals: write a report as far as possible, then let the handler that was there before act.
//!
//! On lavapipe a shader's bad memory access is a SIGSEGV in a driver thread: this is how a report gets
//! written there. Writing a report allocates and takes locks, which a signal handler must not do: the
//! faulting thread may hold the very lock the report needs (glibc aborts on a corrupt heap with its
//! allocator's lock held; a fault inside Blackbox may hold one of Blackbox's), and it may be running on a
//! small alternate signal stack (Rust gives every thread one of a few KiB). So the handler itself only
//! makes async-signal-safe calls: it writes one line to the log's descriptor with `write(2)`, wakes the
//! reporter thread (started with the handlers, idle until then, with a stack and an allocator arena of its
//! own) through a pipe, and waits for it at most [`REPORT_SECONDS`]. Then, whether the report was written
//! or not (a line says so), it hands the signal to the handler that was there before (the app's own crash
//! handler, say), or to the default action.
//!
//! Handlers and the reporter thread are set up with the first device and the previous handlers restored
//! (and the thread joined) with the last, so an unloaded library never leaves either behind.
//!
//! A managed runtime (the Java VM, .NET, Mono; Wine, for Windows programs' structured exception handling)
//! makes faults on purpose and resolves them in its own handler: the JVM's compiled code reads a null
//! pointer where Java code may throw a `NullPointerException`, and a protected page at every safepoint
//! poll. Reporting those first gave a healthy Java or C# program a fatal-signal report and an error line.
//! So where the handler before Blackbox's is such a runtime's (its library or program file, by `dladdr`),
//! the runtime gets SIGSEGV, SIGBUS, SIGFPE and SIGILL first when the fault is in code it may have made:
//! code of no loaded object (what it generated) or its own library. If its handler returns with
//! Blackbox's still installed, it resolved the fault and nothing is reported; if it put another
//! disposition in place (giving up, to end the process with it), the report is written before the fault
//! meets that disposition; and if it aborts (the JVM, after its `hs_err_pid` file), the SIGABRT is
//! reported as the fault. A fault in any other object's code (a driver, an app's library) is a crash the
//! runtime did not make: reported first, as in any app, since a runtime may end the process without a
//! signal Blackbox sees (Mono puts SIGABRT's default back before it aborts).

use parking_lot::Mutex;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::registry::DEVICES;

const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGFPE,
];

/// The handlers that were installed before Blackbox's, to restore and chain to.
static PREVIOUS: Mutex<Option<[libc::sigaction; 5]>> = Mutex::new(None);
/// For each of [`SIGNALS`], the previous handler when it is a managed runtime's (`SA_SIGINFO`), which gets
/// the signal first; 0 otherwise. Read without a lock: a runtime's own faults come at any time, from any
/// thread, and must never wait for one (nor fall to the default action while another thread holds
/// [`PREVIOUS`]).
static RUNTIME_FIRST: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];
/// For each of [`SIGNALS`], whether that runtime resolves faults on pages it protects
/// ([`Resolves::ProtectedPages`]) rather than faults in its own code.
static RUNTIME_PAGES: [AtomicBool; 5] = [const { AtomicBool::new(false) }; 5];
/// For each of [`SIGNALS`], the runtime handler's `sa_mask`, blocked while it runs as the kernel would have
/// (the JVM's blocks most signals). Written by [`install`] only while its [`RUNTIME_FIRST`] entry is 0, and
/// read by the handler only after it found that entry set.
static RUNTIME_MASKS: RuntimeMasks = RuntimeMasks(std::cell::UnsafeCell::new(
    // SAFETY: an all-zero sigset_t is the empty set.
    unsafe { std::mem::zeroed() },
));

struct RuntimeMasks(std::cell::UnsafeCell<[libc::sigset_t; 5]>);

// SAFETY: see `RUNTIME_MASKS`: each entry is written before its `RUNTIME_FIRST` store (Release) and read
// after a load that found it set (Acquire).
unsafe impl Sync for RuntimeMasks {}

/// glibc's `_dl_find_object` (2.35 and later; looked up, not linked, so that the layer still loads on an
/// older glibc): which loaded object holds an address, async-signal-safe. 0 where there is none.
static DL_FIND_OBJECT: AtomicUsize = AtomicUsize::new(0);
/// For each of [`SIGNALS`], the link map of the object that holds the runtime's handler (0: unknown).
static RUNTIME_OBJECTS: [AtomicUsize; 5] = [const { AtomicUsize::new(0) }; 5];

/// glibc's `struct dl_find_object`.
#[repr(C)]
struct DlFindObject {
    flags: u64,
    map_start: *mut libc::c_void,
    map_end: *mut libc::c_void,
    link_map: *mut libc::c_void,
    eh_frame: *mut libc::c_void,
    reserved: [u64; 7],
}

type DlFindObjectFn = unsafe extern "C" fn(*mut libc::c_void, *mut DlFindObject) -> libc::c_int;

/// The fault a runtime's handler is deciding on, for [`report`]: its signal, address and thread (0: none).
static RUNTIME_FAULT_SIGNAL: AtomicI32 = AtomicI32::new(0);
static RUNTIME_FAULT_ADDRESS: AtomicUsize = AtomicUsize::new(0);
static RUNTIME_FAULT_THREAD: AtomicI32 = AtomicI32::new(0);

/// Which faults a runtime's handler resolves, and so gets first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Resolves {
    /// Faults in code it may have made: code of no loaded object (what it generated) or its own library.
    OwnCode,
    /// Writes to pages it protects to see which it wrote (`SIGSEGV` with `SEGV_ACCERR`), from any code:
    /// the app's, a driver's, Blackbox's.
    ProtectedPages,
}

/// The runtimes whose handlers resolve faults they make on purpose, by a word in their library's file
/// name, what to call them, and which faults they resolve.
const RUNTIMES: [(&str, &str, Resolves); 7] = [
    ("libjvm.so", "the Java VM", Resolves::OwnCode),
    ("libj9vm", "the Java VM (OpenJ9)", Resolves::OwnCode),
    ("libcoreclr.so", ".NET", Resolves::OwnCode),
    // Embedded (libmonosgen-2.0.so, Unity's libmonobdwgc-2.0.so), or linked into Debian's `mono`.
    ("libmono", "Mono", Resolves::OwnCode),
    ("mono-sgen", "Mono", Resolves::OwnCode),
    // Windows programs under Wine (and Proton) handle access violations with structured exception
    // handling, which Wine's handler (its Unix-side ntdll) dispatches.
    ("ntdll.so", "Wine", Resolves::OwnCode),
    // GFXReconstruct's capture layer protects the memory it hands out for mapped device memory and learns
    // from each fault which pages the app wrote (its page guard); one it does not resolve, it hands to the
    // handler before it, or aborts.
    (
        "libVkLayer_gfxreconstruct",
        "GFXReconstruct's page guard",
        Resolves::ProtectedPages,
    ),
];
/// Set while a report is being written, so a second fault (or a second thread) does not start another.
static HANDLING: AtomicBool = AtomicBool::new(false);

/// How long the faulting thread waits for the report before handing the signal on.
pub const REPORT_SECONDS: u32 = 10;

/// The fault being reported, for the reporter thread: signal, thread, faulting address (0: none).
static FAULT_SIGNAL: AtomicI32 = AtomicI32::new(0);
static FAULT_THREAD: AtomicI32 = AtomicI32::new(0);
static FAULT_ADDRESS: AtomicUsize = AtomicUsize::new(0);

/// The handler's ends of the reporter's pipes: it writes a request to one and reads "done" from the
/// other; -1 when there is no reporter thread.
static REQUEST_FD: AtomicI32 = AtomicI32::new(-1);
static DONE_FD: AtomicI32 = AtomicI32::new(-1);
/// The process the reporter thread runs in: a forked child has the pipes but not the thread.
static REPORTER_PID: AtomicI32 = AtomicI32::new(0);

/// The reporter thread and the pipe ends that stay with this module (the thread owns the others).
struct Reporter {
    thread: JoinHandle<()>,
    request: OwnedFd,
    done: OwnedFd,
}

static REPORTER: Mutex<Option<Reporter>> = Mutex::new(None);

/// What the reporter thread is asked, one byte through its pipe.
const WRITE_REPORT: u8 = 1;
const STOP: u8 = 0;

/// Installs the handlers and starts the reporter thread (once).
pub fn install() {
    let mut previous = PREVIOUS.lock();
    if previous.is_some() {
        // SAFETY: getpid has no preconditions.
        let pid = unsafe { libc::getpid() };
        let reporter_pid = REPORTER_PID.load(Ordering::Acquire);
        if reporter_pid != 0 && reporter_pid != pid {
            // A child forked from the app: the handlers came with it, its parent's reporter thread did not.
            restart_reporter_in_child();
        }
        return;
    }
    if let Err(e) = start_reporter() {
        warn!(
            "cannot start the thread that writes reports on a fatal signal ({e}): a fatal signal is logged, \
             not reported"
        );
    }
    // SAFETY: plain sigaction calls with zeroed, then filled, structs.
    unsafe {
        let mut saved: [libc::sigaction; 5] = std::mem::zeroed();
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        let find = libc::dlsym(libc::RTLD_DEFAULT, c"_dl_find_object".as_ptr());
        DL_FIND_OBJECT.store(find as usize, Ordering::Release);
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // Known before Blackbox's handler is in place, so that none of the runtime's faults is
            // reported in between.
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut current);
            if let Some((runtime, resolves)) = runtime_of(sig, &current) {
                debug!(
                    "{}'s handler is {runtime}'s: it gets the signal first, and Blackbox reports the faults it does not resolve",
                    name(sig)
                );
                RUNTIME_PAGES[i].store(resolves == Resolves::ProtectedPages, Ordering::Release);
                let object = match find as usize {
                    0 => 0,
                    find => object_of(find, current.sa_sigaction).unwrap_or(0),
                };
                RUNTIME_OBJECTS[i].store(object, Ordering::Release);
                (*RUNTIME_MASKS.0.get())[i] = current.sa_mask;
                RUNTIME_FIRST[i].store(current.sa_sigaction, Ordering::Release);
            }
            if libc::sigaction(sig, &action, &mut saved[i]) != 0 {
                warn!("cannot install a handler for signal {sig}: crashes will not be reported");
            }
        }
        *previous = Some(saved);
    }
}

/// The managed runtime whose handler `action` is, for a signal a runtime makes faults with (not SIGABRT).
fn runtime_of(sig: libc::c_int, action: &libc::sigaction) -> Option<(&'static str, Resolves)> {
    if sig == libc::SIGABRT
        || action.sa_flags & libc::SA_SIGINFO == 0
        || action.sa_sigaction == libc::SIG_DFL
        || action.sa_sigaction == libc::SIG_IGN
        || action.sa_sigaction == handler as *const () as usize
    {
        return None;
    }
    // SAFETY: dladdr only reads the loaded objects' tables; `info` is written on success.
    let library = unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(action.sa_sigaction as *const libc::c_void, &mut info) == 0
            || info.dli_fname.is_null()
        {
            return None;
        }
        std::ffi::CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned()
    };
    // The program itself is in the loader's list by the name it was started with ("mono", or none): its
    // file is /proc/self/exe (Debian's `mono` is `mono-sgen`, with the runtime linked in).
    let library = if library.contains('/') {
        library
    } else {
        std::fs::read_link("/proc/self/exe")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or(library)
    };
    runtime_named(&library)
}

/// The runtime whose library or program `path` is, by its file name, and which faults it resolves.
fn runtime_named(path: &str) -> Option<(&'static str, Resolves)> {
    let file = path.rsplit('/').next().unwrap_or(path);
    RUNTIMES
        .iter()
        .find(|(word, _, _)| file.contains(word))
        .map(|&(_, runtime, resolves)| (runtime, resolves))
}

/// Two pipes and the thread that waits on the first: it writes a report for each request and says so on
/// the second.
fn start_reporter() -> std::io::Result<()> {
    let (request_read, request_write) = pipe()?;
    let (done_read, done_write) = pipe()?;
    let thread = std::thread::Builder::new()
        .name("blackbox-reports".into())
        .spawn(move || serve(request_read, done_write))?;
    // SAFETY: getpid has no preconditions.
    REPORTER_PID.store(unsafe { libc::getpid() }, Ordering::Release);
    REQUEST_FD.store(request_write.as_raw_fd(), Ordering::Release);
    DONE_FD.store(done_read.as_raw_fd(), Ordering::Release);
    *REPORTER.lock() = Some(Reporter {
        thread,
        request: request_write,
        done: done_read,
    });
    Ok(())
}

/// In a forked child, a reporter thread of its own in place of its parent's (whose handle and pipe ends it
/// has copies of: the handle is forgotten, the pipe ends closed).
fn restart_reporter_in_child() {
    if let Some(Reporter {
        thread,
        request,
        done,
    }) = REPORTER.lock().take()
    {
        std::mem::forget(thread);
        drop((request, done));
    }
    REQUEST_FD.store(-1, Ordering::Release);
    DONE_FD.store(-1, Ordering::Release);
    match start_reporter() {
        Ok(()) => debug!("a forked child: its own thread writes its reports"),
        Err(e) => warn!(
            "cannot start the thread that writes reports on a fatal signal in this forked child ({e}): a \
             fatal signal is logged, not reported"
        ),
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The reporter thread: idle until a fatal signal asks for a report (or [`uninstall_if_unused`] for the
/// end).
fn serve(request: OwnedFd, done: OwnedFd) {
    let mut request = std::fs::File::from(request);
    let mut done = std::fs::File::from(done);
    let mut byte = [0u8];
    while let Ok(1) = request.read(&mut byte) {
        if byte[0] != WRITE_REPORT {
            return;
        }
        let _ = std::panic::catch_unwind(write_reports);
        let _ = done.write_all(&[1]);
    }
}

/// Restores the previous handlers and stops the reporter thread once no device is left.
pub fn uninstall_if_unused() {
    if !DEVICES.is_empty() {
        return;
    }
    if let Some(saved) = PREVIOUS.lock().take() {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            restore(sig, &saved[i]);
            RUNTIME_FIRST[i].store(0, Ordering::Release);
            RUNTIME_OBJECTS[i].store(0, Ordering::Release);
            RUNTIME_PAGES[i].store(false, Ordering::Release);
        }
    }
    if let Some(reporter) = REPORTER.lock().take() {
        REQUEST_FD.store(-1, Ordering::Release);
        DONE_FD.store(-1, Ordering::Release);
        let mut request = std::fs::File::from(reporter.request);
        let _ = request.write_all(&[STOP]);
        let _ = reporter.thread.join();
        drop(reporter.done);
    }
}

fn restore(sig: libc::c_int, saved: &libc::sigaction) {
    // SAFETY: reinstalls what sigaction returned earlier, only if ours is still the handler.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut current);
        if current.sa_sigaction == handler as *const () as usize {
            libc::sigaction(sig, saved, std::ptr::null_mut());
        }
    }
}

/// Stops the process with SIGABRT like a failed CPU assert, without writing a signal report (the caller
/// wrote its own).
pub fn abort_without_report() -> ! {
    HANDLING.store(true, Ordering::Release);
    std::process::abort()
}

fn name(sig: libc::c_int) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGFPE => "SIGFPE",
        _ => "signal",
    }
}

/// Async-signal-safe from start to end: no allocation, no lock (but the `try_lock` in [`chain`]).
extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let index = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    let runtime = RUNTIME_FIRST[index].load(Ordering::Acquire);
    if runtime != 0 && runtime_may_resolve(index, sig, info, context) {
        // Noted for a SIGABRT from the runtime's handler on this thread: one slot for all threads (faults
        // of other threads may overwrite it; the report then names the SIGABRT).
        let tid = gettid();
        RUNTIME_FAULT_SIGNAL.store(sig, Ordering::Release);
        RUNTIME_FAULT_ADDRESS.store(fault_address(sig, info), Ordering::Release);
        RUNTIME_FAULT_THREAD.store(tid, Ordering::Release);
        // SAFETY: the runtime's own SA_SIGINFO handler, called as the kernel would have: with its mask
        // blocked (pthread_sigmask is async-signal-safe), restored after.
        unsafe {
            let mut before: libc::sigset_t = std::mem::zeroed();
            let mask = &(*RUNTIME_MASKS.0.get())[index];
            libc::pthread_sigmask(libc::SIG_BLOCK, mask, &mut before);
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(runtime);
            f(sig, info, context);
            libc::pthread_sigmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
        }
        let _ = RUNTIME_FAULT_THREAD.compare_exchange(tid, 0, Ordering::AcqRel, Ordering::Relaxed);
        if still_installed(sig) {
            // Resolved: its own fault (a null check, a safepoint poll), or the context now leads
            // elsewhere. Returning resumes the thread where the runtime said.
            return;
        }
        // It gave up and put another disposition in place: the fault meets it once this returns.
        report(sig, info);
        return;
    }
    report(sig, info);
    chain(sig, info, context);
}

/// Whether the runtime at `index` may have made this fault on purpose, and so gets it first: for a page
/// guard, an access a page's protection forbids, from any code; for the others, a fault in their own code.
fn runtime_may_resolve(
    index: usize,
    sig: libc::c_int,
    info: *const libc::siginfo_t,
    context: *mut libc::c_void,
) -> bool {
    if RUNTIME_PAGES[index].load(Ordering::Acquire) {
        protected_page_fault(sig, info)
    } else {
        !native_fault_outside(index, context)
    }
}

/// Whether the signal is a write or read of a page whose protection forbids it (`SEGV_ACCERR`), which a
/// page guard makes on purpose; not an access to an address with no mapping (`SEGV_MAPERR`).
fn protected_page_fault(sig: libc::c_int, info: *const libc::siginfo_t) -> bool {
    const SEGV_ACCERR: libc::c_int = 2;
    // SAFETY: the kernel's siginfo for the signal, when there is one.
    sig == libc::SIGSEGV && unsafe { info.as_ref() }.is_some_and(|i| i.si_code == SEGV_ACCERR)
}

/// The link map of the loaded object that holds `address`, with `find` (`_dl_find_object`); `None` for
/// code of no object (a JIT's).
fn object_of(find: usize, address: usize) -> Option<usize> {
    // SAFETY: `find` is glibc's _dl_find_object, which fills the zeroed struct.
    unsafe {
        let find: DlFindObjectFn = std::mem::transmute(find);
        let mut found: DlFindObject = std::mem::zeroed();
        (find(address as *mut libc::c_void, &mut found) == 0).then_some(found.link_map as usize)
    }
}

/// Whether a fault for the runtime at `index` happened in native code of another object than the
/// runtime's (a driver, an app's library, Blackbox): a crash the runtime did not make, reported first as
/// for any app (a runtime may end the process without another signal: Mono does). The runtime's own faults
/// are in the code it generated (of no object) or in its own library. False where that cannot be told
/// (no `_dl_find_object`, another architecture).
fn native_fault_outside(index: usize, context: *mut libc::c_void) -> bool {
    let find = DL_FIND_OBJECT.load(Ordering::Acquire);
    let runtime_object = RUNTIME_OBJECTS[index].load(Ordering::Acquire);
    if find == 0 || runtime_object == 0 {
        return false;
    }
    let Some(pc) = faulting_pc(context) else {
        return false;
    };
    object_of(find, pc).is_some_and(|object| object != runtime_object)
}

/// The instruction a signal interrupted, from its context.
fn faulting_pc(context: *mut libc::c_void) -> Option<usize> {
    // SAFETY: the kernel's ucontext for the signal.
    let context = unsafe { (context as *const libc::ucontext_t).as_ref() }?;
    #[cfg(target_arch = "x86_64")]
    return Some(context.uc_mcontext.gregs[libc::REG_RIP as usize] as usize);
    #[cfg(target_arch = "aarch64")]
    return Some(context.uc_mcontext.pc as usize);
    #[allow(unreachable_code)]
    {
        let _ = context;
        None
    }
}

/// Whether Blackbox's handler is still the one for `sig` (sigaction is async-signal-safe).
fn still_installed(sig: libc::c_int) -> bool {
    // SAFETY: reads the disposition into a zeroed struct.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == handler as *const () as usize
    }
}

/// The log line and the report of a fatal signal, once per process (a second fault, or a second thread's,
/// goes on without one).
fn report(sig: libc::c_int, info: *mut libc::siginfo_t) {
    if !HANDLING.swap(true, Ordering::AcqRel) {
        let tid = gettid();
        // A runtime that gives up on a fault in its handler aborts (the JVM): the fault is what to report.
        let (sig, address) = match sig {
            libc::SIGABRT if RUNTIME_FAULT_THREAD.load(Ordering::Acquire) == tid => (
                RUNTIME_FAULT_SIGNAL.load(Ordering::Acquire),
                RUNTIME_FAULT_ADDRESS.load(Ordering::Acquire),
            ),
            _ => (sig, fault_address(sig, info)),
        };
        // Before anything else: this line is written even if nothing else is.
        signal_safe_line(&[
            name(sig).as_bytes(),
            b" in thread ",
            ThreadName::of(tid).as_bytes(),
            b": writing a report (at most ",
            Digits::of(REPORT_SECONDS.into()).as_bytes(),
            b" s)",
        ]);
        FAULT_SIGNAL.store(sig, Ordering::Release);
        FAULT_THREAD.store(tid, Ordering::Release);
        FAULT_ADDRESS.store(address, Ordering::Release);
        match report_on_reporter_thread() {
            Waited::Written => {}
            Waited::TimedOut => signal_safe_line(&[
                b"the report was not written within ",
                Digits::of(REPORT_SECONDS.into()).as_bytes(),
                b" s (a lock it needs may be held by the faulting thread): handing ",
                name(sig).as_bytes(),
                b" on",
            ]),
            Waited::NoReporter => signal_safe_line(&[
                b"no report: the reporting thread is not running; handing ",
                name(sig).as_bytes(),
                b" on",
            ]),
        }
    }
}

/// The faulting address of a SIGSEGV or SIGBUS (0 for other signals).
fn fault_address(sig: libc::c_int, info: *mut libc::siginfo_t) -> usize {
    match sig {
        // SAFETY: the kernel's siginfo for a fault carries the address.
        libc::SIGSEGV | libc::SIGBUS => {
            unsafe { info.as_ref() }.map_or(0, |i| unsafe { i.si_addr() } as usize)
        }
        _ => 0,
    }
}

/// How waiting for the reporter thread ended.
enum Waited {
    Written,
    TimedOut,
    NoReporter,
}

/// Asks the reporter thread for a report and waits for it at most [`REPORT_SECONDS`], with
/// async-signal-safe calls only (write, clock_gettime, poll, read).
fn report_on_reporter_thread() -> Waited {
    let (request, done) = (
        REQUEST_FD.load(Ordering::Acquire),
        DONE_FD.load(Ordering::Acquire),
    );
    // SAFETY: getpid is async-signal-safe.
    let forked = REPORTER_PID.load(Ordering::Acquire) != unsafe { libc::getpid() };
    // SAFETY: writes one byte from the stack to a descriptor this module owns.
    if request < 0
        || forked
        || unsafe { libc::write(request, [WRITE_REPORT].as_ptr().cast(), 1) } != 1
    {
        return Waited::NoReporter;
    }
    let deadline = monotonic_ms() + i64::from(REPORT_SECONDS) * 1000;
    loop {
        let left = deadline - monotonic_ms();
        if left <= 0 {
            return Waited::TimedOut;
        }
        let mut poll = libc::pollfd {
            fd: done,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd on the stack.
        match unsafe { libc::poll(&mut poll, 1, left.min(i64::from(i32::MAX)) as libc::c_int) } {
            n if n > 0 => {
                let mut byte = 0u8;
                // SAFETY: reads one byte into the stack.
                unsafe { libc::read(done, (&mut byte as *mut u8).cast(), 1) };
                return Waited::Written;
            }
            // Timed out, or interrupted (EINTR): the deadline decides.
            _ => continue,
        }
    }
}

fn monotonic_ms() -> i64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime is async-signal-safe and writes the struct it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec * 1000 + now.tv_nsec / 1_000_000
}

fn gettid() -> libc::c_int {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as libc::c_int }
}

/// Writes `[blackbox] error: <parts>` and a newline to the log with one `write(2)`, allocating nothing and
/// taking no lock; the parts are Blackbox's own text and numbers. Cut at 255 bytes.
fn signal_safe_line(parts: &[&[u8]]) {
    let Some(fd) = crate::logging::signal_safe_fd() else {
        return;
    };
    let mut line = [0u8; 256];
    let mut len = 0;
    for part in std::iter::once(&b"[blackbox] error: "[..]).chain(parts.iter().copied()) {
        let n = part.len().min(line.len() - 1 - len);
        line[len..len + n].copy_from_slice(&part[..n]);
        len += n;
    }
    line[len] = b'\n';
    // SAFETY: write is async-signal-safe; the buffer holds `len + 1` bytes.
    unsafe { libc::write(fd, line.as_ptr().cast(), len + 1) };
}

/// A number's decimal digits, formatted on the stack.
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn of(mut n: u64) -> Digits {
        let mut buf = [0u8; 20];
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        Digits { buf, start }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// `name (tid)` of a thread, on the stack.
struct ThreadName {
    buf: [u8; 64],
    len: usize,
}

impl ThreadName {
    /// Read from /proc with open/read/close alone (driver threads are not Rust threads: the kernel knows
    /// their names); a name that is not plain printable ASCII is left out (it is the app's, or the
    /// driver's).
    fn of(tid: libc::c_int) -> ThreadName {
        let mut out = ThreadName {
            buf: [0u8; 64],
            len: 0,
        };
        let mut path = [0u8; 48];
        let mut len = 0;
        for part in [
            &b"/proc/self/task/"[..],
            Digits::of(tid as u64).as_bytes(),
            b"/comm\0",
        ] {
            path[len..len + part.len()].copy_from_slice(part);
            len += part.len();
        }
        let mut comm = [0u8; 16];
        // SAFETY: a NUL-terminated path on the stack, read into a buffer of its size; open, read and close
        // are async-signal-safe.
        let n = unsafe {
            let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                0
            } else {
                let n = libc::read(fd, comm.as_mut_ptr().cast(), comm.len());
                libc::close(fd);
                n.max(0) as usize
            }
        };
        let name = comm[..n].strip_suffix(b"\n").unwrap_or(&comm[..n]);
        if !name.is_empty() && name.iter().all(|b| (0x20..0x7f).contains(b)) {
            out.push(name);
            out.push(b" ");
        }
        out.push(b"(");
        out.push(Digits::of(tid as u64).as_bytes());
        out.push(b")");
        out
    }

    fn push(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&bytes[..n]);
        self.len += n;
    }

    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// On the reporter thread: a report for the devices with pending work (each lock waited for at most
/// 200 ms; a device whose queues cannot be read counts as busy), else for the first device.
fn write_reports() {
    let sig = FAULT_SIGNAL.load(Ordering::Acquire);
    let address = FAULT_ADDRESS.load(Ordering::Acquire);
    let address = (address != 0).then(|| format!("{address:#x}"));
    let thread =
        String::from_utf8_lossy(ThreadName::of(FAULT_THREAD.load(Ordering::Acquire)).as_bytes())
            .into_owned();
    let devices = DEVICES.all(Duration::from_millis(200));
    let busy: Vec<_> = devices
        .iter()
        .filter(|d| d.has_pending_within(Duration::from_millis(200)) != Some(false))
        .cloned()
        .collect();
    let targets = if busy.is_empty() {
        devices.into_iter().take(1).collect()
    } else {
        busy
    };
    for device in targets {
        let signal = blackbox_report::Signal {
            number: sig,
            name: name(sig).to_owned(),
            address: address.clone(),
            thread: thread.clone(),
        };
        crate::report::signal(&device, signal);
    }
}

/// Hands the signal to the previous handler: calls it if it was a function, else restores it and re-raises
/// so the default action (usually ending the process with a core dump) happens.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let index = SIGNALS.iter().position(|&s| s == sig).unwrap_or(0);
    let previous = PREVIOUS
        .try_lock()
        .and_then(|p| p.as_ref().map(|p| p[index]));
    // SAFETY: reinstalling or calling the handler the process had; raise re-delivers the signal.
    unsafe {
        match previous {
            Some(prev)
                if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN =>
            {
                if prev.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(prev.sa_sigaction);
                    f(sig, info, context);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                    f(sig);
                }
            }
            Some(prev) => {
                libc::sigaction(sig, &prev, std::ptr::null_mut());
                libc::raise(sig);
            }
            None => {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_are_told_by_their_file_name() {
        for (path, runtime) in [
            (
                "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so",
                Some("the Java VM"),
            ),
            (
                "/opt/openj9/lib/default/libj9vm29.so",
                Some("the Java VM (OpenJ9)"),
            ),
            (
                "/usr/share/dotnet/shared/Microsoft.NETCore.App/8.0.0/libcoreclr.so",
                Some(".NET"),
            ),
            (
                "/opt/game/Data/MonoBleedingEdge/libmonobdwgc-2.0.so",
                Some("Mono"),
            ),
            ("/usr/bin/mono-sgen", Some("Mono")),
            (
                "/usr/lib/x86_64-linux-gnu/wine/x86_64-unix/ntdll.so",
                Some("Wine"),
            ),
            (
                "/usr/lib/x86_64-linux-gnu/libVkLayer_gfxreconstruct.so",
                Some("GFXReconstruct's page guard"),
            ),
            ("/usr/lib/x86_64-linux-gnu/libc.so.6", None),
            // A folder's name is not the file's.
            ("/opt/libjvm.so.d/libcrash.so", None),
            ("/usr/bin/python3", None),
        ] {
            assert_eq!(runtime_named(path).map(|(name, _)| name), runtime, "{path}");
        }
        let resolves = |path| runtime_named(path).map(|(_, resolves)| resolves);
        assert!(resolves("/usr/lib/libjvm.so") == Some(Resolves::OwnCode));
        assert!(
            resolves("/usr/lib/x86_64-linux-gnu/libVkLayer_gfxreconstruct.so")
                == Some(Resolves::ProtectedPages)
        );
    }
}
