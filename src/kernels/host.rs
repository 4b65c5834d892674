//! Host implementations of the built-in kernels (the software device runs these).
//!
//! Each implementation runs the whole grid and reads every parameter from the launch's
//! constant words. Missing constants, out-of-range parameters and missing, short or
//! misaligned bindings are reported as `Err`, never as a panic.

use super::{HostBinding, HostKernelFn, HostLaunch, const_f32, const_u32};

/// Entry names of all built-in kernels, in library order.
pub(super) const ENTRIES: &[&str] = &[
    "hrx_saxpy",
    "hrx_iota",
    "hrx_fill_u32",
    "hrx_reduce_sum",
    "hrx_rgb_to_gray",
    "hrx_blur_h",
    "hrx_blur_v",
    "hrx_sobel",
    "hrx_histogram256",
    "hrx_threshold",
    "hrx_npu_threshold",
    "hrx_fail",
];

/// Host implementation by entry name.
pub(super) fn lookup(entry: &str) -> Option<HostKernelFn> {
    Some(match entry {
        "hrx_saxpy" => saxpy,
        "hrx_iota" => iota,
        "hrx_fill_u32" => fill_u32,
        "hrx_reduce_sum" => reduce_sum,
        "hrx_rgb_to_gray" => rgb_to_gray,
        "hrx_blur_h" => blur_h,
        "hrx_blur_v" => blur_v,
        "hrx_sobel" => sobel,
        "hrx_histogram256" => histogram256,
        "hrx_threshold" | "hrx_npu_threshold" => threshold,
        "hrx_fail" => fail,
        _ => return None,
    })
}

/// Checks that binding `index` exists and holds `count` elements of `T`.
fn binding<T>(launch: &HostLaunch<'_>, index: usize, count: usize) -> Result<HostBinding, String> {
    let entry = launch.entry;
    let binding = *launch
        .bindings
        .get(index)
        .ok_or_else(|| format!("{entry}: missing binding {index}"))?;
    let fits = count
        .checked_mul(size_of::<T>())
        .is_some_and(|bytes| bytes <= binding.len);
    if !fits {
        return Err(format!(
            "{entry}: binding {index} ({} bytes) cannot hold {count} elements of {} bytes",
            binding.len,
            size_of::<T>()
        ));
    }
    if !(binding.ptr as usize).is_multiple_of(align_of::<T>()) {
        return Err(format!(
            "{entry}: binding {index} at {:p} is not {}-byte aligned",
            binding.ptr,
            align_of::<T>()
        ));
    }
    Ok(binding)
}

/// Binding `index` as a typed slice.
///
/// # Safety
/// The launch's bindings must be valid for `len` bytes and not written concurrently by
/// anything else (the runtime's contract checks and hazard ordering guarantee this).
unsafe fn slice<'a, T>(
    launch: &HostLaunch<'a>,
    index: usize,
    count: usize,
) -> Result<&'a [T], String> {
    let binding = binding::<T>(launch, index, count)?;
    if count == 0 {
        return Ok(&[]);
    }
    // SAFETY: length and alignment checked; validity is the caller's obligation.
    Ok(unsafe { std::slice::from_raw_parts(binding.ptr as *const T, count) })
}

/// Binding `index` as a mutable typed slice.
///
/// # Safety
/// As [`slice()`], and no other live slice may overlap it.
#[allow(clippy::mut_from_ref)]
unsafe fn slice_mut<'a, T>(
    launch: &HostLaunch<'a>,
    index: usize,
    count: usize,
) -> Result<&'a mut [T], String> {
    let binding = binding::<T>(launch, index, count)?;
    if count == 0 {
        return Ok(&mut []);
    }
    // SAFETY: length and alignment checked; exclusivity is the caller's obligation.
    Ok(unsafe { std::slice::from_raw_parts_mut(binding.ptr as *mut T, count) })
}

/// Constant word `index` as `u32`, errors prefixed with the entry name.
fn word(launch: &HostLaunch<'_>, index: usize) -> Result<u32, String> {
    const_u32(launch.constants, index).map_err(|e| format!("{}: {e}", launch.entry))
}

/// Constant word `index` as `usize` (an element count).
fn count(launch: &HostLaunch<'_>, index: usize) -> Result<usize, String> {
    let value = word(launch, index)?;
    usize::try_from(value).map_err(|_| format!("{}: count {value} exceeds usize", launch.entry))
}

/// Image constants `[width, height]` and the pixel count.
fn image(launch: &HostLaunch<'_>) -> Result<(usize, usize, usize), String> {
    let (width, height) = (count(launch, 0)?, count(launch, 1)?);
    let pixels = width
        .checked_mul(height)
        .ok_or_else(|| format!("{}: image {width}x{height} overflows", launch.entry))?;
    Ok((width, height, pixels))
}

/// Bindings 0 (read) and 1 (write) as `count` bytes each.
///
/// # Safety
/// As [`slice_mut`]: binding 1 must not overlap binding 0.
unsafe fn bytes_in_out<'a>(
    launch: &HostLaunch<'a>,
    count: usize,
) -> Result<(&'a [u8], &'a mut [u8]), String> {
    // SAFETY: forwarded to the caller.
    unsafe {
        Ok((
            slice::<u8>(launch, 0, count)?,
            slice_mut::<u8>(launch, 1, count)?,
        ))
    }
}

