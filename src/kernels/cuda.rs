//! CUDA C sources of the built-in kernels (compiled at run time with NVRTC by `gpu::cuda`).
//!
//! Each source is self-contained (a shared prelude plus one `extern "C" __global__` entry) and
//! follows the CUDA backend's parameter ABI: one device pointer per binding, in binding order,
//! then one 32-bit parameter (`unsigned` or `float`, same bits) per 4-byte constant word, in
//! order. Every kernel loops grid-stride, so it is correct for any grid, and reproduces its host
//! implementation in `host.rs` bit for bit:
//! - integer kernels use the same integer formulas;
//! - `hrx_saxpy` rounds the product, then the sum (`__fmul_rn`, `__fadd_rn`: never an FMA);
//! - `hrx_reduce_sum` evaluates the documented per-256-slot tree, then adds the block partials
//!   in block order (see the kernel's comment);
//! - `hrx_histogram256` adds into the existing counts (wrapping, like the host);
//! - `hrx_threshold` with a level word above 255 writes zeros (the host rejects it; the
//!   [`super::threshold`] constructor cannot make such a spec);
//! - `hrx_fail` writes `0xEE` into the first half and then stores to global address `0x10`, which
//!   no allocation covers: on real hardware that raises `CUDA_ERROR_ILLEGAL_ADDRESS`, a sticky
//!   error that the backend reports as device loss (the host version returns a kernel error of
//!   known extent instead).
//!
//! `hrx_npu_threshold` is NPU-only and has no CUDA source.

/// Shared helpers, prepended to every kernel source.
macro_rules! prelude {
    () => {
        r#"
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

/* First index and stride of a 1-D grid-stride loop. */
__device__ __forceinline__ u64 hrx_first_x() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
__device__ __forceinline__ u64 hrx_stride_x() { return (u64)gridDim.x * blockDim.x; }
__device__ __forceinline__ u64 hrx_first_y() { return (u64)blockIdx.y * blockDim.y + threadIdx.y; }
__device__ __forceinline__ u64 hrx_stride_y() { return (u64)gridDim.y * blockDim.y; }

/* clamp(v, 0, last) for a signed coordinate. */
__device__ __forceinline__ u64 hrx_clamp(long long v, u64 last) {
    return v < 0 ? 0 : ((u64)v > last ? last : (u64)v);
}
"#
    };
}

const SAXPY: &str = concat!(
    prelude!(),
    r#"
extern "C" __global__ void hrx_saxpy(const float* x, float* y, u32 n, float a) {
    for (u64 i = hrx_first_x(); i < n; i += hrx_stride_x()) {
        y[i] = __fadd_rn(y[i], __fmul_rn(a, x[i]));
    }
}
"#
);

const IOTA: &str = concat!(
    prelude!(),
    r#"
extern "C" __global__ void hrx_iota(u32* out, u32 n, u32 start, u32 step) {
    for (u64 i = hrx_first_x(); i < n; i += hrx_stride_x()) {
        out[i] = start + (u32)i * step;
    }
}
"#
);

const FILL_U32: &str = concat!(
    prelude!(),
    r#"
extern "C" __global__ void hrx_fill_u32(u32* out, u32 n, u32 value) {
    for (u64 i = hrx_first_x(); i < n; i += hrx_stride_x()) {
        out[i] = value;
    }
}
"#
);

