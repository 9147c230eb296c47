//! One-frame flash detection (`VK_BLACKBOX_FLASH=on`): the GPU pass that cuts each presented image into a
//! grid of mean luminances and their change since the previous frame ([`FlashPipeline`], `flash.comp`),
//! and the test the layer runs on those grids a frame later ([`detect`]).
//!
//! A flash at frame F is a cell whose luminance jumps by [`THRESHOLD`] or more from frame F-1 to F and
//! jumps back by as much from F to F+1, ending within half the threshold of where it started: a change that
//! lasts exactly one frame. A scene cut (a jump that stays) or a fade (small steps) is not one.

use ash::vk;

use crate::device::Device;

/// The detection grid: columns and rows (16:9, so a 1920x1080 image has cells of 60x60 pixels).
pub const GRID: [u32; 2] = [32, 18];
/// Cells in the grid.
pub const CELLS: usize = (GRID[0] * GRID[1]) as usize;
/// The jump in a cell's mean luminance (0 to 1) that counts as a flash.
pub const THRESHOLD: f32 = 0.25;
/// Words of one frame's grid in the grid buffer: the luminances, then their changes.
pub const GRID_WORDS: usize = 2 * CELLS;

/// The flash pass's SPIR-V (`flash.comp`, built by `build.rs`).
const SPIRV: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/flash.comp.spv"));

/// The push constants of `flash.comp`, in its order.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Push {
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// The texel layout's code ([`super::image::Texels::shader_code`]).
    pub format: u32,
    /// Grid columns.
    pub cells_x: u32,
    /// Grid rows.
    pub cells_y: u32,
    /// Word offset of this frame's grid in the grid buffer.
    pub grid: u32,
    /// Word offset of the previous frame's grid.
    pub previous: u32,
    /// 1 when `previous` holds the frame just before (else the changes read 0).
    pub has_previous: u32,
}

impl Push {
    /// As the bytes `vkCmdPushConstants` takes.
    pub fn bytes(&self) -> [u8; 32] {
        let words = [
            self.width,
            self.height,
            self.format,
            self.cells_x,
            self.cells_y,
            self.grid,
            self.previous,
            self.has_previous,
        ];
        let mut out = [0u8; 32];
        for (chunk, w) in out.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// The flash pass's pipeline and layouts, one per device.
pub struct FlashPipeline {
    /// Two storage buffers: the copied image (binding 0), the grids (binding 1).
    pub set_layout: vk::DescriptorSetLayout,
    /// The set and [`Push`].
    pub layout: vk::PipelineLayout,
    /// The compute pipeline.
    pub pipeline: vk::Pipeline,
}

impl FlashPipeline {
    /// Creates the pipeline on `device`, through the next layer (so Blackbox does not instrument it).
    pub fn new(device: &Device) -> Result<Self, String> {
        let n = &device.next;
        let missing = |what: &str| format!("{what} is missing");
        let create_set_layout = n
            .create_descriptor_set_layout
            .ok_or_else(|| missing("vkCreateDescriptorSetLayout"))?;
        let create_layout = n
            .create_pipeline_layout
            .ok_or_else(|| missing("vkCreatePipelineLayout"))?;
        let create_module = n
            .create_shader_module
            .ok_or_else(|| missing("vkCreateShaderModule"))?;
        let create_pipelines = n
            .create_compute_pipelines
            .ok_or_else(|| missing("vkCreateComputePipelines"))?;
        let bindings = [0, 1].map(|binding| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(binding)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        });
        let mut this = FlashPipeline {
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
        };
        let result = (|| {
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
            // SAFETY: a live device, valid create info.
            check("vkCreateDescriptorSetLayout", unsafe {
                create_set_layout(device.handle, &info, std::ptr::null(), &mut this.set_layout)
            })?;
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .size(std::mem::size_of::<Push>() as u32)];
            let layouts = [this.set_layout];
            let info = vk::PipelineLayoutCreateInfo::default()
                .set_layouts(&layouts)
                .push_constant_ranges(&ranges);
            // SAFETY: as above.
            check("vkCreatePipelineLayout", unsafe {
                create_layout(device.handle, &info, std::ptr::null(), &mut this.layout)
            })?;
            let words: Vec<u32> = SPIRV
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let info = vk::ShaderModuleCreateInfo::default().code(&words);
            let mut module = vk::ShaderModule::null();
            // SAFETY: valid SPIR-V (glslang's, checked by the build).
            check("vkCreateShaderModule", unsafe {
                create_module(device.handle, &info, std::ptr::null(), &mut module)
            })?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            let info = vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(this.layout);
            // SAFETY: valid create info; one pipeline written.
            let result = unsafe {
                create_pipelines(
                    device.handle,
                    vk::PipelineCache::null(),
                    1,
                    &info,
                    std::ptr::null(),
                    &mut this.pipeline,
                )
            };
            if let Some(destroy) = n.destroy_shader_module {
                // SAFETY: the module is no longer needed once the pipeline is made.
                unsafe { destroy(device.handle, module, std::ptr::null()) };
            }
            check("vkCreateComputePipelines", result)
        })();
        match result {
            Ok(()) => Ok(this),
            Err(e) => {
                this.destroy(device);
                Err(e)
            }
        }
    }

