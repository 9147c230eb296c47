//! Dispatch tables: the next layer's commands that Blackbox calls itself.
//!
//! Commands Blackbox does not intercept never pass through these tables: `vkGet*ProcAddr` hands the app the
//! next layer's pointer directly. Every entry is an `Option` because a command the driver lacks must stay
//! absent (ash's own loaders fill gaps with stubs that panic).

use ash::vk;
use std::ffi::CStr;

/// Declares a table of optional commands and its loader.
macro_rules! dispatch_table {
    ($(#[$meta:meta])* pub struct $name:ident { $($field:ident: $pfn:ident = $($cname:literal)|+,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        pub struct $name {
            $(pub $field: Option<vk::$pfn>,)*
        }

        impl $name {
            /// Resolves every command through `load` (the next layer's `vkGet*ProcAddr`).
            pub fn load(mut load: impl FnMut(&CStr) -> vk::PFN_vkVoidFunction) -> Self {
                Self {
                    // The first name the chain resolves wins: the core name, then its extension aliases.
                    $($field: None$(.or_else(|| load($cname)))+.map(|f| {
                        // SAFETY: the loader returns the command named `$cname`, whose type is `$pfn`.
                        unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::$pfn>(f) }
                    }),)*
                }
            }
        }
    };
}

dispatch_table! {
    /// Instance-level commands of the next layer.
    pub struct InstanceDispatch {
        destroy_instance: PFN_vkDestroyInstance = c"vkDestroyInstance",
        get_physical_device_properties: PFN_vkGetPhysicalDeviceProperties = c"vkGetPhysicalDeviceProperties",
        get_physical_device_properties2: PFN_vkGetPhysicalDeviceProperties2 = c"vkGetPhysicalDeviceProperties2",
        get_physical_device_features2: PFN_vkGetPhysicalDeviceFeatures2 = c"vkGetPhysicalDeviceFeatures2",
        get_physical_device_memory_properties: PFN_vkGetPhysicalDeviceMemoryProperties =
            c"vkGetPhysicalDeviceMemoryProperties",
        enumerate_device_extension_properties: PFN_vkEnumerateDeviceExtensionProperties =
            c"vkEnumerateDeviceExtensionProperties",
    }
}

