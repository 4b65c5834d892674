//! The host clock every session reads: the CPU's time-stamp counter where it is invariant,
//! mapped onto `CLOCK_MONOTONIC` by a calibration kept up to date; else `CLOCK_MONOTONIC`
//! itself.
//!
//! # Why not `Instant`
//!
//! A timed zone reads the clock twice, and `Instant::now` (a vDSO `clock_gettime`) cost 21 ns
//! a read on the build machine where `rdtsc` costs about 7 (issue 17): the clock cost more
//! than the record. Tracy reads the TSC for the same reason.
//!
//! # The map
//!
//! The clock is process-wide (the runtime's region times and every recorder's session times
//! come from it) and reads in ns on the `CLOCK_MONOTONIC` time line:
//!
//! ```text
//!  ns = from_ns + (ticks - from_ticks) * ns_per_tick_q32 / 2^32      (one segment)
//! ```
//!
//! - **Start.** The first use measures two (TSC, `CLOCK_MONOTONIC`) pairs about 1 ms apart
//!   (each pair the narrowest of a few tries bracketing the TSC read between two monotonic
//!   reads) and starts the first segment at the second pair.
//! - **Recalibration** ([`recalibrate`], called by every recorder's writer thread at each
//!   flush that writes records (an idle session's flush writes nothing), at its start and at
//!   its close): a new pair, the clock's own reading at its ticks,
//!   and a new segment from there. The new segment starts where the old one was at that tick
//!   (so the clock never jumps back) and its slope is the frequency measured over the whole
//!   process so far, bent to absorb the measured offset by the next calibration, at most
//!   1000 ppm (slewing, as NTP slews `CLOCK_MONOTONIC`); an offset of over 1 ms ahead of the
//!   clock (a suspended VM) is stepped forward instead.
//! - **Readers** see each calibration as a [`HostClock`] record: the pair, the clock's
//!   reading at it, the pair's own error, and the segment that follows. Records carry the
//!   clock's ns (so readers of older formats read the same times); a reader converts raw
//!   ticks with [`HostClock::to_session_ns`] and places session times on `CLOCK_MONOTONIC`
//!   with the recorded offsets ([`crate::reader::HostClocks`]).
//! - **Readers of the map** (the recording threads) use a seqlock: the writer of a new
//!   segment bumps a sequence number to odd, stores, bumps it to even; a reader retries if
//!   the number changed. No read-modify-write on the hot path, no lock.
//!
//! # Fallback
//!
//! The TSC is used only on x86-64 where CPUID leaf `0x8000_0007` reports an invariant TSC
//! (EDX bit 8: constant rate in every P-, C- and T-state; Intel SDM vol. 3B 18.17.1, AMD APM
//! vol. 2 16.11.1). Elsewhere, or when [`CLOCK_ENV`] is `monotonic`, every read is a
//! `CLOCK_MONOTONIC` read (an `Instant`-based one off Unix), and the calibrations are exact
//! (no map).
//!
//! [`HostClock`]: crate::schema::HostClock
//! [`HostClock::to_session_ns`]: crate::schema::HostClock::to_session_ns

use crate::schema::HostClockSource;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering, fence};

/// Environment variable choosing the host clock: `auto` (the default: the TSC where it is
/// invariant, else `CLOCK_MONOTONIC`) or `monotonic` (always `CLOCK_MONOTONIC`: the clock
/// before format 1.6, and the fallback where there is no invariant TSC). Read once per
/// process, at the clock's first use.
pub const CLOCK_ENV: &str = "HRX_TRACE_CLOCK";

/// Largest slew of the map's slope away from the measured frequency, in parts per million.
const MAX_SLEW_PPM: i128 = 1000;
/// An offset larger than this (the monotonic clock ahead) is stepped, not slewed, in ns.
const STEP_NS: i64 = 1_000_000;

/// What [`CLOCK_ENV`] asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockChoice {
    /// The TSC where it is invariant, else `CLOCK_MONOTONIC`.
    Auto,
    /// `CLOCK_MONOTONIC` always.
    Monotonic,
}

