//! The device every scenario runs on, and the small helpers they share: buffers, images, shader modules,
//! sync objects, one-shot submits, readback and the FNV-1a checksum.
//!
//! Ownership rule: every object a helper creates is recorded in `Context::owned` and destroyed by
//! `Context::destroy_owned` after the scenario finished (the run loop calls it). Scenarios therefore wait for
//! their own GPU work (fence or semaphore) before returning, and never destroy helper-created objects
//! themselves. This keeps the scenarios short and guarantees that nothing outlives the device.
//!
//! Memory: buffers and images are sub-allocated from blocks of at least `BLOCK_SIZE` bytes (one block list
//! per memory type, allocation flags and resource kind), as the validation layer's best practices ask
//! (no allocation under 256 KiB, no resource under 1 MiB alone in its memory). The blocks are owned like
//! any other object and freed by `destroy_owned`, after the resources in them.

use std::cell::RefCell;
use std::ffi::CStr;
use std::ptr::NonNull;

use anyhow::{bail, Context as _, Result};
use ash::vk;

use crate::AppInstance;

/// How long any host wait may take before the app gives up (lavapipe is slow, but not this slow).
pub const WAIT_TIMEOUT_NS: u64 = 60_000_000_000;

/// Attaches the name of the failing Vulkan call to a `VkResult`, keeping the result's enum name
/// (`ERROR_OUT_OF_DEVICE_MEMORY`), which ash's `Display` alone would replace by its description.
pub trait VkResultExt<T> {
    fn vk_context(self, call: &'static str) -> Result<T>;
}

impl<T> VkResultExt<T> for std::result::Result<T, vk::Result> {
    fn vk_context(self, call: &'static str) -> Result<T> {
        self.map_err(|result| VkCallError { call, result }.into())
    }
}

/// A failed Vulkan call, as `vk_context` reports it: the run loop looks for it (`vk_result_of`) to decide
/// whether the device can still be torn down after an error.
#[derive(Debug)]
pub struct VkCallError {
    pub call: &'static str,
    pub result: vk::Result,
}

impl std::fmt::Display for VkCallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (call, r) = (self.call, self.result);
        write!(f, "{call} failed: {r:?} ({r})")
    }
}

impl std::error::Error for VkCallError {}

/// The `VkResult` of the Vulkan call behind `error`, if a failed call is what caused it.
pub fn vk_result_of(error: &anyhow::Error) -> Option<vk::Result> {
    error
        .chain()
        .find_map(|e| e.downcast_ref::<VkCallError>())
        .map(|e| e.result)
}

/// Whether `result` is a wait that timed out: its GPU work may still be running, so the objects it uses
/// must not be destroyed. Any other outcome (success, a device loss, after which all work counts as
/// complete, or an error before anything was submitted) leaves nothing pending.
pub fn timed_out<T>(result: &std::result::Result<T, anyhow::Error>) -> bool {
    matches!(result, Err(e) if vk_result_of(e) == Some(vk::Result::TIMEOUT))
}

/// The optional device features some scenarios need; each is enabled when the device supports it (those
/// of `Needs` only when a scenario of the run asks for them).
#[derive(Clone, Copy, Debug, Default)]
pub struct Features {
    pub timeline_semaphore: bool,
    pub dynamic_rendering: bool,
    pub synchronization2: bool,
    pub buffer_device_address: bool,
    pub shader_int64: bool,
    pub shader_float16: bool,
    pub shader_float64: bool,
    /// VK_KHR_shader_non_semantic_info is enabled (debugPrintf and `-gVS` modules are then valid).
    pub non_semantic_info: bool,
    /// 16-bit types in storage and uniform buffers and push constants (Vulkan 1.1's 16-bit storage).
    pub storage_16bit: bool,
    pub shader_int16: bool,
    /// Storage images read and written without a format in the shader.
    pub images_without_format: bool,
    /// The Vulkan memory model, device scope included.
    pub vulkan_memory_model: bool,
    pub robust_buffer_access: bool,
    pub independent_blend: bool,
    /// `maintenance4` (SPIR-V 1.6 compute shaders declare their workgroup size with `LocalSizeId`).
    pub maintenance4: bool,
    /// `shaderResourceResidency` (the `SparseResidency` capability).
    pub resource_residency: bool,
    /// VK_EXT_shader_atomic_float's `shaderBufferFloat32AtomicAdd` and `shaderBufferFloat32Atomics`.
    pub buffer_float_atomics: bool,
    /// VK_KHR_swapchain is enabled (the instance has a surface extension: `Needs::presentation`).
    pub swapchain: bool,
    /// VK_AMD_buffer_marker is enabled (`Needs::buffer_marker`).
    pub buffer_marker: bool,
    /// VK_KHR_pipeline_executable_properties and its `pipelineExecutableInfo` are enabled
    /// (`Needs::pipeline_statistics`): pipelines are made with `CAPTURE_STATISTICS`.
    pub pipeline_statistics: bool,
}

/// Device features and extensions only some scenarios need, enabled (where supported) only when a scenario
/// of the run asks for them: the other scenarios keep the device they always had.
#[derive(Clone, Copy, Debug, Default)]
pub struct Needs {
    pub buffer_device_address: bool,
    pub shader_int64: bool,
    pub shader_float16: bool,
    pub shader_float64: bool,
    pub non_semantic_info: bool,
    /// What `spirv-run` may meet in arbitrary shaders: 16-bit storage, `shaderInt16`, storage images without
    /// format, the Vulkan memory model, `maintenance4`, robust buffer access, independent blend, 32-bit
    /// float atomics on buffers.
    pub arbitrary_shaders: bool,
    /// Enable timeline semaphores and buffer device address (always, where supported) through
    /// VK_KHR_timeline_semaphore and VK_KHR_buffer_device_address and their own feature structs, as a
    /// Vulkan 1.1-era app does, instead of VkPhysicalDeviceVulkan12Features.
    pub features_via_extensions: bool,
    /// Presenting to a surface: the instance gets VK_KHR_surface and a surface extension, the device
    /// VK_KHR_swapchain.
    pub presentation: bool,
    /// VK_AMD_buffer_marker, where the device has it (record-bench's `--app-markers`).
    pub buffer_marker: bool,
    /// VK_KHR_pipeline_executable_properties, where the device has it (shader-bench's `--pipeline-stats`).
    pub pipeline_statistics: bool,
}