    /// Destroys what [`FlashPipeline::new`] made (null handles are ignored).
    pub fn destroy(&self, device: &Device) {
        let n = &device.next;
        // SAFETY: the layer's own objects, no longer used by pending work (the caller's contract).
        unsafe {
            if let Some(destroy) = n.destroy_pipeline {
                destroy(device.handle, self.pipeline, std::ptr::null());
            }
            if let Some(destroy) = n.destroy_pipeline_layout {
                destroy(device.handle, self.layout, std::ptr::null());
            }
            if let Some(destroy) = n.destroy_descriptor_set_layout {
                destroy(device.handle, self.set_layout, std::ptr::null());
            }
        }
    }
}

fn check(what: &str, result: vk::Result) -> Result<(), String> {
    if result == vk::Result::SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {result:?}"))
    }
}

/// One frame's grid as read back.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The frame.
    pub frame: u64,
    /// Mean luminance per cell, row by row.
    pub luminance: Vec<f32>,
    /// Change since the frame before, per cell (0 where there was none to compare with).
    pub change: Vec<f32>,
    /// The frame before was compared with (the changes mean something).
    pub compared: bool,
}

impl Grid {
    /// The largest change of a cell, with its sign.
    pub fn largest_change(&self) -> f32 {
        self.change.iter().copied().fold(
            0.0f32,
            |best, c| if c.abs() > best.abs() { c } else { best },
        )
    }
}

/// A one-frame flash.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The frame that flashed.
    pub frame: u64,
    /// The region, in pixels: `[x0, y0, x1, y1)`, the bounding box of the cells that flashed.
    pub region: [u32; 4],
    /// Mean luminance of those cells before, during and after.
    pub luminance: [f32; 3],
}