impl ClockChoice {
    /// Parses a [`CLOCK_ENV`] value; `None` for anything but `auto`, `monotonic` or empty.
    pub fn parse(text: &str) -> Option<ClockChoice> {
        match text.trim() {
            "" | "auto" => Some(ClockChoice::Auto),
            "monotonic" => Some(ClockChoice::Monotonic),
            _ => None,
        }
    }

    /// The choice [`CLOCK_ENV`] makes: `Ok(Auto)` when unset.
    ///
    /// # Errors
    ///
    /// The variable's text when it names no choice.
    pub fn from_env() -> Result<ClockChoice, String> {
        match std::env::var_os(CLOCK_ENV) {
            None => Ok(ClockChoice::Auto),
            Some(text) => {
                let text = text.to_string_lossy();
                ClockChoice::parse(&text).ok_or_else(|| text.into_owned())
            }
        }
    }
}

/// One linear piece of the map from ticks to ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// The tick count where the piece starts.
    pub from_ticks: u64,
    /// The clock's reading at `from_ticks`, in ns.
    pub from_ns: u64,
    /// ns per tick, as a 32.32 fixed-point number.
    pub ns_per_tick_q32: u64,
}

impl Segment {
    const IDENTITY: Segment = Segment {
        from_ticks: 0,
        from_ns: 0,
        ns_per_tick_q32: 1 << 32,
    };

    /// The clock's reading in ns at `ticks` (before `from_ticks`, the piece extended back).
    #[inline]
    pub fn to_ns(&self, ticks: u64) -> u64 {
        if ticks >= self.from_ticks {
            let d = u128::from(ticks - self.from_ticks);
            self.from_ns
                .wrapping_add(((d * u128::from(self.ns_per_tick_q32)) >> 32) as u64)
        } else {
            let d = u128::from(self.from_ticks - ticks);
            self.from_ns
                .saturating_sub(((d * u128::from(self.ns_per_tick_q32)) >> 32) as u64)
        }
    }
}

/// A (ticks, `CLOCK_MONOTONIC`) pair.
#[derive(Clone, Copy, Debug)]
struct Pair {
    ticks: u64,
    /// The middle of the monotonic reads bracketing the tick read, in ns.
    monotonic_ns: u64,
    /// Half the bracket's width, in ns: the pair's own error.
    error_ns: u64,
}

/// One calibration: what [`recalibrate`] measured and the segment it put in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// The clock's source.
    pub source: HostClockSource,
    /// The raw reading (TSC ticks, or `CLOCK_MONOTONIC` ns).
    pub ticks: u64,
    /// The clock's reading at `ticks` before this calibration, in ns.
    pub clock_ns: u64,
    /// `CLOCK_MONOTONIC` at the same instant, in ns.
    pub monotonic_ns: u64,
    /// The pair's own error (half the window bracketing the tick read), in ns.
    pub error_ns: u64,
    /// The map from `ticks` on.
    pub next: Segment,
}

struct Calibrator {
    /// The first pair: the frequency is measured from it.
    first: Pair,
    /// The pair of the latest calibration.
    last: Pair,
    current: Segment,
}

/// The calibrator behind a lock that a forked child can let go of ([`after_fork`]): a
/// `std::sync::Mutex` held by the parent's writer thread when a thread forked stayed held
/// in the child for ever (no thread there to release it), so the child's first recorder
/// hung in its first calibration (a forked child of a traced process, on a loaded machine:
/// `runtime::fork::a_new_runtime_in_a_forked_child_of_a_traced_process_works` timed out).
/// Held only by writer threads while they calibrate, rarely contended: waiters yield.
struct Calibrating {
    held: AtomicBool,
    cal: UnsafeCell<Calibrator>,
}

// SAFETY: `cal` is reached only through `Calibrating::lock`, which `held` serializes.
unsafe impl Sync for Calibrating {}

/// [`Calibrating`]'s calibrator, held until dropped.
struct Held<'a>(&'a Calibrating);

impl Calibrating {
    fn lock(&self) -> Held<'_> {
        while self
            .held
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        Held(self)
    }
}

