//! Large host allocations on transparent huge pages (2 MiB), so that where a buffer lands in
//! physical memory no longer changes how fast host-memory-bound work on it runs from one
//! process to the next.
//!
//! Why (BENCHMARKS.md, "Replay as a gate", session 53): with 4 KiB pages, the medians of
//! the pipeline's host-memory-bound regions moved with the process, not with the work:
//! eight captures of one build seconds apart ran the software NPU's threshold 47-94 µs on
//! this project's 2-CPU build VM (97-160 µs on an H100 host in session 51), and the software
//! device's copies alike; a replay can only be as close to its capture as two captures are
//! to each other (issue 22 point 5). Backed by 2 MiB pages, the same eight ran it 42.5-55.4
//! µs (six of them 42.5-45.6), and their copies about 1.8x faster. What of a 4 KiB page's
//! placement does it (the TLB's reach, the cache sets of scattered physical pages) was not
//! measured apart.
//!
//! So the software device's buffers of at least [`MIN_BYTES`] are each an anonymous mapping
//! of whole 2 MiB pages starting on a 2 MiB boundary, advised `MADV_HUGEPAGE` before its
//! first touch: the kernel then backs it with huge pages where it has them (the advice is
//! what a system whose `transparent_hugepage/enabled` is `madvise`, Debian's and Ubuntu's
//! default, asks for; with `never`, or no transparent huge pages in the kernel, buffers are
//! made as before). The cost is memory: a length is rounded up to whole 2 MiB pages, so a
//! 512 KiB buffer takes 2 MiB, and its pages are faulted in when it is made (so that no
//! region pays a huge page's fault), which is why buffers over [`MAX_BYTES`] stay as they
//! were. `HRX_HUGE_PAGES=0` turns this off (every allocation as before); another value than
//! `0`, `1` or empty is an error naming it.
//!
//! Not on CUDA: pinned host-visible and NPU-shared buffers registered by `cuMemHostRegister`
//! on such pages (instead of allocated by `cuMemHostAlloc`) passed the conformance and
//! hardware tests on an H100 host but changed nothing measurable there: five captures each
//! ran the software NPU beside CUDA 107-192 µs on huge pages against 89-161 µs, uploads and
//! downloads alike either way (session 53), so CUDA keeps the driver's allocation.

use std::sync::atomic::{AtomicU8, Ordering};

/// Bytes of a huge page (x86-64's and aarch64's 4 KiB-granule PMD size).
pub(crate) const HUGE_PAGE: usize = 2 << 20;
/// The smallest allocation put on huge pages: smaller ones would waste more than three
/// quarters of their page.
pub(crate) const MIN_BYTES: usize = 512 << 10;
/// The largest allocation put on huge pages: their pages are faulted in when they are made
/// (below), which a larger buffer that a program never fills would pay in memory it never
/// used (the software device's buffers were, and larger ones still are, faulted in at their
/// first touch).
pub(crate) const MAX_BYTES: usize = 256 << 20;
/// The variable that turns huge pages off (`0`).
pub(crate) const HUGE_PAGES_ENV: &str = "HRX_HUGE_PAGES";

/// What [`HUGE_PAGES_ENV`] asks: `Ok(true)` (huge pages) when it is unset, empty or `1`,
/// `Ok(false)` for `0`.
///
/// # Errors
/// Anything else, the line naming the variable: read by the runtime's options (as the other
/// `HRX_` switches are), where `off` or `false` left huge pages on without a word.
pub(crate) fn setting() -> Result<bool, String> {
    parse_setting(std::env::var_os(HUGE_PAGES_ENV).as_deref())
}

/// [`setting`] of the variable's value (`None`: unset), read as every `HRX_` switch is
/// (`crate::switch::switch_value`), on where it is unset.
fn parse_setting(value: Option<&std::ffi::OsStr>) -> Result<bool, String> {
    crate::switch::switch_value(HUGE_PAGES_ENV, value).map(|on| on.unwrap_or(true))
}

