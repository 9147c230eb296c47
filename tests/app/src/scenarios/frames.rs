//! `frames` (not part of `all`): an app that presents, for Blackbox's frame capture (`VK_BLACKBOX_FRAMES`,
//! `VK_BLACKBOX_FLASH`). It renders `--frames-count` frames of a slowly drifting gradient (frames.frag, a
//! full-screen triangle) into the images of a swapchain and presents each; frame `--bad-frame` makes a NaN
//! in pixel [`BAD_PIXEL`] (normalize of a zero vector), or with `--flash` shows a white rectangle
//! [`FLASH_RECT`] for that frame alone and no NaN.
//!
//! The surface is a window on the X server of `DISPLAY` (xcb, loaded at run time: no build dependency), or
//! a `VK_EXT_headless_surface` surface where there is no `DISPLAY` (or with `--headless`): a GPU machine
//! without a display. One frame is in flight: each frame's fence is waited for after its present, so every
//! frame's work has finished before the next is recorded.
//!
//! Prints `frames frame_us X present_us Y`: the medians of the frame time (acquire to the fence) and of
//! the `vkQueuePresentKHR` call, for comparing runs with and without frame capture (never for assertions).
//! The checksum is of the options only.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use ash::vk;

use super::draw::Target;
use super::program::{push_bytes, FullscreenProgram};
use super::record_bench::median;
use super::Outcome;
use crate::context::{begin_command_buffer, Context, Fnv1a, Owned, VkResultExt, WAIT_TIMEOUT_NS};
use crate::{shaders, Options, SurfaceKind};

/// The pixel whose fragment makes the NaN in the bad frame.
pub const BAD_PIXEL: [u32; 2] = [200, 150];
/// The rectangle that flashes with `--flash`: x0, y0, x1, y1 (exclusive).
pub const FLASH_RECT: [u32; 4] = [160, 120, 320, 240];

/// libxcb, loaded at run time.
struct Xcb {
    _lib: libloading::Library,
    connection: *mut c_void,
    window: u32,
    destroy_window: unsafe extern "C" fn(*mut c_void, u32) -> u32,
    flush: unsafe extern "C" fn(*mut c_void) -> c_int,
    disconnect: unsafe extern "C" fn(*mut c_void),
}

/// The start of `xcb_screen_t` (xcb/xproto.h), as far as a window needs.
#[repr(C)]
struct XcbScreen {
    root: u32,
    default_colormap: u32,
    white_pixel: u32,
    black_pixel: u32,
    current_input_masks: u32,
    width_in_pixels: u16,
    height_in_pixels: u16,
    width_in_millimeters: u16,
    height_in_millimeters: u16,
    min_installed_maps: u16,
    max_installed_maps: u16,
    root_visual: u32,
}

#[repr(C)]
struct XcbScreenIterator {
    data: *const XcbScreen,
    rem: c_int,
    index: c_int,
}