/// Whether the frame of `during` flashed: `after` is the next frame's grid; `width` x `height` is the image.
pub fn detect(during: &Grid, after: &Grid, width: u32, height: u32) -> Option<Found> {
    if !during.compared || !after.compared || after.frame != during.frame + 1 {
        return None;
    }
    let flashed: Vec<usize> = (0..CELLS.min(during.change.len()).min(after.change.len()))
        .filter(|&c| {
            let (jump, back) = (during.change[c], after.change[c]);
            jump.abs() >= THRESHOLD
                && back.abs() >= THRESHOLD
                && jump.signum() != back.signum()
                && (jump + back).abs() <= THRESHOLD / 2.0
        })
        .collect();
    if flashed.is_empty() {
        return None;
    }
    let [columns, rows] = GRID;
    let (mut x0, mut y0, mut x1, mut y1) = (u32::MAX, u32::MAX, 0, 0);
    let mut sums = [0.0f32; 3];
    for &c in &flashed {
        let (cx, cy) = (c as u32 % columns, c as u32 / columns);
        x0 = x0.min(cx * width / columns);
        x1 = x1.max((cx + 1) * width / columns);
        y0 = y0.min(cy * height / rows);
        y1 = y1.max((cy + 1) * height / rows);
        let now = during.luminance[c];
        sums[0] += now - during.change[c];
        sums[1] += now;
        sums[2] += after.luminance[c];
    }
    let n = flashed.len() as f32;
    Some(Found {
        frame: during.frame,
        region: [x0, y0, x1, y1],
        luminance: sums.map(|s| s / n),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grids of a 640x360 image whose luminance is `base` everywhere, and `bright` in cells 3-4 of row 2
    /// for the frames listed.
    fn frames(base: f32, bright: f32, lit: &[u64], count: u64) -> Vec<Grid> {
        let mut out: Vec<Grid> = Vec::new();
        for frame in 1..=count {
            let luminance: Vec<f32> = (0..CELLS)
                .map(|c| {
                    let in_region = c / 32 == 2 && (3..=4).contains(&(c % 32));
                    if in_region && lit.contains(&frame) {
                        bright
                    } else {
                        base
                    }
                })
                .collect();
            let change = match out.last() {
                Some(prev) => luminance
                    .iter()
                    .zip(&prev.luminance)
                    .map(|(a, b)| a - b)
                    .collect(),
                None => vec![0.0; CELLS],
            };
            out.push(Grid {
                frame,
                luminance,
                change,
                compared: frame > 1,
            });
        }
        out
    }

    #[test]
    fn one_bright_frame_is_a_flash_with_its_region() {
        let g = frames(0.2, 1.0, &[5], 8);
        let found: Vec<Found> = g
            .windows(2)
            .filter_map(|w| detect(&w[0], &w[1], 640, 360))
            .collect();
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].frame, 5);
        assert_eq!(found[0].region, [60, 40, 100, 60]);
        let [before, during, after] = found[0].luminance;
        assert!(
            (before - 0.2).abs() < 1e-6
                && (during - 1.0).abs() < 1e-6
                && (after - 0.2).abs() < 1e-6
        );
        assert!((g[4].largest_change() - 0.8).abs() < 1e-6);
        assert!((g[5].largest_change() + 0.8).abs() < 1e-6);
    }

    #[test]
    fn a_dark_flash_counts_too() {
        let g = frames(0.9, 0.1, &[3], 5);
        let found: Vec<u64> = g
            .windows(2)
            .filter_map(|w| detect(&w[0], &w[1], 640, 360))
            .map(|f| f.frame)
            .collect();
        assert_eq!(found, vec![3]);
    }

    #[test]
    fn cuts_two_frame_flashes_and_small_changes_are_not_flashes() {
        // A cut: bright from frame 4 on. Two bright frames. A change under the threshold.
        for g in [
            frames(0.2, 1.0, &[4, 5, 6, 7, 8], 8),
            frames(0.2, 1.0, &[4, 5], 8),
            frames(0.2, 0.4, &[4], 8),
        ] {
            assert!(g
                .windows(2)
                .all(|w| detect(&w[0], &w[1], 640, 360).is_none()));
        }
        // Not consecutive, or not compared: nothing to say.
        let g = frames(0.2, 1.0, &[5], 8);
        assert_eq!(detect(&g[4], &g[6], 640, 360), None);
        let mut first = g[4].clone();
        first.compared = false;
        assert_eq!(detect(&first, &g[5], 640, 360), None);
    }

    #[test]
    fn push_constants_match_the_shader_block() {
        let push = Push {
            width: 1,
            height: 2,
            format: 3,
            cells_x: 4,
            cells_y: 5,
            grid: 6,
            previous: 7,
            has_previous: 8,
        };
        let bytes = push.bytes();
        assert_eq!(bytes.len(), std::mem::size_of::<Push>());
        assert_eq!(&bytes[28..32], &8u32.to_le_bytes());
    }
}
