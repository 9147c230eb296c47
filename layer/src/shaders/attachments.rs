//! What a graphics pipeline keeps of its fragment shader's outputs: per `Location`, the components that
//! reach its colour attachment there. The NaN `outputs` checks of a fragment shader read only those
//! ([`blackbox_engine::Options::fragment_output_components`]): a component the attachment drops is no NaN
//! that reaches memory, and a check reading it keeps alive work the driver would drop.
//!
//! Where anything is not known when the pipeline is created (a write mask or blending set dynamically, a
//! render pass Blackbox did not see, libraries, attachments remapped by
//! `VkRenderingAttachmentLocationInfoKHR`), every component that could matter is kept.

use ash::vk;

use crate::raw::slice;

/// The colour attachments' formats of each subpass of a render pass (`UNDEFINED` where unused).
pub type RenderPassFormats = Vec<Vec<vk::Format>>;

/// `pub unsafe fn $name(info: &$info) -> RenderPassFormats`: the formats of a render pass create info of
/// either version (their attachments, subpasses and references have the same fields).
macro_rules! render_pass_formats_of {
    ($(#[$doc:meta])* $name:ident, $info:ty) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `info` must be the app's valid create info.
        pub unsafe fn $name(info: &$info) -> RenderPassFormats {
            // SAFETY: the app's valid arrays.
            let attachments = unsafe { slice(info.p_attachments, info.attachment_count) };
            // SAFETY: as above.
            let subpasses = unsafe { slice(info.p_subpasses, info.subpass_count) };
            let format = |a: u32| attachments.get(a as usize).map_or(vk::Format::UNDEFINED, |d| d.format);
            subpasses
                .iter()
                // SAFETY: as above.
                .map(|s| unsafe { slice(s.p_color_attachments, s.color_attachment_count) })
                .map(|refs| refs.iter().map(|r| format(r.attachment)).collect())
                .collect()
        }
    };
}

render_pass_formats_of!(
    /// The formats of `vkCreateRenderPass`.
    render_pass_formats,
    vk::RenderPassCreateInfo
);
render_pass_formats_of!(
    /// The formats of `vkCreateRenderPass2`.
    render_pass2_formats,
    vk::RenderPassCreateInfo2
);

/// The components a colour format stores, as a write mask counts them (bit 0 red ... bit 3 alpha):
/// `R8_UNORM` 1, `B10G11R11_UFLOAT_PACK32` 7, `A8_UNORM_KHR` 8; none for `UNDEFINED` (no attachment), all
/// for a format this table cannot read.
pub fn format_components(format: vk::Format) -> u8 {
    if format == vk::Format::UNDEFINED {
        return 0;
    }
    // The channels are the letters of the name's first part (`B8G8R8A8`, `E5B9G9R9`, `R10X6`): ash names
    // every format it knows, and prints a number for one it does not.
    let name = format!("{format:?}");
    let layout = name.split('_').next().unwrap_or("");
    if !layout.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return 0b1111;
    }
    let mut mask = 0;
    for c in layout.chars() {
        mask |= match c {
            'R' => 1,
            'G' => 2,
            'B' => 4,
            'A' => 8,
            'E' | 'X' => 0,
            c if c.is_ascii_digit() => 0,
            // Depth, stencil or anything else: not a colour format this table reads.
            _ => return 0b1111,
        };
    }
    if mask == 0 {
        0b1111
    } else {
        mask
    }
}

