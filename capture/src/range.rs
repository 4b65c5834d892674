//! Capture ranges: which submissions a recording keeps (Nsight Systems' `--capture-range`,
//! GFXReconstruct's trimming).
//!
//! A range is chosen by `HRX_TRACE_RANGE` (`hrx-trace record --capture-range`, `--delay`,
//! `--duration` set it), by `RuntimeOptions::trace_range`, or at run time by [`start`] and
//! [`stop`] (`hrx::trace::start()`/`stop()`): with `HRX_TRACE_RANGE=api` nothing is recorded
//! until the first `start`; otherwise `stop` pauses and `start` resumes within the range.
//! The runtime decides at each submit; see `hrx`'s trace module for what a range records.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable naming a capture range (`submissions:A..B`, `time:S..E`, `api`).
pub const TRACE_RANGE_ENV: &str = "HRX_TRACE_RANGE";

/// Which submissions of a runtime a recording keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureRange {
    /// Submissions numbered `start..end` (the runtime numbers them from 1); `end` `None`:
    /// to the last.
    Submissions {
        /// The first submission kept.
        start: u64,
        /// One past the last submission kept.
        end: Option<u64>,
    },
    /// Submissions submitted `start_ns..end_ns` after the trace session started (the first
    /// runtime's creation), host clock.
    Time {
        /// Start of the window, ns.
        start_ns: u64,
        /// End of the window, ns; `None`: to the end.
        end_ns: Option<u64>,
    },
    /// From [`start`] to [`stop`] only.
    Api,
}

/// Why a range does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(String);

impl CaptureRange {
    /// Whether submission `submission`, submitted at `time_ns`, is inside the range.
    pub fn holds(&self, submission: u64, time_ns: u64) -> bool {
        match *self {
            CaptureRange::Submissions { start, end } => {
                submission >= start && end.is_none_or(|e| submission < e)
            }
            CaptureRange::Time { start_ns, end_ns } => {
                time_ns >= start_ns && end_ns.is_none_or(|e| time_ns < e)
            }
            CaptureRange::Api => true,
        }
    }

    /// Whether no submission numbered `submission` or later, submitted at `time_ns` or later,
    /// can be inside the range.
    pub fn is_over(&self, submission: u64, time_ns: u64) -> bool {
        match *self {
            CaptureRange::Submissions { end, .. } => end.is_some_and(|e| submission >= e),
            CaptureRange::Time { end_ns, .. } => end_ns.is_some_and(|e| time_ns >= e),
            CaptureRange::Api => false,
        }
    }

    /// The forms a capture range takes, as a bad one's error names them.
    pub const FORMS: &str = "submissions:A..B, time:S..E or api";

    /// The environment's range ([`TRACE_RANGE_ENV`]), if set and not empty.
    ///
    /// # Errors
    ///
    /// A [`RangeError`] as [`CaptureRange::from_variable`] says it.
    pub fn from_env() -> Result<Option<CaptureRange>, RangeError> {
        match std::env::var(TRACE_RANGE_ENV) {
            Ok(v) if !v.is_empty() => CaptureRange::from_variable(&v).map(Some),
            _ => Ok(None),
        }
    }

    /// `text`, the value of [`TRACE_RANGE_ENV`], as a range.
    ///
    /// # Errors
    ///
    /// A [`RangeError`] in the shape every `HRX_` variable's bad value is said in
    /// ([`crate::switch::bad_value`]), with the parser's reason where it has one beyond the
    /// forms: `HRX_TRACE_RANGE: expected submissions:A..B, time:S..E or api, got
    /// "submissions:0..2": "0..2" starts at submission 0, ...`.
    pub fn from_variable(text: &str) -> Result<CaptureRange, RangeError> {
        CaptureRange::parse(text).map_err(|why| {
            let why = why.as_ref().map(|why| why.0.as_str());
            RangeError(crate::switch::bad_value(
                TRACE_RANGE_ENV,
                CaptureRange::FORMS,
                text,
                why,
            ))
        })
    }

    /// `text` as a range; the error `None` where it takes none of the forms.
    fn parse(text: &str) -> Result<CaptureRange, Option<RangeError>> {
        if text == "api" {
            return Ok(CaptureRange::Api);
        }
        if let Some(range) = text.strip_prefix("submissions:") {
            let (start, end) = parse_submissions(range)?;
            return Ok(CaptureRange::Submissions { start, end });
        }
        if let Some(range) = text.strip_prefix("time:") {
            let (start_ns, end_ns) = parse_time(range)?;
            return Ok(CaptureRange::Time { start_ns, end_ns });
        }
        Err(None)
    }
}