dispatch_table! {
    /// Device-level commands of the next layer that Blackbox calls itself or intercepts by hand.
    pub struct DeviceDispatch {
        destroy_device: PFN_vkDestroyDevice = c"vkDestroyDevice",
        get_device_queue: PFN_vkGetDeviceQueue = c"vkGetDeviceQueue",
        get_device_queue2: PFN_vkGetDeviceQueue2 = c"vkGetDeviceQueue2",
        // The layer's own resources.
        create_buffer: PFN_vkCreateBuffer = c"vkCreateBuffer",
        destroy_buffer: PFN_vkDestroyBuffer = c"vkDestroyBuffer",
        get_buffer_memory_requirements: PFN_vkGetBufferMemoryRequirements = c"vkGetBufferMemoryRequirements",
        allocate_memory: PFN_vkAllocateMemory = c"vkAllocateMemory",
        free_memory: PFN_vkFreeMemory = c"vkFreeMemory",
        bind_buffer_memory: PFN_vkBindBufferMemory = c"vkBindBufferMemory",
        map_memory: PFN_vkMapMemory = c"vkMapMemory",
        get_buffer_device_address: PFN_vkGetBufferDeviceAddress =
            c"vkGetBufferDeviceAddress" | c"vkGetBufferDeviceAddressKHR",
        create_semaphore: PFN_vkCreateSemaphore = c"vkCreateSemaphore",
        destroy_semaphore: PFN_vkDestroySemaphore = c"vkDestroySemaphore",
        get_semaphore_counter_value: PFN_vkGetSemaphoreCounterValue =
            c"vkGetSemaphoreCounterValue" | c"vkGetSemaphoreCounterValueKHR",
        // Marker writes.
        cmd_write_buffer_marker_amd: PFN_vkCmdWriteBufferMarkerAMD = c"vkCmdWriteBufferMarkerAMD",
        cmd_set_checkpoint_nv: PFN_vkCmdSetCheckpointNV = c"vkCmdSetCheckpointNV",
        get_queue_checkpoint_data_nv: PFN_vkGetQueueCheckpointDataNV = c"vkGetQueueCheckpointDataNV",
        get_device_fault_info_ext: PFN_vkGetDeviceFaultInfoEXT = c"vkGetDeviceFaultInfoEXT",
        cmd_fill_buffer: PFN_vkCmdFillBuffer = c"vkCmdFillBuffer",
        cmd_pipeline_barrier: PFN_vkCmdPipelineBarrier = c"vkCmdPipelineBarrier",
        // Command buffer lifetime and recording, intercepted by hand.
        allocate_command_buffers: PFN_vkAllocateCommandBuffers = c"vkAllocateCommandBuffers",
        free_command_buffers: PFN_vkFreeCommandBuffers = c"vkFreeCommandBuffers",
        destroy_command_pool: PFN_vkDestroyCommandPool = c"vkDestroyCommandPool",
        reset_command_pool: PFN_vkResetCommandPool = c"vkResetCommandPool",
        begin_command_buffer: PFN_vkBeginCommandBuffer = c"vkBeginCommandBuffer",
        end_command_buffer: PFN_vkEndCommandBuffer = c"vkEndCommandBuffer",
        reset_command_buffer: PFN_vkResetCommandBuffer = c"vkResetCommandBuffer",
        cmd_bind_pipeline: PFN_vkCmdBindPipeline = c"vkCmdBindPipeline",
        cmd_begin_render_pass: PFN_vkCmdBeginRenderPass = c"vkCmdBeginRenderPass",
        cmd_begin_render_pass2: PFN_vkCmdBeginRenderPass2 = c"vkCmdBeginRenderPass2" | c"vkCmdBeginRenderPass2KHR",
        cmd_next_subpass: PFN_vkCmdNextSubpass = c"vkCmdNextSubpass",
        cmd_next_subpass2: PFN_vkCmdNextSubpass2 = c"vkCmdNextSubpass2" | c"vkCmdNextSubpass2KHR",
        cmd_end_render_pass: PFN_vkCmdEndRenderPass = c"vkCmdEndRenderPass",
        cmd_end_render_pass2: PFN_vkCmdEndRenderPass2 = c"vkCmdEndRenderPass2" | c"vkCmdEndRenderPass2KHR",
        cmd_begin_rendering: PFN_vkCmdBeginRendering = c"vkCmdBeginRendering" | c"vkCmdBeginRenderingKHR",
        cmd_end_rendering: PFN_vkCmdEndRendering = c"vkCmdEndRendering" | c"vkCmdEndRenderingKHR",
        cmd_execute_commands: PFN_vkCmdExecuteCommands = c"vkCmdExecuteCommands",
        cmd_begin_debug_utils_label_ext: PFN_vkCmdBeginDebugUtilsLabelEXT = c"vkCmdBeginDebugUtilsLabelEXT",
        cmd_end_debug_utils_label_ext: PFN_vkCmdEndDebugUtilsLabelEXT = c"vkCmdEndDebugUtilsLabelEXT",
        cmd_insert_debug_utils_label_ext: PFN_vkCmdInsertDebugUtilsLabelEXT = c"vkCmdInsertDebugUtilsLabelEXT",
        set_debug_utils_object_name_ext: PFN_vkSetDebugUtilsObjectNameEXT = c"vkSetDebugUtilsObjectNameEXT",
        // Submission, completion and presentation.
        queue_submit: PFN_vkQueueSubmit = c"vkQueueSubmit",
        queue_submit2: PFN_vkQueueSubmit2 = c"vkQueueSubmit2" | c"vkQueueSubmit2KHR",
        queue_bind_sparse: PFN_vkQueueBindSparse = c"vkQueueBindSparse",
        queue_present_khr: PFN_vkQueuePresentKHR = c"vkQueuePresentKHR",
        queue_wait_idle: PFN_vkQueueWaitIdle = c"vkQueueWaitIdle",
        device_wait_idle: PFN_vkDeviceWaitIdle = c"vkDeviceWaitIdle",
        wait_for_fences: PFN_vkWaitForFences = c"vkWaitForFences",
        get_fence_status: PFN_vkGetFenceStatus = c"vkGetFenceStatus",
        wait_semaphores: PFN_vkWaitSemaphores = c"vkWaitSemaphores" | c"vkWaitSemaphoresKHR",
        acquire_next_image_khr: PFN_vkAcquireNextImageKHR = c"vkAcquireNextImageKHR",
        get_query_pool_results: PFN_vkGetQueryPoolResults = c"vkGetQueryPoolResults",
        // Shaders and pipelines.
        create_shader_module: PFN_vkCreateShaderModule = c"vkCreateShaderModule",
        destroy_shader_module: PFN_vkDestroyShaderModule = c"vkDestroyShaderModule",
        create_graphics_pipelines: PFN_vkCreateGraphicsPipelines = c"vkCreateGraphicsPipelines",
        create_compute_pipelines: PFN_vkCreateComputePipelines = c"vkCreateComputePipelines",
        create_ray_tracing_pipelines_khr: PFN_vkCreateRayTracingPipelinesKHR = c"vkCreateRayTracingPipelinesKHR",
        destroy_pipeline: PFN_vkDestroyPipeline = c"vkDestroyPipeline",
        create_shaders_ext: PFN_vkCreateShadersEXT = c"vkCreateShadersEXT",
        destroy_shader_ext: PFN_vkDestroyShaderEXT = c"vkDestroyShaderEXT",
        cmd_bind_shaders_ext: PFN_vkCmdBindShadersEXT = c"vkCmdBindShadersEXT",
    }
}