impl Needs {
    pub const NONE: Needs = Needs {
        buffer_device_address: false,
        shader_int64: false,
        shader_float16: false,
        shader_float64: false,
        non_semantic_info: false,
        arbitrary_shaders: false,
        features_via_extensions: false,
        presentation: false,
        buffer_marker: false,
        pipeline_statistics: false,
    };

    pub fn union(self, other: Needs) -> Needs {
        Needs {
            buffer_device_address: self.buffer_device_address || other.buffer_device_address,
            shader_int64: self.shader_int64 || other.shader_int64,
            shader_float16: self.shader_float16 || other.shader_float16,
            shader_float64: self.shader_float64 || other.shader_float64,
            non_semantic_info: self.non_semantic_info || other.non_semantic_info,
            arbitrary_shaders: self.arbitrary_shaders || other.arbitrary_shaders,
            features_via_extensions: self.features_via_extensions || other.features_via_extensions,
            presentation: self.presentation || other.presentation,
            buffer_marker: self.buffer_marker || other.buffer_marker,
            pipeline_statistics: self.pipeline_statistics || other.pipeline_statistics,
        }
    }
}

/// Where a buffer lives: device-local for GPU work, host-visible (mapped, coherent) for upload and readback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    Device,
    Host,
}

#[derive(Clone, Copy)]
pub struct Buffer {
    pub handle: vk::Buffer,
    pub size: vk::DeviceSize,
    /// Persistent mapping of host buffers (coherent memory: no flush or invalidate needed).
    mapped: Option<NonNull<u8>>,
}

impl Buffer {
    /// The buffer's bytes as the host sees them. Only for `Memory::Host` buffers, and only once the GPU
    /// work writing them has completed and made them visible to the host (a barrier to HOST_READ).
    pub fn bytes(&self) -> &[u8] {
        let ptr = self
            .mapped
            .expect("Buffer::bytes on a buffer that is not host-visible");
        // SAFETY: the mapping covers `size` bytes and stays valid until the context destroys the buffer.
        unsafe { std::slice::from_raw_parts(ptr.as_ptr(), self.size as usize) }
    }

    /// Writes `data` at the start of a host buffer (before the GPU work that reads it is submitted).
    pub fn write(&self, data: &[u8]) {
        let ptr = self
            .mapped
            .expect("Buffer::write on a buffer that is not host-visible");
        assert!(data.len() as u64 <= self.size, "Buffer::write past the end");
        // SAFETY: in bounds (checked above); the GPU is not using the buffer yet.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr.as_ptr(), data.len()) }
    }

    /// Writes word `index` of a host buffer as one volatile store: for a word the GPU may be reading while
    /// it runs (a flag), where a plain copy could be deferred or merged.
    pub fn write_word_volatile(&self, index: usize, value: u32) {
        let ptr = self
            .mapped
            .expect("Buffer::write_word_volatile on a buffer that is not host-visible");
        assert!(
            (index as u64 + 1) * 4 <= self.size,
            "Buffer::write_word_volatile past the end"
        );
        // SAFETY: in bounds (checked above); a buffer starts at its required alignment (at least 4).
        unsafe { std::ptr::write_volatile(ptr.as_ptr().cast::<u32>().add(index), value) }
    }

    /// The first word of a host buffer, read afresh each call: for polling a word the GPU writes while
    /// the host waits (a plain slice read may be assumed not to change).
    pub fn poll_first_word(&self) -> u32 {
        let ptr = self
            .mapped
            .expect("Buffer::poll_first_word on a buffer that is not host-visible");
        assert!(
            self.size >= 4,
            "Buffer::poll_first_word on a buffer under 4 bytes"
        );
        // SAFETY: in bounds; a buffer starts at its required alignment (at least 4) in a mapped block.
        unsafe { std::ptr::read_volatile(ptr.as_ptr().cast::<u32>()) }
    }
}

/// A 2D color image with a view on its single mip level and layer.
#[derive(Clone, Copy)]
pub struct Image {
    pub handle: vk::Image,
    pub view: vk::ImageView,
    pub format: vk::Format,
    pub extent: vk::Extent2D,
}

impl Image {
    pub fn byte_size(&self) -> vk::DeviceSize {
        let texel = match self.format {
            vk::Format::R32G32B32A32_SFLOAT => 16,
            vk::Format::R8_UNORM => 1,
            vk::Format::R8G8_UNORM => 2,
            _ => 4,
        };
        u64::from(self.extent.width) * u64::from(self.extent.height) * texel
    }
}

/// The smallest `VkDeviceMemory` the context allocates: resources are placed in such blocks. Best practices
/// report allocations under 256 KiB, and resources under 1 MiB that fill their memory alone.
const BLOCK_SIZE: vk::DeviceSize = 4 << 20;

/// A `VkDeviceMemory` that resources are placed in one after the other, until the scenario ends.
struct Block {
    memory: vk::DeviceMemory,
    /// Which resources it holds: memory type, allocation flags, images (true) or buffers (false), kept
    /// apart so that `bufferImageGranularity` never matters, and whether it is mapped (host memory).
    key: (u32, vk::MemoryAllocateFlags, bool, bool),
    size: vk::DeviceSize,
    used: vk::DeviceSize,
    /// The whole block mapped, for host memory.
    mapped: Option<NonNull<u8>>,
}

/// Where a resource was placed: its memory, the offset in it, and the host address there (host memory).
struct Placement {
    memory: vk::DeviceMemory,
    offset: vk::DeviceSize,
    mapped: Option<NonNull<u8>>,
}

/// Objects created through the context, destroyed in reverse creation order by `destroy_owned`.
pub enum Owned {
    Memory(vk::DeviceMemory),
    Buffer(vk::Buffer),
    Image(vk::Image),
    ImageView(vk::ImageView),
    DescriptorSetLayout(vk::DescriptorSetLayout),
    DescriptorPool(vk::DescriptorPool),
    PipelineLayout(vk::PipelineLayout),
    Pipeline(vk::Pipeline),
    RenderPass(vk::RenderPass),
    Framebuffer(vk::Framebuffer),
    CommandPool(vk::CommandPool),
    QueryPool(vk::QueryPool),
    Fence(vk::Fence),
    Semaphore(vk::Semaphore),
    Sampler(vk::Sampler),
}