/// Parses `A..B`, `A..=B`, `A..` (submission numbers).
///
/// # Errors
///
/// A [`RangeError`] saying what the range must be.
pub fn parse_submissions(text: &str) -> Result<(u64, Option<u64>), RangeError> {
    let bad = || {
        RangeError(format!(
            "{text:?} is not a submission range: expected A..B (B excluded), A..=B or A.., \
             with A and B whole numbers"
        ))
    };
    let (a, b) = text.trim().split_once("..").ok_or_else(bad)?;
    let start: u64 = if a.is_empty() {
        0
    } else {
        a.parse().map_err(|_| bad())?
    };
    let end = if b.is_empty() {
        None
    } else if let Some(b) = b.strip_prefix('=') {
        let last: u64 = b.parse().map_err(|_| bad())?;
        if last < start {
            return Err(RangeError(format!(
                "{text:?} selects no submission: the start must not be above the end"
            )));
        }
        // `..=u64::MAX` reaches every later submission: an open end.
        last.checked_add(1)
    } else {
        Some(b.parse().map_err(|_| bad())?)
    };
    if let Some(end) = end
        && end <= start
    {
        return Err(RangeError(format!(
            "{text:?} selects no submission: the start must be below the end"
        )));
    }
    // The runtime numbers submissions from 1, so `0..1` would record none of them.
    if end == Some(1) {
        return Err(RangeError(format!(
            "{text:?} selects no submission: submissions are numbered from 1"
        )));
    }
    // A written 0 counts as if from 0: `0..2` meant as "the first two" would select one.
    // An empty start (`..B`) is the plain way to say "from the first".
    if start == 0 && !a.trim().is_empty() {
        return Err(RangeError(format!(
            "{text:?} starts at submission 0, but submissions are numbered from 1: write \
             1..B (or ..B) for the first ones"
        )));
    }
    Ok((start, end))
}

/// A run's injected fault (`RuntimeStart::fault`'s text, `hrx::FaultSpec`'s form) counted
/// from a range's first submission, for [`crate::schema::RangeFault::from_start`]: `op=N`
/// and `kernel=NAME#N` count from the run's start, so the device operations numbered before
/// the range (`operations_before`) or the dispatches of `NAME` before it
/// (`dispatches_before(NAME)`) come off the count. `None` when nothing is left (the fault
/// fired, or its count passed, before the range); text of another form comes back as it is.
pub fn fault_from_range(
    spec: &str,
    operations_before: u64,
    dispatches_before: impl FnOnce(&str) -> u64,
) -> Option<String> {
    let Some((target, kind)) = spec.rsplit_once(':') else {
        return Some(spec.to_owned());
    };
    let count = |n: &str| n.parse::<u64>().ok().filter(|&n| n >= 1);
    if let Some(n) = target.strip_prefix("op=").and_then(count) {
        let left = n.checked_sub(operations_before).filter(|&n| n >= 1)?;
        return Some(format!("op={left}:{kind}"));
    }
    if let Some(rest) = target.strip_prefix("kernel=") {
        let (name, n) = match rest.split_once('#') {
            Some((name, n)) => (name, count(n)),
            None => (rest, Some(1)),
        };
        if let Some(n) = n {
            let left = n.checked_sub(dispatches_before(name)).filter(|&n| n >= 1)?;
            return Some(match left {
                1 => format!("kernel={name}:{kind}"),
                _ => format!("kernel={name}#{left}:{kind}"),
            });
        }
    }
    Some(spec.to_owned())
}