impl Xcb {
    /// A mapped window of `width` x `height` on the X server of `DISPLAY`.
    fn open(width: u32, height: u32) -> Result<Xcb> {
        // SAFETY: loading the system's libxcb, whose functions are called with their C signatures below.
        unsafe {
            let lib = libloading::Library::new("libxcb.so.1").context("cannot load libxcb.so.1")?;
            let connect: libloading::Symbol<
                unsafe extern "C" fn(*const c_char, *mut c_int) -> *mut c_void,
            > = lib.get(b"xcb_connect\0")?;
            let has_error: libloading::Symbol<unsafe extern "C" fn(*mut c_void) -> c_int> =
                lib.get(b"xcb_connection_has_error\0")?;
            let get_setup: libloading::Symbol<unsafe extern "C" fn(*mut c_void) -> *const c_void> =
                lib.get(b"xcb_get_setup\0")?;
            let roots: libloading::Symbol<
                unsafe extern "C" fn(*const c_void) -> XcbScreenIterator,
            > = lib.get(b"xcb_setup_roots_iterator\0")?;
            let generate_id: libloading::Symbol<unsafe extern "C" fn(*mut c_void) -> u32> =
                lib.get(b"xcb_generate_id\0")?;
            #[allow(clippy::type_complexity)]
            let create_window: libloading::Symbol<
                unsafe extern "C" fn(
                    *mut c_void,
                    u8,
                    u32,
                    u32,
                    i16,
                    i16,
                    u16,
                    u16,
                    u16,
                    u16,
                    u32,
                    u32,
                    *const c_void,
                ) -> u32,
            > = lib.get(b"xcb_create_window\0")?;
            let map_window: libloading::Symbol<unsafe extern "C" fn(*mut c_void, u32) -> u32> =
                lib.get(b"xcb_map_window\0")?;
            let destroy_window =
                *lib.get::<unsafe extern "C" fn(*mut c_void, u32) -> u32>(b"xcb_destroy_window\0")?;
            let flush = *lib.get::<unsafe extern "C" fn(*mut c_void) -> c_int>(b"xcb_flush\0")?;
            let disconnect = *lib.get::<unsafe extern "C" fn(*mut c_void)>(b"xcb_disconnect\0")?;

            let connection = connect(std::ptr::null(), std::ptr::null_mut());
            if connection.is_null() || has_error(connection) != 0 {
                if !connection.is_null() {
                    disconnect(connection);
                }
                bail!("cannot connect to the X server of DISPLAY");
            }
            let screen = roots(get_setup(connection)).data;
            if screen.is_null() {
                disconnect(connection);
                bail!("the X server has no screen");
            }
            let window = generate_id(connection);
            const COPY_FROM_PARENT: u8 = 0;
            const INPUT_OUTPUT: u16 = 1;
            create_window(
                connection,
                COPY_FROM_PARENT,
                window,
                (*screen).root,
                0,
                0,
                width as u16,
                height as u16,
                0,
                INPUT_OUTPUT,
                (*screen).root_visual,
                0,
                std::ptr::null(),
            );
            map_window(connection, window);
            flush(connection);
            Ok(Xcb {
                connection,
                window,
                destroy_window,
                flush,
                disconnect,
                _lib: lib,
            })
        }
    }
}

impl Drop for Xcb {
    fn drop(&mut self) {
        // SAFETY: the window and connection made in `open`, destroyed once.
        unsafe {
            (self.destroy_window)(self.connection, self.window);
            (self.flush)(self.connection);
            (self.disconnect)(self.connection);
        }
    }
}

/// The surface and swapchain, destroyed (after the device is idle) when dropped, on every way out.
struct Presenter<'a> {
    cx: &'a Context,
    surface_fns: ash::khr::surface::Instance,
    swapchain_fns: ash::khr::swapchain::Device,
    surface: vk::SurfaceKHR,
    swapchain: vk::SwapchainKHR,
    views: Vec<vk::ImageView>,
    framebuffers: Vec<vk::Framebuffer>,
    _window: Option<Xcb>,
}

