//! State kept per `VkDevice`: its creation (what Blackbox enables and sets up on it), its destruction, and
//! the device-level hooks that need nothing else (queues, debug names).

use ash::vk;
use blackbox_report::untrusted;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::breadcrumbs::{MarkerPath, Markers};
use crate::capabilities::{Capabilities, DeviceCreatePatch, Wanted};
use crate::config::{Breadcrumbs, Switch};
use crate::dispatch::DeviceDispatch;
use crate::fallback::Fallback;
use crate::instance::{version_string, DeviceDescription, Instance};
use crate::memory::HostBuffer;
use crate::queue::Queue;
use crate::registry::{self, dispatch_key};
use loader_abi::SetDeviceLoaderData;

/// What the loader's chain gives a layer for the next one at `vkCreateDevice`.
#[derive(Clone, Copy)]
pub struct NextLink {
    /// The next layer's `vkGetInstanceProcAddr`.
    pub get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    /// The next layer's `vkGetDeviceProcAddr`.
    pub get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
    /// The loader's callback for dispatchable objects the layer creates itself.
    pub set_loader_data: Option<SetDeviceLoaderData>,
}

/// `vkCreateDevice`, once the loader's chain is advanced: creates the device through `next_create` with what
/// Blackbox needs enabled (in a patched copy of the app's create info; the app's own if that fails), sets
/// up the layer's buffers, records the device and logs the start-up line.
///
/// # Safety
/// The app's arguments, valid as `vkCreateDevice` requires, for a physical device of `instance`;
/// `next_create` and `next` are the next layer's.
pub unsafe fn create(
    instance: &Arc<Instance>,
    physical_device: vk::PhysicalDevice,
    info: &vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out_device: *mut vk::Device,
    next_create: vk::PFN_vkCreateDevice,
    next: NextLink,
) -> vk::Result {
    // SAFETY: the physical device belongs to `instance`.
    let description = unsafe { instance.describe(physical_device) };
    let config = crate::config();
    // SAFETY: the physical device belongs to `instance`, whose next layer the command is.
    let below = unsafe {
        crate::validation_below::tools_below(
            instance.next.get_physical_device_tool_properties,
            physical_device,
        )
    };
    let validation_below = below.validation;
    if let Some(tracer) = below
        .tracing
        .as_deref()
        .filter(|_| config.instruments_shaders())
    {
        // A replay of such a capture without Blackbox crashed (gfxrecon-replay, lavapipe) where a NaN check
        // had fired: its record went to the error buffer's address of the capture.
        info!(
            "{tracer}, a tracing tool, is below Blackbox on {}: its captures hold Blackbox's instrumented \
             shaders, buffers and commands too, and a replay without Blackbox faults where a shader check \
             fires (its record goes to an address the replay does not have); capture without Blackbox, or \
             with its shader checks off, for a capture of the app alone",
            description.name
        );
    }
    let requested = instance.validation_requested;
    debug!(
        "{}: {}",
        description.name,
        if validation_below {
            format!(
                "a validation layer below, synchronization validation {}, best practices {}",
                Switch(requested.synchronization),
                Switch(requested.best_practices)
            )
        } else {
            "no validation layer below".to_owned()
        }
    );
    let wanted = Wanted {
        buffer_device_address: config.instruments_shaders(),
        diagnostics: true,
        markers: config.breadcrumbs != Breadcrumbs::Off,
        checkpoints: config.checkpoints,
        shader_clock: config.loops != blackbox_engine::LoopMode::Off && config.loop_ms.is_some(),
        special_use: !(validation_below && requested.best_practices),
        fixed_address: description.cpu,
    };
    let api_version = description.api_version.min(instance.api_version);
    // SAFETY: the app's create info for this physical device; the patch is dropped before returning.
    let patch = crate::contained("enabling what Blackbox needs", || unsafe {
        DeviceCreatePatch::new(instance, physical_device, api_version, info, wanted)
    });
    let app_info: *const vk::DeviceCreateInfo = info;
    let patched_info = patch
        .as_ref()
        .map_or(app_info, |p| &p.create_info as *const _);
    // SAFETY: the app's arguments, with the create info patched.
    let mut result = unsafe { next_create(physical_device, patched_info, allocator, out_device) };
    let mut capabilities = patch
        .as_ref()
        .map(|p| p.capabilities.clone())
        .unwrap_or_default();
    drop(patch);
    capabilities.distinct_marker_words = validation_below && requested.synchronization;
    if result != vk::Result::SUCCESS && patched_info != app_info {
        warn!("vkCreateDevice failed with what Blackbox enables ({result:?}); creating the app's device as asked, with breadcrumbs and shader instrumentation off");
        // SAFETY: the app's own arguments.
        result = unsafe { next_create(physical_device, app_info, allocator, out_device) };
        capabilities = Capabilities::default();
    }
    if result != vk::Result::SUCCESS {
        return result;
    }
    // SAFETY: on success the next layer wrote a valid device.
    let handle = unsafe { *out_device };
    debug!(
        "{} (used at Vulkan {}): Blackbox enabled {}",
        description.name,
        version_string(api_version),
        if capabilities.enabled.is_empty() {
            "nothing the app did not".to_owned()
        } else {
            capabilities.enabled.join(", ")
        }
    );
    crate::contained("setting up the device", || {
        let device = Arc::new(Device {
            handle,
            physical_device,
            instance: instance.clone(),
            next_get_device_proc_addr: next.get_device_proc_addr,
            // SAFETY: the next layer resolves device commands for its live device, and instance commands
            // for its live instance.
            next: DeviceDispatch::load(api_version, |name| unsafe {
                (next.get_device_proc_addr)(handle, name.as_ptr()).or_else(|| {
                    instance_extension_command(name)
                        .then(|| {
                            (instance.next_get_instance_proc_addr)(instance.handle, name.as_ptr())
                        })
                        .flatten()
                })
            }),
            set_loader_data: next.set_loader_data,
            description,
            capabilities,
            queues: RwLock::new(Vec::new()),
            markers: RwLock::new(None),
            error_buffer: RwLock::new(None),
            lost: AtomicBool::new(false),
            alive: RwLock::new(true),
            names: Mutex::new(HashMap::new()),
            submit_gate: RwLock::new(()),
            shaders: Default::default(),
            frames: crate::frames::Frames::new(config),
            open_hang: Mutex::new(None),
        });
        crate::contained("creating the marker buffer", || device.create_markers());
        crate::contained("creating the error buffer", || device.create_error_buffer());
        if device.capabilities.address_binding_report {
            crate::contained("recording address bindings", || {
                crate::address_bindings::ensure_messenger(&device.instance)
            });
        }
        // SAFETY: a live device created through the loader.
        registry::DEVICES.insert(unsafe { dispatch_key(handle) }, device.clone());
        crate::contained("device start-up", || {
            crate::watchdog::start();
            crate::signals::install();
            device.log_start_up()
        });
    });
    result
}

