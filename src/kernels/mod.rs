//! The built-in kernel library.
//!
//! Each constructor returns a [`KernelSpec`]: entry name, contract, fixed grid and block, and
//! the code for each backend (a host function for the software device; PTX for CUDA where
//! present). Every parameter a kernel needs is encoded in its constant bytes, so a kernel can
//! be rebuilt from a trace (entry name + constants + binding lengths) on any backend.
//!
//! Host implementations follow the GPU kernels' arithmetic exactly for integer kernels, so
//! outputs are bit-identical across backends; float kernels state their tolerance.

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod cuda;
#[cfg_attr(not(feature = "cuda"), allow(unused_imports))]
pub(crate) use cuda::{
    COLLECT_ENTRY, MARK_ENTRY, SLOWED_SUFFIX, TIME_NODE_WORDS, TIME_RING, TIMED_SUFFIX,
};
mod host;

use crate::{Access, BindingContract, KernelContract};

/// One kernel binding as a host implementation sees it: a raw byte range.
#[derive(Clone, Copy, Debug)]
pub struct HostBinding {
    /// First byte (host memory of the software device).
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
}

/// Everything a host kernel implementation receives for one launch.
#[derive(Debug)]
pub struct HostLaunch<'a> {
    /// Entry name.
    pub entry: &'a str,
    /// Grid dimensions in blocks.
    pub grid: [u32; 3],
    /// Block dimensions in threads.
    pub block: [u32; 3],
    /// Constant bytes (little-endian, packed).
    pub constants: &'a [u8],
    /// One binding per argument; contract-checked before the launch.
    pub bindings: &'a [HostBinding],
}

/// A host implementation: runs the whole grid. `Err` is a kernel error of known extent.
pub type HostKernelFn = fn(&HostLaunch<'_>) -> Result<(), String>;

/// Code of a kernel for each backend.
#[derive(Clone, Debug, Default)]
pub struct KernelCode {
    /// Host implementation (software device and NPU simulator).
    pub host: Option<HostKernelFn>,
    /// PTX text whose entry point is the spec's entry name (CUDA).
    pub ptx: Option<std::sync::Arc<str>>,
    /// A test of a regression gate (`hrx-trace replay --inject-slowdown`): the kernel runs
    /// about this many percent longer, as if it did that much more work; 0 (the default)
    /// runs it as built. The software device spins that share of the host implementation's
    /// own time after it; CUDA launches a slowed build of a built-in kernel in which each block
    /// stays resident that share of its own time more (the launch's overhead is not
    /// stretched). Outputs are unchanged.
    ///
    /// Loading fails (`Error::Unsupported`) for code given as PTX (CUDA has no hrx source to
    /// slow) and on HIP and the NPU.
    pub slowdown_percent: u32,
}

/// A loadable kernel: entry, contract, fixed launch dimensions and code.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    /// Entry point name, also the built-in library's lookup key.
    pub entry: String,
    /// Argument contract, including the constant bytes.
    pub contract: KernelContract,
    /// Grid dimensions in blocks.
    pub grid: [u32; 3],
    /// Block dimensions in threads.
    pub block: [u32; 3],
    /// Backend code.
    pub code: KernelCode,
}

/// An NPU kernel specification: like [`KernelSpec`], plus the memory-bank group of each
/// argument (XRT's `kernel.group_id(arg)`).
#[derive(Clone, Debug)]
pub struct NpuKernelSpec {
    /// Kernel name inside the NPU program.
    pub name: String,
    /// Argument contract.
    pub contract: KernelContract,
    /// Memory-bank group of each argument, in argument order.
    pub groups: Vec<u32>,
    /// Instruction stream (opaque; the simulator ignores it).
    pub instructions: Vec<u8>,
    /// Host implementation used by the NPU simulator.
    pub host: Option<HostKernelFn>,
}

/// Entry names of every built-in kernel, in library order. [`builtin_code`] finds each.
pub fn builtin_entries() -> &'static [&'static str] {
    host::ENTRIES
}