/// The components of each fragment output location that `info`'s colour attachments keep, or `None` when
/// the pipeline does not say (see the module's doc). `formats` gives the render pass's subpasses where
/// `info` names one (`None`: a render pass Blackbox has no record of).
///
/// # Safety
/// `info` must be the app's valid create info.
pub unsafe fn kept_components(
    info: &vk::GraphicsPipelineCreateInfo,
    formats: Option<&RenderPassFormats>,
) -> Option<Vec<u8>> {
    if info.flags.contains(vk::PipelineCreateFlags::LIBRARY_KHR) {
        return None;
    }
    // SAFETY: the app's valid chain, here and below.
    unsafe {
        if crate::chain::find::<vk::GraphicsPipelineLibraryCreateInfoEXT>(info.p_next).is_some()
            || crate::chain::find::<vk::PipelineLibraryCreateInfoKHR>(info.p_next).is_some()
            || crate::chain::find::<vk::RenderingAttachmentLocationInfoKHR>(info.p_next).is_some()
        {
            return None;
        }
        if let Some(flags) =
            crate::chain::find::<vk::PipelineCreateFlags2CreateInfoKHR>(info.p_next)
        {
            if (*flags)
                .flags
                .contains(vk::PipelineCreateFlags2KHR::LIBRARY)
            {
                return None;
            }
        }
    }
    let attachment_formats: Vec<vk::Format> = if info.render_pass != vk::RenderPass::null() {
        formats?.get(info.subpass as usize)?.clone()
    } else {
        // SAFETY: the app's valid chain.
        let rendering =
            unsafe { crate::chain::find::<vk::PipelineRenderingCreateInfo>(info.p_next) }?;
        // SAFETY: the struct found, valid for the call, with its array.
        let rendering = unsafe { &*rendering };
        // SAFETY: as above.
        unsafe {
            slice(
                rendering.p_color_attachment_formats,
                rendering.color_attachment_count,
            )
        }
        .to_vec()
    };
    let dynamic: &[vk::DynamicState] = if info.p_dynamic_state.is_null() {
        &[]
    } else {
        // SAFETY: the app's valid dynamic state and its array.
        unsafe {
            let d = &*info.p_dynamic_state;
            slice(d.p_dynamic_states, d.dynamic_state_count)
        }
    };
    let is_dynamic = |s: vk::DynamicState| dynamic.contains(&s);
    let write_mask_dynamic = is_dynamic(vk::DynamicState::COLOR_WRITE_MASK_EXT);
    // Blending reads the source's alpha into its colour (SRC_ALPHA factors), whatever the format keeps.
    let blend_dynamic = is_dynamic(vk::DynamicState::COLOR_BLEND_ENABLE_EXT)
        || is_dynamic(vk::DynamicState::COLOR_BLEND_EQUATION_EXT)
        || is_dynamic(vk::DynamicState::COLOR_BLEND_ADVANCED_EXT);
    let blend_attachments: &[vk::PipelineColorBlendAttachmentState] =
        if info.p_color_blend_state.is_null() {
            &[]
        } else {
            // SAFETY: the app's valid blend state and its array.
            unsafe {
                let b = &*info.p_color_blend_state;
                slice(b.p_attachments, b.attachment_count)
            }
        };
    let alpha_to_coverage = is_dynamic(vk::DynamicState::ALPHA_TO_COVERAGE_ENABLE_EXT)
        || (!info.p_multisample_state.is_null()
            // SAFETY: the app's valid multisample state.
            && unsafe { (*info.p_multisample_state).alpha_to_coverage_enable } != vk::FALSE);
    let kept = attachment_formats
        .iter()
        .enumerate()
        .map(|(location, &format)| {
            let state = blend_attachments.get(location);
            let write = match state {
                Some(s) if !write_mask_dynamic => s.color_write_mask.as_raw() as u8 & 0b1111,
                _ => 0b1111,
            };
            let blend = blend_dynamic || state.is_none_or(|s| s.blend_enable != vk::FALSE);
            let mut kept = format_components(format) & write;
            if blend && kept != 0 {
                kept |= 0b1000;
            }
            // Alpha to coverage reads location 0's alpha whatever is stored.
            if location == 0 && alpha_to_coverage {
                kept |= 0b1000;
            }
            kept
        })
        .collect();
    Some(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ash::vk::Handle;

    #[test]
    fn a_format_stores_the_components_its_name_has() {
        for (format, components) in [
            (vk::Format::UNDEFINED, 0),
            (vk::Format::R8_UNORM, 0b0001),
            (vk::Format::R16_SFLOAT, 0b0001),
            (vk::Format::R8G8_UNORM, 0b0011),
            (vk::Format::R32G32_SFLOAT, 0b0011),
            (vk::Format::B10G11R11_UFLOAT_PACK32, 0b0111),
            (vk::Format::E5B9G9R9_UFLOAT_PACK32, 0b0111),
            (vk::Format::R5G6B5_UNORM_PACK16, 0b0111),
            (vk::Format::B8G8R8A8_SRGB, 0b1111),
            (vk::Format::A2B10G10R10_UNORM_PACK32, 0b1111),
            (vk::Format::R16G16B16A16_SFLOAT, 0b1111),
            (vk::Format::A8_UNORM_KHR, 0b1000),
            (vk::Format::R10X6_UNORM_PACK16, 0b0001),
            (vk::Format::D32_SFLOAT, 0b1111),
            (vk::Format::from_raw(0x7fff_0000), 0b1111),
        ] {
            assert_eq!(format_components(format), components, "{format:?}");
        }
    }

    /// `kept_components` of a pipeline for subpass 0 of a render pass with `formats`, with `blend` states
    /// per attachment and the dynamic states `dynamic`.
    fn kept(
        formats: &[vk::Format],
        blend: &[vk::PipelineColorBlendAttachmentState],
        alpha_to_coverage: bool,
        dynamic: &[vk::DynamicState],
    ) -> Option<Vec<u8>> {
        let pass: RenderPassFormats = vec![formats.to_vec()];
        let blend_state = vk::PipelineColorBlendStateCreateInfo::default().attachments(blend);
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .alpha_to_coverage_enable(alpha_to_coverage);
        let dynamic_state = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(dynamic);
        let info = vk::GraphicsPipelineCreateInfo::default()
            .render_pass(vk::RenderPass::from_raw(1))
            .color_blend_state(&blend_state)
            .multisample_state(&multisample)
            .dynamic_state(&dynamic_state);
        // SAFETY: a valid create info built here.
        unsafe { kept_components(&info, Some(&pass)) }
    }

    fn write(mask: vk::ColorComponentFlags, blend: bool) -> vk::PipelineColorBlendAttachmentState {
        vk::PipelineColorBlendAttachmentState::default()
            .color_write_mask(mask)
            .blend_enable(blend)
    }

    #[test]
    fn a_pipeline_keeps_what_its_formats_write_masks_and_blending_keep() {
        use vk::ColorComponentFlags as C;
        use vk::Format as F;
        let all = C::RGBA;
        let formats = [F::R8_UNORM, F::R8G8B8A8_UNORM, F::UNDEFINED];
        let opaque = [write(all, false), write(all, false), write(all, false)];
        assert_eq!(kept(&formats, &opaque, false, &[]), Some(vec![1, 0xf, 0]));
        // Write masks drop components; blending reads the source's alpha into its colour.
        let masked = [
            write(all, true),
            write(C::R | C::G, false),
            write(all, false),
        ];
        assert_eq!(kept(&formats, &masked, false, &[]), Some(vec![9, 3, 0]));
        // Alpha to coverage reads location 0's alpha.
        assert_eq!(kept(&formats, &opaque, true, &[]), Some(vec![9, 0xf, 0]));
        // Set when drawing: every component the format has, and alpha for blending.
        let dynamic = [vk::DynamicState::COLOR_WRITE_MASK_EXT];
        assert_eq!(
            kept(&formats, &masked, false, &dynamic),
            Some(vec![9, 0xf, 0])
        );
        let dynamic = [vk::DynamicState::COLOR_BLEND_ENABLE_EXT];
        assert_eq!(
            kept(&formats, &opaque, false, &dynamic),
            Some(vec![9, 0xf, 0])
        );
        // No blend state for an attachment: blending may be on.
        assert_eq!(
            kept(&formats, &opaque[..1], false, &[]),
            Some(vec![1, 0xf, 0])
        );
        assert_eq!(kept(&formats[..2], &[], false, &[]), Some(vec![9, 0xf]));
    }

    #[test]
    fn a_render_pass_gives_each_subpass_its_colour_formats() {
        let attachments = [vk::Format::R8_UNORM, vk::Format::R8G8B8A8_UNORM]
            .map(|f| vk::AttachmentDescription::default().format(f));
        let refs =
            [1, vk::ATTACHMENT_UNUSED, 0].map(|a| vk::AttachmentReference::default().attachment(a));
        let subpasses = [
            vk::SubpassDescription::default().color_attachments(&refs),
            vk::SubpassDescription::default(),
        ];
        let info = vk::RenderPassCreateInfo::default()
            .attachments(&attachments)
            .subpasses(&subpasses);
        // SAFETY: a valid create info built here.
        let formats = unsafe { render_pass_formats(&info) };
        use vk::Format as F;
        assert_eq!(
            formats,
            [vec![F::R8G8B8A8_UNORM, F::UNDEFINED, F::R8_UNORM], vec![]]
        );
    }

    #[test]
    fn a_pipeline_that_does_not_say_keeps_everything() {
        let pass: RenderPassFormats = vec![vec![vk::Format::R8_UNORM]];
        let info =
            vk::GraphicsPipelineCreateInfo::default().render_pass(vk::RenderPass::from_raw(1));
        // SAFETY: valid create infos built here.
        unsafe {
            assert_eq!(
                kept_components(&info, None),
                None,
                "a render pass not recorded"
            );
            let other_subpass = info.subpass(1);
            assert_eq!(kept_components(&other_subpass, Some(&pass)), None);
            let library = info.flags(vk::PipelineCreateFlags::LIBRARY_KHR);
            assert_eq!(kept_components(&library, Some(&pass)), None);
            let mut parts = vk::GraphicsPipelineLibraryCreateInfoEXT::default();
            let part = info.push_next(&mut parts);
            assert_eq!(kept_components(&part, Some(&pass)), None);
            // Dynamic rendering without its formats: nothing to go by.
            let dynamic = vk::GraphicsPipelineCreateInfo::default();
            assert_eq!(kept_components(&dynamic, None), None);
        }
    }
}