pub struct Context {
    pub entry: ash::Entry,
    /// The instance (the app's), for surface queries.
    pub instance: ash::Instance,
    pub physical_device: vk::PhysicalDevice,
    /// The surface extension the instance enabled, when the run presents.
    pub surface: Option<crate::SurfaceKind>,
    pub device_name: String,
    pub device: ash::Device,
    /// A family with both graphics and compute.
    pub queue_family: u32,
    /// Two queues of `queue_family`; both the same queue when the family has only one (lavapipe).
    pub queues: [vk::Queue; 2],
    pub features: Features,
    /// Nanoseconds per timestamp tick (VkPhysicalDeviceLimits::timestampPeriod).
    pub timestamp_period: f32,
    /// `queue_family`'s timestampValidBits: 0 means no timestamps on its queues.
    pub timestamp_valid_bits: u32,
    /// Present when the instance enabled VK_EXT_debug_utils.
    pub debug_utils: Option<ash::ext::debug_utils::Device>,
    /// The version the app uses the device at: the lower of the instance's (`--api`) and the device's.
    pub api_version: u32,
    memory_properties: vk::PhysicalDeviceMemoryProperties,
    /// Pool for `submit_and_wait`'s command buffers (main thread only).
    one_shot_pool: vk::CommandPool,
    owned: RefCell<Vec<Owned>>,
    /// Memory blocks of the running scenario (each also in `owned`).
    blocks: RefCell<Vec<Block>>,
}