fn saxpy(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    let a = const_f32(launch.constants, 1).map_err(|e| format!("{}: {e}", launch.entry))?;
    // SAFETY: the contract gives x (read) and y (read-write), checked not to alias.
    let (x, y) = unsafe { (slice::<f32>(launch, 0, n)?, slice_mut::<f32>(launch, 1, n)?) };
    for (y, x) in y.iter_mut().zip(x) {
        *y += a * *x; // == a * x + y exactly (IEEE addition commutes)
    }
    Ok(())
}

fn iota(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    let (start, step) = (word(launch, 1)?, word(launch, 2)?);
    // SAFETY: the contract gives out (write), the only binding.
    let out = unsafe { slice_mut::<u32>(launch, 0, n)? };
    let mut value = start;
    for o in out {
        *o = value;
        value = value.wrapping_add(step);
    }
    Ok(())
}

fn fill_u32(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    let value = word(launch, 1)?;
    // SAFETY: the contract gives out (write), the only binding.
    unsafe { slice_mut::<u32>(launch, 0, n)? }.fill(value);
    Ok(())
}

/// Slots per block of the reduction tree (the 1D block size).
const REDUCE_BLOCK: usize = 256;

fn reduce_sum(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    // SAFETY: the contract gives input (read) and out (write), checked not to alias.
    let (input, out) = unsafe { (slice::<f32>(launch, 0, n)?, slice_mut::<f32>(launch, 1, 1)?) };
    let mut acc = 0.0f32;
    for block in input.chunks(REDUCE_BLOCK) {
        let mut slots = [0.0f32; REDUCE_BLOCK];
        slots[..block.len()].copy_from_slice(block);
        let mut stride = REDUCE_BLOCK / 2;
        while stride > 0 {
            let (low, high) = slots.split_at_mut(stride);
            for (a, b) in low.iter_mut().zip(&high[..stride]) {
                *a += *b;
            }
            stride /= 2;
        }
        acc += slots[0];
    }
    out[0] = acc;
    Ok(())
}

fn rgb_to_gray(launch: &HostLaunch<'_>) -> Result<(), String> {
    let (_, _, pixels) = image(launch)?;
    let rgb_len = pixels
        .checked_mul(3)
        .ok_or_else(|| format!("{}: {pixels} RGB pixels overflow", launch.entry))?;
    // SAFETY: the contract gives rgb (read) and gray (write), checked not to alias.
    let (rgb, gray) = unsafe {
        (
            slice::<u8>(launch, 0, rgb_len)?,
            slice_mut::<u8>(launch, 1, pixels)?,
        )
    };
    for (g, p) in gray.iter_mut().zip(rgb.chunks_exact(3)) {
        let sum = 77 * u32::from(p[0]) + 150 * u32::from(p[1]) + 29 * u32::from(p[2]) + 128;
        *g = (sum >> 8) as u8;
    }
    Ok(())
}

/// `(a + 4b + 6c + 4d + e + 8) >> 4`.
#[inline(always)]
fn binomial5(a: u8, b: u8, c: u8, d: u8, e: u8) -> u8 {
    let sum = u32::from(a) + u32::from(e) + 4 * (u32::from(b) + u32::from(d)) + 6 * u32::from(c);
    ((sum + 8) >> 4) as u8
}

fn blur_h(launch: &HostLaunch<'_>) -> Result<(), String> {
    let (width, _, pixels) = image(launch)?;
    // SAFETY: the contract gives input (read) and out (write), checked not to alias.
    let (input, out) = unsafe { bytes_in_out(launch, pixels)? };
    if pixels == 0 {
        return Ok(());
    }
    let last = width - 1;
    // Interior columns `lo..hi` need no clamping; the rest (at most 4 per row) clamp.
    let lo = 2.min(width);
    let hi = width.saturating_sub(2).max(lo);
    for (src, dst) in input.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
        for (d, w) in dst[lo..hi].iter_mut().zip(src.windows(5)) {
            *d = binomial5(w[0], w[1], w[2], w[3], w[4]);
        }
        for x in (0..lo).chain(hi..width) {
            let at = |dx: isize| src[x.saturating_add_signed(dx).min(last)];
            dst[x] = binomial5(at(-2), at(-1), at(0), at(1), at(2));
        }
    }
    Ok(())
}

fn blur_v(launch: &HostLaunch<'_>) -> Result<(), String> {
    let (width, height, pixels) = image(launch)?;
    // SAFETY: the contract gives input (read) and out (write), checked not to alias.
    let (input, out) = unsafe { bytes_in_out(launch, pixels)? };
    if pixels == 0 {
        return Ok(());
    }
    let last = height - 1;
    let row = |y: usize, dy: isize| {
        let y = y.saturating_add_signed(dy).min(last);
        &input[y * width..(y + 1) * width]
    };
    for (y, dst) in out.chunks_exact_mut(width).enumerate() {
        let (a, b, c, d, e) = (row(y, -2), row(y, -1), row(y, 0), row(y, 1), row(y, 2));
        for (x, o) in dst.iter_mut().enumerate() {
            *o = binomial5(a[x], b[x], c[x], d[x], e[x]);
        }
    }
    Ok(())
}

