//! The monitor thread, one per process: it retires finished work and logs what its shaders reported within
//! [`DRAIN_INTERVAL`], for apps that never wait or poll where the layer sees it; and, as the hang watchdog,
//! it reports a device whose pending work has made no progress for `VK_BLACKBOX_WATCHDOG_MS`.
//!
//! Progress is what the layer's timeline semaphores and markers say, read from GPU-visible memory; the app's
//! own objects are never touched. Without pending work nothing can be stuck, so idle time, loading screens
//! and a debugger's pauses never fire it: after a pause, the first look finds the GPU's work done. A fired
//! watchdog writes one report and lets the app go on; it fires again only after progress resumes and stops.
//! The thread is started with the first device (when the watchdog or shader instrumentation is on) and
//! joined when the last one is destroyed, so the library can be unloaded safely.

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
}

static WATCHDOG: Mutex<Option<Running>> = Mutex::new(None);

/// How long finished work may wait before the monitor logs its shader errors.
pub const DRAIN_INTERVAL: Duration = Duration::from_millis(100);

/// Starts the monitor if it has anything to do and is not running.
pub fn start() {
    let config = crate::config();
    let limit = config.watchdog_ms.map(Duration::from_millis);
    if limit.is_none() && !config.instruments_shaders() {
        return;
    }
    let mut running = WATCHDOG.lock();
    if running.is_some() {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let thread_stop = stop.clone();
    let thread = std::thread::Builder::new()
        .name("blackbox-watchdog".into())
        .spawn(move || watch(limit, &thread_stop));
    match thread {
        Ok(thread) => *running = Some(Running { thread, stop }),
        Err(e) => warn!("cannot start the monitor thread ({e}); hangs will not be reported, and shader errors only at the app's waits"),
    }
}

/// Stops and joins the watchdog once no device is left.
pub fn stop_if_unused() {
    if !DEVICES.is_empty() {
        return;
    }
    let running = WATCHDOG.lock().take();
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
            if retired || crate::shader_errors::has_unread_records(device) {
                crate::shader_errors::drain(device);
            }
        }
    }
    let Some(limit) = limit else {
        return;
    };
    let key = Arc::as_ptr(device) as usize;
    let now = Instant::now();
    let Some(fingerprint) = fingerprint(device) else {
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
        crate::report::hang(device, now.duration_since(entry.since));
    }
}

/// A hash of everything that moves when the GPU makes progress; `None` when nothing is pending.
fn fingerprint(device: &Device) -> Option<u64> {
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
    pending.then(|| h.finish())
}