const REDUCE_SUM: &str = concat!(
    prelude!(),
    r#"
/* Bit reversal of an 8-bit index. */
__device__ __forceinline__ u32 hrx_rev8(u32 k) { return __brev(k) >> 24; }

/*
 * The documented order: each 256-slot chunk (zero-padded past n) reduces by the tree
 * s[t] += s[t + stride] for stride 128, 64, ..., 1; then acc = +0.0 and acc += partial[b] for
 * every chunk b in increasing order.
 *
 * That tree is a balanced binary tree whose root splits on index bit 0, the next level on bit
 * 1, ..., the leaves on bit 7, always with the lower slot on the left. Visiting the leaves in
 * order of k = 0..255 means reading slot rev8(k); merging with a binary counter (merge after
 * leaf k once per trailing one bit of k) evaluates exactly the same additions. So one thread
 * computes one chunk's partial alone, with an 8-entry stack in registers.
 *
 * Block 0 does the whole reduction: each round its 256 threads compute the partials of the next
 * 256 chunks, and thread 0 adds them to the accumulator in chunk order. Other blocks return.
 */
extern "C" __global__ void hrx_reduce_sum(const float* input, float* out, u32 n) {
    if (blockIdx.x != 0 || blockIdx.y != 0 || blockIdx.z != 0) return;
    __shared__ float partial[256];
    const u64 chunks = ((u64)n + 255) / 256;
    const u32 lanes = blockDim.x * blockDim.y * blockDim.z;
    const u32 lane = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    float acc = 0.0f;
    for (u64 round = 0; round < chunks; round += 256) {
        for (u32 t = lane; t < 256; t += lanes) {
            const u64 chunk = round + t;
            float value = 0.0f;
            if (chunk < chunks) {
                const u64 base = chunk * 256;
                float stack[9];
                int top = 0;
                #pragma unroll
                for (u32 k = 0; k < 256; ++k) {
                    const u64 index = base + hrx_rev8(k);
                    float v = index < n ? input[index] : 0.0f;
                    #pragma unroll
                    for (u32 m = k; m & 1; m >>= 1) {
                        v = __fadd_rn(stack[--top], v);
                    }
                    stack[top++] = v;
                }
                value = stack[0];
            }
            partial[t] = value;
        }
        __syncthreads();
        if (lane == 0) {
            const u64 left = chunks - round;
            const u32 count = left < 256 ? (u32)left : 256;
            for (u32 t = 0; t < count; ++t) {
                acc = __fadd_rn(acc, partial[t]);
            }
        }
        __syncthreads();
    }
    if (lane == 0) out[0] = acc;
}
"#
);

const RGB_TO_GRAY: &str = concat!(
    prelude!(),
    r#"
extern "C" __global__ void hrx_rgb_to_gray(const u8* rgb, u8* gray, u32 width, u32 height) {
    for (u64 y = hrx_first_y(); y < height; y += hrx_stride_y()) {
        for (u64 x = hrx_first_x(); x < width; x += hrx_stride_x()) {
            const u64 i = y * width + x;
            const u32 r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
            gray[i] = (u8)((77u * r + 150u * g + 29u * b + 128u) >> 8);
        }
    }
}
"#
);

/// Shared by both blur passes: `(a + 4b + 6c + 4d + e + 8) >> 4`.
macro_rules! binomial5 {
    () => {
        r#"
__device__ __forceinline__ u8 hrx_binomial5(u32 a, u32 b, u32 c, u32 d, u32 e) {
    return (u8)((a + e + 4u * (b + d) + 6u * c + 8u) >> 4);
}
"#
    };
}

const BLUR_H: &str = concat!(
    prelude!(),
    binomial5!(),
    r#"
extern "C" __global__ void hrx_blur_h(const u8* input, u8* out, u32 width, u32 height) {
    if (width == 0) return;
    const u64 last = width - 1;
    for (u64 y = hrx_first_y(); y < height; y += hrx_stride_y()) {
        const u8* row = input + y * width;
        for (u64 x = hrx_first_x(); x < width; x += hrx_stride_x()) {
            const long long c = (long long)x;
            out[y * width + x] = hrx_binomial5(
                row[hrx_clamp(c - 2, last)], row[hrx_clamp(c - 1, last)], row[x],
                row[hrx_clamp(c + 1, last)], row[hrx_clamp(c + 2, last)]);
        }
    }
}
"#
);