/// Sobel magnitude from the 3x3 neighbourhood: rows `up`, `mid`, `down`, columns `l`, `c`, `r`.
#[inline(always)]
fn sobel_at(up: &[u8], mid: &[u8], down: &[u8], l: usize, c: usize, r: usize) -> u8 {
    let p = |row: &[u8], x: usize| i32::from(row[x]);
    let gx = (p(up, r) + 2 * p(mid, r) + p(down, r)) - (p(up, l) + 2 * p(mid, l) + p(down, l));
    let gy = (p(down, l) + 2 * p(down, c) + p(down, r)) - (p(up, l) + 2 * p(up, c) + p(up, r));
    // |gx|, |gy| <= 1020, so the sum of squares fits in u32 (and in 2^24).
    let m = (gx * gx + gy * gy) as u32;
    isqrt_u8(m)
}

/// `min(255, isqrt(m))`, exact: builds the root bit by bit from the top (eight steps).
#[inline(always)]
fn isqrt_u8(m: u32) -> u8 {
    let mut root = 0u32;
    for bit in (0..8).rev() {
        let candidate = root | (1 << bit);
        if candidate * candidate <= m {
            root = candidate;
        }
    }
    root as u8
}

fn sobel(launch: &HostLaunch<'_>) -> Result<(), String> {
    let (width, height, pixels) = image(launch)?;
    // SAFETY: the contract gives input (read) and out (write), checked not to alias.
    let (input, out) = unsafe { bytes_in_out(launch, pixels)? };
    if pixels == 0 {
        return Ok(());
    }
    let (last_x, last_y) = (width - 1, height - 1);
    let row = |y: usize| &input[y * width..(y + 1) * width];
    for (y, dst) in out.chunks_exact_mut(width).enumerate() {
        let (up, mid, down) = (row(y.saturating_sub(1)), row(y), row((y + 1).min(last_y)));
        // Interior columns 1..width-1 need no clamping; columns 0 and width-1 clamp.
        for (x, o) in dst.iter_mut().enumerate().take(last_x).skip(1) {
            *o = sobel_at(up, mid, down, x - 1, x, x + 1);
        }
        dst[0] = sobel_at(up, mid, down, 0, 0, 1.min(last_x));
        dst[last_x] = sobel_at(up, mid, down, last_x.saturating_sub(1), last_x, last_x);
    }
    Ok(())
}

fn histogram256(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    // SAFETY: the contract gives input (read) and hist (read-write), checked not to alias.
    let (input, hist) = unsafe {
        (
            slice::<u8>(launch, 0, n)?,
            slice_mut::<u32>(launch, 1, 256)?,
        )
    };
    let mut counts = [0u32; 256];
    for &v in input {
        counts[usize::from(v)] = counts[usize::from(v)].wrapping_add(1);
    }
    for (h, c) in hist.iter_mut().zip(counts) {
        *h = h.wrapping_add(c);
    }
    Ok(())
}

fn threshold(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    let level = word(launch, 1)?;
    let level = u8::try_from(level)
        .map_err(|_| format!("{}: threshold level {level} exceeds 255", launch.entry))?;
    // SAFETY: the contract gives input (read) and out (write), checked not to alias.
    let (input, out) = unsafe { bytes_in_out(launch, n)? };
    for (o, &v) in out.iter_mut().zip(input) {
        *o = if v >= level { 255 } else { 0 };
    }
    Ok(())
}

fn fail(launch: &HostLaunch<'_>) -> Result<(), String> {
    let n = count(launch, 0)?;
    // SAFETY: the contract gives out (write), the only binding.
    let out = unsafe { slice_mut::<u8>(launch, 0, n)? };
    out[..n / 2].fill(0xEE);
    Err("hrx_fail: deliberate kernel error".to_string())
}

#[cfg(test)]
mod tests {
    use super::super::{
        Constants, KernelSpec, blur_horizontal, blur_vertical, builtin_code, builtin_entries,
        fail_kernel, fill_u32, histogram256, iota, npu_threshold, reduce_sum, rgb_to_gray, saxpy,
        sobel, threshold,
    };
    use super::*;
    use crate::Access;

    /// Deterministic pseudo-random bytes (64-bit LCG, high bits).
    struct Lcg(u64);