/// Code of a built-in kernel by entry name (replay uses this on another backend).
pub fn builtin_code(entry: &str) -> Option<KernelCode> {
    host::lookup(entry).map(|host| KernelCode {
        host: Some(host),
        ..KernelCode::default()
    })
}

/// CUDA C source of a built-in kernel by entry name (the CUDA backend compiles it with NVRTC
/// when the spec carries no PTX). Its signature follows the CUDA backend's parameter ABI: one
/// device pointer per binding, in order, then one 32-bit parameter per constant word.
pub fn cuda_source(entry: &str) -> Option<&'static str> {
    cuda::lookup(entry).map(|s| s.source)
}

/// A built-in kernel's CUDA source with its self-timing entry and the collector
/// ([`cuda::instrumented`]), and with `slowed` its slowed entry too
/// ([`KernelCode::slowdown_percent`]): what the CUDA backend compiles. HIP compiles
/// [`cuda_source`].
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn cuda_instrumented_source(entry: &str, slowed: bool) -> Option<String> {
    cuda::lookup(entry).and_then(|s| cuda::instrumented(s, slowed))
}

/// Whether a kernel's PTX (as a trace stores it) has the self-timing entry of this build's
/// layout, so that a traced CUDA runtime times it without CUPTI
/// ([`crate::RuntimeOptions::builtin_kernel_times`]).
pub fn declares_timed_entry(ptx: &[u8]) -> bool {
    cuda::declares_timed_entry(ptx)
}

/// Parameter counts `(bindings, constant words)` of a built-in kernel's CUDA source.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn cuda_parameters(entry: &str) -> Option<(usize, usize)> {
    cuda::lookup(entry).map(|s| (s.bindings, s.words))
}

/// Little-endian packing of kernel constants.
#[derive(Default)]
pub struct Constants(Vec<u8>);