/// A device the layer sits in.
pub struct Device {
    /// The app's handle.
    pub handle: vk::Device,
    /// The physical device it was created on.
    pub physical_device: vk::PhysicalDevice,
    /// Its instance.
    pub instance: Arc<Instance>,
    /// The next layer's `vkGetDeviceProcAddr`.
    pub next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
    /// The next layer's commands Blackbox calls itself.
    pub next: DeviceDispatch,
    /// Gives dispatchable objects the layer creates itself the loader's dispatch pointer.
    pub set_loader_data: Option<SetDeviceLoaderData>,
    /// Name, driver and version, for the log and the reports.
    pub description: DeviceDescription,
    /// What Blackbox enabled and can use on this device.
    pub capabilities: Capabilities,
    /// The queues the app has retrieved.
    pub queues: RwLock<Vec<Arc<Queue>>>,
    /// The marker buffer, when breadcrumbs are on and it could be made; taken at `vkDestroyDevice`.
    pub markers: RwLock<Option<Markers>>,
    /// The error buffer shaders write, when instrumentation is on and the device allows it.
    pub error_buffer: RwLock<Option<crate::shader_errors::ErrorBuffer>>,
    /// A device-lost report was written: one per device.
    pub lost: AtomicBool,
    /// False once `vkDestroyDevice` began. The watchdog holds the read lock while it calls into the driver
    /// for this device, so destruction waits for it and it never touches a destroyed device.
    pub alive: RwLock<bool>,
    /// The app's shader modules and pipelines.
    pub shaders: crate::shaders::Registry,
    /// Debug names the app gave objects of this device, by handle.
    pub names: Mutex<std::collections::HashMap<u64, String>>,
    /// Held (shared) by every submission from just before it goes down the chain until it is tracked as
    /// pending, and (exclusive) by the error buffer's reset: "nothing pending" then stays true until the
    /// reset is done, so no shader can count into the buffer while it is zeroed.
    pub submit_gate: RwLock<()>,
    /// Frame capture, with `VK_BLACKBOX_FRAMES` or `VK_BLACKBOX_FLASH` on.
    pub frames: Option<crate::frames::Frames>,
    /// The watchdog's hang report, until its work is seen to move again ([`crate::report::hang_resumed`]).
    pub open_hang: Mutex<Option<crate::report::OpenHang>>,
}