const BLUR_V: &str = concat!(
    prelude!(),
    binomial5!(),
    r#"
extern "C" __global__ void hrx_blur_v(const u8* input, u8* out, u32 width, u32 height) {
    if (height == 0) return;
    const u64 last = height - 1;
    for (u64 y = hrx_first_y(); y < height; y += hrx_stride_y()) {
        const long long c = (long long)y;
        const u64 r0 = hrx_clamp(c - 2, last) * width, r1 = hrx_clamp(c - 1, last) * width;
        const u64 r2 = y * width;
        const u64 r3 = hrx_clamp(c + 1, last) * width, r4 = hrx_clamp(c + 2, last) * width;
        for (u64 x = hrx_first_x(); x < width; x += hrx_stride_x()) {
            out[r2 + x] = hrx_binomial5(
                input[r0 + x], input[r1 + x], input[r2 + x], input[r3 + x], input[r4 + x]);
        }
    }
}
"#
);

const SOBEL: &str = concat!(
    prelude!(),
    r#"
/* min(255, isqrt(m)), built bit by bit from the top exactly as the host does. */
__device__ __forceinline__ u8 hrx_isqrt_u8(u32 m) {
    u32 root = 0;
    #pragma unroll
    for (int bit = 7; bit >= 0; --bit) {
        const u32 candidate = root | (1u << bit);
        if (candidate * candidate <= m) root = candidate;
    }
    return (u8)root;
}

extern "C" __global__ void hrx_sobel(const u8* input, u8* out, u32 width, u32 height) {
    if (width == 0 || height == 0) return;
    const u64 last_x = width - 1, last_y = height - 1;
    for (u64 y = hrx_first_y(); y < height; y += hrx_stride_y()) {
        const u8* up = input + hrx_clamp((long long)y - 1, last_y) * width;
        const u8* mid = input + y * width;
        const u8* down = input + hrx_clamp((long long)y + 1, last_y) * width;
        for (u64 x = hrx_first_x(); x < width; x += hrx_stride_x()) {
            const u64 l = hrx_clamp((long long)x - 1, last_x), c = x;
            const u64 r = hrx_clamp((long long)x + 1, last_x);
            const int gx = ((int)up[r] + 2 * (int)mid[r] + (int)down[r])
                         - ((int)up[l] + 2 * (int)mid[l] + (int)down[l]);
            const int gy = ((int)down[l] + 2 * (int)down[c] + (int)down[r])
                         - ((int)up[l] + 2 * (int)up[c] + (int)up[r]);
            out[y * width + x] = hrx_isqrt_u8((u32)(gx * gx + gy * gy));
        }
    }
}
"#
);

const HISTOGRAM256: &str = concat!(
    prelude!(),
    r#"
/* Per-block counts in shared memory, then one atomic add per non-empty bin into hist. */
extern "C" __global__ void hrx_histogram256(const u8* input, u32* hist, u32 n) {
    __shared__ u32 counts[256];
    const u32 lanes = blockDim.x * blockDim.y * blockDim.z;
    const u32 lane = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    for (u32 b = lane; b < 256; b += lanes) counts[b] = 0;
    __syncthreads();
    for (u64 i = hrx_first_x(); i < n; i += hrx_stride_x()) {
        atomicAdd(&counts[input[i]], 1u);
    }
    __syncthreads();
    for (u32 b = lane; b < 256; b += lanes) {
        if (counts[b] != 0) atomicAdd(&hist[b], counts[b]);
    }
}
"#
);

const THRESHOLD: &str = concat!(
    prelude!(),
    r#"
extern "C" __global__ void hrx_threshold(const u8* input, u8* out, u32 n, u32 level) {
    for (u64 i = hrx_first_x(); i < n; i += hrx_stride_x()) {
        out[i] = (u32)input[i] >= level ? 255 : 0;
    }
}
"#
);

const FAIL: &str = concat!(
    prelude!(),
    r#"
/*
 * Deliberately faulting: fills the first half with 0xEE, then one thread stores to global
 * address 0x10, which no allocation covers -> CUDA_ERROR_ILLEGAL_ADDRESS (sticky: the context
 * is unusable afterwards). Inline PTX, so the compiler can neither drop nor fold the store.
 */
extern "C" __global__ void hrx_fail(u8* out, u32 n) {
    for (u64 i = hrx_first_x(); i < n / 2; i += hrx_stride_x()) {
        out[i] = 0xEE;
    }
    __threadfence();
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        asm volatile("st.global.u32 [%0], %1;" :: "l"(0x10ull), "r"(0xEEEEEEEEu) : "memory");
    }
}
"#
);