impl Constants {
    /// Appends a `u32`.
    pub fn u32(mut self, value: u32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    /// Appends an `f32`.
    pub fn f32(mut self, value: f32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }
    /// The packed bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

/// Reads constant `index` (4-byte word) as `u32`.
pub(crate) fn const_u32(constants: &[u8], index: usize) -> Result<u32, String> {
    constants
        .get(index * 4..index * 4 + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| format!("constant word {index} missing ({} bytes)", constants.len()))
}

/// Reads constant `index` (4-byte word) as `f32`.
pub(crate) fn const_f32(constants: &[u8], index: usize) -> Result<f32, String> {
    const_u32(constants, index).map(f32::from_bits)
}

const BLOCK_1D: u32 = 256;
const TILE_2D: u32 = 16;

/// `value` as a constant word.
///
/// # Panics
/// If `value` does not fit in a `u32` (the kernels' constants are 32-bit words).
fn word(value: usize, what: &str) -> u32 {
    u32::try_from(value)
        .unwrap_or_else(|_| panic!("{what} = {value} does not fit in a u32 constant"))
}

/// Ceiling division of a launch extent into blocks, at least one block.
fn blocks(extent: usize, per_block: u32) -> u32 {
    word(extent, "launch extent").div_ceil(per_block).max(1)
}

fn grid_1d(n: usize) -> [u32; 3] {
    [blocks(n, BLOCK_1D), 1, 1]
}

fn grid_2d(width: usize, height: usize) -> [u32; 3] {
    [blocks(width, TILE_2D), blocks(height, TILE_2D), 1]
}

fn contract(bindings: Vec<BindingContract>, constants: Constants) -> KernelContract {
    KernelContract {
        bindings,
        constants: constants.into_bytes(),
    }
}

fn spec_with(
    entry: &str,
    bindings: Vec<BindingContract>,
    constants: Constants,
    grid: [u32; 3],
    block: [u32; 3],
) -> KernelSpec {
    KernelSpec {
        entry: entry.to_string(),
        contract: contract(bindings, constants),
        grid,
        block,
        code: builtin_code(entry).unwrap_or_default(),
    }
}

/// A 1D kernel over `n` elements: block `[256, 1, 1]`, grid `[ceil(n / 256), 1, 1]`.
fn spec(entry: &str, bindings: Vec<BindingContract>, constants: Constants, n: usize) -> KernelSpec {
    spec_with(entry, bindings, constants, grid_1d(n), [BLOCK_1D, 1, 1])
}

/// A 2D image kernel over `width x height` pixels: block `[16, 16, 1]`,
/// grid `[ceil(width / 16), ceil(height / 16), 1]`. Constants are `[width, height]`.
fn spec_2d(entry: &str, bindings: Vec<BindingContract>, width: usize, height: usize) -> KernelSpec {
    let constants = Constants::default()
        .u32(word(width, "width"))
        .u32(word(height, "height"));
    spec_with(
        entry,
        bindings,
        constants,
        grid_2d(width, height),
        [TILE_2D, TILE_2D, 1],
    )
}

/// Pixel count `width * height` of an image.
///
/// # Panics
/// If the product overflows `usize`.
fn pixels(width: usize, height: usize) -> usize {
    width
        .checked_mul(height)
        .unwrap_or_else(|| panic!("image {width}x{height} overflows usize"))
}

/// `n * size` bytes.
///
/// # Panics
/// If the product overflows `usize`.
fn bytes(n: usize, size: usize) -> usize {
    n.checked_mul(size)
        .unwrap_or_else(|| panic!("{n} elements of {size} bytes overflow usize"))
}

/// `y[i] = a * x[i] + y[i]` for `n` `f32`s. Bindings: `x` (read), `y` (read-write).
/// Bit-identical on every backend (one fused-free multiply-add per element, IEEE f32).
///
/// Constants: `[n: u32, a: f32]`.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn saxpy(n: usize, a: f32) -> KernelSpec {
    spec(
        "hrx_saxpy",
        vec![
            BindingContract::new(Access::Read, bytes(n, 4), 4),
            BindingContract::new(Access::ReadWrite, bytes(n, 4), 4),
        ],
        Constants::default().u32(word(n, "n")).f32(a),
        n,
    )
}

/// `out[i] = start + i * step` (wrapping `u32` arithmetic) for `i < n`. Entry `hrx_iota`.
///
/// Bindings: `out` (write, `u32`, `n` elements, 4-aligned).
/// Constants: `[n: u32, start: u32, step: u32]`.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn iota(n: usize, start: u32, step: u32) -> KernelSpec {
    spec(
        "hrx_iota",
        vec![BindingContract::new(Access::Write, bytes(n, 4), 4)],
        Constants::default().u32(word(n, "n")).u32(start).u32(step),
        n,
    )
}

/// `out[i] = value` for `i < n`. Entry `hrx_fill_u32`.
///
/// Bindings: `out` (write, `u32`, `n` elements, 4-aligned).
/// Constants: `[n: u32, value: u32]`.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn fill_u32(n: usize, value: u32) -> KernelSpec {
    spec(
        "hrx_fill_u32",
        vec![BindingContract::new(Access::Write, bytes(n, 4), 4)],
        Constants::default().u32(word(n, "n")).u32(value),
        n,
    )
}

/// `out[0] = sum(input[0..n])` in a fixed, documented order. Entry `hrx_reduce_sum`.
///
/// Bindings: `input` (read, `f32`, `n` elements, 4-aligned), `out` (write, `f32`, 1 element,
/// 4-aligned). Constants: `[n: u32]`.
///
/// Summation order (IEEE-754 binary32, round-to-nearest-even, no fused operations), which a
/// CUDA kernel reproduces bit for bit:
/// 1. Block `b` (of `ceil(n / 256)`) loads its 256 slots `s[t] = input[256 * b + t]`, or `+0.0`
///    where `256 * b + t >= n`.
/// 2. For `stride` in `128, 64, 32, 16, 8, 4, 2, 1`: for every `t < stride`,
///    `s[t] = s[t] + s[t + stride]` (the classic shared-memory tree; left operand is the lower
///    slot). The block partial is `s[0]`.
/// 3. `acc = +0.0`; for each block `b` in increasing order, `acc = acc + partial[b]`;
///    `out[0] = acc`. With `n = 0` the result is `+0.0`.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn reduce_sum(n: usize) -> KernelSpec {
    spec(
        "hrx_reduce_sum",
        vec![
            BindingContract::new(Access::Read, bytes(n, 4), 4),
            BindingContract::new(Access::Write, 4, 4),
        ],
        Constants::default().u32(word(n, "n")),
        n,
    )
}

