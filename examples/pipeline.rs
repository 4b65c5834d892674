//! Edge detection over real photographs with several frames in flight.
//!
//! ```text
//! cargo run --release -p hrx --example pipeline -- [--input DIR_OR_FILE] [--frames N]
//!     [--out DIR] [--in-flight N] [--threshold LEVEL]
//! ```
//!
//! - `--input`: a JPEG/PNG file, or a directory whose `*.jpg`, `*.jpeg` and `*.png` files
//!   are taken in name order (default `/usr/share/backgrounds/mate/nature`).
//! - `--frames N`: how many frames to run (default: one per image); with more frames than
//!   images the images repeat in order.
//! - `--out DIR`: where the edge images go, as `NNNN-NAME.png` (default
//!   `target/pipeline-out`).
//! - `--in-flight N`: frames in flight (default 3); `--threshold LEVEL` the edge level
//!   (default 64).
//!
//! The pipeline is built for one frame size, the first image's. Every other image is scaled
//! and centre-cropped to that size (`resize_to_fill`, aspect ratio kept), so one ring of
//! frame contexts serves the whole run and frames keep overlapping across the Upload,
//! Compute, Download and NPU queues. Images are decoded lazily while earlier frames are
//! on the device.
//!
//! The runtime comes from `RuntimeOptions::default()`, so `HRX_BACKEND` and `HRX_TRACE`
//! apply (`hrx-trace record -- target/release/examples/pipeline` traces it). Errors print
//! one line and exit with status 1.

use hrx::{Runtime, RuntimeOptions};
use hrx_workloads::{Frame, FrameOutput, Pipeline, PipelineOptions};
use image::imageops::FilterType;
use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const DEFAULT_INPUT: &str = "/usr/share/backgrounds/mate/nature";
const DEFAULT_OUT: &str = "target/pipeline-out";
const USAGE: &str = "usage: pipeline [--input DIR_OR_FILE] [--frames N] [--out DIR] [--in-flight N] [--threshold LEVEL]";

struct Args {
    input: PathBuf,
    frames: Option<usize>,
    out: PathBuf,
    options: PipelineOptions,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        input: PathBuf::from(DEFAULT_INPUT),
        frames: None,
        out: PathBuf::from(DEFAULT_OUT),
        options: PipelineOptions::default(),
    };
    let mut raw = std::env::args_os().skip(1);
    while let Some(flag) = raw.next() {
        let flag = flag.to_string_lossy().into_owned();
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        // `--flag=value` or `--flag value`.
        let (name, inline) = match flag.split_once('=') {
            Some((name, value)) => (name.to_string(), Some(value.into())),
            None => (flag.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| raw.next())
                .ok_or_else(|| format!("{name} needs a value ({USAGE})"))
        };
        let number = |text: std::ffi::OsString, what: &str| {
            text.to_str()
                .and_then(|t| t.parse::<usize>().ok())
                .ok_or_else(|| format!("{what}: expected a non-negative integer, got {text:?}"))
        };
        match name.as_str() {
            "--input" | "-i" => args.input = value()?.into(),
            "--out" | "-o" => args.out = value()?.into(),
            "--frames" | "-n" => args.frames = Some(number(value()?, "--frames")?),
            "--in-flight" => args.options.frames_in_flight = number(value()?, "--in-flight")?,
            "--threshold" => {
                let level = number(value()?, "--threshold")?;
                args.options.threshold = u8::try_from(level)
                    .map_err(|_| format!("--threshold: {level} is above 255"))?;
            }
            other => return Err(format!("unknown argument {other:?} ({USAGE})")),
        }
    }
    Ok(Some(args))
}

/// The images to process: the file itself, or the directory's images in name order.
fn list_images(input: &Path) -> Result<Vec<PathBuf>, String> {
    let images = hrx_workloads::image_files(input)
        .map_err(|e| format!("cannot read {}: {e}", input.display()))?;
    if images.is_empty() {
        return Err(format!(
            "no .jpg, .jpeg or .png images found in {}",
            input.display()
        ));
    }
    Ok(images)
}

fn decode(path: &Path) -> Result<image::DynamicImage, String> {
    image::ImageReader::open(path)
        .and_then(|reader| reader.with_guessed_format())
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?
        .decode()
        .map_err(|e| format!("cannot decode {}: {e}", path.display()))
}