/// The kernel's switch for transparent huge pages (`always`, `madvise` or `never`, the one
/// in force in brackets).
const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Whether a kernel whose [`THP_ENABLED`] reads `text` (`None`: no such file, a kernel
/// without transparent huge pages) backs an advised mapping with huge pages: not with
/// `never`, where the rounding to 2 MiB and the faulting in of every page would cost memory
/// (a 512 KiB buffer 2 MiB, all of it resident from the start) and gain nothing.
fn kernel_takes_the_advice(text: Option<&str>) -> bool {
    text.is_some_and(|text| !text.contains("[never]"))
}

/// Whether large buffers go on huge pages: [`HUGE_PAGES_ENV`] leaves them on and the kernel
/// has them ([`kernel_takes_the_advice`]). Read once, without a lock (a child forked while
/// another thread reads it finds a value or reads it again).
///
/// # Errors
/// The line naming a value of [`HUGE_PAGES_ENV`] that is not a switch: the allocations that
/// would go on huge pages fail with it, as the software device's do with a bad
/// `HRX_SIM_MEMORY`, where a replay (whose runtime does not read the runtime's variables)
/// went on with huge pages under `HRX_HUGE_PAGES=off`.
pub(crate) fn enabled() -> Result<bool, String> {
    static STATE: AtomicU8 = AtomicU8::new(0);
    match STATE.load(Ordering::Relaxed) {
        1 => Ok(true),
        2 => Ok(false),
        3 => Err(setting()
            .err()
            .unwrap_or_else(|| format!("{HUGE_PAGES_ENV}: expected 0 or 1"))),
        _ => {
            let on = setting().map(|on| {
                on && kernel_takes_the_advice(std::fs::read_to_string(THP_ENABLED).ok().as_deref())
            });
            let state = match on {
                Ok(true) => 1,
                Ok(false) => 2,
                Err(_) => 3,
            };
            STATE.store(state, Ordering::Relaxed);
            on
        }
    }
}

/// Zero-filled host memory of whole huge pages, advised `MADV_HUGEPAGE` and faulted in,
/// unmapped on drop.
#[derive(Debug)]
pub(crate) struct HugeRegion {
    /// The mapping's first byte, on a 2 MiB boundary.
    start: *mut u8,
    /// `len` rounded up to whole huge pages.
    len: usize,
}

// SAFETY: plain anonymous memory owned by this value; access is ordered by its owner.
unsafe impl Send for HugeRegion {}
// SAFETY: as above.
unsafe impl Sync for HugeRegion {}

impl HugeRegion {
    /// `len` bytes (rounded up to whole huge pages) of zeroed memory on a 2 MiB boundary, its
    /// pages faulted in (huge ones where the kernel has them), or `None` where `len` is
    /// under [`MIN_BYTES`] or over [`MAX_BYTES`], huge pages are off ([`enabled`]: the caller
    /// says why where it is an error) or the mapping fails (the caller allocates as it did
    /// before).
    pub(crate) fn new(len: usize) -> Option<Self> {
        if !(MIN_BYTES..=MAX_BYTES).contains(&len) || enabled() != Ok(true) {
            return None;
        }
        let len = len.checked_next_multiple_of(HUGE_PAGE)?;
        let mapped = len.checked_add(HUGE_PAGE)?;
        // SAFETY: a new private anonymous mapping; no existing memory is touched.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return None;
        }
        let map = map.cast::<u8>();
        let head = map.align_offset(HUGE_PAGE);
        let start = map.wrapping_add(head);
        // The mapping's bytes before the boundary and after the region given back (the tail
        // is never empty: `head < HUGE_PAGE`), so that the region takes the address space of
        // its pages and no more: a 512 KiB buffer took 4 MiB of it, and a process under
        // `ulimit -v` made half the buffers the rounding leaves room for.
        // SAFETY: the pieces of the mapping outside `start..start + len`, used by nothing.
        unsafe {
            if head > 0 {
                libc::munmap(map.cast(), head);
            }
            libc::munmap(start.add(len).cast(), mapped - head - len);
        }
        // Advice only: where the kernel has no transparent huge pages it fails, and the
        // mapping is ordinary pages.
        // SAFETY: `start..start + len` is the mapping (above).
        #[cfg(target_os = "linux")]
        unsafe {
            libc::madvise(start.cast(), len, libc::MADV_HUGEPAGE);
        }
        // Every page faulted in now, not at its first use: a huge page's fault zeroes 2 MiB
        // and may wait for the kernel to compact memory (`defrag` asks it to for advised
        // mappings), which in the first region to write the buffer made copies of a few
        // hundred microseconds take milliseconds. Buffer creation is not in any recorded
        // time.
        for offset in (0..len).step_by(4096) {
            // SAFETY: in the mapping; writes the zero the page holds.
            unsafe { start.add(offset).write_volatile(0) };
        }
        Some(Self { start, len })
    }

    /// The first byte, on a 2 MiB boundary.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.start
    }

    /// Bytes usable from [`Self::as_ptr`]: the length asked for rounded up to huge pages.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for HugeRegion {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new` (what is left of it), unmapped once.
        unsafe { libc::munmap(self.start.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping holding `address` (`/proc/self/smaps`).
    fn vm_flags(address: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((from, to)) = range.split_once('-')
                && let (Ok(from), Ok(to)) = (
                    usize::from_str_radix(from, 16),
                    usize::from_str_radix(to, 16),
                )
            {
                inside = (from..to).contains(&address);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.trim().to_string());
            }
        }
        None
    }

    #[test]
    fn a_large_region_is_whole_huge_pages_on_a_boundary_advised_and_zeroed() {
        if enabled() != Ok(true) {
            // `HRX_HUGE_PAGES=0`, or a kernel without transparent huge pages.
            return;
        }
        let region = HugeRegion::new(921_600).expect("a 900 KiB region");
        assert_eq!(region.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(region.len(), HUGE_PAGE);
        // SAFETY: the region's bytes, owned here.
        let bytes = unsafe { std::slice::from_raw_parts_mut(region.as_ptr(), region.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes.fill(7);
        // The kernel has transparent huge pages (`enabled`): the advice is on the mapping.
        let flags = vm_flags(region.as_ptr() as usize).expect("the region's mapping");
        assert!(flags.split(' ').any(|f| f == "hg"), "VmFlags: {flags}");
        assert_eq!(
            HugeRegion::new(HUGE_PAGE + 1).map(|r| r.len()),
            Some(2 * HUGE_PAGE)
        );
    }

    /// Bytes of this process's address space (`VmSize` of `/proc/self/status`), read with
    /// `open` and `read` into the stack: nothing allocated, so nothing mapped by the reading.
    fn address_space() -> Option<usize> {
        let mut text = [0u8; 8192];
        // SAFETY: a NUL-terminated path; `text` is writable for its length; closed once.
        let read = unsafe {
            let fd = libc::open(c"/proc/self/status".as_ptr(), libc::O_RDONLY);
            if fd < 0 {
                return None;
            }
            let read = libc::read(fd, text.as_mut_ptr().cast(), text.len());
            libc::close(fd);
            usize::try_from(read).ok()?
        };
        let text = std::str::from_utf8(&text[..read]).ok()?;
        let line = text.lines().find_map(|l| l.strip_prefix("VmSize:"))?;
        let kib: usize = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
        Some(kib << 10)
    }

    /// A region maps its own pages and no more: the huge page more that `mmap` is asked
    /// for, to find a 2 MiB boundary in, is given back, so that a 512 KiB buffer takes 2 MiB
    /// of address space as it takes 2 MiB of memory. It took 4 MiB, twice what the rounding
    /// costs: under `ulimit -v 1000000` the software device made 163 buffers of 512 KiB,
    /// against 1272 on plain pages (session 53's break-it pass). Checked in a forked child,
    /// whose one thread maps nothing else between the readings.
    #[test]
    fn a_region_takes_the_address_space_of_its_pages_only() {
        // Read here: the child takes no lock.
        if enabled() != Ok(true) {
            // `HRX_HUGE_PAGES=0`, or a kernel without transparent huge pages.
            return;
        }
        // SAFETY: the child makes system calls only (no lock another thread may hold) and
        // leaves by `_exit`.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = (|| {
                let before = address_space()?;
                let region = HugeRegion::new(MIN_BYTES)?;
                let grown = address_space()? - before;
                // SAFETY: a probe: `msync` of a page nobody maps fails with ENOMEM.
                let after_end_mapped = unsafe {
                    libc::msync(
                        region.as_ptr().wrapping_add(region.len()).cast(),
                        4096,
                        libc::MS_ASYNC,
                    )
                } == 0;
                let len = region.len();
                drop(region);
                let freed = address_space()? == before;
                Some(match (grown == len, !after_end_mapped, freed) {
                    (true, true, true) => 0,
                    (false, _, _) => 2,
                    (_, false, _) => 3,
                    (_, _, false) => 4,
                })
            })()
            .unwrap_or(1);
            // SAFETY: ends the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status), "status {status}");
        // 2: the address space grew by more than the region; 3: the page past its end is
        // mapped; 4: dropping it left some mapped; 1: no region, or no reading.
        assert_eq!(libc::WEXITSTATUS(status), 0);
    }

    /// A kernel whose transparent huge pages are `never` (or which has none) gets no huge-page
    /// regions: they were made there all the same, each a 512 KiB buffer's 2 MiB of plain
    /// pages faulted in, for nothing (session 53's break-it pass, read from the code).
    #[test]
    fn a_kernel_without_huge_pages_gets_no_regions() {
        for (text, takes) in [
            (Some("always [madvise] never\n"), true),
            (Some("[always] madvise never\n"), true),
            (Some("always madvise [never]\n"), false),
            (None, false),
        ] {
            assert_eq!(kernel_takes_the_advice(text), takes, "{text:?}");
        }
    }

    /// `HRX_HUGE_PAGES` takes 0 or 1 (empty: unset), as the other `HRX_` switches do: `off`
    /// left huge pages on without a word (session 53's break-it pass).
    #[test]
    fn the_switch_takes_0_or_1_and_names_anything_else() {
        use std::ffi::OsStr;
        assert_eq!(parse_setting(None), Ok(true));
        assert_eq!(parse_setting(Some(OsStr::new(""))), Ok(true));
        assert_eq!(parse_setting(Some(OsStr::new("1"))), Ok(true));
        assert_eq!(parse_setting(Some(OsStr::new("0"))), Ok(false));
        for bad in ["off", "false", "no", " 0", "00", "2"] {
            assert_eq!(
                parse_setting(Some(OsStr::new(bad))),
                Err(format!("HRX_HUGE_PAGES: expected 0 or 1, got {bad:?}")),
            );
        }
    }

    #[test]
    fn small_and_very_large_regions_stay_where_they_were() {
        assert!(HugeRegion::new(MIN_BYTES - 1).is_none());
        assert!(HugeRegion::new(0).is_none());
        assert!(HugeRegion::new(MAX_BYTES + 1).is_none());
    }
}