/// RGB8 to 8-bit luma. Entry `hrx_rgb_to_gray`.
///
/// Bindings: `rgb` (read, `u8`, `width * height * 3` bytes, interleaved `R, G, B` per pixel,
/// row-major), `gray` (write, `u8`, `width * height` bytes).
/// Constants: `[width: u32, height: u32]`.
/// Arithmetic (exact integers): `gray = (77 * R + 150 * G + 29 * B + 128) >> 8`.
///
/// # Panics
/// If `width` or `height` does not fit in a `u32`, or the byte count overflows `usize`.
pub fn rgb_to_gray(width: usize, height: usize) -> KernelSpec {
    let n = pixels(width, height);
    spec_2d(
        "hrx_rgb_to_gray",
        vec![
            BindingContract::new(Access::Read, bytes(n, 3), 1),
            BindingContract::new(Access::Write, n, 1),
        ],
        width,
        height,
    )
}

/// Horizontal pass of a 5-tap binomial (Gaussian) blur. Entry `hrx_blur_h`.
///
/// Bindings: `input` (read, `u8`, `width * height` bytes, row-major), `out` (write, `u8`,
/// `width * height` bytes). Constants: `[width: u32, height: u32]`.
/// Arithmetic (exact integers), with clamp-to-edge sampling
/// `p(i) = input[y][clamp(i, 0, width - 1)]`:
/// `out[y][x] = (p(x-2) + 4 p(x-1) + 6 p(x) + 4 p(x+1) + p(x+2) + 8) >> 4`.
///
/// # Panics
/// If `width` or `height` does not fit in a `u32`, or the pixel count overflows `usize`.
pub fn blur_horizontal(width: usize, height: usize) -> KernelSpec {
    gray_to_gray("hrx_blur_h", width, height)
}

/// Vertical pass of a 5-tap binomial (Gaussian) blur. Entry `hrx_blur_v`.
///
/// Bindings: `input` (read, `u8`, `width * height` bytes, row-major), `out` (write, `u8`,
/// `width * height` bytes). Constants: `[width: u32, height: u32]`.
/// Arithmetic (exact integers), with clamp-to-edge sampling
/// `p(j) = input[clamp(j, 0, height - 1)][x]`:
/// `out[y][x] = (p(y-2) + 4 p(y-1) + 6 p(y) + 4 p(y+1) + p(y+2) + 8) >> 4`.
///
/// # Panics
/// If `width` or `height` does not fit in a `u32`, or the pixel count overflows `usize`.
pub fn blur_vertical(width: usize, height: usize) -> KernelSpec {
    gray_to_gray("hrx_blur_v", width, height)
}

