//! Fatal signals: write a report as far as possible, then let the handler that was there before act.
//!
//! On lavapipe a shader's bad memory access is a SIGSEGV in a driver thread: this is how a report gets
//! written there. The handler is best effort by nature (it allocates and takes locks with timeouts, which a
//! signal handler strictly should not): an alarm ends the process if writing the report itself hangs.
//! Handlers are installed with the first device and the previous ones restored with the last, so an
//! unloaded library never leaves a handler behind.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
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
/// Set while a report is being written, so a second fault (or a second thread) does not start another.
static HANDLING: AtomicBool = AtomicBool::new(false);

/// Installs the handlers (once).
pub fn install() {
    let mut previous = PREVIOUS.lock();
    if previous.is_some() {
        return;
    }
    // SAFETY: plain sigaction calls with zeroed, then filled, structs.
    unsafe {
        let mut saved: [libc::sigaction; 5] = std::mem::zeroed();
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        for (i, &sig) in SIGNALS.iter().enumerate() {
            if libc::sigaction(sig, &action, &mut saved[i]) != 0 {
                warn!("cannot install a handler for signal {sig}: crashes will not be reported");
            }
        }
        *previous = Some(saved);
    }
}

/// Restores the previous handlers once no device is left.
pub fn uninstall_if_unused() {
    if !DEVICES.is_empty() {
        return;
    }
    if let Some(saved) = PREVIOUS.lock().take() {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            restore(sig, &saved[i]);
        }
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

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if !HANDLING.swap(true, Ordering::AcqRel) {
        // SAFETY: alarm has no preconditions; SIGALRM's default action ends the process if we hang.
        unsafe {
            libc::signal(libc::SIGALRM, libc::SIG_DFL);
            libc::alarm(10);
        }
        let _ = std::panic::catch_unwind(|| write_reports(sig, info));
        // SAFETY: cancels the alarm.
        unsafe { libc::alarm(0) };
    }
    chain(sig, info, context);
}

fn write_reports(sig: libc::c_int, info: *mut libc::siginfo_t) {
    let address = match sig {
        // SAFETY: the kernel's siginfo for a fault carries the address.
        libc::SIGSEGV | libc::SIGBUS => {
            unsafe { info.as_ref() }.map(|i| format!("{:#x}", unsafe { i.si_addr() } as usize))
        }
        _ => None,
    };
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    // Driver threads are not Rust threads: the kernel knows their names.
    let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).unwrap_or_default();
    let thread = format!("{} ({tid})", comm.trim());
    error!("{} in thread {thread}: writing a report", name(sig));
    let devices = DEVICES.all(Duration::from_millis(200));
    let busy: Vec<_> = devices
        .iter()
        .filter(|d| d.has_pending())
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