/// A built-in kernel's CUDA source and its parameter counts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CudaKernelSource {
    /// Entry point name.
    pub entry: &'static str,
    /// Bindings (device pointer parameters), first.
    pub bindings: usize,
    /// 32-bit constant words (one parameter each), after the bindings.
    pub words: usize,
    /// The CUDA C source, prelude included.
    pub source: &'static str,
}

const fn source(
    entry: &'static str,
    bindings: usize,
    words: usize,
    source: &'static str,
) -> CudaKernelSource {
    CudaKernelSource {
        entry,
        bindings,
        words,
        source,
    }
}

/// Every built-in kernel with a CUDA version, in library order.
pub(super) const SOURCES: &[CudaKernelSource] = &[
    source("hrx_saxpy", 2, 2, SAXPY),
    source("hrx_iota", 1, 3, IOTA),
    source("hrx_fill_u32", 1, 2, FILL_U32),
    source("hrx_reduce_sum", 2, 1, REDUCE_SUM),
    source("hrx_rgb_to_gray", 2, 2, RGB_TO_GRAY),
    source("hrx_blur_h", 2, 2, BLUR_H),
    source("hrx_blur_v", 2, 2, BLUR_V),
    source("hrx_sobel", 2, 2, SOBEL),
    source("hrx_histogram256", 2, 1, HISTOGRAM256),
    source("hrx_threshold", 2, 2, THRESHOLD),
    source("hrx_fail", 1, 1, FAIL),
];

/// Whether PTX declares a self-timing entry and the collector of this build's layout.
pub(super) fn declares_timed_entry(ptx: &[u8]) -> bool {
    let contains = |needle: &[u8]| ptx.windows(needle.len()).any(|w| w == needle);
    contains(format!("{TIMED_SUFFIX}(").as_bytes())
        && contains(format!(".entry {COLLECT_ENTRY}(").as_bytes())
}

/// The CUDA source of a built-in kernel.
pub(super) fn lookup(entry: &str) -> Option<&'static CudaKernelSource> {
    SOURCES.iter().find(|s| s.entry == entry)
}

/// Suffix of a built-in kernel's self-timing entry: `hrx_blur_h__hrx_timed_v1` takes
/// `hrx_blur_h`'s parameters, then `u64* times` (its node's lines, [`TIME_LINES`] below). The
/// version names the layout of the lines and the ring: a trace keeps its PTX, so a replay
/// launches only entries whose layout it allocates for.
pub(crate) const TIMED_SUFFIX: &str = "__hrx_timed_v1";
/// Suffix of a built-in kernel's slowed entry (a test of a regression gate:
/// [`crate::kernels::KernelCode::slowdown_percent`]): `hrx_blur_h__hrx_slowed_v1` takes the timed
/// entry's parameters (its lines may be null: untimed), then `u32 percent`. Compiled only when
/// asked, into a module of its own, so the PTX a trace stores never holds it.
pub(crate) const SLOWED_SUFFIX: &str = "__hrx_slowed_v1";
/// The entry that folds a launch's node times into the host ring ([`TIMING`]).
pub(crate) const COLLECT_ENTRY: &str = "hrx_collect_times_v1";
/// The entry of a timed graph's start marker ([`TIMING`]): one thread writes its
/// `%globaltimer` reading as a node's start and end, before the graph's roots.
pub(crate) const MARK_ENTRY: &str = "hrx_time_mark_v1";
/// 128-byte lines of one timed node: block `b` adds its end to line `b % TIME_LINES`, so a
/// grid's thousands of atomics spread over as many L2 slices (one warp's lanes fold them).
pub(crate) const TIME_LINES: usize = 32;
/// Words of one timed node's lines.
pub(crate) const TIME_NODE_WORDS: usize = TIME_LINES * 16;
/// Launches a host ring holds before a slot is reused.
pub(crate) const TIME_RING: usize = 16;