/// Sobel gradient magnitude. Entry `hrx_sobel`.
///
/// Bindings: `input` (read, `u8`, `width * height` bytes, row-major), `out` (write, `u8`,
/// `width * height` bytes). Constants: `[width: u32, height: u32]`.
/// Arithmetic (exact integers), with clamp-to-edge sampling
/// `p(dx, dy) = input[clamp(y + dy, 0, height - 1)][clamp(x + dx, 0, width - 1)]`:
/// - `gx = (p(1,-1) + 2 p(1,0) + p(1,1)) - (p(-1,-1) + 2 p(-1,0) + p(-1,1))`
/// - `gy = (p(-1,1) + 2 p(0,1) + p(1,1)) - (p(-1,-1) + 2 p(0,-1) + p(1,-1))`
/// - `out = min(255, isqrt(gx * gx + gy * gy))`, `isqrt(m)` the largest `k` with `k * k <= m`.
///
/// (`gx * gx + gy * gy <= 2 * 1020^2 < 2^24`, so a GPU kernel may also use
/// `floor(sqrtf((float)m))`, which is exact in that range.)
///
/// # Panics
/// If `width` or `height` does not fit in a `u32`, or the pixel count overflows `usize`.
pub fn sobel(width: usize, height: usize) -> KernelSpec {
    gray_to_gray("hrx_sobel", width, height)
}

fn gray_to_gray(entry: &str, width: usize, height: usize) -> KernelSpec {
    let n = pixels(width, height);
    spec_2d(
        entry,
        vec![
            BindingContract::new(Access::Read, n, 1),
            BindingContract::new(Access::Write, n, 1),
        ],
        width,
        height,
    )
}

/// Accumulating 256-bin histogram of `n` bytes. Entry `hrx_histogram256`.
///
/// Bindings: `input` (read, `u8`, `n` bytes), `hist` (read-write, `u32`, 256 elements,
/// 4-aligned). Constants: `[n: u32]`.
/// Arithmetic: `hist[input[i]] += 1` (wrapping `u32`) for every `i < n`. The kernel adds to the
/// existing counts; fill `hist` with zeros first (e.g. [`fill_u32`]) for a fresh histogram.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn histogram256(n: usize) -> KernelSpec {
    spec(
        "hrx_histogram256",
        vec![
            BindingContract::new(Access::Read, n, 1),
            BindingContract::new(Access::ReadWrite, 256 * 4, 4),
        ],
        Constants::default().u32(word(n, "n")),
        n,
    )
}

/// Binary threshold of `n` bytes. Entry `hrx_threshold`.
///
/// Bindings: `input` (read, `u8`, `n` bytes), `out` (write, `u8`, `n` bytes).
/// Constants: `[n: u32, level: u32]` (`level <= 255`; larger values are rejected by the host
/// implementation). Arithmetic: `out[i] = if input[i] >= level { 255 } else { 0 }`.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn threshold(n: usize, level: u8) -> KernelSpec {
    spec(
        "hrx_threshold",
        vec![
            BindingContract::new(Access::Read, n, 1),
            BindingContract::new(Access::Write, n, 1),
        ],
        Constants::default().u32(word(n, "n")).u32(u32::from(level)),
        n,
    )
}

/// NPU version of [`threshold`]: same bindings, constants and arithmetic. Name
/// `hrx_npu_threshold`; `input` lives in memory-bank group 0 and `out` in group 1. The
/// instruction stream is a fixed tag the simulator ignores; the host implementation is the
/// threshold kernel's.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn npu_threshold(n: usize, level: u8) -> NpuKernelSpec {
    NpuKernelSpec {
        name: "hrx_npu_threshold".to_string(),
        contract: threshold(n, level).contract,
        groups: vec![0, 1],
        instructions: b"hrx-sim-npu:threshold".to_vec(),
        host: host::lookup("hrx_npu_threshold"),
    }
}

/// A kernel that always fails, for fault tests. Entry `hrx_fail`.
///
/// Bindings: `out` (write, `u8`, `n` bytes). Constants: `[n: u32]`.
/// Behaviour: writes `0xEE` to `out[0..n / 2]`, then returns the kernel error
/// `"hrx_fail: deliberate kernel error"`. After the failure the contents of `out` are
/// undefined (a backend may have written any part of it); callers must not rely on them.
///
/// # Panics
/// If `n` does not fit in a `u32`.
pub fn fail_kernel(n: usize) -> KernelSpec {
    spec(
        "hrx_fail",
        vec![BindingContract::new(Access::Write, n, 1)],
        Constants::default().u32(word(n, "n")),
        n,
    )
}