impl std::ops::Deref for Held<'_> {
    type Target = Calibrator;
    fn deref(&self) -> &Calibrator {
        // SAFETY: held (see `Calibrating::lock`).
        unsafe { &*self.0.cal.get() }
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Calibrator {
        // SAFETY: held, and this guard is the only one.
        unsafe { &mut *self.0.cal.get() }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.held.store(false, Ordering::Release);
    }
}

/// In a child just forked (its only thread, from the `pthread_atfork` child handler of
/// [`crate::fork`]): lets go of what the parent's threads held of the clock at the fork,
/// which no thread of the child will release. The calibrator's lock is freed, and a segment
/// being published (an odd sequence) is taken as published, so that `now_ns` does not
/// wait for ever: its fields may mix the old segment and the new one until the child's
/// first calibration (its recorder's start) publishes a whole one. Only atomics: what a
/// forked child of a multithreaded process may do.
pub(crate) fn after_fork() {
    if let Some(clock) = CLOCK.get() {
        clock.calibrator.held.store(false, Ordering::Release);
        let seq = clock.seq.load(Ordering::Relaxed);
        if seq & 1 == 1 {
            clock.seq.store(seq.wrapping_add(1), Ordering::Release);
        }
    }
}

/// The process's host clock.
pub(crate) struct Clock {
    source: HostClockSource,
    seq: AtomicU64,
    from_ticks: AtomicU64,
    from_ns: AtomicU64,
    ns_per_tick_q32: AtomicU64,
    calibrator: Calibrating,
}

static CLOCK: Published<Clock> = Published::new();

#[inline]
fn clock() -> &'static Clock {
    CLOCK.get_or_init(|| Clock::new(ClockChoice::from_env().unwrap_or(ClockChoice::Auto)))
}

/// A value made once and kept for the process, whose making never waits on another thread's:
/// threads that find it unmade each make one, the first published wins and the others' are
/// dropped. Not a `OnceLock`: a child forked while a parent's thread was inside a
/// `OnceLock`'s initializer (the clock's takes about 1 ms, measuring the TSC) finds it being
/// made for ever, and its first clock read waited for a thread the child does not have.
pub(crate) struct Published<T: 'static>(AtomicPtr<T>);

impl<T: 'static> Published<T> {
    pub(crate) const fn new() -> Self {
        Self(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// The value, if one was published.
    #[inline]
    pub(crate) fn get(&self) -> Option<&'static T> {
        let value = self.0.load(Ordering::Acquire);
        // SAFETY: non-null pointers here come from `Box::into_raw` in `get_or_init`, are
        // published once and never freed (the value lives for the process).
        (!value.is_null()).then(|| unsafe { &*value })
    }

    /// The value, made by `make` on this thread where none was published yet.
    #[inline]
    pub(crate) fn get_or_init(&self, make: impl FnOnce() -> T) -> &'static T {
        match self.get() {
            Some(value) => value,
            None => self.publish(make()),
        }
    }

    #[cold]
    fn publish(&self, value: T) -> &'static T {
        let new = Box::into_raw(Box::new(value));
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: just published, never freed.
            Ok(_) => unsafe { &*new },
            Err(winner) => {
                // SAFETY: `new` was never published: this thread owns it. `winner` was
                // published by another thread and is never freed.
                drop(unsafe { Box::from_raw(new) });
                unsafe { &*winner }
            }
        }
    }
}

/// The host clock in ns on the `CLOCK_MONOTONIC` time line (within the latest calibration's
/// recorded offset). Every session time and every runtime region time is read here.
#[inline]
pub fn now_ns() -> u64 {
    clock().now_ns()
}

/// The process's clock source (chosen at the first use of the clock, from [`CLOCK_ENV`]).
pub fn source() -> HostClockSource {
    clock().source
}

/// Measures the clock against `CLOCK_MONOTONIC` and starts a new segment (see the module
/// docs). Called by the recorder's writer thread; never on a recording thread.
pub fn recalibrate() -> Calibration {
    clock().recalibrate()
}

