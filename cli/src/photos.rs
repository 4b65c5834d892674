//! Photographs for the `pipeline` and `faults` workloads, decoded into RGB8 frames of one
//! size.
//!
//! The input is a JPEG/PNG file or a directory whose `*.jpg`, `*.jpeg` and `*.png` files are
//! taken in name order; by default `/usr/share/backgrounds/mate/nature` when present, else
//! the photograph built into the binary (`cli/assets/photo.jpg`, see its README). The frame
//! size is the first photograph's, scaled down to at most `max_width` pixels wide (aspect
//! kept); every other photograph is scaled and centre-cropped to it (`resize_to_fill`),
//! as `examples/pipeline.rs` does, so one pipeline serves the whole run.
//!
//! Frames are decoded lazily, one per pipeline slot that frees up, so decoding overlaps the
//! device work of earlier frames. When the run cycles (more frames than photographs) the
//! decoded frames are kept and reused instead of decoded again.

use crate::failure::Failure;
use hrx_capture::ShowPath;
use hrx_workloads::Frame;
use image::DynamicImage;
use image::imageops::FilterType;
use std::path::{Path, PathBuf};

/// The default photo directory.
pub const DEFAULT_DIR: &str = "/usr/share/backgrounds/mate/nature";

/// The built-in photograph (`cli/assets/photo.jpg`).
const BUILT_IN: &[u8] = include_bytes!("../assets/photo.jpg");

/// Where the photographs come from.
#[derive(Debug)]
enum Source {
    Files(Vec<PathBuf>),
    BuiltIn,
}

/// A set of photographs and the frame size they are brought to.
#[derive(Debug)]
pub struct Photos {
    source: Source,
    /// Frame width in pixels.
    pub width: usize,
    /// Frame height in pixels.
    pub height: usize,
    /// Where they come from, for messages.
    pub origin: String,
    cache: Vec<Option<Frame>>,
}

impl Photos {
    /// Lists the photographs of `input` (or the default), decodes the first and fixes the
    /// frame size.
    ///
    /// # Errors
    ///
    /// [`Failure`] for a missing input, a directory without images, or a first photograph
    /// that does not decode.
    pub fn open(input: Option<&Path>, max_width: u32) -> Result<Photos, Failure> {
        let default_dir = Path::new(DEFAULT_DIR);
        let (source, origin) = match input {
            Some(path) => (Source::Files(list(path)?), path.shown().to_string()),
            None if default_dir.is_dir() => match list(default_dir) {
                Ok(files) => (Source::Files(files), DEFAULT_DIR.to_string()),
                Err(_) => (Source::BuiltIn, "the built-in photo".to_string()),
            },
            None => (Source::BuiltIn, "the built-in photo".to_string()),
        };
        if max_width == 0 {
            return Err(Failure::new("--max-width must be at least 1"));
        }
        let mut photos = Photos {
            source,
            width: 0,
            height: 0,
            origin,
            cache: Vec::new(),
        };
        let first = photos.decode(0)?;
        let (w, h) = (first.width(), first.height());
        let width = w.min(max_width);
        let height = ((u64::from(h) * u64::from(width) + u64::from(w) / 2) / u64::from(w)).max(1);
        photos.width = width as usize;
        photos.height = height as usize;
        photos.cache = vec![None; photos.len()];
        Ok(photos)
    }

    /// How many photographs there are.
    pub fn len(&self) -> usize {
        match &self.source {
            Source::Files(files) => files.len(),
            Source::BuiltIn => 1,
        }
    }

    /// Frame `index` of a run of `frames`: photograph `index % len`, at the frame size.
    ///
    /// # Errors
    ///
    /// [`Failure`] when the photograph does not decode.
    pub fn frame(&mut self, index: usize, frames: usize) -> Result<Frame, Failure> {
        let photo = index % self.len();
        if let Some(frame) = &self.cache[photo] {
            return Ok(frame.clone());
        }
        // Annotated: on the decoder thread's row of the timeline, this is why the GPU idles.
        let image = {
            let _decode = hrx::annotate::range("decode photo");
            self.decode(photo)?
        };
        let _scale = hrx::annotate::range("scale photo");
        let (w, h) = (self.width as u32, self.height as u32);
        let image = if (image.width(), image.height()) == (w, h) {
            image
        } else {
            image.resize_to_fill(w, h, FilterType::Triangle)
        };
        let frame = Frame {
            width: self.width,
            height: self.height,
            rgb: image.to_rgb8().into_raw(),
        };
        if frames > self.len() {
            self.cache[photo] = Some(frame.clone());
        }
        Ok(frame)
    }

    fn decode(&self, index: usize) -> Result<DynamicImage, Failure> {
        match &self.source {
            Source::Files(files) => {
                let path = &files[index];
                let cannot = |what: &str, e: &dyn std::fmt::Display| {
                    Failure::new(format!("cannot {what} {}: {e}", path.shown()))
                };
                let bytes = std::fs::read(path).map_err(|e| cannot("open", &e))?;
                let reader = image::ImageReader::new(std::io::Cursor::new(&bytes))
                    .with_guessed_format()
                    .map_err(|e| cannot("open", &e))?;
                // The JPEG decoder fills what a cut-short file lacks with grey and says
                // nothing; a frame of it would be recorded as if it were the photograph.
                // Checked first, so that a cut that the decoder does notice gets this
                // message too.
                if reader.format() == Some(image::ImageFormat::Jpeg) && !jpeg_is_complete(&bytes) {
                    return Err(cannot(
                        "decode",
                        &"the JPEG data ends before its end-of-image marker (the file is cut short)",
                    ));
                }
                reader.decode().map_err(|e| cannot("decode", &e))
            }
            Source::BuiltIn => {
                image::load_from_memory_with_format(BUILT_IN, image::ImageFormat::Jpeg)
                    .map_err(|e| Failure::new(format!("cannot decode the built-in photo: {e}")))
            }
        }
    }
}

