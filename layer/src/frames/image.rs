//! A presented image as the frame report saves it: the copied texels turned into RGB, the reported pixels
//! and regions marked, written as PNG. Pure: no Vulkan, unit-tested below.
//!
//! Marks are magenta (255, 0, 255) and leave what they point at visible: a pixel gets a ring around it
//! whose inside (a radius of [`RING_INNER`] pixels) is untouched, a region gets a rectangle just outside
//! its edges.

use ash::vk;

/// The magenta of every mark.
pub const MARK: [u8; 3] = [255, 0, 255];
/// Pixels closer than this to a marked pixel are left as they are, so the pixel itself can be seen.
pub const RING_INNER: i64 = 4;
/// The ring's outer radius.
pub const RING_OUTER: i64 = 7;

/// How the texels of a swapchain format lie in a 32-bit word, for the formats frame capture reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Texels {
    /// R, G, B, A bytes in memory order (`R8G8B8A8_*`, `A8B8G8R8_*_PACK32`).
    Rgba8,
    /// B, G, R, A bytes in memory order (`B8G8R8A8_*`).
    Bgra8,
    /// R in bits 0-9, G 10-19, B 20-29 (`A2B10G10R10_UNORM_PACK32`).
    A2b10g10r10,
    /// B in bits 0-9, G 10-19, R 20-29 (`A2R10G10B10_UNORM_PACK32`).
    A2r10g10b10,
}

impl Texels {
    /// The layout of `format`, if frame capture reads it (4-byte colour formats shown as they are
    /// stored: sRGB formats hold encoded values already, which is what the screen shows).
    pub fn of(format: vk::Format) -> Option<Texels> {
        Some(match format {
            vk::Format::R8G8B8A8_UNORM
            | vk::Format::R8G8B8A8_SRGB
            | vk::Format::A8B8G8R8_UNORM_PACK32
            | vk::Format::A8B8G8R8_SRGB_PACK32 => Texels::Rgba8,
            vk::Format::B8G8R8A8_UNORM | vk::Format::B8G8R8A8_SRGB => Texels::Bgra8,
            vk::Format::A2B10G10R10_UNORM_PACK32 => Texels::A2b10g10r10,
            vk::Format::A2R10G10B10_UNORM_PACK32 => Texels::A2r10g10b10,
            _ => return None,
        })
    }

    /// The number the flash shader's push constants give this layout (`flash.comp`'s `format`).
    pub fn shader_code(self) -> u32 {
        match self {
            Texels::Rgba8 => 0,
            Texels::Bgra8 => 1,
            Texels::A2b10g10r10 => 2,
            Texels::A2r10g10b10 => 3,
        }
    }

    /// One texel as 8-bit RGB.
    pub fn rgb(self, word: u32) -> [u8; 3] {
        let byte = |shift: u32| (word >> shift) as u8;
        let ten = |shift: u32| ((word >> shift) & 0x3ff) as u16;
        let eight = |v: u16| ((u32::from(v) * 255 + 511) / 1023) as u8;
        match self {
            Texels::Rgba8 => [byte(0), byte(8), byte(16)],
            Texels::Bgra8 => [byte(16), byte(8), byte(0)],
            Texels::A2b10g10r10 => [eight(ten(0)), eight(ten(10)), eight(ten(20))],
            Texels::A2r10g10b10 => [eight(ten(20)), eight(ten(10)), eight(ten(0))],
        }
    }
}

/// An RGB picture.
pub struct Picture {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Rows top to bottom, 3 bytes a pixel.
    pub rgb: Vec<u8>,
}

impl Picture {
    /// The picture of `width` x `height` tightly packed texels of layout `texels`.
    pub fn from_texels(words: &[u32], width: u32, height: u32, texels: Texels) -> Picture {
        let count = (width as usize * height as usize).min(words.len());
        let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
        for &w in &words[..count] {
            rgb.extend_from_slice(&texels.rgb(w));
        }
        rgb.resize(width as usize * height as usize * 3, 0);
        Picture { width, height, rgb }
    }