impl Drop for Presenter<'_> {
    fn drop(&mut self) {
        // SAFETY: the app's own objects; nothing uses them once the device is idle.
        unsafe {
            let _ = self.cx.device.device_wait_idle();
            for &f in &self.framebuffers {
                self.cx.device.destroy_framebuffer(f, None);
            }
            for &v in &self.views {
                self.cx.device.destroy_image_view(v, None);
            }
            if self.swapchain != vk::SwapchainKHR::null() {
                self.swapchain_fns.destroy_swapchain(self.swapchain, None);
            }
            self.surface_fns.destroy_surface(self.surface, None);
        }
    }
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let opts = options.frames;
    let Some(kind) = cx.surface else {
        return Ok(Outcome::Skipped(
            "no surface: the instance has neither VK_EXT_headless_surface nor VK_KHR_xcb_surface with DISPLAY set"
                .into(),
        ));
    };
    if !cx.features.swapchain {
        return Ok(Outcome::Skipped(
            "the device has no VK_KHR_swapchain".into(),
        ));
    }
    let d = &cx.device;
    let surface_fns = ash::khr::surface::Instance::new(&cx.entry, &cx.instance);
    let (surface, window) = match kind {
        SurfaceKind::Headless => {
            let fns = ash::ext::headless_surface::Instance::new(&cx.entry, &cx.instance);
            let info = vk::HeadlessSurfaceCreateInfoEXT::default();
            let surface = unsafe { fns.create_headless_surface(&info, None) }
                .vk_context("vkCreateHeadlessSurfaceEXT")?;
            (surface, None)
        }
        SurfaceKind::Xcb => {
            let window = Xcb::open(opts.width, opts.height)?;
            let fns = ash::khr::xcb_surface::Instance::new(&cx.entry, &cx.instance);
            let info = vk::XcbSurfaceCreateInfoKHR::default()
                .connection(window.connection)
                .window(window.window);
            let surface = unsafe { fns.create_xcb_surface(&info, None) }
                .vk_context("vkCreateXcbSurfaceKHR")?;
            (surface, Some(window))
        }
    };
    let mut presenter = Presenter {
        cx,
        surface_fns: surface_fns.clone(),
        swapchain_fns: ash::khr::swapchain::Device::new(&cx.instance, d),
        surface,
        swapchain: vk::SwapchainKHR::null(),
        views: Vec::new(),
        framebuffers: Vec::new(),
        _window: window,
    };
    let supported = unsafe {
        surface_fns.get_physical_device_surface_support(
            cx.physical_device,
            cx.queue_family,
            surface,
        )
    }
    .vk_context("vkGetPhysicalDeviceSurfaceSupportKHR")?;
    if !supported {
        return Ok(Outcome::Skipped(format!(
            "queue family {} cannot present to the {kind:?} surface",
            cx.queue_family
        )));
    }
    let caps = unsafe {
        surface_fns.get_physical_device_surface_capabilities(cx.physical_device, surface)
    }
    .vk_context("vkGetPhysicalDeviceSurfaceCapabilitiesKHR")?;
    let formats =
        unsafe { surface_fns.get_physical_device_surface_formats(cx.physical_device, surface) }
            .vk_context("vkGetPhysicalDeviceSurfaceFormatsKHR")?;
    let modes = unsafe {
        surface_fns.get_physical_device_surface_present_modes(cx.physical_device, surface)
    }
    .vk_context("vkGetPhysicalDeviceSurfacePresentModesKHR")?;
    let format = formats
        .iter()
        .find(|f| f.format == vk::Format::B8G8R8A8_UNORM)
        .or_else(|| formats.first())
        .copied()
        .context("the surface has no format")?;
    // Not tied to a display's refresh where the surface allows it: frames as fast as the GPU makes them.
    let mode = [vk::PresentModeKHR::IMMEDIATE, vk::PresentModeKHR::MAILBOX]
        .into_iter()
        .find(|m| modes.contains(m))
        .unwrap_or(vk::PresentModeKHR::FIFO);
    let extent = if caps.current_extent.width == u32::MAX {
        vk::Extent2D {
            width: opts
                .width
                .clamp(caps.min_image_extent.width, caps.max_image_extent.width),
            height: opts
                .height
                .clamp(caps.min_image_extent.height, caps.max_image_extent.height),
        }
    } else {
        caps.current_extent
    };
    let image_count = if caps.max_image_count == 0 {
        caps.min_image_count + 1
    } else {
        (caps.min_image_count + 1).min(caps.max_image_count)
    };
    let info = vk::SwapchainCreateInfoKHR::default()
        .surface(surface)
        .min_image_count(image_count)
        .image_format(format.format)
        .image_color_space(format.color_space)
        .image_extent(extent)
        .image_array_layers(1)
        .image_usage(vk::ImageUsageFlags::COLOR_ATTACHMENT)
        .image_sharing_mode(vk::SharingMode::EXCLUSIVE)
        .pre_transform(caps.current_transform)
        .composite_alpha(vk::CompositeAlphaFlagsKHR::OPAQUE)
        .present_mode(mode)
        .clipped(true);
    presenter.swapchain = unsafe { presenter.swapchain_fns.create_swapchain(&info, None) }
        .vk_context("vkCreateSwapchainKHR")?;
    let swapchain = presenter.swapchain;
    let images = unsafe { presenter.swapchain_fns.get_swapchain_images(swapchain) }
        .vk_context("vkGetSwapchainImagesKHR")?;
    for &image in &images {
        let info = vk::ImageViewCreateInfo::default()
            .image(image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(format.format)
            .subresource_range(vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: 1,
            });
        let view = unsafe { d.create_image_view(&info, None) }.vk_context("vkCreateImageView")?;
        presenter.views.push(view);
    }
    eprintln!(
        "bb-testapp: frames: {} frames of {}x{} {:?} ({kind:?} surface, {mode:?}, {} images); frame {} {}",
        opts.count,
        extent.width,
        extent.height,
        format.format,
        images.len(),
        opts.bad_frame,
        if opts.flash {
            format!("flashes {FLASH_RECT:?}")
        } else {
            format!("has a NaN at pixel {BAD_PIXEL:?}")
        }
    );

    let render_pass = present_render_pass(cx, format.format)?;
    for i in 0..presenter.views.len() {
        let views = [presenter.views[i]];
        let info = vk::FramebufferCreateInfo::default()
            .render_pass(render_pass)
            .attachments(&views)
            .width(extent.width)
            .height(extent.height)
            .layers(1);
        let fb = unsafe { d.create_framebuffer(&info, None) }.vk_context("vkCreateFramebuffer")?;
        presenter.framebuffers.push(fb);
    }
    let framebuffers = presenter.framebuffers.clone();
    let program = FullscreenProgram::new(
        cx,
        Target::RenderPass(render_pass),
        shaders::FRAMES_FRAG,
        48,
        &[],
        c"frames-scene",
    )?;
    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::TRANSIENT)?;
    let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
    let fence = cx.create_fence()?;
    let acquired = cx.create_semaphore()?;
    // One per image: a present's wait is known done only once its image is acquired again.
    let rendered = images
        .iter()
        .map(|_| cx.create_semaphore())
        .collect::<Result<Vec<_>>>()?;

    let (mut frame_ns, mut present_ns) = (Vec::new(), Vec::new());
    for frame in 1..=opts.count {
        let start = Instant::now();
        let (index, _) = unsafe {
            presenter.swapchain_fns.acquire_next_image(
                swapchain,
                WAIT_TIMEOUT_NS,
                acquired,
                vk::Fence::null(),
            )
        }
        .vk_context("vkAcquireNextImageKHR")?;
        unsafe { d.reset_command_pool(pool, vk::CommandPoolResetFlags::empty()) }
            .vk_context("vkResetCommandPool")?;
        begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
        label(cx, cmd, c"frame");
        let clear = [vk::ClearValue {
            color: vk::ClearColorValue {
                float32: [0.0, 0.0, 0.0, 1.0],
            },
        }];
        let begin = vk::RenderPassBeginInfo::default()
            .render_pass(render_pass)
            .framebuffer(framebuffers[index as usize])
            .render_area(vk::Rect2D {
                offset: vk::Offset2D::default(),
                extent,
            })
            .clear_values(&clear);
        unsafe { d.cmd_begin_render_pass(cmd, &begin, vk::SubpassContents::INLINE) };
        label(cx, cmd, c"scene");
        let push = push_bytes(&[
            frame,
            opts.bad_frame,
            u32::from(opts.flash),
            0,
            BAD_PIXEL[0],
            BAD_PIXEL[1],
            extent.width,
            extent.height,
            FLASH_RECT[0],
            FLASH_RECT[1],
            FLASH_RECT[2],
            FLASH_RECT[3],
        ]);
        program.record(d, cmd, extent, &push);
        end_label(cx, cmd);
        unsafe { d.cmd_end_render_pass(cmd) };
        end_label(cx, cmd);
        unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;

        let waits = [acquired];
        let stages = [vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT];
        let cmds = [cmd];
        let signals = [rendered[index as usize]];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&waits)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&cmds)
            .signal_semaphores(&signals);
        unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")?;
        let swapchains = [swapchain];
        let indices = [index];
        let present = vk::PresentInfoKHR::default()
            .wait_semaphores(&signals)
            .swapchains(&swapchains)
            .image_indices(&indices);
        let presenting = Instant::now();
        match unsafe {
            presenter
                .swapchain_fns
                .queue_present(cx.queues[0], &present)
        } {
            Ok(_) | Err(vk::Result::ERROR_OUT_OF_DATE_KHR) => {}
            Err(e) => return Err(e).vk_context("vkQueuePresentKHR"),
        }
        present_ns.push(presenting.elapsed().as_nanos());
        cx.wait_fence(fence)?;
        unsafe { d.reset_fences(&[fence]) }.vk_context("vkResetFences")?;
        frame_ns.push(start.elapsed().as_nanos());
    }
    let us = |ns: u128| ns as f64 / 1000.0;
    println!(
        "frames frame_us {:.1} present_us {:.1}",
        us(median(frame_ns)),
        us(median(present_ns))
    );
    drop(presenter);

    let sum = Fnv1a::new()
        .update(&opts.count.to_le_bytes())
        .update(&opts.bad_frame.to_le_bytes())
        .update(&[u8::from(opts.flash)])
        .update(&extent.width.to_le_bytes())
        .update(&extent.height.to_le_bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}

