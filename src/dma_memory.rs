//! Host memory that a device reads across the bus (pinned, host-visible buffers on CUDA and
//! HIP: read by the copy engine, and by kernels bound to them): on x86-64, large host writes
//! into it are streamed past the CPU's caches.
//!
//! Measured on the H200 host (BENCHMARKS.md, "Replay as a gate", "Session 26: copies and the
//! CPU's caches"): a 3 MB upload from pinned memory takes 60-63 µs when its bytes lie only in
//! memory and 71-86 µs right after an ordinary `memcpy` wrote them (their lines dirty in a
//! core's cache, which the copy engine's reads then go through); with one frame in flight,
//! replays of the image pipeline uploaded each 1280x800 frame in 76.4-80.1 µs before this
//! change and 62.1-65.2 µs after. So [`copy_streaming`] writes [`crate::Buffer::write`]'s
//! bytes of at least [`STREAMING_MIN_BYTES`] into such memory with non-temporal stores, the
//! stores CUDA's write-combined staging memory (`cuMemHostAlloc`'s `WRITECOMBINED`) gets,
//! while the memory itself stays cached for a host that reads it (write-combined memory is
//! uncached to reads). Elsewhere (the software device, whose copies are the CPU's own `memcpy`
//! and gain from cached lines; small writes; other architectures, Grace Hopper's aarch64
//! among them) host writes are ordinary copies. Measured on CUDA only: HIP's pinned memory is
//! treated alike, untested on hardware (on an integrated GPU, which shares the CPU's memory,
//! the gain is not known). An NPU-shared buffer that CUDA or HIP allocated is pinned memory
//! too, and is streamed alike.
//!
//! Tried and not kept: the trace's reads of such memory taking their lines back out of the
//! caches (`clflushopt`) as they went, so that a capture leaves the bytes where an untraced
//! run does (a download into lines a core read since took 88-101 µs instead of 59-61 in the
//! measurement above). For host writes and output digests, the traced pipeline on the H200
//! ran 1.31x its untraced time; for output digests alone 1.062x against 1.015x in the same
//! call, and its downloads were no faster (26.6 µs either way): the lines had left the
//! caches by the next download into them.

/// Host writes of at least this many bytes into device-read host memory are streamed: below
/// it the bytes are few enough that their lines' state costs a copy little, and a caller
/// that reads back what it wrote keeps them in cache.
pub(crate) const STREAMING_MIN_BYTES: usize = 64 << 10;