/// Device-side timing, appended to each built-in kernel's source for its timed entry and the
/// collector ([`instrumented`]).
///
/// A timed entry reads `%globaltimer` (ns; on the H200 in 32 ns steps: BENCHMARKS.md) in
/// thread 0 of the first [`TIME_LINES`] blocks before the kernel's body (block `b` into line
/// `b`: the blocks dispatched first, so the first to start is among them) and of every block
/// after its last thread left the body (block `b` into line `b % TIME_LINES`), folded with
/// fire-and-forget atomics (the maximum of `~start`, the maximum of `end`): no block waits on
/// a round trip, and a line sees a few hundred atomics per launch of the pipeline's kernels.
/// The first block's start and the last block's end are the kernel's execution; the host
/// then counts a node's time from the end of what it waits on (`gpu::op_times`), so that the
/// launch before the first block is in it, as in Nsight Compute's `gpu__time_duration`.
///
/// `hrx_time_mark_v1`, one thread before every root of a timed graph, writes its reading into its
/// own node's first line (start and end alike): the graph's start, from which its roots are
/// counted as each dependent is from what it waits on.
///
/// `hrx_collect_times_v1` runs after the graph's leaves (or its end event-record node: outside
/// the region's operations; the runtime synchronizes after each launch), one warp per node and one lane per
/// line: it folds each node's lines into one start and end, zeroes them for the next launch (the
/// next launch of the executable graph runs after this one: `cuGraphLaunch`), and writes them, with
/// its own `%globaltimer` reading (the host maps the graph's device times onto the region's span
/// through it) and the launch's number plus one, into slot `launch % TIME_RING` of a ring in mapped
/// host memory: per slot `2 + 2 * nodes` words, `[launch + 1, now, start_0, end_0, ...]` (0: a node
/// that did not run). The host reads the slot only after the stream's synchronize, which the
/// collector's writes precede, so they need no fences.
const TIMING: &str = r#"
#define HRX_TIME_LINES 32
#define HRX_TIME_RING 16
__device__ __forceinline__ u64 hrx_globaltimer() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ __forceinline__ u32 hrx_block() {
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
}
__device__ __forceinline__ bool hrx_thread0() {
    return (threadIdx.x | threadIdx.y | threadIdx.z) == 0;
}
/* The first blocks dispatched (one per line, so no two contend) give the start. */
__device__ __forceinline__ void hrx_time_begin(u64* times) {
    const u32 block = hrx_block();
    if (block < HRX_TIME_LINES && hrx_thread0()) atomicMax(times + block * 16, ~hrx_globaltimer());
}
/* Every block gives its end, once its last thread left the body. */
__device__ __forceinline__ void hrx_time_end(u64* times) {
    __syncthreads();
    if (hrx_thread0()) atomicMax(times + (hrx_block() % HRX_TIME_LINES) * 16 + 1, hrx_globaltimer());
}
/* A timed graph's start: one thread, its reading as its node's start and end (line 0). */
extern "C" __global__ void hrx_time_mark_v1(u64* times) {
    const u64 now = hrx_globaltimer();
    times[0] = ~now;
    times[1] = now;
}
/* One warp per node, one lane per line: the lines are read at once and folded by shuffles. */
extern "C" __global__ void hrx_collect_times_v1(u64* times, u64* ring, u32 nodes) {
    __shared__ u64 launch;
    const u32 node = threadIdx.x / 32, lane = threadIdx.x % 32;
    u64 now = 0;
    if (threadIdx.x == 0) {
        now = hrx_globaltimer();
        u64* counter = times + (u64)nodes * HRX_TIME_LINES * 16;
        launch = *counter;
        *counter = launch + 1;
    }
    u64 start = 0, end = 0;
    if (node < nodes) {
        u64* line = times + ((u64)node * HRX_TIME_LINES + lane) * 16;
        start = line[0];
        end = line[1];
        line[0] = 0;
        line[1] = 0;
    }
    for (u32 d = 16; d > 0; d /= 2) {
        start = max(start, __shfl_xor_sync(0xffffffffu, start, d));
        end = max(end, __shfl_xor_sync(0xffffffffu, end, d));
    }
    __syncthreads();
    u64* slot = ring + (launch % HRX_TIME_RING) * (2 + 2 * (u64)nodes);
    if (node < nodes && lane == 0) {
        slot[2 + 2 * node] = start == 0 ? 0 : ~start;
        slot[3 + 2 * node] = end;
    }
    if (threadIdx.x == 0) {
        slot[1] = now;
        slot[0] = launch + 1;
    }
}
"#;

