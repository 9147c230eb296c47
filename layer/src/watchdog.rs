//! The monitor thread, one per process: it retires finished work and logs what its shaders reported within
//! [`DRAIN_INTERVAL`], for apps that never wait or poll where the layer sees it (what work still running
//! reported, once it has waited a second: `shader_errors::records_waiting`); and, as the hang watchdog,
//! it reports a device whose pending work has made no progress for `VK_BLACKBOX_WATCHDOG_MS`.
//!
//! Progress is what the layer's timeline semaphores and markers say, read from GPU-visible memory; the app's
//! own objects are never touched. Without pending work nothing can be stuck, so idle time, loading screens
//! and a debugger's pauses never fire it: after a pause, the first look finds the GPU's work done. A fired
//! watchdog writes one report and lets the app go on; it fires again only after progress resumes and stops.
//! The thread is started with the first device (when the watchdog or shader instrumentation is on) and
//! joined when the last one is destroyed, so the library can be unloaded safely.
//!
//! An app may exit without destroying its device (pygfx does). Then the driver tears itself down while the
//! thread still polls the device: on NVIDIA's driver that was a SIGSEGV in the thread, at exit, in 5 of 6
//! runs of pygfx. So the thread is also stopped when the process begins to exit, by an exit handler
//! registered for this library (`__cxa_atexit` with its `__dso_handle`, as C++ registers a library's static
//! destructors: it runs before the handlers the driver registered earlier, and at `dlclose` of the
//! library instead when that comes first). A child forked from the app has a copy of the thread's handle
//! but not the thread: its exit goes on at once, and a device it makes starts a thread of its own.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::device::Device;
use crate::registry::DEVICES;

struct Running {
    thread: JoinHandle<()>,
    stop: Arc<AtomicBool>,
    /// The process the thread runs in: a child forked from it has a copy of this, not the thread.
    pid: libc::pid_t,
}

impl Running {
    /// Takes the thread out of `slot` if it runs in this process. One inherited through `fork` names a
    /// thread of the parent, which nothing here would ever see stop: its handle is left alone (forgotten),
    /// and `inherited` says it was there.
    fn take_ours(slot: &mut Option<Running>) -> (Option<Running>, bool) {
        match slot.take() {
            // SAFETY: getpid has no preconditions.
            Some(r) if r.pid == unsafe { libc::getpid() } => (Some(r), false),
            Some(inherited) => {
                std::mem::forget(inherited);
                (None, true)
            }
            None => (None, false),
        }
    }
}

static WATCHDOG: Mutex<Option<Running>> = Mutex::new(None);

/// Set when the process has begun to exit (or the library to unload): the thread is stopped and never
/// started again.
static EXITING: AtomicBool = AtomicBool::new(false);

/// How long the exit handler waits for the thread to finish what it is doing (a poll of each device, a
/// drain of its records) before letting the exit go on.
const EXIT_WAIT: Duration = Duration::from_millis(500);

extern "C" {
    /// This library's handle for `__cxa_atexit` (defined by the C runtime's `crtbeginS.o` in every shared
    /// object).
    static __dso_handle: u8;
    fn __cxa_atexit(
        func: unsafe extern "C" fn(*mut libc::c_void),
        arg: *mut libc::c_void,
        dso: *const libc::c_void,
    ) -> libc::c_int;
}

/// Registers [`at_exit`] once per load of the library.
fn register_exit_handler() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    REGISTERED.call_once(|| {
        // SAFETY: `at_exit` is a plain function of this library, and `__dso_handle` is its handle, so
        // glibc runs it at exit or at this library's `dlclose`, whichever comes first, and never after.
        let rc = unsafe { __cxa_atexit(at_exit, std::ptr::null_mut(), std::ptr::addr_of!(__dso_handle).cast()) };
        if rc != 0 {
            warn!("cannot register the exit handler; an app that exits without destroying its device may crash in the monitor thread");
        }
    });
}

/// The process is exiting (or the library unloading): stop the monitor thread before the driver tears
/// down, waiting at most [`EXIT_WAIT`] for it.
unsafe extern "C" fn at_exit(_: *mut libc::c_void) {
    EXITING.store(true, Ordering::Release);
    let Some(mut running) = WATCHDOG.try_lock_for(EXIT_WAIT) else {
        return;
    };
    let (r, inherited) = Running::take_ours(&mut running);
    drop(running);
    if inherited {
        // Waiting for the parent's thread made every forked child's exit 500 ms longer.
        debug!("exit of a forked child: the monitor thread is its parent's");
    }
    let Some(r) = r else {
        return;
    };
    r.stop.store(true, Ordering::Release);
    r.thread.thread().unpark();
    let start = Instant::now();
    while !r.thread.is_finished() && start.elapsed() < EXIT_WAIT {
        std::thread::sleep(Duration::from_millis(1));
    }
    if r.thread.is_finished() {
        let _ = r.thread.join();
        debug!(
            "exit with {} device(s) alive: the monitor thread is stopped",
            DEVICES.len()
        );
    } else {
        debug!("exit: the monitor thread did not stop within {EXIT_WAIT:?}");
    }
}

