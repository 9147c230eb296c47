//! The one list of the Vulkan commands Blackbox deals with: those it intercepts and those it only calls.
//!
//! Everything about a command is said here once, and the rest is generated from it by `vulkan_commands!`'s
//! callers: the next layer's dispatch tables ([`crate::dispatch`]), the trampolines the loader is handed and
//! the lookup by name ([`crate::ffi`]). Adding a hook is one entry here and one method on the object that
//! owns the policy.
//!
//! An entry is `[scope class field: PFN = "name" (since VERSION)? (| "alias")*] { signature => handler }`:
//! - scope: how the command is dispatched and what state its trampoline finds: `global` (no instance
//!   yet), `instance` (an instance or physical device: [`crate::instance::Instance`]), `device` (a device:
//!   [`crate::device::Device`]), `pool` (like `device`, but only watched while recording is, i.e. with
//!   breadcrumbs on), `queue` (a queue: its `Device`), `cmd` (a command buffer:
//!   [`crate::command_buffer::CommandBuffer`], only watched while recording is), or `used` (not
//!   intercepted: Blackbox only calls it);
//! - class: what a recorded command does, as breadcrumbs and reports need to know it: `action` (GPU work:
//!   draws, dispatches, copies, clears), `state` (binds, queries, events, render-pass bounds), `sync`
//!   (barriers and event waits: the "finished" marker owed goes before them), `other` (not recorded);
//! - `since VERSION`: the Vulkan version that made an extension command core; below it the extension
//!   aliases are asked for first, so the layer never calls a core name the app's version does not have;
//! - handler: `by_hand` (a trampoline written in `ffi/`, for the loader's own protocol), a method of the
//!   scope's state that gets the dispatchable handle and the other arguments (`=> method`), or, for
//!   recorded commands that only need logging, `=> record(BIND) [key parameters]` (the bind point whose
//!   pipeline the command uses, and up to four parameters kept in the log).