/// Parses a duration: a number with `s`, `ms`, `us` or `ns` (seconds without a unit), in ns.
///
/// # Errors
///
/// A [`RangeError`] saying what a duration must be.
pub fn parse_duration_ns(text: &str) -> Result<u64, RangeError> {
    let t = text.trim();
    let (number, scale) = [("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)]
        .iter()
        .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((t, 1e9));
    match number.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value >= 0.0 && value * scale < u64::MAX as f64 => {
            Ok((value * scale).round() as u64)
        }
        // A number, but more nanoseconds than the trace's clock holds.
        Ok(value) if value.is_finite() && value >= 0.0 => Err(RangeError(format!(
            "{text:?} is too long: a trace's clock counts at most {}s (u64 nanoseconds)",
            u64::MAX / 1_000_000_000
        ))),
        _ => Err(RangeError(format!(
            "{text:?} is not a duration: expected a number of seconds, or one with s, ms, us \
             or ns (1.5s, 200ms)"
        ))),
    }
}

/// Parses `S..E` or `S..` (durations, see [`parse_duration_ns`]).
///
/// # Errors
///
/// A [`RangeError`] saying what the range must be.
pub fn parse_time(text: &str) -> Result<(u64, Option<u64>), RangeError> {
    let (a, b) = text.trim().split_once("..").ok_or_else(|| {
        RangeError(format!(
            "{text:?} is not a time range: expected S..E or S.. (1.5s..3s)"
        ))
    })?;
    let start = if a.is_empty() {
        0
    } else {
        parse_duration_ns(a)?
    };
    let end = if b.is_empty() {
        None
    } else {
        Some(parse_duration_ns(b)?)
    };
    if let Some(end) = end
        && end <= start
    {
        return Err(RangeError(format!(
            "{text:?} is empty: the start must be before the end"
        )));
    }
    Ok((start, end))
}

impl FromStr for CaptureRange {
    type Err = RangeError;

    /// `--capture-range`'s value; [`CaptureRange::from_variable`] reads the variable's.
    fn from_str(text: &str) -> Result<Self, RangeError> {
        CaptureRange::parse(text).map_err(|why| {
            why.unwrap_or_else(|| {
                RangeError(format!(
                    "{text:?} is not a capture range: expected {}",
                    CaptureRange::FORMS
                ))
            })
        })
    }
}

impl fmt::Display for CaptureRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CaptureRange::Submissions { start, end } => {
                // `..B` for "from the first": a written 0 does not parse back.
                match start {
                    0 => f.write_str("submissions:..")?,
                    _ => write!(f, "submissions:{start}..")?,
                }
                match end {
                    Some(end) => write!(f, "{end}"),
                    None => Ok(()),
                }
            }
            CaptureRange::Time { start_ns, end_ns } => {
                write!(f, "time:{}s..", start_ns as f64 / 1e9)?;
                match end_ns {
                    Some(end) => write!(f, "{}s", end as f64 / 1e9),
                    None => Ok(()),
                }
            }
            CaptureRange::Api => f.write_str("api"),
        }
    }
}

const UNSET: u8 = 0;
const ON: u8 = 1;
const OFF: u8 = 2;

/// The process's [`start`]/[`stop`] state.
static MANUAL: AtomicU8 = AtomicU8::new(UNSET);

/// Starts (or resumes) recording submissions at each runtime's next submit: one atomic
/// store. A runtime whose recording was paused first records the state replay needs (see
/// `hrx::trace`). Without a trace open it does nothing.
pub fn start() {
    MANUAL.store(ON, Ordering::Relaxed);
}

/// Stops recording submissions at each runtime's next submit (definitions are still
/// recorded); one atomic store.
pub fn stop() {
    MANUAL.store(OFF, Ordering::Relaxed);
}

