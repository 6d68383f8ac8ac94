//! Image sniffing and resizing for the read tool: the supported types (jpeg, png, gif, webp) are recognised by
//! their magic bytes, and images over 2000x2000 or 4.5 MB of base64 are scaled down and re-encoded.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use image::{DynamicImage, ImageFormat, imageops::FilterType};

pub const MAX_WIDTH: u32 = 2000;
pub const MAX_HEIGHT: u32 = 2000;
/// 4.5 MB of base64 payload, below the strictest provider limit.
pub const MAX_BASE64_BYTES: usize = 4 * 1024 * 1024 + 512 * 1024;

/// The mime type of a supported image, from its first bytes.
pub fn sniff_image_mime(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[0..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// An image ready to send.
#[derive(Debug, Clone)]
pub struct PreparedImage {
    pub data: String,
    pub mime_type: String,
    pub original_width: u32,
    pub original_height: u32,
    pub width: u32,
    pub height: u32,
    pub was_resized: bool,
}

impl PreparedImage {
    /// The note telling the model how to map coordinates back, when resized.
    pub fn dimension_note(&self) -> Option<String> {
        if !self.was_resized {
            return None;
        }
        let scale = self.original_width as f64 / self.width as f64;
        Some(format!(
            "[Image: original {}x{}, displayed at {}x{}. Multiply coordinates by {scale:.2} to map to original image.]",
            self.original_width, self.original_height, self.width, self.height
        ))
    }
}

/// Base64 of the bytes as they are (`images.autoResize` off).
pub fn base64(bytes: &[u8]) -> String {
    B64.encode(bytes)
}

fn encode(img: &DynamicImage, format: ImageFormat) -> Option<String> {
    let mut buf = std::io::Cursor::new(Vec::new());
    match format {
        ImageFormat::Jpeg => img.to_rgb8().write_to(&mut buf, format).ok()?,
        _ => img.write_to(&mut buf, format).ok()?,
    }
    Some(B64.encode(buf.into_inner()))
}

fn encode_jpeg(img: &DynamicImage, quality: u8) -> Option<String> {
    let mut buf = Vec::new();
    let enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut buf, quality);
    img.to_rgb8().write_with_encoder(enc).ok()?;
    Some(B64.encode(buf))
}

/// Fit the image within the dimension and size limits. `None` when it cannot be decoded or cannot be brought
/// under the size limit.
pub fn prepare_image(bytes: &[u8], mime_type: &str) -> Option<PreparedImage> {
    let base64 = B64.encode(bytes);
    let img = image::load_from_memory(bytes).ok()?;
    let (ow, oh) = (img.width(), img.height());
    if ow <= MAX_WIDTH && oh <= MAX_HEIGHT && base64.len() < MAX_BASE64_BYTES {
        return Some(PreparedImage {
            data: base64,
            mime_type: mime_type.to_string(),
            original_width: ow,
            original_height: oh,
            width: ow,
            height: oh,
            was_resized: false,
        });
    }
    let (mut w, mut h) = (ow, oh);
    if w > MAX_WIDTH {
        h = ((h as f64 * MAX_WIDTH as f64) / w as f64).round().max(1.0) as u32;
        w = MAX_WIDTH;
    }
    if h > MAX_HEIGHT {
        w = ((w as f64 * MAX_HEIGHT as f64) / h as f64).round().max(1.0) as u32;
        h = MAX_HEIGHT;
    }
    loop {
        let resized = img.resize_exact(w, h, FilterType::Lanczos3);
        let mut candidates: Vec<(String, &str)> = Vec::new();
        if let Some(png) = encode(&resized, ImageFormat::Png) {
            candidates.push((png, "image/png"));
        }
        for q in [80u8, 85, 70, 55, 40] {
            if let Some(jpg) = encode_jpeg(&resized, q) {
                candidates.push((jpg, "image/jpeg"));
            }
        }
        if let Some((data, mime)) = candidates
            .into_iter()
            .find(|(d, _)| d.len() < MAX_BASE64_BYTES)
        {
            return Some(PreparedImage {
                data,
                mime_type: mime.to_string(),
                original_width: ow,
                original_height: oh,
                width: w,
                height: h,
                was_resized: true,
            });
        }
        if w == 1 && h == 1 {
            return None;
        }
        let nw = if w == 1 {
            1
        } else {
            ((w as f64) * 0.75).floor().max(1.0) as u32
        };
        let nh = if h == 1 {
            1
        } else {
            ((h as f64) * 0.75).floor().max(1.0) as u32
        };
        if nw == w && nh == h {
            return None;
        }
        w = nw;
        h = nh;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_magic() {
        assert_eq!(
            sniff_image_mime(b"\x89PNG\r\n\x1a\n...."),
            Some("image/png")
        );
        assert_eq!(
            sniff_image_mime(&[0xFF, 0xD8, 0xFF, 0xE0]),
            Some("image/jpeg")
        );
        assert_eq!(sniff_image_mime(b"GIF89a..."), Some("image/gif"));
        assert_eq!(
            sniff_image_mime(b"RIFF\0\0\0\0WEBPVP8 "),
            Some("image/webp")
        );
        assert_eq!(sniff_image_mime(b"hello"), None);
    }

    #[test]
    fn large_image_is_scaled_to_limits() {
        let img = DynamicImage::new_rgb8(4000, 40);
        let mut buf = std::io::Cursor::new(Vec::new());
        img.write_to(&mut buf, ImageFormat::Png).unwrap();
        let p = prepare_image(buf.get_ref(), "image/png").unwrap();
        assert!(p.was_resized);
        assert_eq!((p.width, p.height), (2000, 20));
        assert_eq!(
            p.dimension_note().unwrap(),
            "[Image: original 4000x40, displayed at 2000x20. Multiply coordinates by 2.00 to map to original image.]"
        );
    }
}