/// Hands the whole table to `$generate!`, which makes of it what its module needs.
macro_rules! vulkan_commands {
    ($generate:ident) => {
        $generate! {
            instance;
            // ---- Instance level ----
            [global other get_instance_proc_addr: PFN_vkGetInstanceProcAddr = "vkGetInstanceProcAddr"] { by_hand }
            [global other create_instance: PFN_vkCreateInstance = "vkCreateInstance"] { by_hand }
            [instance other destroy_instance: PFN_vkDestroyInstance = "vkDestroyInstance"] { by_hand }
            [instance other create_device: PFN_vkCreateDevice = "vkCreateDevice"] { by_hand }
            [used other get_physical_device_properties: PFN_vkGetPhysicalDeviceProperties =
                "vkGetPhysicalDeviceProperties"] {}
            [used other get_physical_device_properties2: PFN_vkGetPhysicalDeviceProperties2 =
                "vkGetPhysicalDeviceProperties2" since API_VERSION_1_1 | "vkGetPhysicalDeviceProperties2KHR"] {}
            [used other get_physical_device_features2: PFN_vkGetPhysicalDeviceFeatures2 =
                "vkGetPhysicalDeviceFeatures2" since API_VERSION_1_1 | "vkGetPhysicalDeviceFeatures2KHR"] {}
            [used other get_physical_device_memory_properties: PFN_vkGetPhysicalDeviceMemoryProperties =
                "vkGetPhysicalDeviceMemoryProperties"] {}
            [used other enumerate_device_extension_properties: PFN_vkEnumerateDeviceExtensionProperties =
                "vkEnumerateDeviceExtensionProperties"] {}
            // The extension's name first, at every version: the validation layer 1.3.239 adds itself to the
            // list under that name only.
            [used other get_physical_device_tool_properties: PFN_vkGetPhysicalDeviceToolProperties =
                "vkGetPhysicalDeviceToolPropertiesEXT" | "vkGetPhysicalDeviceToolProperties"] {}
            // Frame capture: can a swapchain's images be copied, and can the present queue's family copy and
            // time it.
            [used other get_physical_device_surface_capabilities_khr: PFN_vkGetPhysicalDeviceSurfaceCapabilitiesKHR =
                "vkGetPhysicalDeviceSurfaceCapabilitiesKHR"] {}
            [used other get_physical_device_queue_family_properties: PFN_vkGetPhysicalDeviceQueueFamilyProperties =
                "vkGetPhysicalDeviceQueueFamilyProperties"] {}
            [used other create_debug_utils_messenger_ext: PFN_vkCreateDebugUtilsMessengerEXT =
                "vkCreateDebugUtilsMessengerEXT"] {}
            [used other destroy_debug_utils_messenger_ext: PFN_vkDestroyDebugUtilsMessengerEXT =
                "vkDestroyDebugUtilsMessengerEXT"] {}
        }
        $generate! {
            device;
            // ---- Device level ----
            [device other get_device_proc_addr: PFN_vkGetDeviceProcAddr = "vkGetDeviceProcAddr"] { by_hand }
            [device other destroy_device: PFN_vkDestroyDevice = "vkDestroyDevice"] { by_hand }
            [device other get_device_queue: PFN_vkGetDeviceQueue = "vkGetDeviceQueue"] {
                fn(device: vk::Device, family: u32, index: u32, queue: *mut vk::Queue) => get_device_queue
            }
            [device other get_device_queue2: PFN_vkGetDeviceQueue2 = "vkGetDeviceQueue2"] {
                fn(device: vk::Device, info: *const vk::DeviceQueueInfo2<'_>, queue: *mut vk::Queue) => get_device_queue2
            }
            [device other set_debug_utils_object_name_ext: PFN_vkSetDebugUtilsObjectNameEXT =
                "vkSetDebugUtilsObjectNameEXT"] {
                fn(device: vk::Device, info: *const vk::DebugUtilsObjectNameInfoEXT<'_>) -> vk::Result
                    => set_debug_utils_object_name
            }

            // Submission, completion and presentation (`queue.rs`).
            [queue other queue_submit: PFN_vkQueueSubmit = "vkQueueSubmit"] {
                fn(queue: vk::Queue, count: u32, submits: *const vk::SubmitInfo<'_>, fence: vk::Fence) -> vk::Result
                    => queue_submit
            }
            [queue other queue_submit2: PFN_vkQueueSubmit2 = "vkQueueSubmit2" since API_VERSION_1_3 | "vkQueueSubmit2KHR"] {
                fn(queue: vk::Queue, count: u32, submits: *const vk::SubmitInfo2<'_>, fence: vk::Fence) -> vk::Result
                    => queue_submit2
            }
            [queue other queue_bind_sparse: PFN_vkQueueBindSparse = "vkQueueBindSparse"] {
                fn(queue: vk::Queue, count: u32, infos: *const vk::BindSparseInfo<'_>, fence: vk::Fence) -> vk::Result
                    => queue_bind_sparse
            }
            [queue other queue_present_khr: PFN_vkQueuePresentKHR = "vkQueuePresentKHR"] {
                fn(queue: vk::Queue, info: *const vk::PresentInfoKHR<'_>) -> vk::Result => queue_present
            }
            [queue other queue_wait_idle: PFN_vkQueueWaitIdle = "vkQueueWaitIdle"] {
                fn(queue: vk::Queue) -> vk::Result => queue_wait_idle
            }
            [device other device_wait_idle: PFN_vkDeviceWaitIdle = "vkDeviceWaitIdle"] {
                fn(device: vk::Device) -> vk::Result => device_wait_idle
            }
            [device other wait_for_fences: PFN_vkWaitForFences = "vkWaitForFences"] {
                fn(device: vk::Device, count: u32, fences: *const vk::Fence, wait_all: vk::Bool32, timeout: u64)
                    -> vk::Result => wait_for_fences
            }
            [device other get_fence_status: PFN_vkGetFenceStatus = "vkGetFenceStatus"] {
                fn(device: vk::Device, fence: vk::Fence) -> vk::Result => get_fence_status
            }
            [device other wait_semaphores: PFN_vkWaitSemaphores = "vkWaitSemaphores" since API_VERSION_1_2 | "vkWaitSemaphoresKHR"] {
                fn(device: vk::Device, info: *const vk::SemaphoreWaitInfo<'_>, timeout: u64) -> vk::Result
                    => wait_semaphores
            }
            [device other get_semaphore_counter_value: PFN_vkGetSemaphoreCounterValue =
                "vkGetSemaphoreCounterValue" since API_VERSION_1_2 | "vkGetSemaphoreCounterValueKHR"] {
                fn(device: vk::Device, semaphore: vk::Semaphore, value: *mut u64) -> vk::Result
                    => get_semaphore_counter_value
            }
            [device other get_event_status: PFN_vkGetEventStatus = "vkGetEventStatus"] {
                fn(device: vk::Device, event: vk::Event) -> vk::Result => get_event_status
            }
            // Swapchains, for frame capture (`frames/`): usage for the copies, and the images.
            [device other create_swapchain_khr: PFN_vkCreateSwapchainKHR = "vkCreateSwapchainKHR"] {
                fn(device: vk::Device, info: *const vk::SwapchainCreateInfoKHR<'_>,
                   allocator: *const vk::AllocationCallbacks<'_>, swapchain: *mut vk::SwapchainKHR) -> vk::Result
                    => create_swapchain
            }
            [device other destroy_swapchain_khr: PFN_vkDestroySwapchainKHR = "vkDestroySwapchainKHR"] {
                fn(device: vk::Device, swapchain: vk::SwapchainKHR, allocator: *const vk::AllocationCallbacks<'_>)
                    => destroy_swapchain
            }
            [device other acquire_next_image_khr: PFN_vkAcquireNextImageKHR = "vkAcquireNextImageKHR"] {
                fn(device: vk::Device, swapchain: vk::SwapchainKHR, timeout: u64, semaphore: vk::Semaphore,
                   fence: vk::Fence, index: *mut u32) -> vk::Result => acquire_next_image
            }
            [device other get_query_pool_results: PFN_vkGetQueryPoolResults = "vkGetQueryPoolResults"] {
                fn(device: vk::Device, pool: vk::QueryPool, first: u32, count: u32, size: usize,
                   data: *mut std::ffi::c_void, stride: vk::DeviceSize, flags: vk::QueryResultFlags) -> vk::Result
                    => get_query_pool_results
            }

            // Shaders and pipelines (`shaders.rs`).
            [device other create_shader_module: PFN_vkCreateShaderModule = "vkCreateShaderModule"] {
                fn(device: vk::Device, info: *const vk::ShaderModuleCreateInfo<'_>,
                   allocator: *const vk::AllocationCallbacks<'_>, module: *mut vk::ShaderModule) -> vk::Result
                    => create_shader_module
            }
            [device other destroy_shader_module: PFN_vkDestroyShaderModule = "vkDestroyShaderModule"] {
                fn(device: vk::Device, module: vk::ShaderModule, allocator: *const vk::AllocationCallbacks<'_>)
                    => destroy_shader_module
            }
            [device other create_compute_pipelines: PFN_vkCreateComputePipelines = "vkCreateComputePipelines"] {
                fn(device: vk::Device, cache: vk::PipelineCache, count: u32,
                   infos: *const vk::ComputePipelineCreateInfo<'_>, allocator: *const vk::AllocationCallbacks<'_>,
                   pipelines: *mut vk::Pipeline) -> vk::Result => create_compute_pipelines
            }
            [device other create_graphics_pipelines: PFN_vkCreateGraphicsPipelines = "vkCreateGraphicsPipelines"] {
                fn(device: vk::Device, cache: vk::PipelineCache, count: u32,
                   infos: *const vk::GraphicsPipelineCreateInfo<'_>, allocator: *const vk::AllocationCallbacks<'_>,
                   pipelines: *mut vk::Pipeline) -> vk::Result => create_graphics_pipelines
            }
            [device other create_ray_tracing_pipelines_khr: PFN_vkCreateRayTracingPipelinesKHR =
                "vkCreateRayTracingPipelinesKHR"] {
                fn(device: vk::Device, deferred: vk::DeferredOperationKHR, cache: vk::PipelineCache, count: u32,
                   infos: *const vk::RayTracingPipelineCreateInfoKHR<'_>,
                   allocator: *const vk::AllocationCallbacks<'_>, pipelines: *mut vk::Pipeline) -> vk::Result
                    => create_ray_tracing_pipelines
            }
            [device other destroy_pipeline: PFN_vkDestroyPipeline = "vkDestroyPipeline"] {
                fn(device: vk::Device, pipeline: vk::Pipeline, allocator: *const vk::AllocationCallbacks<'_>)
                    => destroy_pipeline
            }
            [device other create_render_pass: PFN_vkCreateRenderPass = "vkCreateRenderPass"] {
                fn(device: vk::Device, info: *const vk::RenderPassCreateInfo<'_>,
                   allocator: *const vk::AllocationCallbacks<'_>, render_pass: *mut vk::RenderPass) -> vk::Result
                    => create_render_pass
            }
            [device other create_render_pass2: PFN_vkCreateRenderPass2 =
                "vkCreateRenderPass2" since API_VERSION_1_2 | "vkCreateRenderPass2KHR"] {
                fn(device: vk::Device, info: *const vk::RenderPassCreateInfo2<'_>,
                   allocator: *const vk::AllocationCallbacks<'_>, render_pass: *mut vk::RenderPass) -> vk::Result
                    => create_render_pass2
            }
            [device other destroy_render_pass: PFN_vkDestroyRenderPass = "vkDestroyRenderPass"] {
                fn(device: vk::Device, render_pass: vk::RenderPass, allocator: *const vk::AllocationCallbacks<'_>)
                    => destroy_render_pass
            }
            [device other create_shaders_ext: PFN_vkCreateShadersEXT = "vkCreateShadersEXT"] {
                fn(device: vk::Device, count: u32, infos: *const vk::ShaderCreateInfoEXT<'_>,
                   allocator: *const vk::AllocationCallbacks<'_>, shaders: *mut vk::ShaderEXT) -> vk::Result
                    => create_shaders
            }

            // Command buffer lifetime (`command_buffer.rs`).
            [pool other allocate_command_buffers: PFN_vkAllocateCommandBuffers = "vkAllocateCommandBuffers"] {
                fn(device: vk::Device, info: *const vk::CommandBufferAllocateInfo<'_>,
                   command_buffers: *mut vk::CommandBuffer) -> vk::Result => allocate_command_buffers
            }
            [pool other free_command_buffers: PFN_vkFreeCommandBuffers = "vkFreeCommandBuffers"] {
                fn(device: vk::Device, pool: vk::CommandPool, count: u32, command_buffers: *const vk::CommandBuffer)
                    => free_command_buffers
            }
            [pool other destroy_command_pool: PFN_vkDestroyCommandPool = "vkDestroyCommandPool"] {
                fn(device: vk::Device, pool: vk::CommandPool, allocator: *const vk::AllocationCallbacks<'_>)
                    => destroy_command_pool
            }
            [pool other reset_command_pool: PFN_vkResetCommandPool = "vkResetCommandPool"] {
                fn(device: vk::Device, pool: vk::CommandPool, flags: vk::CommandPoolResetFlags) -> vk::Result
                    => reset_command_pool
            }
            [cmd other begin_command_buffer: PFN_vkBeginCommandBuffer = "vkBeginCommandBuffer"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::CommandBufferBeginInfo<'_>) -> vk::Result => begin
            }
            [cmd other end_command_buffer: PFN_vkEndCommandBuffer = "vkEndCommandBuffer"] {
                fn(command_buffer: vk::CommandBuffer) -> vk::Result => end
            }
            [cmd other reset_command_buffer: PFN_vkResetCommandBuffer = "vkResetCommandBuffer"] {
                fn(command_buffer: vk::CommandBuffer, flags: vk::CommandBufferResetFlags) -> vk::Result => reset
            }

            // Recording with state of its own (`command_buffer.rs`).
            [cmd state cmd_bind_pipeline: PFN_vkCmdBindPipeline = "vkCmdBindPipeline"] {
                fn(command_buffer: vk::CommandBuffer, point: vk::PipelineBindPoint, pipeline: vk::Pipeline)
                    => bind_pipeline
            }
            [cmd state cmd_begin_render_pass: PFN_vkCmdBeginRenderPass = "vkCmdBeginRenderPass"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::RenderPassBeginInfo<'_>,
                   contents: vk::SubpassContents) => begin_render_pass
            }
            [cmd state cmd_begin_render_pass2: PFN_vkCmdBeginRenderPass2 =
                "vkCmdBeginRenderPass2" since API_VERSION_1_2 | "vkCmdBeginRenderPass2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::RenderPassBeginInfo<'_>,
                   subpass: *const vk::SubpassBeginInfo<'_>) => begin_render_pass2
            }
            [cmd state cmd_begin_rendering: PFN_vkCmdBeginRendering =
                "vkCmdBeginRendering" since API_VERSION_1_3 | "vkCmdBeginRenderingKHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::RenderingInfo<'_>) => begin_rendering
            }
            [cmd state cmd_next_subpass: PFN_vkCmdNextSubpass = "vkCmdNextSubpass"] {
                fn(command_buffer: vk::CommandBuffer, contents: vk::SubpassContents) => record(None) []
            }
            [cmd state cmd_next_subpass2: PFN_vkCmdNextSubpass2 =
                "vkCmdNextSubpass2" since API_VERSION_1_2 | "vkCmdNextSubpass2KHR"] {
                fn(command_buffer: vk::CommandBuffer, begin: *const vk::SubpassBeginInfo<'_>,
                   end: *const vk::SubpassEndInfo<'_>) => record(None) []
            }
            [cmd state cmd_end_render_pass: PFN_vkCmdEndRenderPass = "vkCmdEndRenderPass"] {
                fn(command_buffer: vk::CommandBuffer) => end_render_pass
            }
            [cmd state cmd_end_render_pass2: PFN_vkCmdEndRenderPass2 =
                "vkCmdEndRenderPass2" since API_VERSION_1_2 | "vkCmdEndRenderPass2KHR"] {
                fn(command_buffer: vk::CommandBuffer, end: *const vk::SubpassEndInfo<'_>) => end_render_pass2
            }
            [cmd state cmd_end_rendering: PFN_vkCmdEndRendering =
                "vkCmdEndRendering" since API_VERSION_1_3 | "vkCmdEndRenderingKHR"] {
                fn(command_buffer: vk::CommandBuffer) => end_rendering
            }
            [cmd other cmd_begin_debug_utils_label_ext: PFN_vkCmdBeginDebugUtilsLabelEXT =
                "vkCmdBeginDebugUtilsLabelEXT"] {
                fn(command_buffer: vk::CommandBuffer, label: *const vk::DebugUtilsLabelEXT<'_>) => begin_label
            }
            [cmd other cmd_insert_debug_utils_label_ext: PFN_vkCmdInsertDebugUtilsLabelEXT =
                "vkCmdInsertDebugUtilsLabelEXT"] {
                fn(command_buffer: vk::CommandBuffer, label: *const vk::DebugUtilsLabelEXT<'_>) => insert_label
            }
            [cmd other cmd_end_debug_utils_label_ext: PFN_vkCmdEndDebugUtilsLabelEXT =
                "vkCmdEndDebugUtilsLabelEXT"] {
                fn(command_buffer: vk::CommandBuffer) => end_label
            }
            [cmd action cmd_execute_commands: PFN_vkCmdExecuteCommands = "vkCmdExecuteCommands"] {
                fn(command_buffer: vk::CommandBuffer, count: u32, secondaries: *const vk::CommandBuffer)
                    => execute_commands
            }

            // Recorded commands that need only a log entry (and markers around actions).
            [cmd action cmd_draw: PFN_vkCmdDraw = "vkCmdDraw"] {
                fn(command_buffer: vk::CommandBuffer, vertex_count: u32, instance_count: u32, first_vertex: u32,
                   first_instance: u32)
                    => record(Graphics) [vertex_count, instance_count, first_vertex, first_instance]
            }
            [cmd action cmd_draw_indexed: PFN_vkCmdDrawIndexed = "vkCmdDrawIndexed"] {
                fn(command_buffer: vk::CommandBuffer, index_count: u32, instance_count: u32, first_index: u32,
                   vertex_offset: i32, first_instance: u32)
                    => record(Graphics) [index_count, instance_count, first_index, vertex_offset]
            }
            [cmd action cmd_draw_indirect: PFN_vkCmdDrawIndirect = "vkCmdDrawIndirect"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize, draw_count: u32,
                   stride: u32)
                    => record(Graphics) [buffer, offset, draw_count, stride]
            }
            [cmd action cmd_draw_indexed_indirect: PFN_vkCmdDrawIndexedIndirect = "vkCmdDrawIndexedIndirect"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize, draw_count: u32,
                   stride: u32)
                    => record(Graphics) [buffer, offset, draw_count, stride]
            }
            [cmd action cmd_draw_indirect_count: PFN_vkCmdDrawIndirectCount =
                "vkCmdDrawIndirectCount" since API_VERSION_1_2 | "vkCmdDrawIndirectCountKHR" | "vkCmdDrawIndirectCountAMD"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize,
                   count_buffer: vk::Buffer, count_offset: vk::DeviceSize, max_draw_count: u32, stride: u32)
                    => record(Graphics) [buffer, offset, count_buffer, max_draw_count]
            }
            [cmd action cmd_draw_indexed_indirect_count: PFN_vkCmdDrawIndexedIndirectCount =
                "vkCmdDrawIndexedIndirectCount" since API_VERSION_1_2 | "vkCmdDrawIndexedIndirectCountKHR"
                | "vkCmdDrawIndexedIndirectCountAMD"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize,
                   count_buffer: vk::Buffer, count_offset: vk::DeviceSize, max_draw_count: u32, stride: u32)
                    => record(Graphics) [buffer, offset, count_buffer, max_draw_count]
            }
            [cmd action cmd_draw_multi_ext: PFN_vkCmdDrawMultiEXT = "vkCmdDrawMultiEXT"] {
                fn(command_buffer: vk::CommandBuffer, draw_count: u32, vertex_info: *const vk::MultiDrawInfoEXT,
                   instance_count: u32, first_instance: u32, stride: u32)
                    => record(Graphics) [draw_count, instance_count, first_instance]
            }
            [cmd action cmd_draw_multi_indexed_ext: PFN_vkCmdDrawMultiIndexedEXT = "vkCmdDrawMultiIndexedEXT"] {
                fn(command_buffer: vk::CommandBuffer, draw_count: u32, index_info: *const vk::MultiDrawIndexedInfoEXT,
                   instance_count: u32, first_instance: u32, stride: u32, vertex_offset: *const i32)
                    => record(Graphics) [draw_count, instance_count, first_instance]
            }
            [cmd action cmd_draw_indirect_byte_count_ext: PFN_vkCmdDrawIndirectByteCountEXT =
                "vkCmdDrawIndirectByteCountEXT"] {
                fn(command_buffer: vk::CommandBuffer, instance_count: u32, first_instance: u32,
                   counter_buffer: vk::Buffer, counter_buffer_offset: vk::DeviceSize, counter_offset: u32,
                   vertex_stride: u32)
                    => record(Graphics) [instance_count, first_instance, counter_buffer, vertex_stride]
            }
            [cmd action cmd_draw_mesh_tasks_ext: PFN_vkCmdDrawMeshTasksEXT = "vkCmdDrawMeshTasksEXT"] {
                fn(command_buffer: vk::CommandBuffer, group_count_x: u32, group_count_y: u32, group_count_z: u32)
                    => record(Graphics) [group_count_x, group_count_y, group_count_z]
            }
            [cmd action cmd_draw_mesh_tasks_indirect_ext: PFN_vkCmdDrawMeshTasksIndirectEXT =
                "vkCmdDrawMeshTasksIndirectEXT"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize, draw_count: u32,
                   stride: u32)
                    => record(Graphics) [buffer, offset, draw_count, stride]
            }
            [cmd action cmd_draw_mesh_tasks_indirect_count_ext: PFN_vkCmdDrawMeshTasksIndirectCountEXT =
                "vkCmdDrawMeshTasksIndirectCountEXT"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize,
                   count_buffer: vk::Buffer, count_offset: vk::DeviceSize, max_draw_count: u32, stride: u32)
                    => record(Graphics) [buffer, offset, count_buffer, max_draw_count]
            }
            [cmd action cmd_dispatch: PFN_vkCmdDispatch = "vkCmdDispatch"] {
                fn(command_buffer: vk::CommandBuffer, group_count_x: u32, group_count_y: u32, group_count_z: u32)
                    => record(Compute) [group_count_x, group_count_y, group_count_z]
            }
            [cmd action cmd_dispatch_indirect: PFN_vkCmdDispatchIndirect = "vkCmdDispatchIndirect"] {
                fn(command_buffer: vk::CommandBuffer, buffer: vk::Buffer, offset: vk::DeviceSize)
                    => record(Compute) [buffer, offset]
            }
            [cmd action cmd_dispatch_base: PFN_vkCmdDispatchBase =
                "vkCmdDispatchBase" since API_VERSION_1_1 | "vkCmdDispatchBaseKHR"] {
                fn(command_buffer: vk::CommandBuffer, base_x: u32, base_y: u32, base_z: u32, group_count_x: u32,
                   group_count_y: u32, group_count_z: u32)
                    => record(Compute) [group_count_x, group_count_y, group_count_z, base_x]
            }
            [cmd action cmd_trace_rays_khr: PFN_vkCmdTraceRaysKHR = "vkCmdTraceRaysKHR"] {
                fn(command_buffer: vk::CommandBuffer, raygen: *const vk::StridedDeviceAddressRegionKHR,
                   miss: *const vk::StridedDeviceAddressRegionKHR, hit: *const vk::StridedDeviceAddressRegionKHR,
                   callable: *const vk::StridedDeviceAddressRegionKHR, width: u32, height: u32, depth: u32)
                    => record(RayTracing) [width, height, depth]
            }
            [cmd action cmd_trace_rays_indirect_khr: PFN_vkCmdTraceRaysIndirectKHR = "vkCmdTraceRaysIndirectKHR"] {
                fn(command_buffer: vk::CommandBuffer, raygen: *const vk::StridedDeviceAddressRegionKHR,
                   miss: *const vk::StridedDeviceAddressRegionKHR, hit: *const vk::StridedDeviceAddressRegionKHR,
                   callable: *const vk::StridedDeviceAddressRegionKHR, indirect_address: vk::DeviceAddress)
                    => record(RayTracing) [indirect_address]
            }
            [cmd action cmd_trace_rays_indirect2_khr: PFN_vkCmdTraceRaysIndirect2KHR = "vkCmdTraceRaysIndirect2KHR"] {
                fn(command_buffer: vk::CommandBuffer, indirect_address: vk::DeviceAddress)
                    => record(RayTracing) [indirect_address]
            }
            [cmd action cmd_build_acceleration_structures_khr: PFN_vkCmdBuildAccelerationStructuresKHR =
                "vkCmdBuildAccelerationStructuresKHR"] {
                fn(command_buffer: vk::CommandBuffer, info_count: u32,
                   infos: *const vk::AccelerationStructureBuildGeometryInfoKHR<'_>,
                   ranges: *const *const vk::AccelerationStructureBuildRangeInfoKHR)
                    => record(None) [info_count]
            }
            [cmd action cmd_copy_buffer: PFN_vkCmdCopyBuffer = "vkCmdCopyBuffer"] {
                fn(command_buffer: vk::CommandBuffer, src: vk::Buffer, dst: vk::Buffer, region_count: u32,
                   regions: *const vk::BufferCopy)
                    => record(None) [src, dst, region_count]
            }
            [cmd action cmd_copy_image: PFN_vkCmdCopyImage = "vkCmdCopyImage"] {
                fn(command_buffer: vk::CommandBuffer, src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Image,
                   dst_layout: vk::ImageLayout, region_count: u32, regions: *const vk::ImageCopy)
                    => record(None) [src, dst, region_count]
            }
            [cmd action cmd_blit_image: PFN_vkCmdBlitImage = "vkCmdBlitImage"] {
                fn(command_buffer: vk::CommandBuffer, src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Image,
                   dst_layout: vk::ImageLayout, region_count: u32, regions: *const vk::ImageBlit, filter: vk::Filter)
                    => record(None) [src, dst, region_count]
            }
            [cmd action cmd_resolve_image: PFN_vkCmdResolveImage = "vkCmdResolveImage"] {
                fn(command_buffer: vk::CommandBuffer, src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Image,
                   dst_layout: vk::ImageLayout, region_count: u32, regions: *const vk::ImageResolve)
                    => record(None) [src, dst, region_count]
            }
            [cmd action cmd_copy_buffer_to_image: PFN_vkCmdCopyBufferToImage = "vkCmdCopyBufferToImage"] {
                fn(command_buffer: vk::CommandBuffer, src: vk::Buffer, dst: vk::Image, dst_layout: vk::ImageLayout,
                   region_count: u32, regions: *const vk::BufferImageCopy)
                    => record(None) [src, dst, region_count]
            }
            [cmd action cmd_copy_image_to_buffer: PFN_vkCmdCopyImageToBuffer = "vkCmdCopyImageToBuffer"] {
                fn(command_buffer: vk::CommandBuffer, src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Buffer,
                   region_count: u32, regions: *const vk::BufferImageCopy)
                    => record(None) [src, dst, region_count]
            }
            [cmd action cmd_copy_buffer2: PFN_vkCmdCopyBuffer2 = "vkCmdCopyBuffer2" since API_VERSION_1_3 | "vkCmdCopyBuffer2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::CopyBufferInfo2<'_>)
                    => record(None) [(*info).src_buffer, (*info).dst_buffer, (*info).region_count]
            }
            [cmd action cmd_copy_image2: PFN_vkCmdCopyImage2 = "vkCmdCopyImage2" since API_VERSION_1_3 | "vkCmdCopyImage2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::CopyImageInfo2<'_>)
                    => record(None) [(*info).src_image, (*info).dst_image, (*info).region_count]
            }
            [cmd action cmd_blit_image2: PFN_vkCmdBlitImage2 = "vkCmdBlitImage2" since API_VERSION_1_3 | "vkCmdBlitImage2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::BlitImageInfo2<'_>)
                    => record(None) [(*info).src_image, (*info).dst_image, (*info).region_count]
            }
            [cmd action cmd_resolve_image2: PFN_vkCmdResolveImage2 =
                "vkCmdResolveImage2" since API_VERSION_1_3 | "vkCmdResolveImage2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::ResolveImageInfo2<'_>)
                    => record(None) [(*info).src_image, (*info).dst_image, (*info).region_count]
            }
            [cmd action cmd_copy_buffer_to_image2: PFN_vkCmdCopyBufferToImage2 =
                "vkCmdCopyBufferToImage2" since API_VERSION_1_3 | "vkCmdCopyBufferToImage2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::CopyBufferToImageInfo2<'_>)
                    => record(None) [(*info).src_buffer, (*info).dst_image, (*info).region_count]
            }
            [cmd action cmd_copy_image_to_buffer2: PFN_vkCmdCopyImageToBuffer2 =
                "vkCmdCopyImageToBuffer2" since API_VERSION_1_3 | "vkCmdCopyImageToBuffer2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::CopyImageToBufferInfo2<'_>)
                    => record(None) [(*info).src_image, (*info).dst_buffer, (*info).region_count]
            }
            [cmd action cmd_update_buffer: PFN_vkCmdUpdateBuffer = "vkCmdUpdateBuffer"] {
                fn(command_buffer: vk::CommandBuffer, dst: vk::Buffer, offset: vk::DeviceSize, size: vk::DeviceSize,
                   data: *const std::ffi::c_void)
                    => record(None) [dst, offset, size]
            }
            [cmd action cmd_fill_buffer: PFN_vkCmdFillBuffer = "vkCmdFillBuffer"] {
                fn(command_buffer: vk::CommandBuffer, dst: vk::Buffer, offset: vk::DeviceSize, size: vk::DeviceSize,
                   data: u32)
                    => record(None) [dst, offset, size, data]
            }
            [cmd action cmd_clear_color_image: PFN_vkCmdClearColorImage = "vkCmdClearColorImage"] {
                fn(command_buffer: vk::CommandBuffer, image: vk::Image, layout: vk::ImageLayout,
                   color: *const vk::ClearColorValue, range_count: u32, ranges: *const vk::ImageSubresourceRange)
                    => record(None) [image, range_count]
            }
            [cmd action cmd_clear_depth_stencil_image: PFN_vkCmdClearDepthStencilImage = "vkCmdClearDepthStencilImage"] {
                fn(command_buffer: vk::CommandBuffer, image: vk::Image, layout: vk::ImageLayout,
                   value: *const vk::ClearDepthStencilValue, range_count: u32,
                   ranges: *const vk::ImageSubresourceRange)
                    => record(None) [image, range_count]
            }
            [cmd action cmd_clear_attachments: PFN_vkCmdClearAttachments = "vkCmdClearAttachments"] {
                fn(command_buffer: vk::CommandBuffer, attachment_count: u32, attachments: *const vk::ClearAttachment,
                   rect_count: u32, rects: *const vk::ClearRect)
                    => record(None) [attachment_count, rect_count]
            }
            [cmd action cmd_copy_query_pool_results: PFN_vkCmdCopyQueryPoolResults = "vkCmdCopyQueryPoolResults"] {
                fn(command_buffer: vk::CommandBuffer, pool: vk::QueryPool, first_query: u32, query_count: u32,
                   dst: vk::Buffer, dst_offset: vk::DeviceSize, stride: vk::DeviceSize, flags: vk::QueryResultFlags)
                    => record(None) [pool, first_query, query_count, dst]
            }
            [cmd state cmd_reset_query_pool: PFN_vkCmdResetQueryPool = "vkCmdResetQueryPool"] {
                fn(command_buffer: vk::CommandBuffer, pool: vk::QueryPool, first_query: u32, query_count: u32)
                    => record(None) [pool, first_query, query_count]
            }
            [cmd state cmd_begin_query: PFN_vkCmdBeginQuery = "vkCmdBeginQuery"] {
                fn(command_buffer: vk::CommandBuffer, pool: vk::QueryPool, query: u32, flags: vk::QueryControlFlags)
                    => record(None) [pool, query]
            }
            [cmd state cmd_end_query: PFN_vkCmdEndQuery = "vkCmdEndQuery"] {
                fn(command_buffer: vk::CommandBuffer, pool: vk::QueryPool, query: u32) => record(None) [pool, query]
            }
            [cmd state cmd_write_timestamp: PFN_vkCmdWriteTimestamp = "vkCmdWriteTimestamp"] {
                fn(command_buffer: vk::CommandBuffer, stage: vk::PipelineStageFlags, pool: vk::QueryPool, query: u32)
                    => record(None) [pool, query]
            }
            [cmd state cmd_write_timestamp2: PFN_vkCmdWriteTimestamp2 =
                "vkCmdWriteTimestamp2" since API_VERSION_1_3 | "vkCmdWriteTimestamp2KHR"] {
                fn(command_buffer: vk::CommandBuffer, stage: vk::PipelineStageFlags2, pool: vk::QueryPool, query: u32)
                    => record(None) [pool, query]
            }
            [cmd sync cmd_pipeline_barrier: PFN_vkCmdPipelineBarrier = "vkCmdPipelineBarrier"] {
                fn(command_buffer: vk::CommandBuffer, src_stage: vk::PipelineStageFlags,
                   dst_stage: vk::PipelineStageFlags, flags: vk::DependencyFlags, memory_count: u32,
                   memory: *const vk::MemoryBarrier<'_>, buffer_count: u32, buffers: *const vk::BufferMemoryBarrier<'_>,
                   image_count: u32, images: *const vk::ImageMemoryBarrier<'_>)
                    => record(None) [memory_count, buffer_count, image_count]
            }
            [cmd sync cmd_pipeline_barrier2: PFN_vkCmdPipelineBarrier2 =
                "vkCmdPipelineBarrier2" since API_VERSION_1_3 | "vkCmdPipelineBarrier2KHR"] {
                fn(command_buffer: vk::CommandBuffer, info: *const vk::DependencyInfo<'_>)
                    => record(None) [(*info).memory_barrier_count, (*info).buffer_memory_barrier_count,
                                     (*info).image_memory_barrier_count]
            }
            [cmd sync cmd_wait_events: PFN_vkCmdWaitEvents = "vkCmdWaitEvents"] {
                fn(command_buffer: vk::CommandBuffer, event_count: u32, events: *const vk::Event,
                   src_stage: vk::PipelineStageFlags, dst_stage: vk::PipelineStageFlags, memory_count: u32,
                   memory: *const vk::MemoryBarrier<'_>, buffer_count: u32, buffers: *const vk::BufferMemoryBarrier<'_>,
                   image_count: u32, images: *const vk::ImageMemoryBarrier<'_>)
                    => record(None) [event_count]
            }
            [cmd sync cmd_wait_events2: PFN_vkCmdWaitEvents2 = "vkCmdWaitEvents2" since API_VERSION_1_3 | "vkCmdWaitEvents2KHR"] {
                fn(command_buffer: vk::CommandBuffer, event_count: u32, events: *const vk::Event,
                   infos: *const vk::DependencyInfo<'_>)
                    => record(None) [event_count]
            }
            [cmd state cmd_set_event: PFN_vkCmdSetEvent = "vkCmdSetEvent"] {
                fn(command_buffer: vk::CommandBuffer, event: vk::Event, stage: vk::PipelineStageFlags)
                    => record(None) [event]
            }
            [cmd state cmd_set_event2: PFN_vkCmdSetEvent2 = "vkCmdSetEvent2" since API_VERSION_1_3 | "vkCmdSetEvent2KHR"] {
                fn(command_buffer: vk::CommandBuffer, event: vk::Event, info: *const vk::DependencyInfo<'_>)
                    => record(None) [event]
            }
            [cmd state cmd_reset_event: PFN_vkCmdResetEvent = "vkCmdResetEvent"] {
                fn(command_buffer: vk::CommandBuffer, event: vk::Event, stage: vk::PipelineStageFlags)
                    => record(None) [event]
            }
            [cmd state cmd_reset_event2: PFN_vkCmdResetEvent2 = "vkCmdResetEvent2" since API_VERSION_1_3 | "vkCmdResetEvent2KHR"] {
                fn(command_buffer: vk::CommandBuffer, event: vk::Event, stage: vk::PipelineStageFlags2)
                    => record(None) [event]
            }

            // Called by Blackbox itself: its own buffers, semaphores, markers and fault queries.
            [used other create_buffer: PFN_vkCreateBuffer = "vkCreateBuffer"] {}
            [used other destroy_buffer: PFN_vkDestroyBuffer = "vkDestroyBuffer"] {}
            [used other get_buffer_memory_requirements: PFN_vkGetBufferMemoryRequirements =
                "vkGetBufferMemoryRequirements"] {}
            [used other allocate_memory: PFN_vkAllocateMemory = "vkAllocateMemory"] {}
            [used other free_memory: PFN_vkFreeMemory = "vkFreeMemory"] {}
            [used other bind_buffer_memory: PFN_vkBindBufferMemory = "vkBindBufferMemory"] {}
            [used other map_memory: PFN_vkMapMemory = "vkMapMemory"] {}
            [used other get_memory_host_pointer_properties_ext: PFN_vkGetMemoryHostPointerPropertiesEXT =
                "vkGetMemoryHostPointerPropertiesEXT"] {}
            [used other get_buffer_device_address: PFN_vkGetBufferDeviceAddress =
                "vkGetBufferDeviceAddress" since API_VERSION_1_2 | "vkGetBufferDeviceAddressKHR"] {}
            [used other create_semaphore: PFN_vkCreateSemaphore = "vkCreateSemaphore"] {}
            [used other destroy_semaphore: PFN_vkDestroySemaphore = "vkDestroySemaphore"] {}
            [used other cmd_write_buffer_marker_amd: PFN_vkCmdWriteBufferMarkerAMD = "vkCmdWriteBufferMarkerAMD"] {}
            [used other cmd_set_checkpoint_nv: PFN_vkCmdSetCheckpointNV = "vkCmdSetCheckpointNV"] {}
            [used other get_queue_checkpoint_data_nv: PFN_vkGetQueueCheckpointDataNV = "vkGetQueueCheckpointDataNV"] {}
            [used other get_device_fault_info_ext: PFN_vkGetDeviceFaultInfoEXT = "vkGetDeviceFaultInfoEXT"] {}
            // Frame capture's copies and flash pass (`frames/`), recorded in command buffers of the layer's own.
            [used other get_swapchain_images_khr: PFN_vkGetSwapchainImagesKHR = "vkGetSwapchainImagesKHR"] {}
            [used other create_command_pool: PFN_vkCreateCommandPool = "vkCreateCommandPool"] {}
            [used other create_fence: PFN_vkCreateFence = "vkCreateFence"] {}
            [used other destroy_fence: PFN_vkDestroyFence = "vkDestroyFence"] {}
            [used other reset_fences: PFN_vkResetFences = "vkResetFences"] {}
            [used other create_query_pool: PFN_vkCreateQueryPool = "vkCreateQueryPool"] {}
            [used other destroy_query_pool: PFN_vkDestroyQueryPool = "vkDestroyQueryPool"] {}
            [used other create_descriptor_set_layout: PFN_vkCreateDescriptorSetLayout = "vkCreateDescriptorSetLayout"] {}
            [used other destroy_descriptor_set_layout: PFN_vkDestroyDescriptorSetLayout =
                "vkDestroyDescriptorSetLayout"] {}
            [used other create_pipeline_layout: PFN_vkCreatePipelineLayout = "vkCreatePipelineLayout"] {}
            [used other destroy_pipeline_layout: PFN_vkDestroyPipelineLayout = "vkDestroyPipelineLayout"] {}
            [used other create_descriptor_pool: PFN_vkCreateDescriptorPool = "vkCreateDescriptorPool"] {}
            [used other destroy_descriptor_pool: PFN_vkDestroyDescriptorPool = "vkDestroyDescriptorPool"] {}
            [used other allocate_descriptor_sets: PFN_vkAllocateDescriptorSets = "vkAllocateDescriptorSets"] {}
            [used other update_descriptor_sets: PFN_vkUpdateDescriptorSets = "vkUpdateDescriptorSets"] {}
            [used other cmd_bind_descriptor_sets: PFN_vkCmdBindDescriptorSets = "vkCmdBindDescriptorSets"] {}
            [used other cmd_push_constants: PFN_vkCmdPushConstants = "vkCmdPushConstants"] {}
        }
    };
}