/// A slowed entry's stretch ([`SLOWED_SUFFIX`]): every block, once its last thread left the body,
/// stays resident `percent` of the time it took more (thread 0 spins on `%globaltimer`, the
/// others wait at the barrier), so a grid runs about as if each block had that much more work:
/// the launch's own overhead is not stretched, as it would not be by a heavier build.
const SLOW: &str = r#"
__device__ __forceinline__ void hrx_slow_block(u64 begin, u32 percent) {
    __syncthreads();
    if (hrx_thread0()) {
        const u64 now = hrx_globaltimer();
        const u64 until = now + (now - begin) * percent / 100;
        while (hrx_globaltimer() < until) {}
    }
}
"#;

/// A built-in kernel's source with its timed entry and the collector: the kernel's body
/// becomes an inlined device function that the plain entry (same name and parameters as
/// before) and the timed entry ([`TIMED_SUFFIX`]) both call. `None` when the source does not
/// declare the entry as expected.
///
/// The timed entry adds a `__syncthreads` after the body: a body's `return` must be taken by
/// whole blocks (as every built-in kernel's is) or not before a barrier of its own.
///
/// With `slowed`, also the slowed entry ([`SLOWED_SUFFIX`], [`SLOW`]).
pub(super) fn instrumented(source: &CudaKernelSource, slowed: bool) -> Option<String> {
    let entry = source.entry;
    let header = format!("extern \"C\" __global__ void {entry}(");
    let at = source.source.find(&header)?;
    let rest = &source.source[at + header.len()..];
    let signature = &rest[..rest.find(')')?];
    let arguments = signature
        .split(',')
        .map(|parameter| {
            let parameter = parameter.trim_end();
            let start = parameter
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            &parameter[start..]
        })
        .collect::<Vec<_>>()
        .join(", ");
    let mut text = String::with_capacity(source.source.len() + TIMING.len() + 512);
    text.push_str(&source.source[..at]);
    text.push_str(&format!(
        "__device__ __forceinline__ static void {entry}__body("
    ));
    text.push_str(rest);
    text.push_str(TIMING);
    text.push_str(&format!(
        "extern \"C\" __global__ void {entry}({signature}) {{ {entry}__body({arguments}); }}\n\
         extern \"C\" __global__ void {entry}{TIMED_SUFFIX}({signature}, u64* hrx_times) {{\n\
         \x20   hrx_time_begin(hrx_times);\n\
         \x20   {entry}__body({arguments});\n\
         \x20   hrx_time_end(hrx_times);\n\
         }}\n"
    ));
    if slowed {
        text.push_str(SLOW);
        text.push_str(&format!(
            "extern \"C\" __global__ void {entry}{SLOWED_SUFFIX}({signature}, u64* hrx_times, \
             u32 hrx_percent) {{\n\
             \x20   const u64 hrx_begin = hrx_globaltimer();\n\
             \x20   if (hrx_times) hrx_time_begin(hrx_times);\n\
             \x20   {entry}__body({arguments});\n\
             \x20   hrx_slow_block(hrx_begin, hrx_percent);\n\
             \x20   if (hrx_times) hrx_time_end(hrx_times); else __syncthreads();\n\
             }}\n"
        ));
    }
    Some(text)
}