/// Whether a JPEG's segments, walked from its start, reach the end-of-image marker `FF D9`
/// before the bytes run out (ITU-T T.81, annex B). Marker segments are skipped by their
/// length; in a scan's entropy-coded data a byte `FF` is followed by `00` (a stuffed `FF`),
/// a restart marker `D0`-`D7` or fill `FF`s, anything else being the next marker (B.1.1.5).
/// Only the structure is walked, so bytes after the end of the image (a trailer, another
/// file appended) do not count, and neither does an embedded thumbnail's `FF D9`, which
/// lies inside its APP1 segment. Data without the start-of-image marker is left to the
/// decoder.
fn jpeg_is_complete(bytes: &[u8]) -> bool {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return true;
    }
    let mut at = 2;
    loop {
        // A marker: `FF`s (fill), then its code. Stray bytes before it are skipped, as
        // decoders do.
        while bytes.get(at).is_some_and(|&b| b != 0xFF) {
            at += 1;
        }
        while bytes.get(at) == Some(&0xFF) {
            at += 1;
        }
        let Some(&code) = bytes.get(at) else {
            return false;
        };
        at += 1;
        match code {
            0xD9 => return true,
            // Markers without a segment: TEM, RSTn, SOI.
            0x01 | 0xD0..=0xD8 => continue,
            _ => {}
        }
        let Some(len) = bytes.get(at..at + 2) else {
            return false;
        };
        at += usize::from(u16::from_be_bytes([len[0], len[1]]));
        if code == 0xDA {
            // The scan's entropy-coded data, up to the next marker that is not a restart.
            loop {
                match bytes.get(at..at + 2) {
                    None => return false,
                    Some([0xFF, next]) if *next == 0x00 || (0xD0..=0xD7).contains(next) => {
                        at += 2;
                    }
                    Some([0xFF, 0xFF]) => at += 1,
                    Some([0xFF, _]) => break,
                    Some(_) => at += 1,
                }
            }
        }
    }
}

/// The file itself, or the directory's images in name order.
fn list(input: &Path) -> Result<Vec<PathBuf>, Failure> {
    // A device or a pipe is neither (reading it as a directory said "Not a directory").
    if std::fs::metadata(input).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        return Err(Failure::new(format!(
            "--input {}: not an image file or a directory of them",
            input.shown()
        )));
    }
    let images = hrx_workloads::image_files(input)
        .map_err(|e| Failure::new(format!("cannot read {}: {e}", input.shown())))?;
    if images.is_empty() {
        return Err(Failure::new(format!(
            "no .jpg, .jpeg or .png images in {}",
            input.shown()
        ))
        .hint("give --input a JPEG/PNG file or a directory of them"));
    }
    Ok(images)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_is_neither_an_image_nor_a_directory() {
        let error = list(Path::new("/dev/null")).unwrap_err().to_string();
        assert_eq!(
            error,
            "--input /dev/null: not an image file or a directory of them"
        );
    }

    #[test]
    fn a_cut_short_jpeg_is_refused_and_a_whole_one_with_a_trailer_is_not() {
        assert!(jpeg_is_complete(BUILT_IN));
        let dir = tempfile::tempdir().unwrap();
        let photo = |name: &str, bytes: &[u8]| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            Photos::open(Some(&path), 64)
        };
        // Cut inside the scan and just before the end-of-image marker; both decode without
        // an error from the image crate.
        for cut in [BUILT_IN.len() / 2, BUILT_IN.len() - 2] {
            assert!(!jpeg_is_complete(&BUILT_IN[..cut]));
            let error = photo("cut.jpg", &BUILT_IN[..cut]).unwrap_err().to_string();
            assert!(
                error.contains("cut.jpg") && error.contains("cut short"),
                "{error}"
            );
        }
        // Cuts all through the file (every 61st byte: each walk is linear) and every cut in
        // its last 256 bytes, down to the start-of-image marker.
        let end = BUILT_IN.len();
        for cut in (2..end).step_by(61).chain(end - 256..end) {
            assert!(!jpeg_is_complete(&BUILT_IN[..cut]), "cut at {cut}");
        }
        // Bytes after the end of the image are not part of it, whatever they hold: a
        // start-of-scan, a second JPEG cut short (a phone's trailer, a file appended).
        for trailer in [&[0u8; 16][..], &[0xFF, 0xDA, 0x00, 0x08], &BUILT_IN[..5000]] {
            let mut whole = BUILT_IN.to_vec();
            whole.extend_from_slice(trailer);
            assert!(jpeg_is_complete(&whole));
            let photos = photo("trailer.jpg", &whole).expect("trailing bytes after the end");
            assert_eq!((photos.width, photos.height), (64, 48));
        }
    }

    #[test]
    fn built_in_photo_decodes_and_scales() {
        let mut photos = Photos {
            source: Source::BuiltIn,
            width: 0,
            height: 0,
            origin: String::new(),
            cache: vec![None],
        };
        let image = photos.decode(0).expect("built-in photo");
        assert_eq!((image.width(), image.height()), (640, 481));
        photos.width = 320;
        photos.height = 240;
        let frame = photos.frame(3, 4).expect("frame");
        assert_eq!(frame.rgb.len(), 320 * 240 * 3);
        assert!(photos.cache[0].is_some(), "cycled frames are cached");
    }
}