/// How long finished work may wait before the monitor logs its shader errors.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

/// Starts the monitor if it has anything to do and is not running.
pub fn start() {
    let config = crate::config();
    let limit = config.watchdog_ms.map(Duration::from_millis);
    if limit.is_none() && !config.instruments_shaders() {
        return;
    }
    if EXITING.load(Ordering::Acquire) {
        return;
    }
    register_exit_handler();
    let mut running = WATCHDOG.lock();
    // One inherited from the parent through fork is not running here: this process starts its own.
    if let (Some(r), _) = Running::take_ours(&mut running) {
        *running = Some(r);
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name("blackbox-watchdog".into())
        .spawn(move || watch(limit, &thread_stop));
    match thread {
        Ok(thread) => {
            *running = Some(Running {
                thread,
                stop,
                // SAFETY: getpid has no preconditions.
                pid: unsafe { libc::getpid() },
            })
        }
        Err(e) => warn!("cannot start the monitor thread ({e}); hangs will not be reported, and shader errors only at the app's waits"),
    }
}

/// Stops and joins the watchdog once no device is left.
pub fn stop_if_unused() {
    if !DEVICES.is_empty() {
        return;
    }
    let (running, _) = Running::take_ours(&mut WATCHDOG.lock());
    if let Some(r) = running {
        r.stop.store(true, Ordering::Release);
        r.thread.thread().unpark();
        let _ = r.thread.join();
    }
}

/// What was last seen of a device.
struct Seen {
    fingerprint: u64,
    since: Instant,
    fired: bool,
}

fn watch(limit: Option<Duration>, stop: &AtomicBool) {
    let tick = limit
        .map_or(DRAIN_INTERVAL, |l| l / 10)
        .clamp(Duration::from_millis(20), DRAIN_INTERVAL);
    let mut seen: HashMap<usize, Seen> = HashMap::new();
    while !stop.load(Ordering::Acquire) {
        std::thread::park_timeout(tick);
        if stop.load(Ordering::Acquire) {
            break;
        }
        let devices = DEVICES.all(Duration::from_millis(50));
        seen.retain(|key, _| devices.iter().any(|d| Arc::as_ptr(d) as usize == *key));
        for device in devices {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                check(&device, limit, &mut seen)
            }));
        }
    }
}

fn check(device: &Arc<Device>, limit: Option<Duration>, seen: &mut HashMap<usize, Seen>) {
    let Some(alive) = device.alive.try_read_for(Duration::from_millis(50)) else {
        return;
    };
    if !*alive || device.lost.load(Ordering::Acquire) {
        return;
    }
    match device.poll_completion() {
        Err(result) => {
            if result == ash::vk::Result::ERROR_DEVICE_LOST {
                crate::report::device_lost(device, "vkGetSemaphoreCounterValue (watchdog)");
            }
            return;
        }
        Ok(retired) => {
            if retired || crate::shader_errors::records_waiting(device) {
                crate::shader_errors::drain(device);
            }
        }
    }
    let Some(limit) = limit else {
        return;
    };
    let key = Arc::as_ptr(device) as usize;
    let now = Instant::now();
    let progress = fingerprint(device);
    // A hang report's work that moved again, or finished, was slow work: the report says so.
    let moved = match (&*device.open_hang.lock(), progress) {
        (Some(open), Some(current)) => current != Some(open.fingerprint),
        _ => false,
    };
    if moved {
        crate::report::hang_resumed(device);
    }
    let Some(Some(fingerprint)) = progress else {
        seen.remove(&key);
        return;
    };
    let entry = seen.entry(key).or_insert(Seen {
        fingerprint,
        since: now,
        fired: false,
    });
    if entry.fingerprint != fingerprint {
        *entry = Seen {
            fingerprint,
            since: now,
            fired: false,
        };
    } else if !entry.fired && now.duration_since(entry.since) >= limit {
        entry.fired = true;
        crate::report::hang(device, entry.since, fingerprint);
    }
}

/// A hash of everything that moves when the GPU makes progress: `Some(None)` when nothing is pending,
/// `None` when a lock could not be had (nothing known).
fn fingerprint(device: &Device) -> Option<Option<u64>> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut pending = false;
    for queue in device
        .queues
        .try_read_for(Duration::from_millis(50))?
        .iter()
    {
        let tracker = queue.tracker.try_lock_for(Duration::from_millis(50))?;
        tracker.completed.hash(&mut h);
        for sub in &tracker.pending {
            pending = true;
            sub.seq.hash(&mut h);
            for s in sub.batches.iter().flatten() {
                if let Some(progress) = s.log.as_ref().and_then(|l| l.progress()) {
                    progress.hash(&mut h);
                }
            }
        }
    }
    Some(pending.then(|| h.finish()))
}