/// A debug label around what follows, where VK_EXT_debug_utils is on.
fn label(cx: &Context, cmd: vk::CommandBuffer, name: &CStr) {
    if let Some(utils) = &cx.debug_utils {
        let label = vk::DebugUtilsLabelEXT::default().label_name(name);
        unsafe { utils.cmd_begin_debug_utils_label(cmd, &label) };
    }
}

fn end_label(cx: &Context, cmd: vk::CommandBuffer) {
    if let Some(utils) = &cx.debug_utils {
        unsafe { utils.cmd_end_debug_utils_label(cmd) };
    }
}

/// A render pass drawing into a swapchain image: cleared, stored, ending in PRESENT_SRC_KHR.
fn present_render_pass(cx: &Context, format: vk::Format) -> Result<vk::RenderPass> {
    let attachments = [vk::AttachmentDescription::default()
        .format(format)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
        .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
        .final_layout(vk::ImageLayout::PRESENT_SRC_KHR)];
    let color_refs = [vk::AttachmentReference {
        attachment: 0,
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    }];
    let subpasses = [vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&color_refs)];
    // The acquire semaphore is waited for at COLOR_ATTACHMENT_OUTPUT: the layout transition waits there too.
    let dependencies = [vk::SubpassDependency::default()
        .src_subpass(vk::SUBPASS_EXTERNAL)
        .dst_subpass(0)
        .src_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
        .src_access_mask(vk::AccessFlags::empty())
        .dst_stage_mask(vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT)
        .dst_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)];
    let info = vk::RenderPassCreateInfo::default()
        .attachments(&attachments)
        .subpasses(&subpasses)
        .dependencies(&dependencies);
    let render_pass =
        unsafe { cx.device.create_render_pass(&info, None) }.vk_context("vkCreateRenderPass")?;
    cx.own(Owned::RenderPass(render_pass));
    Ok(render_pass)
}