/// Whether this CPU reports an invariant TSC (CPUID `0x8000_0007` EDX bit 8).
pub fn invariant_tsc() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x8000_0000 gives the highest
        // extended leaf, checked before reading 0x8000_0007. (`__cpuid` is a safe function in
        // newer Rust, hence the allow.)
        #[allow(unused_unsafe)]
        let (max, edx) = unsafe {
            let max = __cpuid(0x8000_0000).eax;
            let edx = if max >= 0x8000_0007 {
                __cpuid(0x8000_0007).edx
            } else {
                0
            };
            (max, edx)
        };
        max >= 0x8000_0007 && edx & (1 << 8) != 0
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A raw reading. The TSC is read without `lfence` (as Tracy reads it): ordering the read
/// after the preceding instructions made a timed zone cost about 1.4x as much on the build
/// machine (BENCHMARKS.md, session 11); the price is a read that may land anywhere in the
/// out-of-order window, a few cycles of noise per time.
#[inline]
fn read_ticks(source: HostClockSource) -> u64 {
    match source {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: RDTSC exists on every x86-64 CPU and only reads the counter.
        HostClockSource::Tsc => unsafe { core::arch::x86_64::_rdtsc() },
        _ => monotonic_ns(),
    }
}

/// `CLOCK_MONOTONIC` in ns (off Unix: an `Instant` since the first call).
#[inline]
pub fn monotonic_ns() -> u64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(ts.tv_nsec as u64)
    }
    #[cfg(not(unix))]
    {
        static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        BASE.get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

impl Clock {
    pub(crate) fn new(choice: ClockChoice) -> Clock {
        // A forked child must let go of this clock's lock ([`after_fork`]).
        crate::fork::watch_forks();
        let source = match choice {
            ClockChoice::Auto if invariant_tsc() => HostClockSource::Tsc,
            _ => HostClockSource::Monotonic,
        };
        let (first, last, current) = match source {
            HostClockSource::Tsc => {
                let first = pair(source);
                // About 1 ms between the two pairs: a frequency within ~1e-4 to start with,
                // refined by every recalibration.
                let mut second = pair(source);
                while second.monotonic_ns < first.monotonic_ns + 1_000_000
                    || second.ticks <= first.ticks
                {
                    std::hint::spin_loop();
                    second = pair(source);
                }
                let current = Segment {
                    from_ticks: second.ticks,
                    from_ns: second.monotonic_ns,
                    ns_per_tick_q32: frequency_q32(first, second),
                };
                (first, second, current)
            }
            _ => {
                let now = pair(source);
                (now, now, Segment::IDENTITY)
            }
        };
        Clock {
            source,
            seq: AtomicU64::new(0),
            from_ticks: AtomicU64::new(current.from_ticks),
            from_ns: AtomicU64::new(current.from_ns),
            ns_per_tick_q32: AtomicU64::new(current.ns_per_tick_q32),
            calibrator: Calibrating {
                held: AtomicBool::new(false),
                cal: UnsafeCell::new(Calibrator {
                    first,
                    last,
                    current,
                }),
            },
        }
    }

    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        match self.source {
            HostClockSource::Tsc => self.tsc_now_ns(),
            _ => monotonic_ns(),
        }
    }

    #[inline]
    fn tsc_now_ns(&self) -> u64 {
        loop {
            let seq = self.seq.load(Ordering::Acquire);
            let segment = Segment {
                from_ticks: self.from_ticks.load(Ordering::Relaxed),
                from_ns: self.from_ns.load(Ordering::Relaxed),
                ns_per_tick_q32: self.ns_per_tick_q32.load(Ordering::Relaxed),
            };
            // Read after the segment: a segment published before this read starts at or
            // before these ticks.
            let ticks = read_ticks(HostClockSource::Tsc);
            fence(Ordering::Acquire);
            if seq & 1 == 0 && self.seq.load(Ordering::Relaxed) == seq {
                return segment.to_ns(ticks);
            }
            std::hint::spin_loop();
        }
    }

    fn publish(&self, segment: Segment) {
        // Writers are serialized by the calibrator's lock.
        let seq = self.seq.load(Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.from_ticks.store(segment.from_ticks, Ordering::Relaxed);
        self.from_ns.store(segment.from_ns, Ordering::Relaxed);
        self.ns_per_tick_q32
            .store(segment.ns_per_tick_q32, Ordering::Relaxed);
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }

    pub(crate) fn recalibrate(&self) -> Calibration {
        let mut cal = self.calibrator.lock();
        let now = pair(self.source);
        let clock_ns = cal.current.to_ns(now.ticks);
        let next = match self.source {
            HostClockSource::Tsc => next_segment(&cal, now, clock_ns),
            // The identity, anchored at this reading (as every segment is at its calibration).
            _ => Segment {
                from_ticks: now.ticks,
                from_ns: now.ticks,
                ns_per_tick_q32: 1 << 32,
            },
        };
        if self.source == HostClockSource::Tsc {
            self.publish(next);
        }
        cal.current = next;
        cal.last = now;
        Calibration {
            source: self.source,
            ticks: now.ticks,
            clock_ns,
            monotonic_ns: now.monotonic_ns,
            error_ns: now.error_ns,
            next,
        }
    }
}

/// The segment after a calibration at `now`, where the clock read `clock_ns`.
fn next_segment(cal: &Calibrator, now: Pair, clock_ns: u64) -> Segment {
    let frequency = if now.ticks > cal.first.ticks && now.monotonic_ns > cal.first.monotonic_ns {
        frequency_q32(cal.first, now)
    } else {
        cal.current.ns_per_tick_q32
    };
    let offset_ns = now.monotonic_ns as i64 - clock_ns as i64;
    if offset_ns > STEP_NS {
        return Segment {
            from_ticks: now.ticks,
            from_ns: now.monotonic_ns,
            ns_per_tick_q32: frequency,
        };
    }
    // Absorb the offset over about as long as the last interval (at least 1 ms of ticks).
    let interval_ticks = now.ticks.saturating_sub(cal.last.ticks);
    let min_ticks = ((1_000_000u128 << 32) / u128::from(frequency.max(1))) as u64;
    let horizon = i128::from(interval_ticks.max(min_ticks).max(1));
    let bend = (i128::from(offset_ns) << 32) / horizon;
    let limit = i128::from(frequency) * MAX_SLEW_PPM / 1_000_000;
    let slope = (i128::from(frequency) + bend.clamp(-limit, limit)).max(1);
    Segment {
        from_ticks: now.ticks,
        from_ns: clock_ns,
        ns_per_tick_q32: slope as u64,
    }
}

/// ns per tick between two pairs, 32.32 fixed point.
fn frequency_q32(a: Pair, b: Pair) -> u64 {
    let ns = u128::from(b.monotonic_ns.saturating_sub(a.monotonic_ns));
    let ticks = u128::from(b.ticks.saturating_sub(a.ticks).max(1));
    ((ns << 32) / ticks).clamp(1, u128::from(u64::MAX)) as u64
}

/// The narrowest of a few (monotonic, ticks, monotonic) brackets.
fn pair(source: HostClockSource) -> Pair {
    if source == HostClockSource::Monotonic {
        // The reading is the monotonic clock itself: exact.
        let ticks = monotonic_ns();
        return Pair {
            ticks,
            monotonic_ns: ticks,
            error_ns: 0,
        };
    }
    let mut best: Option<Pair> = None;
    for _ in 0..5 {
        let before = monotonic_ns();
        let ticks = read_ticks(source);
        let after = monotonic_ns();
        let window = after.saturating_sub(before);
        let p = Pair {
            ticks,
            monotonic_ns: before + window / 2,
            error_ns: window.div_ceil(2),
        };
        if best.is_none_or(|b| p.error_ns < b.error_ns) {
            best = Some(p);
        }
    }
    best.expect("five tries")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child forked while another thread calibrated the clock (its lock held, a segment
    /// half published) reads the clock and calibrates it: with a `Mutex` the child's first
    /// calibration waited for ever for a lock no thread of its would release. The forking
    /// thread holds them here, as the parent's writer thread would.
    #[cfg(unix)]
    #[test]
    fn a_child_forked_while_the_clock_was_calibrated_reads_and_calibrates_it() {
        let clock = clock();
        crate::fork::watch_forks();
        let held = clock.calibrator.lock();
        // Odd: a publish under way. Other tests' reads wait only across the fork.
        let seq = clock.seq.fetch_add(1, Ordering::AcqRel);
        // SAFETY: the child makes no allocation and ends with `_exit`: no test harness, no
        // exit handlers of the parent's.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let before = now_ns();
            let calibration = recalibrate();
            let after = now_ns();
            let fine = after >= before && calibration.monotonic_ns > 0;
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(if fine { 0 } else { 1 }) };
        }
        // Published (the segment unchanged), and the lock let go, in this process.
        clock.seq.store(seq.wrapping_add(2), Ordering::Release);
        drop(held);
        assert!(pid > 0, "fork failed");
        // A liveness limit, not a measurement: the child ends at once, or never (it hangs).
        assert!(
            crate::fork::child::held(pid),
            "the forked child hung on the clock"
        );
    }

    /// A child forked while another thread of its parent is making a [`Published`] value
    /// (as the clock's first use measures the TSC for about 1 ms) makes its own and goes on:
    /// with the `OnceLock` the clock had, the child's first read waited for ever for an
    /// initializer that no thread of the child runs. The maker here waits, inside `make`,
    /// until the parent has forked.
    #[cfg(unix)]
    #[test]
    fn a_child_forked_while_a_value_is_being_made_makes_its_own() {
        static CELL: Published<u64> = Published::new();
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (forked, forked_rx) = std::sync::mpsc::channel::<()>();
        let maker = std::thread::spawn(move || {
            *CELL.get_or_init(|| {
                entered_tx.send(()).unwrap();
                forked_rx.recv().unwrap();
                1
            })
        });
        entered.recv().unwrap();
        // SAFETY: the child makes one allocation (the value; the allocator's lock is not
        // held by the parked maker) and ends with `_exit`: no test harness, no exit handlers.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let value = *CELL.get_or_init(|| 2);
            // SAFETY: ends the child at once.
            unsafe { libc::_exit(if value == 2 { 0 } else { 1 }) };
        }
        forked.send(()).unwrap();
        // The parent's maker published first: every later reader gets its value.
        assert_eq!(maker.join().unwrap(), 1);
        assert_eq!(*CELL.get_or_init(|| 3), 1);
        assert!(pid > 0, "fork failed");
        // A liveness limit, not a measurement: the child ends at once, or never (it hangs).
        assert!(
            crate::fork::child::held(pid),
            "the forked child hung on a value being made"
        );
    }

    /// Two threads that find no value each make one; one is kept and both get it.
    #[test]
    fn racing_makers_agree_on_one_value() {
        static CELL: Published<usize> = Published::new();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let makers: Vec<_> = (0..2)
            .map(|i| {
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    *CELL.get_or_init(|| {
                        barrier.wait();
                        i
                    })
                })
            })
            .collect();
        let got: Vec<usize> = makers.into_iter().map(|m| m.join().unwrap()).collect();
        assert_eq!(got[0], got[1]);
        assert_eq!(CELL.get(), Some(&got[0]));
    }

    fn calibrator(first: Pair, current: Segment) -> Calibrator {
        Calibrator {
            first,
            last: first,
            current,
        }
    }

    #[test]
    fn segments_are_continuous_and_never_run_back() {
        // 0.5 ns per tick, start at 1000 ns.
        let s = Segment {
            from_ticks: 100,
            from_ns: 1_000,
            ns_per_tick_q32: 1 << 31,
        };
        assert_eq!(s.to_ns(100), 1_000);
        assert_eq!(s.to_ns(300), 1_100);
        assert_eq!(s.to_ns(0), 950);
        assert_eq!(Segment::IDENTITY.to_ns(12_345), 12_345);
    }

    #[test]
    fn a_clock_behind_is_slewed_not_stepped_back_or_forward() {
        let first = Pair {
            ticks: 0,
            monotonic_ns: 0,
            error_ns: 0,
        };
        // 1 ns per tick measured; the clock reads 10 µs behind after 100 ms.
        let cal = calibrator(first, Segment::IDENTITY);
        let now = Pair {
            ticks: 100_000_000,
            monotonic_ns: 100_000_000,
            error_ns: 0,
        };
        let next = next_segment(&cal, now, 99_990_000);
        assert_eq!(next.from_ns, 99_990_000, "continuous at the calibration");
        // 10 µs over 100 ms is 100 ppm faster.
        let ppm = (next.ns_per_tick_q32 as f64 / (1u64 << 32) as f64 - 1.0) * 1e6;
        assert!((ppm - 100.0).abs() < 1.0, "{ppm}");
        // By the next calibration the offset is gone.
        assert!(next.to_ns(200_000_000).abs_diff(200_000_000) <= 1);
    }

    #[test]
    fn a_clock_ahead_slows_at_most_by_the_slew_limit() {
        let first = Pair {
            ticks: 0,
            monotonic_ns: 0,
            error_ns: 0,
        };
        let cal = calibrator(first, Segment::IDENTITY);
        let now = Pair {
            ticks: 1_000_000,
            monotonic_ns: 1_000_000,
            error_ns: 0,
        };
        let next = next_segment(&cal, now, 1_500_000);
        assert_eq!(next.from_ns, 1_500_000, "never back");
        let ppm = (next.ns_per_tick_q32 as f64 / (1u64 << 32) as f64 - 1.0) * 1e6;
        assert!((ppm + 1000.0).abs() < 1.0, "{ppm}");
        let ns = next.to_ns(1_001_000) - next.to_ns(1_000_000);
        assert!((998..=999).contains(&ns), "{ns} ns for 1000 ticks");
    }

    #[test]
    fn a_clock_far_behind_steps_forward() {
        let first = Pair {
            ticks: 0,
            monotonic_ns: 0,
            error_ns: 0,
        };
        let cal = calibrator(first, Segment::IDENTITY);
        let now = Pair {
            ticks: 10_000_000,
            monotonic_ns: 15_000_000,
            error_ns: 0,
        };
        let next = next_segment(&cal, now, 10_000_000);
        assert_eq!(next.from_ns, 15_000_000);
        assert_eq!(next.from_ticks, 10_000_000);
    }

    #[test]
    fn the_monotonic_fallback_reads_the_monotonic_clock() {
        let clock = Clock::new(ClockChoice::Monotonic);
        assert_eq!(clock.source, HostClockSource::Monotonic);
        let before = monotonic_ns();
        let read = clock.now_ns();
        let after = monotonic_ns();
        assert!(before <= read && read <= after);
        let c = clock.recalibrate();
        assert_eq!(c.error_ns, 0);
        assert_eq!(c.clock_ns, c.monotonic_ns);
        assert_eq!(
            c.next,
            Segment {
                from_ticks: c.ticks,
                from_ns: c.ticks,
                ns_per_tick_q32: 1 << 32
            }
        );
    }

    #[test]
    fn the_clock_runs_forward_across_recalibrations_and_tracks_the_monotonic_clock() {
        let clock = Clock::new(ClockChoice::Auto);
        assert_eq!(
            clock.source == HostClockSource::Tsc,
            invariant_tsc(),
            "the TSC exactly where it is invariant"
        );
        let mut last = clock.now_ns();
        for _ in 0..50 {
            for _ in 0..200 {
                let now = clock.now_ns();
                assert!(now >= last, "ran back: {last} -> {now}");
                last = now;
            }
            let c = clock.recalibrate();
            // The map's reading at the calibration's ticks is the recorded one.
            assert_eq!(c.next.to_ns(c.ticks), c.next.from_ns);
            let now = clock.now_ns();
            assert!(
                now >= last,
                "ran back across a calibration: {last} -> {now}"
            );
            last = now;
        }
    }

    #[test]
    fn choices_parse() {
        assert_eq!(ClockChoice::parse(""), Some(ClockChoice::Auto));
        assert_eq!(ClockChoice::parse("auto"), Some(ClockChoice::Auto));
        assert_eq!(
            ClockChoice::parse("monotonic"),
            Some(ClockChoice::Monotonic)
        );
        assert_eq!(ClockChoice::parse("tsc2"), None);
    }
}