impl Context {
    /// Creates the device on physical device `device_index` of `app`'s instance, with what `needs` asks for
    /// where the device supports it.
    pub fn new(app: &AppInstance, device_index: usize, needs: Needs) -> Result<Context> {
        let instance = &app.instance;
        // SAFETY (whole function): plain Vulkan calls on valid handles, with create infos that outlive them.
        let physical_devices = unsafe { instance.enumerate_physical_devices() }
            .vk_context("vkEnumeratePhysicalDevices")?;
        let Some(&physical_device) = physical_devices.get(device_index) else {
            bail!(
                "--device-index {device_index}: only {} physical device(s)",
                physical_devices.len()
            );
        };
        let properties = unsafe { instance.get_physical_device_properties(physical_device) };
        let device_name = properties
            .device_name_as_c_str()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // The app may use what the lower of its instance's version and the device's allows.
        let api = properties.api_version.min(app.api_version);

        let families =
            unsafe { instance.get_physical_device_queue_family_properties(physical_device) };
        let wanted = vk::QueueFlags::GRAPHICS | vk::QueueFlags::COMPUTE;
        let Some(queue_family) = families.iter().position(|f| f.queue_flags.contains(wanted))
        else {
            bail!("{device_name}: no queue family with graphics and compute");
        };
        let queue_count = families[queue_family].queue_count.min(2);
        let timestamp_valid_bits = families[queue_family].timestamp_valid_bits;
        let queue_family = queue_family as u32;

        // Ask which optional features exist. Vulkan12/13 feature structs may only be chained when the
        // device supports that version, otherwise the query itself is invalid usage.
        let mut supported11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut supported12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut supported13 = vk::PhysicalDeviceVulkan13Features::default();
        // Below 1.2 the two features the app may take from extensions are asked through their own structs.
        let mut supported_timeline = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
        let mut supported_address = vk::PhysicalDeviceBufferDeviceAddressFeatures::default();
        // vkGetPhysicalDeviceFeatures2 is core in 1.1; a 1.0 app asks the 1.0 way.
        if api >= vk::API_VERSION_1_1 {
            let mut query = vk::PhysicalDeviceFeatures2::default();
            if api >= vk::API_VERSION_1_2 {
                query = query
                    .push_next(&mut supported11)
                    .push_next(&mut supported12);
            } else if needs.features_via_extensions {
                query = query
                    .push_next(&mut supported_timeline)
                    .push_next(&mut supported_address);
            }
            if api >= vk::API_VERSION_1_3 {
                query = query.push_next(&mut supported13);
            }
            unsafe { instance.get_physical_device_features2(physical_device, &mut query) };
            if api < vk::API_VERSION_1_2 {
                supported12.timeline_semaphore = supported_timeline.timeline_semaphore;
                supported12.buffer_device_address = supported_address.buffer_device_address;
            }
        }
        let supported10 = unsafe { instance.get_physical_device_features(physical_device) };
        let extensions = unsafe { instance.enumerate_device_extension_properties(physical_device) }
            .vk_context("vkEnumerateDeviceExtensionProperties")?;
        let has_extension = |name: &CStr| {
            extensions
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(name))
        };
        let has_non_semantic_info = has_extension(ash::khr::shader_non_semantic_info::NAME);
        let mut supported_atomic = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        let has_atomic_float = needs.arbitrary_shaders
            && api >= vk::API_VERSION_1_1
            && has_extension(ash::ext::shader_atomic_float::NAME);
        if has_atomic_float {
            let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut supported_atomic);
            unsafe { instance.get_physical_device_features2(physical_device, &mut query) };
        }
        let via_extensions = needs.features_via_extensions
            && has_extension(ash::khr::timeline_semaphore::NAME)
            && has_extension(ash::khr::buffer_device_address::NAME);
        if needs.features_via_extensions && api < vk::API_VERSION_1_1 {
            bail!("--features-via-extensions needs --api 1.1 or later (VK_KHR_buffer_device_address needs device groups)");
        }
        if needs.features_via_extensions && !via_extensions {
            bail!("--features-via-extensions: the device lacks VK_KHR_timeline_semaphore or VK_KHR_buffer_device_address");
        }
        // Asked only when wanted: the feature struct is chained to the query only then.
        let pipeline_statistics = needs.pipeline_statistics
            && api >= vk::API_VERSION_1_1
            && has_extension(ash::khr::pipeline_executable_properties::NAME)
            && {
                let mut supported =
                    vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
                let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut supported);
                unsafe { instance.get_physical_device_features2(physical_device, &mut query) };
                supported.pipeline_executable_info == vk::TRUE
            };
        let features = Features {
            timeline_semaphore: supported12.timeline_semaphore == vk::TRUE,
            dynamic_rendering: supported13.dynamic_rendering == vk::TRUE,
            synchronization2: supported13.synchronization2 == vk::TRUE,
            buffer_device_address: (needs.buffer_device_address || via_extensions)
                && supported12.buffer_device_address == vk::TRUE,
            shader_int64: needs.shader_int64 && supported10.shader_int64 == vk::TRUE,
            shader_float16: needs.shader_float16 && supported12.shader_float16 == vk::TRUE,
            shader_float64: needs.shader_float64 && supported10.shader_float64 == vk::TRUE,
            non_semantic_info: needs.non_semantic_info && has_non_semantic_info,
            storage_16bit: needs.arbitrary_shaders
                && supported11.storage_buffer16_bit_access == vk::TRUE
                && supported11.uniform_and_storage_buffer16_bit_access == vk::TRUE
                && supported11.storage_push_constant16 == vk::TRUE,
            shader_int16: needs.arbitrary_shaders && supported10.shader_int16 == vk::TRUE,
            images_without_format: needs.arbitrary_shaders
                && supported10.shader_storage_image_read_without_format == vk::TRUE
                && supported10.shader_storage_image_write_without_format == vk::TRUE,
            maintenance4: needs.arbitrary_shaders && supported13.maintenance4 == vk::TRUE,
            independent_blend: needs.arbitrary_shaders && supported10.independent_blend == vk::TRUE,
            robust_buffer_access: needs.arbitrary_shaders
                && supported10.robust_buffer_access == vk::TRUE,
            vulkan_memory_model: needs.arbitrary_shaders
                && supported12.vulkan_memory_model == vk::TRUE
                && supported12.vulkan_memory_model_device_scope == vk::TRUE,
            resource_residency: needs.arbitrary_shaders
                && supported10.shader_resource_residency == vk::TRUE,
            buffer_float_atomics: has_atomic_float
                && supported_atomic.shader_buffer_float32_atomic_add == vk::TRUE
                && supported_atomic.shader_buffer_float32_atomics == vk::TRUE,
            swapchain: app.surface.is_some() && has_extension(ash::khr::swapchain::NAME),
            buffer_marker: needs.buffer_marker && has_extension(ash::amd::buffer_marker::NAME),
            pipeline_statistics,
        };

        let priorities = [1.0f32; 2];
        let queue_infos = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(queue_family)
            .queue_priorities(&priorities[..queue_count as usize])];
        let mut enable12 = vk::PhysicalDeviceVulkan12Features::default()
            .timeline_semaphore(features.timeline_semaphore)
            .buffer_device_address(features.buffer_device_address)
            .shader_float16(features.shader_float16)
            .vulkan_memory_model(features.vulkan_memory_model)
            .vulkan_memory_model_device_scope(features.vulkan_memory_model);
        let mut enable13 = vk::PhysicalDeviceVulkan13Features::default()
            .dynamic_rendering(features.dynamic_rendering)
            .synchronization2(features.synchronization2)
            .maintenance4(features.maintenance4);
        let enable10 = vk::PhysicalDeviceFeatures::default()
            .shader_int64(features.shader_int64)
            .shader_float64(features.shader_float64)
            .shader_int16(features.shader_int16)
            .robust_buffer_access(features.robust_buffer_access)
            .independent_blend(features.independent_blend)
            .shader_resource_residency(features.resource_residency)
            .shader_storage_image_read_without_format(features.images_without_format)
            .shader_storage_image_write_without_format(features.images_without_format);
        let mut enable11 = vk::PhysicalDeviceVulkan11Features::default()
            .storage_buffer16_bit_access(features.storage_16bit)
            .uniform_and_storage_buffer16_bit_access(features.storage_16bit)
            .storage_push_constant16(features.storage_16bit);
        let mut device_extensions = Vec::new();
        let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default()
            .shader_buffer_float32_atomic_add(features.buffer_float_atomics)
            .shader_buffer_float32_atomics(features.buffer_float_atomics);
        if features.buffer_float_atomics {
            device_extensions.push(ash::ext::shader_atomic_float::NAME.as_ptr());
        }
        if features.swapchain {
            device_extensions.push(ash::khr::swapchain::NAME.as_ptr());
        }
        if features.buffer_marker {
            device_extensions.push(ash::amd::buffer_marker::NAME.as_ptr());
        }
        if features.non_semantic_info {
            device_extensions.push(ash::khr::shader_non_semantic_info::NAME.as_ptr());
        }
        let mut executable_info =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
                .pipeline_executable_info(true);
        if features.pipeline_statistics {
            device_extensions.push(ash::khr::pipeline_executable_properties::NAME.as_ptr());
        }
        let mut timeline = vk::PhysicalDeviceTimelineSemaphoreFeatures::default()
            .timeline_semaphore(features.timeline_semaphore);
        let mut address = vk::PhysicalDeviceBufferDeviceAddressFeatures::default()
            .buffer_device_address(features.buffer_device_address);
        let mut float16 = vk::PhysicalDeviceShaderFloat16Int8Features::default()
            .shader_float16(features.shader_float16);
        if via_extensions {
            device_extensions.push(ash::khr::timeline_semaphore::NAME.as_ptr());
            device_extensions.push(ash::khr::buffer_device_address::NAME.as_ptr());
            if features.shader_float16 {
                device_extensions.push(ash::khr::shader_float16_int8::NAME.as_ptr());
            }
        }
        let mut device_info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queue_infos)
            .enabled_extension_names(&device_extensions)
            .enabled_features(&enable10);
        if via_extensions {
            // The individual structs and VkPhysicalDeviceVulkan12Features may not be chained together.
            device_info = device_info
                .push_next(&mut timeline)
                .push_next(&mut address)
                .push_next(&mut float16);
        } else if api >= vk::API_VERSION_1_2 {
            device_info = device_info.push_next(&mut enable12);
        }
        if api >= vk::API_VERSION_1_3 {
            device_info = device_info.push_next(&mut enable13);
        }
        if features.storage_16bit {
            device_info = device_info.push_next(&mut enable11);
        }
        if features.buffer_float_atomics {
            device_info = device_info.push_next(&mut atomic_float);
        }
        if features.pipeline_statistics {
            device_info = device_info.push_next(&mut executable_info);
        }
        let device = unsafe { instance.create_device(physical_device, &device_info, None) }
            .vk_context("vkCreateDevice")?;

        let queues = unsafe {
            [
                device.get_device_queue(queue_family, 0),
                device.get_device_queue(queue_family, queue_count - 1),
            ]
        };
        let memory_properties =
            unsafe { instance.get_physical_device_memory_properties(physical_device) };
        let debug_utils = app
            .debug_utils
            .as_ref()
            .map(|_| ash::ext::debug_utils::Device::new(instance, &device));
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(queue_family)
            .flags(vk::CommandPoolCreateFlags::TRANSIENT);
        let one_shot_pool = unsafe { device.create_command_pool(&pool_info, None) }
            .vk_context("vkCreateCommandPool")?;

        Ok(Context {
            entry: app.entry.clone(),
            instance: instance.clone(),
            physical_device,
            surface: app.surface,
            device_name,
            device,
            queue_family,
            queues,
            features,
            timestamp_period: properties.limits.timestamp_period,
            timestamp_valid_bits,
            debug_utils,
            api_version: api,
            memory_properties,
            one_shot_pool,
            owned: RefCell::new(Vec::new()),
            blocks: RefCell::new(Vec::new()),
        })
    }

    /// Destroys the device. Everything created through the context must be gone (`destroy_owned`).
    pub fn destroy(self) {
        assert!(
            self.owned.borrow().is_empty(),
            "Context::destroy with objects still owned"
        );
        // SAFETY: all work has completed (every scenario waits for its own) and all children are destroyed.
        unsafe {
            self.device.destroy_command_pool(self.one_shot_pool, None);
            self.device.destroy_device(None);
        }
    }

    /// Records `object` for destruction by `destroy_owned`.
    pub fn own(&self, object: Owned) {
        self.owned.borrow_mut().push(object);
    }

    /// Destroys every object created through the context, newest first. The GPU must be done with them.
    pub fn destroy_owned(&self) {
        let d = &self.device;
        let objects = std::mem::take(&mut *self.owned.borrow_mut());
        // Their memory is freed below (it is owned too).
        self.blocks.borrow_mut().clear();
        // SAFETY: every handle was created on this device and is destroyed exactly once, after its users.
        for object in objects.into_iter().rev() {
            unsafe {
                match object {
                    Owned::Memory(h) => d.free_memory(h, None),
                    Owned::Buffer(h) => d.destroy_buffer(h, None),
                    Owned::Image(h) => d.destroy_image(h, None),
                    Owned::ImageView(h) => d.destroy_image_view(h, None),
                    Owned::DescriptorSetLayout(h) => d.destroy_descriptor_set_layout(h, None),
                    Owned::DescriptorPool(h) => d.destroy_descriptor_pool(h, None),
                    Owned::PipelineLayout(h) => d.destroy_pipeline_layout(h, None),
                    Owned::Pipeline(h) => d.destroy_pipeline(h, None),
                    Owned::RenderPass(h) => d.destroy_render_pass(h, None),
                    Owned::Framebuffer(h) => d.destroy_framebuffer(h, None),
                    Owned::CommandPool(h) => d.destroy_command_pool(h, None),
                    Owned::QueryPool(h) => d.destroy_query_pool(h, None),
                    Owned::Fence(h) => d.destroy_fence(h, None),
                    Owned::Semaphore(h) => d.destroy_semaphore(h, None),
                    Owned::Sampler(h) => d.destroy_sampler(h, None),
                }
            }
        }
    }

    // ---- memory, buffers, images ----

    fn memory_type(&self, type_bits: u32, wanted: vk::MemoryPropertyFlags) -> Option<u32> {
        let props = &self.memory_properties;
        (0..props.memory_type_count).find(|&i| {
            type_bits & (1 << i) != 0
                && props.memory_types[i as usize]
                    .property_flags
                    .contains(wanted)
        })
    }

    /// Places a resource with `requirements` in a block of `memory` allocated with `flags` (`image` says
    /// which kind of resource), allocating a new block when none has room.
    fn allocate(
        &self,
        requirements: vk::MemoryRequirements,
        memory: Memory,
        flags: vk::MemoryAllocateFlags,
        image: bool,
    ) -> Result<Placement> {
        let type_index = match memory {
            // Prefer device-local, but any type works (all memory is "device-local" on a CPU driver anyway).
            Memory::Device => self
                .memory_type(
                    requirements.memory_type_bits,
                    vk::MemoryPropertyFlags::DEVICE_LOCAL,
                )
                .or_else(|| {
                    self.memory_type(
                        requirements.memory_type_bits,
                        vk::MemoryPropertyFlags::empty(),
                    )
                }),
            Memory::Host => self.memory_type(
                requirements.memory_type_bits,
                vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT,
            ),
        }
        .with_context(|| {
            format!(
                "no memory type for {memory:?} memory (bits {:#x})",
                requirements.memory_type_bits
            )
        })?;
        let key = (type_index, flags, image, memory == Memory::Host);
        let alignment = requirements.alignment.max(1);
        let mut blocks = self.blocks.borrow_mut();
        let fits = |b: &Block| {
            b.key == key && b.used.next_multiple_of(alignment) + requirements.size <= b.size
        };
        let index = match blocks.iter().position(fits) {
            Some(index) => index,
            None => {
                let size = requirements.size.max(BLOCK_SIZE);
                let mut flags_info = vk::MemoryAllocateFlagsInfo::default().flags(flags);
                let mut info = vk::MemoryAllocateInfo::default()
                    .allocation_size(size)
                    .memory_type_index(type_index);
                if !flags.is_empty() {
                    info = info.push_next(&mut flags_info);
                }
                let handle = unsafe { self.device.allocate_memory(&info, None) }
                    .vk_context("vkAllocateMemory")?;
                self.own(Owned::Memory(handle));
                let mapped = match memory {
                    Memory::Device => None,
                    Memory::Host => {
                        // SAFETY: host-visible memory, mapped once, unmapped when it is freed.
                        let ptr = unsafe {
                            self.device.map_memory(
                                handle,
                                0,
                                vk::WHOLE_SIZE,
                                vk::MemoryMapFlags::empty(),
                            )
                        }
                        .vk_context("vkMapMemory")?;
                        NonNull::new(ptr.cast::<u8>())
                    }
                };
                blocks.push(Block {
                    memory: handle,
                    key,
                    size,
                    used: 0,
                    mapped,
                });
                blocks.len() - 1
            }
        };
        let block = &mut blocks[index];
        let offset = block.used.next_multiple_of(alignment);
        block.used = offset + requirements.size;
        let mapped = block
            .mapped
            // SAFETY: `offset + size` is inside the mapped block.
            .map(|base| unsafe { NonNull::new_unchecked(base.as_ptr().add(offset as usize)) });
        Ok(Placement {
            memory: block.memory,
            offset,
            mapped,
        })
    }

    pub fn create_buffer(
        &self,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
        memory: Memory,
    ) -> Result<Buffer> {
        self.create_buffer_with_flags(size, usage, memory, vk::MemoryAllocateFlags::empty())
    }

    /// A buffer shaders reach through its device address (needs `features.buffer_device_address`);
    /// returns the buffer and its address.
    pub fn create_addressable_buffer(
        &self,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
        memory: Memory,
    ) -> Result<(Buffer, vk::DeviceAddress)> {
        let buffer = self.create_buffer_with_flags(
            size,
            usage | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS,
            memory,
            vk::MemoryAllocateFlags::DEVICE_ADDRESS,
        )?;
        let info = vk::BufferDeviceAddressInfo::default().buffer(buffer.handle);
        let address = unsafe { self.device.get_buffer_device_address(&info) };
        Ok((buffer, address))
    }

    fn create_buffer_with_flags(
        &self,
        size: vk::DeviceSize,
        usage: vk::BufferUsageFlags,
        memory: Memory,
        flags: vk::MemoryAllocateFlags,
    ) -> Result<Buffer> {
        let d = &self.device;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        let handle = unsafe { d.create_buffer(&info, None) }.vk_context("vkCreateBuffer")?;
        let requirements = unsafe { d.get_buffer_memory_requirements(handle) };
        // Owned after its memory, so that it is destroyed before the memory is freed.
        let place = self
            .allocate(requirements, memory, flags, false)
            .inspect_err(|_| unsafe { d.destroy_buffer(handle, None) })?;
        self.own(Owned::Buffer(handle));
        unsafe { d.bind_buffer_memory(handle, place.memory, place.offset) }
            .vk_context("vkBindBufferMemory")?;
        Ok(Buffer {
            handle,
            size,
            mapped: place.mapped,
        })
    }

    /// A host-visible buffer holding `data`, e.g. vertices: host writes before vkQueueSubmit are visible to
    /// the device without a barrier.
    pub fn create_buffer_with_data(
        &self,
        data: &[u8],
        usage: vk::BufferUsageFlags,
    ) -> Result<Buffer> {
        let buffer = self.create_buffer(data.len() as u64, usage, Memory::Host)?;
        buffer.write(data);
        Ok(buffer)
    }

    /// A device-local 2D RGBA8 image with one mip level and layer, and a view on it.
    pub fn create_image(&self, extent: vk::Extent2D, usage: vk::ImageUsageFlags) -> Result<Image> {
        self.create_image_with_format(extent, vk::Format::R8G8B8A8_UNORM, usage)
    }

    /// `create_image` with another color format (RGBA8 or RGBA32F, see `Image::byte_size`).
    pub fn create_image_with_format(
        &self,
        extent: vk::Extent2D,
        format: vk::Format,
        usage: vk::ImageUsageFlags,
    ) -> Result<Image> {
        let d = &self.device;
        let info = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(format)
            .extent(vk::Extent3D {
                width: extent.width,
                height: extent.height,
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        let handle = unsafe { d.create_image(&info, None) }.vk_context("vkCreateImage")?;
        let requirements = unsafe { d.get_image_memory_requirements(handle) };
        let place = self
            .allocate(
                requirements,
                Memory::Device,
                vk::MemoryAllocateFlags::empty(),
                true,
            )
            .inspect_err(|_| unsafe { d.destroy_image(handle, None) })?;
        self.own(Owned::Image(handle));
        unsafe { d.bind_image_memory(handle, place.memory, place.offset) }
            .vk_context("vkBindImageMemory")?;
        let view_info = vk::ImageViewCreateInfo::default()
            .image(handle)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format)
            .subresource_range(COLOR_RANGE);
        let view =
            unsafe { d.create_image_view(&view_info, None) }.vk_context("vkCreateImageView")?;
        self.own(Owned::ImageView(view));
        Ok(Image {
            handle,
            view,
            format,
            extent,
        })
    }

    // ---- shaders, pipelines, sync objects, command pools ----

    /// A shader module from SPIR-V bytes (embedded by `shaders.rs`). Not owned: callers destroy it right
    /// after creating their pipelines, as most real apps do (a layer must not assume modules outlive pipelines).
    pub fn create_shader_module(&self, spirv: &[u8]) -> Result<vk::ShaderModule> {
        let words = ash::util::read_spv(&mut std::io::Cursor::new(spirv))
            .context("embedded SPIR-V is malformed")?;
        let info = vk::ShaderModuleCreateInfo::default().code(&words);
        unsafe { self.device.create_shader_module(&info, None) }.vk_context("vkCreateShaderModule")
    }

    pub fn destroy_shader_module(&self, module: vk::ShaderModule) {
        // SAFETY: only called once the pipelines using it are created.
        unsafe { self.device.destroy_shader_module(module, None) }
    }

    pub fn create_fence(&self) -> Result<vk::Fence> {
        let fence = unsafe {
            self.device
                .create_fence(&vk::FenceCreateInfo::default(), None)
        }
        .vk_context("vkCreateFence")?;
        self.own(Owned::Fence(fence));
        Ok(fence)
    }

    /// A query pool of `count` timestamp queries.
    pub fn create_timestamp_pool(&self, count: u32) -> Result<vk::QueryPool> {
        let info = vk::QueryPoolCreateInfo::default()
            .query_type(vk::QueryType::TIMESTAMP)
            .query_count(count);
        let pool = unsafe { self.device.create_query_pool(&info, None) }
            .vk_context("vkCreateQueryPool")?;
        self.own(Owned::QueryPool(pool));
        Ok(pool)
    }

    pub fn create_semaphore(&self) -> Result<vk::Semaphore> {
        let semaphore = unsafe {
            self.device
                .create_semaphore(&vk::SemaphoreCreateInfo::default(), None)
        }
        .vk_context("vkCreateSemaphore")?;
        self.own(Owned::Semaphore(semaphore));
        Ok(semaphore)
    }

    pub fn create_timeline_semaphore(&self, initial_value: u64) -> Result<vk::Semaphore> {
        let mut type_info = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(initial_value);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut type_info);
        let semaphore =
            unsafe { self.device.create_semaphore(&info, None) }.vk_context("vkCreateSemaphore")?;
        self.own(Owned::Semaphore(semaphore));
        Ok(semaphore)
    }

    pub fn create_command_pool(
        &self,
        flags: vk::CommandPoolCreateFlags,
    ) -> Result<vk::CommandPool> {
        let pool = create_command_pool(&self.device, self.queue_family, flags)?;
        self.own(Owned::CommandPool(pool));
        Ok(pool)
    }

    pub fn allocate_command_buffers(
        &self,
        pool: vk::CommandPool,
        level: vk::CommandBufferLevel,
        count: u32,
    ) -> Result<Vec<vk::CommandBuffer>> {
        allocate_command_buffers(&self.device, pool, level, count)
    }

    pub fn wait_fence(&self, fence: vk::Fence) -> Result<()> {
        self.wait_fence_timeout(fence, WAIT_TIMEOUT_NS)
    }

    /// Waits up to `timeout_ns` for `fence`; VK_TIMEOUT is an error (see `timed_out`).
    pub fn wait_fence_timeout(&self, fence: vk::Fence, timeout_ns: u64) -> Result<()> {
        unsafe { self.device.wait_for_fences(&[fence], true, timeout_ns) }
            .vk_context("vkWaitForFences")
    }

    /// Gives `object` a debug name when VK_EXT_debug_utils is enabled; a no-op otherwise.
    pub fn set_name<H: vk::Handle>(&self, object: H, name: &CStr) -> Result<()> {
        if let Some(debug_utils) = &self.debug_utils {
            let info = vk::DebugUtilsObjectNameInfoEXT::default()
                .object_handle(object)
                .object_name(name);
            unsafe { debug_utils.set_debug_utils_object_name(&info) }
                .vk_context("vkSetDebugUtilsObjectNameEXT")?;
        }
        Ok(())
    }

    // ---- submission ----

    /// Records one primary command buffer with `record`, submits it to `queues[0]` with vkQueueSubmit and
    /// waits for its fence. The command buffer and fence are gone when this returns.
    pub fn submit_and_wait(
        &self,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<()> {
        self.one_shot(false, WAIT_TIMEOUT_NS, record, || ())
    }

    /// Like `submit_and_wait`, waiting up to `timeout_ns` (`u64::MAX`: for ever) for the fence.
    pub fn submit_and_wait_timeout(
        &self,
        timeout_ns: u64,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<()> {
        self.one_shot(false, timeout_ns, record, || ())
    }

    /// Like `submit_and_wait_timeout`, calling `on_failed_wait` when the wait fails, before the fence and
    /// command buffer are destroyed: after a loss that a layer reports while the work still runs, the
    /// destroy waits for that work, so whatever should cut it short must happen first.
    pub fn submit_and_wait_timeout_or(
        &self,
        timeout_ns: u64,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
        on_failed_wait: impl FnOnce(),
    ) -> Result<()> {
        self.one_shot(false, timeout_ns, record, on_failed_wait)
    }

    /// Like `submit_and_wait`, through vkQueueSubmit2 (needs synchronization2).
    pub fn submit2_and_wait(
        &self,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<()> {
        self.one_shot(true, WAIT_TIMEOUT_NS, record, || ())
    }

    /// Records one primary command buffer with `record` and submits it `repeat` times to `queues[0]`, each
    /// submission followed by vkQueueWaitIdle (one "frame" each). The command buffer is gone when this
    /// returns.
    pub fn submit_repeatedly(
        &self,
        repeat: u32,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<()> {
        let d = &self.device;
        let cmd =
            self.allocate_command_buffers(self.one_shot_pool, vk::CommandBufferLevel::PRIMARY, 1)?
                [0];
        let cmds = [cmd];
        let result = (|| {
            begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::empty())?;
            record(cmd)?;
            unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
            for _ in 0..repeat {
                let submit = vk::SubmitInfo::default().command_buffers(&cmds);
                unsafe { d.queue_submit(self.queues[0], &[submit], vk::Fence::null()) }
                    .vk_context("vkQueueSubmit")?;
                unsafe { d.queue_wait_idle(self.queues[0]) }.vk_context("vkQueueWaitIdle")?;
            }
            Ok(())
        })();
        if !timed_out(&result) {
            // SAFETY: the queue is idle (or the device lost, or nothing was submitted).
            unsafe { d.free_command_buffers(self.one_shot_pool, &cmds) };
        }
        result
    }

    /// A primary command buffer from the one-shot pool, recorded by `record` (one-time submit) and ended.
    fn record_one_shot(
        &self,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<vk::CommandBuffer> {
        let cmd =
            self.allocate_command_buffers(self.one_shot_pool, vk::CommandBufferLevel::PRIMARY, 1)?
                [0];
        begin_command_buffer(
            &self.device,
            cmd,
            vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
        )?;
        record(cmd)?;
        unsafe { self.device.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
        Ok(cmd)
    }

    /// Records one primary command buffer with `record` and submits it to `queues[0]` with no fence, never
    /// to be waited for or freed: for scenarios that end the process while the work runs (the crashes).
    pub fn submit_and_leave(
        &self,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
    ) -> Result<()> {
        let d = &self.device;
        let cmd = self.record_one_shot(record)?;
        let cmds = [cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        unsafe { d.queue_submit(self.queues[0], &[submit], vk::Fence::null()) }
            .vk_context("vkQueueSubmit")
    }

    fn one_shot(
        &self,
        submit2: bool,
        timeout_ns: u64,
        record: impl FnOnce(vk::CommandBuffer) -> Result<()>,
        on_failed_wait: impl FnOnce(),
    ) -> Result<()> {
        let d = &self.device;
        let cmd = self.record_one_shot(record)?;

        let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
            .vk_context("vkCreateFence")?;
        let cmds = [cmd];
        let submitted = if submit2 {
            let cmd_infos = [vk::CommandBufferSubmitInfo::default().command_buffer(cmd)];
            let submit = vk::SubmitInfo2::default().command_buffer_infos(&cmd_infos);
            unsafe { d.queue_submit2(self.queues[0], &[submit], fence) }
                .vk_context("vkQueueSubmit2")
        } else {
            let submit = vk::SubmitInfo::default().command_buffers(&cmds);
            unsafe { d.queue_submit(self.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")
        };
        let waited = submitted.and_then(|()| self.wait_fence_timeout(fence, timeout_ns));
        if waited.is_err() {
            on_failed_wait();
        }
        // After a timeout the work may still run: then both are leaked (the app exits with an error).
        if !timed_out(&waited) {
            // SAFETY: the work is complete, the device lost, or the submission failed (nothing pending).
            unsafe {
                d.destroy_fence(fence, None);
                d.free_command_buffers(self.one_shot_pool, &cmds);
            }
        }
        waited
    }

    // ---- recording helpers ----

    /// A buffer memory barrier over all of `buffer` (synchronization1).
    pub fn buffer_barrier(
        &self,
        cmd: vk::CommandBuffer,
        buffer: &Buffer,
        src: Access,
        dst: Access,
    ) {
        buffer_barrier(
            &self.device,
            cmd,
            buffer.handle,
            0,
            vk::WHOLE_SIZE,
            src,
            dst,
        );
    }

    /// Copies all of `src` (last written by `src_access`) into host buffer `dst` and makes it host-readable.
    pub fn record_buffer_readback(
        &self,
        cmd: vk::CommandBuffer,
        src: &Buffer,
        src_access: Access,
        dst: &Buffer,
    ) {
        record_buffer_readback(
            &self.device,
            cmd,
            src.handle,
            0,
            dst.handle,
            0,
            src.size,
            src_access,
        );
    }

    /// Copies `image` (in TRANSFER_SRC_OPTIMAL, its writes already visible to transfer reads) into host
    /// buffer `dst` and makes it host-readable.
    pub fn record_image_readback(&self, cmd: vk::CommandBuffer, image: &Image, dst: &Buffer) {
        let region = vk::BufferImageCopy::default()
            .image_subresource(COLOR_LAYERS)
            .image_extent(vk::Extent3D {
                width: image.extent.width,
                height: image.extent.height,
                depth: 1,
            });
        unsafe {
            self.device.cmd_copy_image_to_buffer(
                cmd,
                image.handle,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                dst.handle,
                &[region],
            )
        };
        self.buffer_barrier(cmd, dst, Access::TRANSFER_WRITE, Access::HOST_READ);
    }
}

/// A (stage, access) pair: one side of a synchronization1 barrier.
#[derive(Clone, Copy)]
pub struct Access {
    pub stage: vk::PipelineStageFlags,
    pub access: vk::AccessFlags,
}

impl Access {
    pub const TRANSFER_WRITE: Access = Access {
        stage: vk::PipelineStageFlags::TRANSFER,
        access: vk::AccessFlags::TRANSFER_WRITE,
    };
    pub const TRANSFER_READ: Access = Access {
        stage: vk::PipelineStageFlags::TRANSFER,
        access: vk::AccessFlags::TRANSFER_READ,
    };
    pub const COMPUTE_WRITE: Access = Access {
        stage: vk::PipelineStageFlags::COMPUTE_SHADER,
        access: vk::AccessFlags::SHADER_WRITE,
    };
    pub const COMPUTE_READ_WRITE: Access = Access {
        stage: vk::PipelineStageFlags::COMPUTE_SHADER,
        access: vk::AccessFlags::from_raw(
            vk::AccessFlags::SHADER_READ.as_raw() | vk::AccessFlags::SHADER_WRITE.as_raw(),
        ),
    };
    pub const HOST_READ: Access = Access {
        stage: vk::PipelineStageFlags::HOST,
        access: vk::AccessFlags::HOST_READ,
    };
}

pub const COLOR_RANGE: vk::ImageSubresourceRange = vk::ImageSubresourceRange {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    base_mip_level: 0,
    level_count: 1,
    base_array_layer: 0,
    layer_count: 1,
};

pub const COLOR_LAYERS: vk::ImageSubresourceLayers = vk::ImageSubresourceLayers {
    aspect_mask: vk::ImageAspectFlags::COLOR,
    mip_level: 0,
    base_array_layer: 0,
    layer_count: 1,
};

// Free functions taking `&ash::Device` rather than `&Context`: usable from worker threads (the context
// is not `Sync`, the device is).

pub fn create_command_pool(
    device: &ash::Device,
    queue_family: u32,
    flags: vk::CommandPoolCreateFlags,
) -> Result<vk::CommandPool> {
    let info = vk::CommandPoolCreateInfo::default()
        .queue_family_index(queue_family)
        .flags(flags);
    unsafe { device.create_command_pool(&info, None) }.vk_context("vkCreateCommandPool")
}

pub fn allocate_command_buffers(
    device: &ash::Device,
    pool: vk::CommandPool,
    level: vk::CommandBufferLevel,
    count: u32,
) -> Result<Vec<vk::CommandBuffer>> {
    let info = vk::CommandBufferAllocateInfo::default()
        .command_pool(pool)
        .level(level)
        .command_buffer_count(count);
    unsafe { device.allocate_command_buffers(&info) }.vk_context("vkAllocateCommandBuffers")
}

pub fn begin_command_buffer(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    flags: vk::CommandBufferUsageFlags,
) -> Result<()> {
    let info = vk::CommandBufferBeginInfo::default().flags(flags);
    unsafe { device.begin_command_buffer(cmd, &info) }.vk_context("vkBeginCommandBuffer")
}

pub fn buffer_barrier(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    buffer: vk::Buffer,
    offset: vk::DeviceSize,
    size: vk::DeviceSize,
    src: Access,
    dst: Access,
) {
    let barrier = vk::BufferMemoryBarrier::default()
        .src_access_mask(src.access)
        .dst_access_mask(dst.access)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .buffer(buffer)
        .offset(offset)
        .size(size);
    unsafe {
        device.cmd_pipeline_barrier(
            cmd,
            src.stage,
            dst.stage,
            vk::DependencyFlags::empty(),
            &[],
            &[barrier],
            &[],
        )
    };
}

/// Copies `size` bytes of `src` at `src_offset` (last written by `src_access`) into host buffer `dst` at
/// `dst_offset`, with the barriers on both sides. Barriers cover only the copied ranges, so that several
/// command buffers may read back disjoint parts of one buffer.
#[allow(clippy::too_many_arguments)]
pub fn record_buffer_readback(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    src: vk::Buffer,
    src_offset: vk::DeviceSize,
    dst: vk::Buffer,
    dst_offset: vk::DeviceSize,
    size: vk::DeviceSize,
    src_access: Access,
) {
    buffer_barrier(
        device,
        cmd,
        src,
        src_offset,
        size,
        src_access,
        Access::TRANSFER_READ,
    );
    let region = vk::BufferCopy {
        src_offset,
        dst_offset,
        size,
    };
    unsafe { device.cmd_copy_buffer(cmd, src, dst, &[region]) };
    buffer_barrier(
        device,
        cmd,
        dst,
        dst_offset,
        size,
        Access::TRANSFER_WRITE,
        Access::HOST_READ,
    );
}

/// FNV-1a, 64 bits: the checksum printed for each scenario.
#[derive(Clone, Copy)]
pub struct Fnv1a(u64);

impl Fnv1a {
    pub fn new() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }

    pub fn update(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self
    }

    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Self::new()
    }
}

pub fn fnv1a(bytes: &[u8]) -> u64 {
    Fnv1a::new().update(bytes).finish()
}