/// At a device's end, once per process: the `VK_BLACKBOX_SKIP` selectors that matched nothing. A name typed
/// by hand that matches nothing skips nothing, and a run that then still fails would seem to clear what it
/// named.
fn warn_of_unmatched_skips() {
    if let Some((unmatched, them)) = crate::config().skip.selectors.unmatched_once() {
        warn!(
            "VK_BLACKBOX_SKIP: {unmatched} matched nothing the app recorded, so nothing was skipped for \
             {them}: label: and label= match debug label names, pipeline: a pipeline's debug name (else what \
             the log calls it: `compute 530b2c1d7b634919`), shader: a shader id prefix, source file or entry \
             point, command: the [N] of a report"
        );
    }
}

impl Device {
    /// `vkDestroyDevice`, once the device is forgotten: frees what the layer made on it, destroys it, and
    /// stops the watchdog and signal handlers if it was the last.
    ///
    /// # Safety
    /// The app's arguments; the app has finished all work on the device (its contract).
    pub(crate) unsafe fn destroy(
        self: &Arc<Self>,
        device: vk::Device,
        allocator: *const vk::AllocationCallbacks,
    ) {
        // Waits for a watchdog check in progress on this device, and keeps it from starting another.
        *self.alive.write() = false;
        crate::contained("freeing the layer's objects", || {
            // The app's work is finished (its contract); a driver's queue thread may still be retiring the
            // last batch, which signals the layer's semaphores. Idle first, then free.
            let idle = self.next.device_wait_idle.is_some_and(|wait| {
                // SAFETY: a live device about to be destroyed. A lost device answers with an error: nothing
                // to wait for then.
                let result = unsafe { wait(device) };
                result == vk::Result::SUCCESS
            });
            // A hang report still open was about work now finished, where the device says it is idle.
            if idle && !self.lost.load(Ordering::Acquire) {
                crate::report::hang_resumed(self);
            }
            crate::command_buffer::unregister_pool(self, None);
            if let Some(frames) = &self.frames {
                frames.destroy(self);
            }
            crate::shader_errors::close(self);
            // SAFETY: no pending work (waited for above, or the device is lost).
            unsafe { self.destroy_own_objects() };
        });
        if let Some(destroy) = self.next.destroy_device {
            forward!(destroy, device, allocator);
        }
        crate::contained("stopping the watchdog", || {
            crate::watchdog::stop_if_unused();
            crate::signals::uninstall_if_unused();
        });
        crate::contained("checking VK_BLACKBOX_SKIP", warn_of_unmatched_skips);
        crate::contained(
            "checking VK_BLACKBOX_SHADERS",
            crate::shaders::warn_of_unmatched_filters,
        );
    }