    /// The pixel at (x, y).
    pub fn get(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    fn set(&mut self, x: i64, y: i64, color: [u8; 3]) {
        if x < 0 || y < 0 || x >= i64::from(self.width) || y >= i64::from(self.height) {
            return;
        }
        let i = (y as usize * self.width as usize + x as usize) * 3;
        self.rgb[i..i + 3].copy_from_slice(&color);
    }

    /// A magenta ring around (x, y): the pixels between [`RING_INNER`] and [`RING_OUTER`] away.
    pub fn mark_pixel(&mut self, x: u32, y: u32) {
        let (cx, cy) = (i64::from(x), i64::from(y));
        for dy in -RING_OUTER..=RING_OUTER {
            for dx in -RING_OUTER..=RING_OUTER {
                let d2 = dx * dx + dy * dy;
                if (RING_INNER * RING_INNER..=RING_OUTER * RING_OUTER).contains(&d2) {
                    self.set(cx + dx, cy + dy, MARK);
                }
            }
        }
    }

    /// A magenta rectangle, 2 pixels wide, just outside the region `[x0, y0, x1, y1)`.
    pub fn mark_region(&mut self, [x0, y0, x1, y1]: [u32; 4]) {
        let (x0, y0, x1, y1) = (
            i64::from(x0) - 2,
            i64::from(y0) - 2,
            i64::from(x1) + 1,
            i64::from(y1) + 1,
        );
        for x in x0..=x1 {
            for t in 0..2 {
                self.set(x, y0 + t, MARK);
                self.set(x, y1 - t, MARK);
            }
        }
        for y in y0..=y1 {
            for t in 0..2 {
                self.set(x0 + t, y, MARK);
                self.set(x1 - t, y, MARK);
            }
        }
    }

    /// The picture as a PNG file (8-bit RGB, default compression).
    pub fn png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header()?;
            writer.write_image_data(&self.rgb)?;
            writer.finish()?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texel_layouts() {
        // Memory bytes 10, 20, 30, 255 as one little-endian word.
        let word = u32::from_le_bytes([10, 20, 30, 255]);
        assert_eq!(Texels::Rgba8.rgb(word), [10, 20, 30]);
        assert_eq!(Texels::Bgra8.rgb(word), [30, 20, 10]);
        let ten = 1023 | (512 << 10) | (3 << 30);
        assert_eq!(Texels::A2b10g10r10.rgb(ten), [255, 128, 0]);
        assert_eq!(Texels::A2r10g10b10.rgb(ten), [0, 128, 255]);
        assert_eq!(Texels::of(vk::Format::B8G8R8A8_SRGB), Some(Texels::Bgra8));
        assert_eq!(Texels::of(vk::Format::R16G16B16A16_SFLOAT), None);
    }

    #[test]
    fn a_marked_pixel_stays_visible_inside_its_ring() {
        let mut p = Picture::from_texels(&vec![0; 64 * 48], 64, 48, Texels::Rgba8);
        p.mark_pixel(20, 30);
        assert_eq!(p.get(20, 30), [0, 0, 0]);
        assert_eq!(p.get(22, 30), [0, 0, 0]);
        assert_eq!(p.get(25, 30), MARK);
        assert_eq!(p.get(20, 23), MARK);
        assert_eq!(p.get(20, 38), [0, 0, 0]);
        // The ring's centre is the pixel.
        let (mut sx, mut sy, mut n) = (0u64, 0u64, 0u64);
        for y in 0..48 {
            for x in 0..64 {
                if p.get(x, y) == MARK {
                    sx += u64::from(x);
                    sy += u64::from(y);
                    n += 1;
                }
            }
        }
        assert_eq!((sx / n, sy / n), (20, 30));
        // At an edge, the ring is cut, never out of bounds.
        p.mark_pixel(0, 0);
        p.mark_pixel(63, 47);
    }

    #[test]
    fn a_region_is_outlined_outside_its_edges() {
        let mut p = Picture::from_texels(&vec![0; 32 * 32], 32, 32, Texels::Rgba8);
        p.mark_region([8, 8, 16, 12]);
        for (x, y) in [(8, 8), (15, 11), (12, 10)] {
            assert_eq!(p.get(x, y), [0, 0, 0], "({x}, {y}) is inside");
        }
        for (x, y) in [(7, 8), (6, 8), (16, 11), (12, 7), (12, 12), (12, 13)] {
            assert_eq!(p.get(x, y), MARK, "({x}, {y}) is the outline");
        }
    }

    #[test]
    fn png_round_trip() {
        let words: Vec<u32> = (0..16 * 8)
            .map(|i| u32::from_le_bytes([i as u8, 2 * i as u8, 3, 255]))
            .collect();
        let p = Picture::from_texels(&words, 16, 8, Texels::Bgra8);
        let bytes = p.png().expect("encoded");
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut buf).expect("a frame");
        assert_eq!((info.width, info.height), (16, 8));
        assert_eq!(&buf[..info.buffer_size()], &p.rgb[..]);
        assert_eq!(p.get(5, 0), [3, 10, 5]);
    }
}