/// Whether a submission inside `range` (or any, without one) is recorded now, as
/// [`start`] and [`stop`] left it: `api` waits for a `start`; otherwise only a `stop`
/// pauses.
pub fn manually_on(range: Option<&CaptureRange>) -> bool {
    match MANUAL.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => !matches!(range, Some(CaptureRange::Api)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_fault_counts_from_the_range_start_or_not_at_all() {
        use super::fault_from_range as from;
        let none = |_: &str| 0;
        assert_eq!(
            from("op=7:device-lost", 4, none).as_deref(),
            Some("op=3:device-lost")
        );
        assert_eq!(from("op=7:device-lost", 7, none), None);
        assert_eq!(from("op=7:device-lost", 9, none), None);
        let sobel = |name: &str| if name == "hrx_sobel" { 1 } else { 5 };
        assert_eq!(
            from("kernel=hrx_sobel#2:device-lost", 3, sobel).as_deref(),
            Some("kernel=hrx_sobel:device-lost")
        );
        assert_eq!(
            from("kernel=hrx_sobel#4:kernel-error", 3, sobel).as_deref(),
            Some("kernel=hrx_sobel#3:kernel-error")
        );
        assert_eq!(from("kernel=hrx_sobel:kernel-error", 3, sobel), None);
        assert_eq!(from("garbled", 3, sobel).as_deref(), Some("garbled"));
    }

    use super::*;

    #[test]
    fn ranges_parse_and_print_back() {
        for text in [
            "submissions:3..7",
            "submissions:3..",
            "submissions:..4",
            "api",
            "time:1.5s..3s",
        ] {
            let range: CaptureRange = text.parse().unwrap();
            assert_eq!(range.to_string(), text);
        }
        assert_eq!(
            "submissions:3..=7".parse::<CaptureRange>().unwrap(),
            CaptureRange::Submissions {
                start: 3,
                end: Some(8)
            }
        );
        assert_eq!(
            "time:200ms..".parse::<CaptureRange>().unwrap(),
            CaptureRange::Time {
                start_ns: 200_000_000,
                end_ns: None
            }
        );
    }

    /// A bad `HRX_TRACE_RANGE` reads as every `HRX_` variable's bad value, the variable first
    /// (`VAR: expected A or B, got "x"`), the parser's reason after it where it has one; it
    /// read as `--capture-range`'s parser words it (`HRX_TRACE_RANGE: "x" is not a capture
    /// range: ...`).
    #[test]
    fn a_bad_variable_reads_in_the_variables_shape() {
        let err = |t: &str| CaptureRange::from_variable(t).unwrap_err().to_string();
        assert_eq!(
            err("bogus"),
            "HRX_TRACE_RANGE: expected submissions:A..B, time:S..E or api, got \"bogus\""
        );
        assert_eq!(
            err("submissions:0..2"),
            "HRX_TRACE_RANGE: expected submissions:A..B, time:S..E or api, got \
             \"submissions:0..2\": \"0..2\" starts at submission 0, but submissions are \
             numbered from 1: write 1..B (or ..B) for the first ones"
        );
        assert!(err("time:3s..1s").ends_with(
            "got \"time:3s..1s\": \"3s..1s\" is empty: the start must be before the end"
        ));
        assert_eq!(CaptureRange::from_variable("api"), Ok(CaptureRange::Api));
        // The flag's words stay the parser's.
        assert_eq!(
            "bogus".parse::<CaptureRange>().unwrap_err().to_string(),
            "\"bogus\" is not a capture range: expected submissions:A..B, time:S..E or api"
        );
    }

    #[test]
    fn bad_ranges_say_what_is_wrong() {
        let err = |t: &str| t.parse::<CaptureRange>().unwrap_err().to_string();
        assert!(err("submissions:9..3").contains("start must be below the end"));
        assert!(err("submissions:9..=8").contains("start must not be above the end"));
        // The last submission number there can be: to the end, not an empty range.
        let max = u64::MAX;
        assert_eq!(
            format!("submissions:{max}..={max}").parse::<CaptureRange>(),
            Ok(CaptureRange::Submissions {
                start: max,
                end: None
            })
        );
        assert!(err("submissions:3..3").contains("selects no submission"));
        assert!(err("submissions:0..1").contains("numbered from 1"));
        assert!(err("submissions:..1").contains("numbered from 1"));
        assert!(err("submissions:0..=0").contains("numbered from 1"));
        // A written 0 is refused rather than read as 1 (`0..2` would be one submission).
        assert!(err("submissions:0..2").contains("numbered from 1"));
        assert!(err("submissions:0..").contains("write 1..B"));
        assert_eq!(
            "submissions:..2".parse::<CaptureRange>(),
            Ok(CaptureRange::Submissions {
                start: 0,
                end: Some(2)
            })
        );
        assert!(err("submissions:x..3").contains("expected A..B"));
        assert!(err("submissions:-1..3").contains("expected A..B"));
        assert!(err("time:3s..1s").contains("before the end"));
        assert!(err("time:1h..2h").contains("not a duration"));
        let long = err("time:0s..99999999999999s");
        assert!(
            long.contains("too long") && long.contains("18446744073s"),
            "{long}"
        );
        assert!(err("frames:1..2").contains("expected submissions:A..B"));
    }

    #[test]
    fn holds_and_is_over() {
        let r = CaptureRange::Submissions {
            start: 3,
            end: Some(5),
        };
        assert!(!r.holds(2, 0) && r.holds(3, 0) && r.holds(4, 0) && !r.holds(5, 0));
        assert!(!r.is_over(4, 0) && r.is_over(5, 0));
        let t = CaptureRange::Time {
            start_ns: 10,
            end_ns: None,
        };
        assert!(!t.holds(1, 9) && t.holds(1, 10) && !t.is_over(u64::MAX, u64::MAX));
    }
}