/// Decodes `path` as an RGB8 frame of exactly `width x height` (scaled and centre-cropped
/// when its size differs). Returns the frame and the original size.
fn load_frame(path: &Path, width: usize, height: usize) -> Result<(Frame, (u32, u32)), String> {
    let image = decode(path)?;
    let original = (image.width(), image.height());
    let (w, h) = (width as u32, height as u32);
    let image = if original == (w, h) {
        image
    } else {
        image.resize_to_fill(w, h, FilterType::Triangle)
    };
    let frame = Frame {
        width,
        height,
        rgb: image.to_rgb8().into_raw(),
    };
    Ok((frame, original))
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn run() -> Result<(), String> {
    let Some(args) = parse_args()? else {
        println!("{USAGE}");
        return Ok(());
    };
    let images = list_images(&args.input)?;
    let frames = args.frames.unwrap_or(images.len());
    let first = decode(&images[0])?;
    let (width, height) = (first.width() as usize, first.height() as usize);
    drop(first);
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;

    let runtime = Runtime::new(RuntimeOptions::default())
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mut pipeline =
        Pipeline::new(&runtime, width, height, args.options).map_err(|e| e.to_string())?;
    println!(
        "{} image(s) from {}, {frames} frame(s) at {width}x{height}, {} in flight, threshold {}, device: {} ({})",
        images.len(),
        args.input.display(),
        args.options.frames_in_flight,
        args.options.threshold,
        runtime.device_info().backend,
        runtime.device_info().name,
    );

    // Shared between the frame source and the output callback.
    let failure: RefCell<Option<String>> = RefCell::new(None);
    let sources: RefCell<Vec<(String, (u32, u32))>> = RefCell::new(Vec::new());
    let decode_time = Cell::new(Duration::ZERO);
    let encode_time = Cell::new(Duration::ZERO);

    let source = (0..frames).map_while(|index| {
        let path = &images[index % images.len()];
        let started = Instant::now();
        let loaded = load_frame(path, width, height);
        decode_time.set(decode_time.get() + started.elapsed());
        match loaded {
            Ok((frame, original)) => {
                sources.borrow_mut().push((file_name(path), original));
                Some(frame)
            }
            Err(error) => {
                failure.borrow_mut().get_or_insert(error);
                None
            }
        }
    });
    let on_output = |index: usize, output: FrameOutput| {
        let (name, (ow, oh)) = sources.borrow()[index].clone();
        let stem = Path::new(&name)
            .file_stem()
            .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
        let path = args.out.join(format!("{index:04}-{stem}.png"));
        let started = Instant::now();
        let written =
            image::GrayImage::from_raw(output.width as u32, output.height as u32, output.edges)
                .ok_or_else(|| format!("frame {index}: edge image has the wrong size"))
                .and_then(|edges| {
                    edges
                        .save(&path)
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))
                });
        encode_time.set(encode_time.get() + started.elapsed());
        if let Err(error) = written {
            failure.borrow_mut().get_or_insert(error);
            return;
        }
        let pixels = (output.width * output.height) as f64;
        let edge_fraction = f64::from(
            output.histogram[usize::from(args.options.threshold)..]
                .iter()
                .sum::<u32>(),
        ) / pixels;
        let mean = output
            .histogram
            .iter()
            .enumerate()
            .map(|(v, &n)| v as f64 * f64::from(n))
            .sum::<f64>()
            / pixels;
        println!(
            "frame {index:4}  {name:<18} {ow}x{oh} -> {}x{}  edges {:5.1}%  mean gradient {mean:6.2}  -> {}",
            output.width,
            output.height,
            100.0 * edge_fraction,
            path.display()
        );
    };
    let stats = pipeline.run(source, on_output).map_err(|e| e.to_string())?;
    if let Some(error) = failure.into_inner() {
        return Err(error);
    }

    let counters = runtime.counters();
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    println!(
        "{} frame(s) in {:.3} s: {:.2} fps (decode {:.3} s, PNG {:.3} s), max {} submission(s) in flight, \
         {} frame(s) outstanding",
        stats.frames,
        stats.wall.as_secs_f64(),
        stats.fps(),
        decode_time.get().as_secs_f64(),
        encode_time.get().as_secs_f64(),
        stats.max_in_flight,
        stats.max_outstanding,
    );
    println!(
        "counters: {} submissions, {} native graphs prepared, {} copy streams, copied {:.1} MiB \
         (upload {:.1}, compute {:.1}, download {:.1}), {} visibility syncs",
        counters.submissions,
        counters.native_graphs_prepared,
        counters.copy_streams_created,
        mib(counters.copied_bytes),
        mib(counters.lane_copy_bytes[0]),
        mib(counters.lane_copy_bytes[1]),
        mib(counters.lane_copy_bytes[2]),
        counters.visibility_syncs,
    );
    println!("edge images in {}", args.out.display());
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("pipeline: error: {error}");
            ExitCode::FAILURE
        }
    }
}