    impl Lcg {
        fn next_u32(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 32) as u32
        }
        fn bytes(&mut self, n: usize) -> Vec<u8> {
            (0..n).map(|_| (self.next_u32() >> 24) as u8).collect()
        }
    }

    /// Vec<u32>-backed device memory (4-aligned buffers), one buffer per binding.
    #[derive(Default)]
    struct Mem {
        bufs: Vec<Vec<u32>>,
        lens: Vec<usize>,
    }

    impl Mem {
        fn with(buffers: &[Vec<u8>]) -> Self {
            let mut mem = Mem::default();
            for b in buffers {
                mem.push(b);
            }
            mem
        }
        fn push(&mut self, bytes: &[u8]) {
            let mut words = vec![0u32; bytes.len().div_ceil(4)];
            for (w, chunk) in words.iter_mut().zip(bytes.chunks(4)) {
                let mut b = [0u8; 4];
                b[..chunk.len()].copy_from_slice(chunk);
                *w = u32::from_ne_bytes(b);
            }
            self.bufs.push(words);
            self.lens.push(bytes.len());
        }
        /// Runs `entry`'s host implementation over all buffers with `constants`.
        fn run(&mut self, entry: &str, constants: &[u8]) -> Result<(), String> {
            self.run_with(entry, [1, 1, 1], [1, 1, 1], constants, 0)
        }
        /// As [`Mem::run`], with bindings starting `skew` bytes into each buffer.
        fn run_with(
            &mut self,
            entry: &str,
            grid: [u32; 3],
            block: [u32; 3],
            constants: &[u8],
            skew: usize,
        ) -> Result<(), String> {
            let f = lookup(entry).expect("entry has a host implementation");
            let bindings: Vec<HostBinding> = self
                .bufs
                .iter_mut()
                .zip(&self.lens)
                .map(|(buf, &len)| HostBinding {
                    ptr: buf.as_mut_ptr().cast::<u8>().wrapping_add(skew),
                    len: len.saturating_sub(skew),
                })
                .collect();
            f(&HostLaunch {
                entry,
                grid,
                block,
                constants,
                bindings: &bindings,
            })
        }
        fn bytes(&self, i: usize) -> Vec<u8> {
            let mut out: Vec<u8> = self.bufs[i].iter().flat_map(|w| w.to_ne_bytes()).collect();
            out.truncate(self.lens[i]);
            out
        }
        fn u32s(&self, i: usize) -> Vec<u32> {
            self.bufs[i][..self.lens[i] / 4].to_vec()
        }
        fn f32s(&self, i: usize) -> Vec<f32> {
            self.u32s(i).into_iter().map(f32::from_bits).collect()
        }
    }

    fn u32_bytes(values: &[u32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    fn f32_bytes(values: &[f32]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    /// Runs `spec`'s own host code over buffers of exactly the contract extents, binding `i`
    /// initialised from `init[i]` (zeros when absent).
    fn run_spec(spec: &KernelSpec, init: &[Vec<u8>]) -> (Mem, Result<(), String>) {
        let buffers: Vec<Vec<u8>> = spec
            .contract
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| match init.get(i) {
                Some(data) => {
                    assert_eq!(data.len(), b.extent_bytes, "init {i} of {}", spec.entry);
                    data.clone()
                }
                None => vec![0; b.extent_bytes],
            })
            .collect();
        let mut mem = Mem::with(&buffers);
        let f = spec.code.host.expect("built-in spec has host code");
        let bindings: Vec<HostBinding> = mem
            .bufs
            .iter_mut()
            .zip(&mem.lens)
            .map(|(buf, &len)| HostBinding {
                ptr: buf.as_mut_ptr().cast::<u8>(),
                len,
            })
            .collect();
        let result = f(&HostLaunch {
            entry: &spec.entry,
            grid: spec.grid,
            block: spec.block,
            constants: &spec.contract.constants,
            bindings: &bindings,
        });
        (mem, result)
    }

    const SIZES: &[(usize, usize)] = &[
        (1, 1),
        (7, 5),
        (2, 3),
        (3, 2),
        (4, 4),
        (5, 1),
        (1, 6),
        (16, 16),
        (17, 33),
        (40, 23),
    ];

    fn clamp(i: isize, len: usize) -> usize {
        i.clamp(0, len as isize - 1) as usize
    }

    // ---- naive references ----------------------------------------------------------------

    fn gray_ref(rgb: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in 0..rgb.len() / 3 {
            let (r, g, b) = (
                rgb[3 * p] as u32,
                rgb[3 * p + 1] as u32,
                rgb[3 * p + 2] as u32,
            );
            out.push(((77 * r + 150 * g + 29 * b + 128) / 256) as u8);
        }
        out
    }

    fn blur_ref(img: &[u8], w: usize, h: usize, horizontal: bool) -> Vec<u8> {
        let weights = [1u32, 4, 6, 4, 1];
        let mut out = vec![0u8; w * h];
        for y in 0..h {
            for x in 0..w {
                let mut sum = 0u32;
                for k in -2isize..=2 {
                    let (sx, sy) = if horizontal {
                        (clamp(x as isize + k, w), y)
                    } else {
                        (x, clamp(y as isize + k, h))
                    };
                    sum += weights[(k + 2) as usize] * img[sy * w + sx] as u32;
                }
                out[y * w + x] = ((sum + 8) / 16) as u8;
            }
        }
        out
    }

    fn isqrt_ref(m: i64) -> i64 {
        let mut k = 0;
        while (k + 1) * (k + 1) <= m {
            k += 1;
        }
        k
    }

    fn sobel_ref(img: &[u8], w: usize, h: usize) -> Vec<u8> {
        let kx = [[-1i64, 0, 1], [-2, 0, 2], [-1, 0, 1]];
        let ky = [[-1i64, -2, -1], [0, 0, 0], [1, 2, 1]];
        let mut out = vec![0u8; w * h];
        for y in 0..h {
            for x in 0..w {
                let (mut gx, mut gy) = (0i64, 0i64);
                for dy in 0..3 {
                    for dx in 0..3 {
                        let sx = clamp(x as isize + dx as isize - 1, w);
                        let sy = clamp(y as isize + dy as isize - 1, h);
                        let p = img[sy * w + sx] as i64;
                        gx += kx[dy][dx] * p;
                        gy += ky[dy][dx] * p;
                    }
                }
                out[y * w + x] = isqrt_ref(gx * gx + gy * gy).min(255) as u8;
            }
        }
        out
    }

    /// The documented order, written recursively: a 256-slot block sums as the tree of its
    /// halves added element-wise; block partials add left to right from +0.0.
    fn reduce_ref(x: &[f32]) -> f32 {
        fn tree(v: Vec<f32>) -> f32 {
            if v.len() == 1 {
                return v[0];
            }
            let half = v.len() / 2;
            tree((0..half).map(|i| v[i] + v[i + half]).collect())
        }
        let mut acc = 0.0f32;
        for start in (0..x.len()).step_by(256) {
            let block: Vec<f32> = (0..256)
                .map(|t| x.get(start + t).copied().unwrap_or(0.0))
                .collect();
            acc += tree(block);
        }
        acc
    }

    // ---- library and specs -----------------------------------------------------------------

    #[test]
    fn every_entry_is_found() {
        let entries = builtin_entries();
        assert_eq!(entries.len(), 12);
        for (i, entry) in entries.iter().enumerate() {
            assert!(entry.starts_with("hrx_"), "{entry}");
            assert!(!entries[..i].contains(entry), "duplicate {entry}");
            let code = builtin_code(entry).unwrap_or_else(|| panic!("{entry} not found"));
            assert!(code.host.is_some(), "{entry}");
        }
        assert!(builtin_code("hrx_nope").is_none());
    }

    #[test]
    fn specs_have_documented_shapes() {
        let specs = [
            saxpy(10, 2.0),
            iota(300, 1, 2),
            fill_u32(256, 7),
            reduce_sum(513),
            rgb_to_gray(33, 17),
            blur_horizontal(33, 17),
            blur_vertical(33, 17),
            sobel(33, 17),
            histogram256(1000),
            threshold(5, 9),
            fail_kernel(8),
        ];
        for spec in &specs {
            assert!(
                builtin_entries().contains(&spec.entry.as_str()),
                "{}",
                spec.entry
            );
            assert!(spec.code.host.is_some(), "{}", spec.entry);
        }
        let [sx, io, fi, rs, gr, bh, bv, so, hi, th, fa] = &specs;
        let shape = |s: &KernelSpec| {
            s.contract
                .bindings
                .iter()
                .map(|b| (b.access, b.extent_bytes, b.alignment))
                .collect::<Vec<_>>()
        };
        use Access::*;
        assert_eq!(shape(sx), [(Read, 40, 4), (ReadWrite, 40, 4)]);
        assert_eq!(shape(io), [(Write, 1200, 4)]);
        assert_eq!(
            io.contract.constants,
            Constants::default().u32(300).u32(1).u32(2).into_bytes()
        );
        assert_eq!((io.grid, io.block), ([2, 1, 1], [256, 1, 1]));
        assert_eq!(shape(fi), [(Write, 1024, 4)]);
        assert_eq!(fi.grid, [1, 1, 1]);
        assert_eq!(shape(rs), [(Read, 513 * 4, 4), (Write, 4, 4)]);
        assert_eq!(rs.grid, [3, 1, 1]);
        assert_eq!(shape(gr), [(Read, 33 * 17 * 3, 1), (Write, 33 * 17, 1)]);
        for s in [gr, bh, bv, so] {
            assert_eq!((s.grid, s.block), ([3, 2, 1], [16, 16, 1]), "{}", s.entry);
            assert_eq!(
                s.contract.constants,
                Constants::default().u32(33).u32(17).into_bytes()
            );
        }
        for s in [bh, bv, so] {
            assert_eq!(shape(s), [(Read, 561, 1), (Write, 561, 1)], "{}", s.entry);
        }
        assert_eq!(shape(hi), [(Read, 1000, 1), (ReadWrite, 1024, 4)]);
        assert_eq!(shape(th), [(Read, 5, 1), (Write, 5, 1)]);
        assert_eq!(
            th.contract.constants,
            Constants::default().u32(5).u32(9).into_bytes()
        );
        assert_eq!(shape(fa), [(Write, 8, 1)]);
        assert_eq!(reduce_sum(0).grid, [1, 1, 1]);
        assert_eq!(sobel(0, 0).grid, [1, 1, 1]);
        assert_eq!(sobel(16, 17).grid, [1, 2, 1]);

        let npu = npu_threshold(5, 9);
        assert_eq!(npu.name, "hrx_npu_threshold");
        assert_eq!(npu.contract, th.contract);
        assert_eq!(npu.groups, [0, 1]);
        assert_eq!(npu.instructions, b"hrx-sim-npu:threshold");
        assert!(npu.host.is_some());
    }

    // ---- kernels against references ---------------------------------------------------------

    #[test]
    fn saxpy_matches() {
        let x: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let y: Vec<f32> = (0..37).map(|i| 100.0 - i as f32).collect();
        let (mem, r) = run_spec(&saxpy(37, -1.5), &[f32_bytes(&x), f32_bytes(&y)]);
        r.unwrap();
        let expected: Vec<f32> = x.iter().zip(&y).map(|(x, y)| -1.5 * x + y).collect();
        assert_eq!(mem.f32s(1), expected);
    }

    #[test]
    fn iota_wraps() {
        for n in [0, 1, 7, 255, 256, 257, 1000] {
            let (mem, r) = run_spec(&iota(n, u32::MAX - 2, 3), &[]);
            r.unwrap();
            let expected: Vec<u32> = (0..n as u32)
                .map(|i| (u32::MAX as u64 - 2 + 3 * i as u64) as u32)
                .collect();
            assert_eq!(mem.u32s(0), expected, "n = {n}");
        }
        let (mem, r) = run_spec(&iota(4, 10, 0), &[]);
        r.unwrap();
        assert_eq!(mem.u32s(0), [10, 10, 10, 10]);
        let (mem, r) = run_spec(&iota(3, 5, u32::MAX), &[]);
        r.unwrap();
        assert_eq!(mem.u32s(0), [5, 4, 3]);
    }

    #[test]
    fn fill_sets_every_word() {
        for n in [0, 1, 5, 256, 300] {
            let (mem, r) = run_spec(&fill_u32(n, 0xDEAD_BEEF), &[vec![0x11; n * 4]]);
            r.unwrap();
            assert_eq!(mem.u32s(0), vec![0xDEAD_BEEF; n]);
        }
    }

    #[test]
    fn reduce_sum_matches_documented_order() {
        let mut rng = Lcg(7);
        for n in [0, 1, 2, 3, 100, 255, 256, 257, 511, 512, 1000, 4099] {
            let x: Vec<f32> = (0..n)
                .map(|_| (rng.next_u32() as f32 / u32::MAX as f32 - 0.5) * 1e4)
                .collect();
            let (mem, r) = run_spec(&reduce_sum(n), &[f32_bytes(&x), f32_bytes(&[f32::NAN])]);
            r.unwrap();
            assert_eq!(
                mem.f32s(1)[0].to_bits(),
                reduce_ref(&x).to_bits(),
                "n = {n}"
            );
        }
    }

    #[test]
    fn reduce_sum_order_by_hand() {
        const BIG: f32 = 16_777_216.0; // 2^24: BIG + 1 rounds back to BIG, BIG + 2 is exact.
        let run = |x: &[f32]| {
            let (mem, r) = run_spec(&reduce_sum(x.len()), &[f32_bytes(x), vec![0; 4]]);
            r.unwrap();
            mem.f32s(1)[0]
        };
        // Within a block, slots 1 and 3 meet first (stride 2), so their 2 survives; a
        // sequential sum would lose each 1 separately and give BIG.
        let mut x = vec![0.0f32; 256];
        (x[0], x[1], x[3]) = (BIG, 1.0, 1.0);
        assert_eq!(run(&x), BIG + 2.0);
        assert_eq!(x.iter().fold(0.0f32, |a, b| a + b), BIG);
        // Slots 0 and 128 meet at stride 128: BIG + 1 -> BIG, then slot 1's 1 is lost too.
        let mut x = vec![0.0f32; 256];
        (x[0], x[128], x[1]) = (BIG, 1.0, 1.0);
        assert_eq!(run(&x), BIG);
        // Block partials add in block order: BIG, then 1 (lost), then 1 (lost). Adding the
        // partials in any order that pairs the two 1s first would give BIG + 2.
        let mut x = vec![0.0f32; 768];
        (x[0], x[256], x[512]) = (BIG, 1.0, 1.0);
        assert_eq!(run(&x), BIG);
        // The two 1s are in blocks 0 and 1, which are summed before BIG (block 2).
        let mut x = vec![0.0f32; 768];
        (x[0], x[256], x[512]) = (1.0, 1.0, BIG);
        assert_eq!(run(&x), BIG + 2.0);
        // Empty input sums to +0.0; a lone -0.0 meets +0.0 padding and gives +0.0.
        assert_eq!(run(&[]).to_bits(), 0.0f32.to_bits());
        assert_eq!(run(&[-0.0]).to_bits(), 0.0f32.to_bits());
    }

    #[test]
    fn rgb_to_gray_matches() {
        let mut rng = Lcg(1);
        for &(w, h) in SIZES {
            let rgb = rng.bytes(w * h * 3);
            let (mem, r) = run_spec(&rgb_to_gray(w, h), std::slice::from_ref(&rgb));
            r.unwrap();
            assert_eq!(mem.bytes(1), gray_ref(&rgb), "{w}x{h}");
        }
        let rgb = [
            255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 1, 1, 1,
        ];
        let (mem, r) = run_spec(&rgb_to_gray(3, 2), &[rgb.to_vec()]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [255, 77, 149, 29, 0, 1]);
    }

    #[test]
    fn blur_matches() {
        let mut rng = Lcg(2);
        for &(w, h) in SIZES {
            let img = rng.bytes(w * h);
            let (mem, r) = run_spec(&blur_horizontal(w, h), std::slice::from_ref(&img));
            r.unwrap();
            assert_eq!(mem.bytes(1), blur_ref(&img, w, h, true), "h {w}x{h}");
            let (mem, r) = run_spec(&blur_vertical(w, h), std::slice::from_ref(&img));
            r.unwrap();
            assert_eq!(mem.bytes(1), blur_ref(&img, w, h, false), "v {w}x{h}");
        }
    }

    #[test]
    fn blur_by_hand() {
        // An impulse spreads as [1, 4, 6, 4, 1] / 16, rounded.
        let row = [0, 0, 0, 0, 255, 0, 0, 0, 0];
        let (mem, r) = run_spec(&blur_horizontal(9, 1), &[row.to_vec()]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [0, 0, 16, 64, 96, 64, 16, 0, 0]);
        let (mem, r) = run_spec(&blur_vertical(1, 9), &[row.to_vec()]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [0, 0, 16, 64, 96, 64, 16, 0, 0]);
        // Clamp to edge: an edge impulse counts 1 + 4 + 6 = 11 sixteenths at the edge itself.
        let (mem, r) = run_spec(&blur_horizontal(3, 1), &[vec![160, 0, 0]]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [110, 50, 10]);
        // A constant image stays constant.
        let (mem, r) = run_spec(&blur_vertical(4, 3), &[vec![200; 12]]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [200; 12]);
    }

    #[test]
    fn sobel_matches() {
        let mut rng = Lcg(3);
        for &(w, h) in SIZES {
            let img = rng.bytes(w * h);
            let (mem, r) = run_spec(&sobel(w, h), std::slice::from_ref(&img));
            r.unwrap();
            assert_eq!(mem.bytes(1), sobel_ref(&img, w, h), "{w}x{h}");
        }
    }

    #[test]
    fn sobel_by_hand() {
        // Vertical edge 0 -> 10 between columns 2 and 3: gx = 4 * 10 on both sides of it.
        let (w, h) = (6, 4);
        let img: Vec<u8> = (0..w * h)
            .map(|i| if i % w >= 3 { 10 } else { 0 })
            .collect();
        let (mem, r) = run_spec(&sobel(w, h), &[img]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [0, 0, 40, 40, 0, 0].repeat(h));
        // A strong edge saturates at 255.
        let img: Vec<u8> = (0..w * h)
            .map(|i| if i % w >= 3 { 255 } else { 0 })
            .collect();
        let (mem, r) = run_spec(&sobel(w, h), &[img]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [0, 0, 255, 255, 0, 0].repeat(h));
        // Single bright pixel at the centre of 3x3: corner sees gx = gy = 10 -> floor(14.14).
        let mut img = vec![0u8; 9];
        img[4] = 10;
        let (mem, r) = run_spec(&sobel(3, 3), &[img]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [14, 20, 14, 20, 0, 20, 14, 20, 14]);
        // A uniform image has no gradient, whatever its size.
        let (mem, r) = run_spec(&sobel(1, 1), &[vec![77]]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [0]);
    }

    #[test]
    fn sobel_isqrt_is_exact_over_its_range() {
        let mut k = 0u32;
        for m in 0..=2 * 1020 * 1020u32 {
            if (k + 1) * (k + 1) <= m {
                k += 1;
            }
            assert_eq!(u32::from(isqrt_u8(m)), k.min(255), "m = {m}");
        }
    }

    #[test]
    fn histogram_accumulates() {
        let data = [0u8, 1, 1, 255, 7, 7, 7, 0, 255];
        let mut start = vec![0u32; 256];
        start[7] = 100;
        start[255] = u32::MAX; // wraps
        let (mem, r) = run_spec(
            &histogram256(data.len()),
            &[data.to_vec(), u32_bytes(&start)],
        );
        r.unwrap();
        let mut expected = start.clone();
        expected[0] = 2;
        expected[1] = 2;
        expected[7] = 103;
        expected[255] = 1;
        assert_eq!(mem.u32s(1), expected);

        let mut rng = Lcg(4);
        for n in [0, 1, 255, 256, 1001] {
            let data = rng.bytes(n);
            let (mem, r) = run_spec(&histogram256(n), &[data.clone(), vec![0; 1024]]);
            r.unwrap();
            let mut expected = vec![0u32; 256];
            for &v in &data {
                expected[v as usize] += 1;
            }
            assert_eq!(mem.u32s(1), expected, "n = {n}");
            assert_eq!(mem.u32s(1).iter().sum::<u32>(), n as u32);
        }
    }

    #[test]
    fn threshold_levels() {
        let data: Vec<u8> = (0..=255).collect();
        for level in [0u8, 1, 128, 254, 255] {
            let expected: Vec<u8> = data
                .iter()
                .map(|&v| if v >= level { 255 } else { 0 })
                .collect();
            let (mem, r) = run_spec(&threshold(256, level), std::slice::from_ref(&data));
            r.unwrap();
            assert_eq!(mem.bytes(1), expected, "level {level}");
            // The NPU kernel shares the arithmetic.
            let npu = npu_threshold(256, level);
            let mut mem = Mem::with(&[data.clone(), vec![0; 256]]);
            let f = npu.host.unwrap();
            let bindings: Vec<HostBinding> = mem
                .bufs
                .iter_mut()
                .map(|b| HostBinding {
                    ptr: b.as_mut_ptr().cast(),
                    len: 256,
                })
                .collect();
            f(&HostLaunch {
                entry: &npu.name,
                grid: [1, 1, 1],
                block: [1, 1, 1],
                constants: &npu.contract.constants,
                bindings: &bindings,
            })
            .unwrap();
            assert_eq!(mem.bytes(1), expected, "npu level {level}");
        }
        let (mem, r) = run_spec(&threshold(3, 5), &[vec![4, 5, 6]]);
        r.unwrap();
        assert_eq!(mem.bytes(1), [0, 255, 255]);
        // A level word above 255 is rejected, not truncated.
        let mut mem = Mem::with(&[vec![0; 4], vec![0; 4]]);
        let err = mem
            .run(
                "hrx_threshold",
                &Constants::default().u32(4).u32(256).into_bytes(),
            )
            .unwrap_err();
        assert!(err.contains("level 256"), "{err}");
    }

    #[test]
    fn fail_writes_first_half_then_errors() {
        for n in [0, 1, 7, 8] {
            let (mem, r) = run_spec(&fail_kernel(n), &[vec![0x11; n]]);
            assert_eq!(r.unwrap_err(), "hrx_fail: deliberate kernel error");
            let mut expected = vec![0x11; n];
            expected[..n / 2].fill(0xEE);
            assert_eq!(mem.bytes(0), expected, "n = {n}");
        }
    }

    // ---- errors, never panics ---------------------------------------------------------------

    #[test]
    fn missing_constants_are_errors() {
        for entry in builtin_entries() {
            for len in [0, 3] {
                let mut mem = Mem::with(&[vec![0; 4096], vec![0; 4096], vec![0; 4096]]);
                let err = mem.run(entry, &vec![0; len]).unwrap_err();
                assert!(err.contains("constant word"), "{entry}: {err}");
                assert!(err.starts_with(entry), "{entry}: {err}");
            }
            // One word where several are needed (n = 1; the others missing).
            let mut mem = Mem::with(&[vec![0; 4096], vec![0; 4096], vec![0; 4096]]);
            let r = mem.run(entry, &Constants::default().u32(1).into_bytes());
            if ["hrx_reduce_sum", "hrx_histogram256"].contains(entry) {
                r.unwrap();
            } else {
                let err = r.unwrap_err();
                assert!(
                    err.contains("constant word") || *entry == "hrx_fail",
                    "{entry}: {err}"
                );
            }
        }
    }

    #[test]
    fn short_missing_and_misaligned_bindings_are_errors() {
        let c = Constants::default().u32(64).u32(64).u32(1).into_bytes();
        for entry in builtin_entries() {
            // No bindings at all.
            let err = Mem::default().run(entry, &c).unwrap_err();
            assert!(err.contains("missing binding"), "{entry}: {err}");
            // Bindings one byte too short for 64 elements (64x64 for images).
            let mut mem = Mem::with(&[vec![0; 63], vec![0; 63], vec![0; 63]]);
            let err = mem.run(entry, &c).unwrap_err();
            assert!(err.contains("cannot hold"), "{entry}: {err}");
            // Huge sizes must not overflow into a panic.
            let huge = Constants::default()
                .u32(u32::MAX)
                .u32(u32::MAX)
                .u32(1)
                .into_bytes();
            let mut mem = Mem::with(&[vec![0; 64], vec![0; 64], vec![0; 64]]);
            assert!(mem.run(entry, &huge).is_err(), "{entry}");
        }
        // The second binding short while the first is fine.
        let mut mem = Mem::with(&[vec![0; 16 * 3], vec![0; 15]]);
        let err = mem.run(
            "hrx_rgb_to_gray",
            &Constants::default().u32(4).u32(4).into_bytes(),
        );
        assert!(err.unwrap_err().contains("binding 1"));
        let mut mem = Mem::with(&[vec![0; 100], vec![0; 1023]]);
        let err = mem.run(
            "hrx_histogram256",
            &Constants::default().u32(100).into_bytes(),
        );
        assert!(err.unwrap_err().contains("binding 1"));
        let mut mem = Mem::with(&[vec![0; 40], vec![0; 3]]);
        let err = mem.run("hrx_reduce_sum", &Constants::default().u32(10).into_bytes());
        assert!(err.unwrap_err().contains("binding 1"));
        // f32/u32 bindings must be 4-aligned; u8 bindings need not be.
        let mut mem = Mem::with(&[vec![0; 64]]);
        let c = Constants::default().u32(4).u32(0).into_bytes();
        let err = mem
            .run_with("hrx_fill_u32", [1; 3], [1; 3], &c, 1)
            .unwrap_err();
        assert!(err.contains("aligned"), "{err}");
        let mut mem = Mem::with(&[vec![9; 64], vec![0; 64]]);
        let c = Constants::default().u32(8).u32(9).into_bytes();
        mem.run_with("hrx_threshold", [1; 3], [1; 3], &c, 1)
            .unwrap();
        assert_eq!(mem.bytes(1)[1..9], [255; 8]);
    }

    #[test]
    fn zero_sized_launches_succeed() {
        for (w, h) in [(0, 0), (0, 5), (5, 0)] {
            for spec in [
                rgb_to_gray(w, h),
                blur_horizontal(w, h),
                blur_vertical(w, h),
                sobel(w, h),
            ] {
                let (_, r) = run_spec(&spec, &[]);
                r.unwrap_or_else(|e| panic!("{} {w}x{h}: {e}", spec.entry));
            }
        }
        for spec in [
            iota(0, 1, 1),
            fill_u32(0, 1),
            histogram256(0),
            threshold(0, 1),
        ] {
            run_spec(&spec, &[]).1.unwrap();
        }
    }
}