/// Copies `src` into `dst` (the same length) with non-temporal stores where the CPU has them
/// (x86-64: SSE2's `movntdq`, then `sfence`), so the written lines end in memory, not in this
/// core's cache; elsewhere `copy_from_slice`.
///
/// # Panics
/// When the lengths differ.
pub(crate) fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "copy_streaming: lengths differ");
    #[cfg(test)]
    STREAMED.set(STREAMED.get() + 1);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        // Up to the first cache-line boundary of `dst`: `movntdq` stores 16-byte aligned, and
        // each step then fills one whole line (a partial line leaves the write-combining
        // buffer as several smaller writes).
        let head = dst.as_ptr().align_offset(64).min(dst.len());
        dst[..head].copy_from_slice(&src[..head]);
        let body = (dst.len() - head) / 64 * 64;
        let (d, s) = (dst[head..].as_mut_ptr(), src[head..].as_ptr());
        let mut i = 0;
        while i < body {
            // SAFETY: `i + 64 <= body <= len - head`: every load and store is in bounds. A body
            // exists only when `head` was not clamped to the length, so `d` is 64-byte aligned,
            // and so is `d + i` (`i` is a multiple of 64). `dst` and `src` are distinct slices
            // (one `&mut`). SSE2 is part of x86-64.
            unsafe {
                let a = _mm_loadu_si128(s.add(i).cast::<__m128i>());
                let b = _mm_loadu_si128(s.add(i + 16).cast::<__m128i>());
                let c = _mm_loadu_si128(s.add(i + 32).cast::<__m128i>());
                let e = _mm_loadu_si128(s.add(i + 48).cast::<__m128i>());
                _mm_stream_si128(d.add(i).cast::<__m128i>(), a);
                _mm_stream_si128(d.add(i + 16).cast::<__m128i>(), b);
                _mm_stream_si128(d.add(i + 32).cast::<__m128i>(), c);
                _mm_stream_si128(d.add(i + 48).cast::<__m128i>(), e);
            }
            i += 64;
        }
        let tail = head + body;
        dst[tail..].copy_from_slice(&src[tail..]);
        // Non-temporal stores are weakly ordered: fence them before the caller publishes the
        // write (a submit that copies these bytes, a mapping's release).
        // SAFETY: SSE is part of x86-64.
        unsafe { _mm_sfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

#[cfg(test)]
thread_local! {
    /// Streamed copies made on this thread (for the runtime's tests).
    pub(crate) static STREAMED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 64-byte aligned storage, so that offsets into it are offsets from a line boundary.
    #[repr(C, align(64))]
    struct Lines([u8; 512]);

    #[test]
    fn a_streamed_copy_writes_every_byte_at_every_alignment_and_length() {
        let mut source = Lines([0; 512]);
        for (i, byte) in source.0.iter_mut().enumerate() {
            *byte = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] | 1;
        }
        let mut target = Lines([0; 512]);
        for dst_offset in 0..64 {
            for src_offset in [0, 1, 8, 17, 63] {
                for len in 0..=300 {
                    target.0.fill(0);
                    let src = &source.0[src_offset..src_offset + len];
                    copy_streaming(&mut target.0[dst_offset..dst_offset + len], src);
                    let case = format!("dst +{dst_offset}, src +{src_offset}, len {len}");
                    assert_eq!(&target.0[dst_offset..dst_offset + len], src, "{case}");
                    assert!(
                        target.0[..dst_offset].iter().all(|&b| b == 0),
                        "before: {case}"
                    );
                    let after = &target.0[dst_offset + len..];
                    assert!(after.iter().all(|&b| b == 0), "after: {case}");
                }
            }
        }
        // A large copy, as `Buffer::write` streams them.
        let src: Vec<u8> = (0..STREAMING_MIN_BYTES as u32 * 3 + 77)
            .map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[2])
            .collect();
        let mut dst = vec![0u8; src.len() + 3];
        copy_streaming(&mut dst[3..], &src);
        assert_eq!(&dst[3..], &src[..]);
    }

    /// `Buffer::write` streams 64 KiB or more into host-visible memory that a device reads by
    /// DMA, and only that; the bytes land alike either way.
    #[test]
    fn buffer_write_streams_large_writes_into_device_read_memory_only() {
        use crate::gpu::sim::test_hooks::READ_BY_DMA;
        use crate::{Placement, Runtime, RuntimeOptions};
        let rt = Runtime::new(RuntimeOptions::sim()).unwrap();
        let large: Vec<u8> = (0..STREAMING_MIN_BYTES as u32 + 1001)
            .map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect();
        let small = &large[..STREAMING_MIN_BYTES - 1];
        let len = large.len() + 64;
        READ_BY_DMA.set(true);
        let pinned = rt.buffer(len, Placement::HostVisible).unwrap();
        let local = rt.buffer(len, Placement::GpuLocal).unwrap();
        READ_BY_DMA.set(false);
        let plain = rt.buffer(len, Placement::HostVisible).unwrap();
        // (buffer, bytes, streamed)
        let cases = [
            (&pinned, &large[..], 1),
            (&pinned, small, 0),
            (&plain, &large[..], 0),
            (&local, &large[..], 0),
        ];
        for (i, (buffer, bytes, streamed)) in cases.into_iter().enumerate() {
            let before = STREAMED.get();
            buffer.write(5, bytes).unwrap();
            assert_eq!(STREAMED.get() - before, streamed, "case {i}");
            let mut back = vec![0u8; bytes.len()];
            buffer.read(5, &mut back).unwrap();
            assert_eq!(back, bytes, "case {i}");
        }
    }
}