    /// `vkGetDeviceQueue`: calls down and notes the queue.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn get_device_queue(
        &self,
        device: vk::Device,
        family: u32,
        index: u32,
        out_queue: *mut vk::Queue,
    ) {
        let Some(get) = self.next.get_device_queue else {
            return;
        };
        forward!(get, device, family, index, out_queue);
        // SAFETY: the driver wrote a queue handle (or null for invalid arguments).
        let queue = unsafe { *out_queue };
        if queue != vk::Queue::null() {
            crate::contained("noting a queue", || self.note_queue(queue, family, index));
        }
    }

    /// `vkGetDeviceQueue2`: calls down and notes the queue.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn get_device_queue2(
        &self,
        device: vk::Device,
        queue_info: *const vk::DeviceQueueInfo2,
        out_queue: *mut vk::Queue,
    ) {
        let Some(get) = self.next.get_device_queue2 else {
            return;
        };
        forward!(get, device, queue_info, out_queue);
        // SAFETY: the app's valid queue info; the driver wrote a queue handle (or null).
        let (queue, info) = unsafe { (*out_queue, &*queue_info) };
        if queue != vk::Queue::null() {
            crate::contained("noting a queue", || {
                self.note_queue(queue, info.queue_family_index, info.queue_index)
            });
        }
    }

    /// `vkSetDebugUtilsObjectNameEXT`: notes the name (reports and log lines use it), then calls down.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn set_debug_utils_object_name(
        &self,
        device: vk::Device,
        info: *const vk::DebugUtilsObjectNameInfoEXT,
    ) -> vk::Result {
        let Some(next) = self.next.set_debug_utils_object_name_ext else {
            return Fallback::fallback();
        };
        crate::contained("noting an object name", || {
            // SAFETY: the app's valid name info.
            let info = unsafe { &*info };
            let mut names = self.names.lock();
            if info.p_object_name.is_null() {
                names.remove(&info.object_handle);
            } else {
                // SAFETY: a NUL-terminated name. (Read under the lock: a fault on a bad pointer here is a
                // fault inside Blackbox's own lock, which the fatal-signal path is tested against.)
                let name = unsafe { crate::raw::text(info.p_object_name) };
                names.insert(info.object_handle, name);
            }
        });
        forward!(next, device, info)
    }

    /// `vkCreateSwapchainKHR`: with frame capture on, the swapchain gets `TRANSFER_SRC` usage (in a copy of
    /// the create info, where the surface allows it) so that presented images can be copied, and is watched.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn create_swapchain(
        self: &Arc<Self>,
        device: vk::Device,
        info: *const vk::SwapchainCreateInfoKHR,
        allocator: *const vk::AllocationCallbacks,
        out: *mut vk::SwapchainKHR,
    ) -> vk::Result {
        let Some(next) = self.next.create_swapchain_khr else {
            return Fallback::fallback();
        };
        let Some(frames) = &self.frames else {
            return forward!(next, device, info, allocator, out);
        };
        // SAFETY: the app's valid create info.
        let app = unsafe { &*info };
        let usage = crate::contained("choosing the swapchain's usage", || self.copy_usage(app))
            .unwrap_or_else(|| Err("an internal error".to_owned()));
        let mut result = vk::Result::ERROR_UNKNOWN;
        let mut copyable = usage.as_ref().map(|_| ()).map_err(Clone::clone);
        if let Some(usage) = usage.ok().filter(|u| *u != app.image_usage) {
            let mut copy = *app;
            copy.image_usage = usage;
            // SAFETY: the app's arguments, with a copy of its create info whose usage the surface supports.
            result = unsafe { next(device, &copy, allocator, out) };
            if result == vk::Result::SUCCESS {
                debug!("frame capture: swapchain image usage {usage:?} (TRANSFER_SRC added for the copies)");
            } else {
                copyable = Err(format!(
                    "vkCreateSwapchainKHR failed with TRANSFER_SRC usage ({result:?})"
                ));
            }
        }
        if result != vk::Result::SUCCESS {
            result = forward!(next, device, info, allocator, out);
        }
        if result == vk::Result::SUCCESS {
            // SAFETY: the driver wrote the swapchain.
            let handle = unsafe { *out };
            crate::contained("watching a swapchain", || {
                frames.add_swapchain(self, handle, app, copyable)
            });
        }
        result
    }

    /// The image usage that lets frame capture copy a swapchain's images: the app's with `TRANSFER_SRC`,
    /// or why it cannot have it.
    fn copy_usage(&self, app: &vk::SwapchainCreateInfoKHR) -> Result<vk::ImageUsageFlags, String> {
        if app.flags.contains(vk::SwapchainCreateFlagsKHR::PROTECTED) {
            return Err("a protected swapchain cannot be copied".to_owned());
        }
        if app.image_usage.contains(vk::ImageUsageFlags::TRANSFER_SRC) {
            return Ok(app.image_usage);
        }
        let get = self
            .instance
            .next
            .get_physical_device_surface_capabilities_khr
            .ok_or("vkGetPhysicalDeviceSurfaceCapabilitiesKHR is missing")?;
        let mut caps = vk::SurfaceCapabilitiesKHR::default();
        // SAFETY: the app's surface, on the device's physical device.
        let result = unsafe { get(self.physical_device, app.surface, &mut caps) };
        if result != vk::Result::SUCCESS {
            return Err(format!(
                "vkGetPhysicalDeviceSurfaceCapabilitiesKHR failed: {result:?}"
            ));
        }
        if !caps
            .supported_usage_flags
            .contains(vk::ImageUsageFlags::TRANSFER_SRC)
        {
            return Err("the surface does not support TRANSFER_SRC usage".to_owned());
        }
        Ok(app.image_usage | vk::ImageUsageFlags::TRANSFER_SRC)
    }

    /// `vkDestroySwapchainKHR`: frame capture lets go of it (its copies waited for) first.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn destroy_swapchain(
        self: &Arc<Self>,
        device: vk::Device,
        swapchain: vk::SwapchainKHR,
        allocator: *const vk::AllocationCallbacks,
    ) {
        if let Some(frames) = &self.frames {
            crate::contained("releasing a swapchain", || {
                frames.remove_swapchain(self, swapchain)
            });
        }
        if let Some(next) = self.next.destroy_swapchain_khr {
            forward!(next, device, swapchain, allocator);
        }
    }

    /// Creates the device's marker buffer when breadcrumbs are on.
    fn create_markers(&self) {
        let config = crate::config();
        if config.breadcrumbs == Breadcrumbs::Off {
            return;
        }
        let Some(memory_type) = self.capabilities.marker_memory_type else {
            warn!(
                "no host-visible coherent memory on {}: breadcrumbs are off",
                self.description.name
            );
            return;
        };
        let path = if self.capabilities.buffer_marker {
            MarkerPath::BufferMarker
        } else {
            MarkerPath::FillBuffer
        };
        // SAFETY: a live device and its dispatch table; the memory type is host-visible and coherent.
        let buffer = unsafe {
            HostBuffer::new(
                self.handle,
                &self.next,
                Markers::buffer_size(),
                vk::BufferUsageFlags::TRANSFER_DST,
                memory_type,
                false,
            )
        };
        match buffer {
            Ok(buffer) => {
                // A recording's "started" marks share a word only on the buffer-marker path, in order at the top
                // of the pipe, and only without synchronization validation below (see breadcrumbs.rs).
                let distinct =
                    path == MarkerPath::FillBuffer || self.capabilities.distinct_marker_words;
                *self.markers.write() = Some(Markers::new(
                    buffer,
                    path,
                    config.breadcrumbs,
                    self.capabilities.checkpoints,
                    distinct,
                ));
            }
            Err(e) => warn!(
                "cannot create the marker buffer ({e}): breadcrumbs are off on {}",
                self.description.name
            ),
        }
    }

    /// Creates the device's error buffer when shader instrumentation is on and the device can reach it.
    fn create_error_buffer(&self) {
        if !crate::config().instruments_shaders() {
            return;
        }
        if !self.capabilities.buffer_device_address {
            warn!(
                "{} does not support bufferDeviceAddress (Vulkan 1.2): shader instrumentation (asserts, printf, \
                 NaN checks) is off on this device",
                self.description.name
            );
            return;
        }
        match crate::shader_errors::ErrorBuffer::new(self) {
            Ok(eb) => *self.error_buffer.write() = Some(eb),
            Err(e) => warn!(
                "cannot create the error buffer ({e}): shader instrumentation is off on {}",
                self.description.name
            ),
        }
    }

    /// The one line that says the layer is active, on what, and with which settings.
    fn log_start_up(&self) {
        let config = crate::config();
        info!(
            "Blackbox {} active in \"{}\" on {} (Vulkan {}, {}); {}; reports: {}",
            env!("CARGO_PKG_VERSION"),
            untrusted::shown(&self.instance.app_name),
            untrusted::shown(&self.description.name),
            version_string(self.description.api_version),
            untrusted::shown(self.description.driver.trim()),
            self.features(config),
            config.output_dir.display()
        );
    }

    /// The features in force, for the start-up line.
    fn features(&self, config: &crate::config::Config) -> String {
        let mut on = Vec::new();
        match self.markers.read().as_ref() {
            Some(m) => on.push(format!(
                "breadcrumbs {} ({}{})",
                m.granularity,
                if m.path == MarkerPath::BufferMarker {
                    "buffer markers"
                } else {
                    "fill-buffer"
                },
                if self.capabilities.checkpoints {
                    ", NV checkpoints"
                } else {
                    ""
                }
            )),
            None => on.push("breadcrumbs off".to_owned()),
        }
        match config.watchdog_ms {
            Some(ms) => on.push(format!("watchdog {ms} ms")),
            None => on.push("watchdog off".to_owned()),
        }
        if self.error_buffer.read().is_some() {
            let mut checks = Vec::new();
            if config.assert != crate::config::AssertMode::Off {
                checks.push(format!("asserts {}", config.assert));
            }
            if config.printf {
                checks.push("printf".to_owned());
            }
            if config.nan != blackbox_engine::NanLevel::Off {
                checks.push(format!("NaN {}", config.nan));
            }
            if config.loops != blackbox_engine::LoopMode::Off {
                let mut budget = Vec::new();
                if config.loop_limit > 0 {
                    budget.push(format!("{} iterations", config.loop_limit));
                }
                match (config.loop_ms, self.capabilities.shader_clock) {
                    (Some(ms), Some(_)) => budget.push(format!("{ms} ms")),
                    (Some(_), None) => {} // in "left off"
                    (None, _) => {}
                }
                checks.push(format!("loops {} at {}", config.loops, budget.join(" or ")));
            }
            if config.int_checks {
                checks.push("integer checks".to_owned());
            }
            on.push(format!("shaders: {}", checks.join(", ")));
        } else {
            on.push("shader instrumentation off".to_owned());
        }
        if self.capabilities.device_fault {
            on.push("device fault info".to_owned());
        }
        if !config.skip.is_empty() {
            on.push(format!("skipping {}", config.skip.describe()));
        }
        if self.frames.is_some() {
            on.push(format!(
                "frame capture ({} frames{})",
                config.frames,
                if config.flash {
                    ", flash detection"
                } else {
                    ""
                }
            ));
        }
        let mut line = format!("features: {}", on.join(", "));
        let origins = config.describe_origins();
        if !origins.is_empty() {
            line.push_str(&format!("; settings: {origins}"));
        }
        if !self.capabilities.left_off.is_empty() {
            line.push_str(&format!(
                "; left off: {}",
                self.capabilities.left_off.join(", ")
            ));
        }
        line
    }

    /// The queue behind `handle`, made known on first sight (with its timeline semaphore).
    pub fn note_queue(&self, handle: vk::Queue, family: u32, index: u32) -> Arc<Queue> {
        if let Some(q) = self.queue(handle) {
            return q;
        }
        let timeline = if self.capabilities.timeline_semaphore {
            self.create_timeline()
        } else {
            None
        };
        let mut queues = self.queues.write();
        if let Some(q) = queues.iter().find(|q| q.handle == handle) {
            // Another thread got there first.
            if let (Some(s), Some(destroy)) = (timeline, self.next.destroy_semaphore) {
                // SAFETY: our own unused semaphore.
                unsafe { destroy(self.handle, s, std::ptr::null()) };
            }
            return q.clone();
        }
        let queue = Arc::new(Queue::new(handle, family, index, timeline));
        queues.push(queue.clone());
        queue
    }

    /// The known queue behind `handle`.
    pub fn queue(&self, handle: vk::Queue) -> Option<Arc<Queue>> {
        self.queues
            .read()
            .iter()
            .find(|q| q.handle == handle)
            .cloned()
    }

    fn create_timeline(&self) -> Option<vk::Semaphore> {
        let create = self.next.create_semaphore?;
        let mut kind =
            vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
        let mut semaphore = vk::Semaphore::null();
        // SAFETY: a live device with timelineSemaphore enabled; valid create info.
        let result = unsafe { create(self.handle, &info, std::ptr::null(), &mut semaphore) };
        if result != vk::Result::SUCCESS {
            warn!("cannot create a timeline semaphore for submission tracking ({result:?}); completion is learnt from the app's waits");
            return None;
        }
        Some(semaphore)
    }

    /// Reads every queue's timeline and retires finished submissions. Safe from any thread. `true` when it
    /// retired a submission.
    pub fn poll_completion(&self) -> Result<bool, vk::Result> {
        self.poll(None).map(|(retired, _)| retired)
    }

    /// As [`Device::poll_completion`], with every lock waited for at most `wait`: for reports, which can be
    /// built while another thread holds one, or in a signal handler that interrupted its holder. `false`
    /// when some queue could not be polled for its lock.
    pub fn try_poll_completion(&self, wait: Duration) -> Result<bool, vk::Result> {
        self.poll(Some(wait)).map(|(_, all)| all)
    }

    /// `(retired a submission, polled every queue)`; locks waited for at most `wait` when given.
    fn poll(&self, wait: Option<Duration>) -> Result<(bool, bool), vk::Result> {
        let Some(get) = self.next.get_semaphore_counter_value else {
            return Ok((false, true));
        };
        let queues = match wait {
            None => self.queues.read().clone(),
            Some(wait) => match self.queues.try_read_for(wait) {
                Some(q) => q.clone(),
                None => return Ok((false, false)),
            },
        };
        let (mut retired, mut all) = (false, true);
        for queue in queues {
            let Some(timeline) = queue.timeline else {
                continue;
            };
            let mut value = 0u64;
            // SAFETY: the layer's own live semaphore; the query needs no external synchronization.
            let result = unsafe { get(self.handle, timeline, &mut value) };
            if result != vk::Result::SUCCESS {
                return Err(result);
            }
            match wait {
                None => retired |= queue.complete_up_to(value),
                Some(wait) => match queue.try_complete_up_to(value, wait) {
                    Some(r) => retired |= r,
                    None => all = false,
                },
            }
        }
        Ok((retired, all))
    }

    /// Whether any queue has work not known to be finished.
    pub fn has_pending(&self) -> bool {
        self.queues.read().iter().any(|q| q.has_pending())
    }

    /// [`Device::has_pending`], each lock waited for at most `wait` (the fatal-signal path): `None` when one
    /// could not be had and no queue known to have work.
    pub fn has_pending_within(&self, wait: std::time::Duration) -> Option<bool> {
        let queues = self.queues.try_read_for(wait)?;
        let mut known = true;
        for q in queues.iter() {
            match q.has_pending_within(wait) {
                Some(true) => return Some(true),
                Some(false) => {}
                None => known = false,
            }
        }
        known.then_some(false)
    }

    /// The debug name of an object, if the app gave one.
    ///
    /// The names' lock is waited for at most 200 ms: a report or drain from a signal handler may run on a
    /// thread that faulted while holding it (reading a bad name pointer), and then the name is left out.
    pub fn name_of(&self, handle: u64) -> Option<String> {
        self.names
            .try_lock_for(std::time::Duration::from_millis(200))?
            .get(&handle)
            .cloned()
    }

    /// Frees what the layer created on this device.
    ///
    /// # Safety
    /// The device must be idle or lost, about to be destroyed.
    pub(crate) unsafe fn destroy_own_objects(&self) {
        if let Some(destroy) = self.next.destroy_semaphore {
            for q in self.queues.read().iter() {
                if let Some(s) = q.timeline {
                    // SAFETY: our own semaphore, no longer used by pending work.
                    unsafe { destroy(self.handle, s, std::ptr::null()) };
                }
            }
        }
        if let Some(mut eb) = self.error_buffer.write().take() {
            // SAFETY: no pending work (the caller's contract).
            unsafe { eb.destroy(self) };
        }
        // The submissions still tracked hold recordings, which hold marker words of the pool: let them go
        // (the work is finished), so that the pool is the markers' alone.
        for q in self.queues.read().iter() {
            q.forget_submissions();
        }
        if let Some(markers) = self.markers.write().take() {
            // Recordings may still hold the pool (a thread's cached command buffer): they read zeros from
            // here on.
            // SAFETY: no pending work (the caller's contract); the watchdog is kept out (`alive`).
            unsafe { markers.pool.buffer.destroy(self.handle, &self.next) };
        }
    }

    /// Marks the device lost; true the first time, so one report is written per device.
    pub fn mark_lost(&self) -> bool {
        !self.lost.swap(true, Ordering::AcqRel)
    }
}

/// Whether `name` is a device-level command of an instance extension (`VK_EXT_debug_utils`'s object names,
/// tags and labels). Where the app did not enable the extension, the next layer's `vkGetDeviceProcAddr`
/// has no such command, but its `vkGetInstanceProcAddr` has, and the loader fills the app's device
/// dispatch from there: an app that calls one anyway (libplacebo names its objects so) reaches Blackbox's
/// hook, which must then pass the call on as it would have gone without Blackbox (to the validation
/// layer, which reports it) rather than drop it.
fn instance_extension_command(name: &std::ffi::CStr) -> bool {
    const DEBUG_UTILS: &[u8] = b"DebugUtils";
    name.to_bytes()
        .windows(DEBUG_UTILS.len())
        .any(|w| w == DEBUG_UTILS)
}
