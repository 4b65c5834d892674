//! Fault injection on the software device.
//!
//! A [`FaultSpec`] fails one native operation — the Nth device operation (copies, fills,
//! kernel dispatches and NPU runs, counted from 1 in submission order: by submission
//! index, then region, then operation within the region), or the Nth dispatch of a named
//! kernel — with a device loss or a kernel error. It fires once.
//!
//! Counting in submission order rather than execution order makes `op=N` name the same
//! operation however submissions overlap across queues, so a capture and its replay fail
//! the same operation. The scheduler numbers each region's first operation at submit
//! ([`numbered`]); an operation of a region that was cancelled keeps its number and never
//! runs. Operations outside a scheduled region (none on the software device today) are
//! counted in execution order.
//! Set it with [`crate::RuntimeOptions::fault`] or the `HRX_FAULT` environment variable:
//!
//! ```text
//! HRX_FAULT=op=7:device-lost          the 7th operation loses the device
//! HRX_FAULT=kernel=hrx_sobel:kernel-error     the first hrx_sobel dispatch fails
//! HRX_FAULT=kernel=hrx_sobel#3:device-lost    the third hrx_sobel dispatch loses the device
//! ```
//!
//! Outcomes (documented in [`crate::execution`]): a device loss quarantines the prepared
//! graph and poisons every buffer its region writes; a kernel error fails the submission,
//! and, on a copy batch, marks the lane's copy stream unhealthy as any batch failure does.

use crate::{Error, Result};
use std::cell::Cell;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Which operation fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultTarget {
    /// The Nth native operation (1-based) executed by the device.
    Operation(u64),
    /// The Nth (1-based) dispatch of the kernel with this entry name.
    Kernel {
        /// Entry name.
        name: String,
        /// Which dispatch of it, from 1.
        occurrence: u64,
    },
}

/// How it fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A failure of uncertain extent ([`Error::DeviceLost`]).
    DeviceLost,
    /// A kernel failure of known extent ([`Error::Kernel`]).
    KernelError,
}

/// An injected fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultSpec {
    /// Which operation fails.
    pub target: FaultTarget,
    /// How.
    pub kind: FaultKind,
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            FaultTarget::Operation(n) => write!(f, "op={n}")?,
            FaultTarget::Kernel {
                name,
                occurrence: 1,
            } => write!(f, "kernel={name}")?,
            FaultTarget::Kernel { name, occurrence } => write!(f, "kernel={name}#{occurrence}")?,
        }
        match self.kind {
            FaultKind::DeviceLost => write!(f, ":device-lost"),
            FaultKind::KernelError => write!(f, ":kernel-error"),
        }
    }
}

impl FaultSpec {
    /// The forms a fault spec takes, as a bad one's error names them (`KIND` is one of
    /// [`FaultSpec::KINDS`]).
    pub const FORMS: &str = "op=N:KIND or kernel=NAME[#N]:KIND";

    /// The kinds a fault spec's `KIND` names.
    pub const KINDS: &str = "device-lost or kernel-error";

    /// `text`, the value of environment variable `variable` (`HRX_FAULT`), as a fault spec.
    ///
    /// # Errors
    /// [`Error::Variable`] in the shape every `HRX_` variable's bad value is said in
    /// ([`hrx_capture::switch::bad_value`]), the parser's reason after it: `HRX_FAULT:
    /// expected op=N:KIND or kernel=NAME[#N]:KIND (KIND device-lost or kernel-error), got
    /// "op=0:device-lost": the count must be a whole number from 1`.
    pub fn from_variable(variable: &str, text: &str) -> Result<Self> {
        Self::parse(text).map_err(|why| {
            let expected = format!("{} (KIND {})", Self::FORMS, Self::KINDS);
            Error::Variable(hrx_capture::switch::bad_value(
                variable,
                &expected,
                text,
                Some(&why),
            ))
        })
    }

    /// Parses `op=N:KIND` or `kernel=NAME[#N]:KIND`; the error is why not, in words.
    fn parse(text: &str) -> std::result::Result<Self, String> {
        let kind_of = |kind: &str| match kind {
            "device-lost" => Some(FaultKind::DeviceLost),
            "kernel-error" => Some(FaultKind::KernelError),
            _ => None,
        };
        let (target, kind_text) = text.rsplit_once(':').ok_or("missing ':KIND'")?;
        let kind = kind_of(kind_text).ok_or("unknown kind")?;
        // `op=3:kernel-error:device-lost` read as a count, and a kernel's as part of its name
        // (`"hrx_blur_h:kernel-error" names no kernel ...`).
        if let Some((_, first)) = target.rsplit_once(':')
            && kind_of(first).is_some()
        {
            return Err(format!(
                "two kinds ({first} and {kind_text}): a fault has one kind"
            ));
        }
        // Digits only: `u64::from_str` takes a leading `+` (`op=+7` was accepted).
        let count = |n: &str| match n.parse::<u64>() {
            _ if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) => {
                Err("the count must be a whole number from 1".to_owned())
            }
            Ok(n) if n >= 1 => Ok(n),
            Ok(_) => Err("the count must be a whole number from 1".to_owned()),
            Err(_) => Err(format!("the count is too large (at most {})", u64::MAX)),
        };
        // A list names one fault for each, where a run injects one (`kernel=a,b` was taken
        // as the kernel "a,b", which no workload runs). No kernel's entry name holds a comma.
        let one = |what: &str, list: &str| {
            format!("a list of {what} ({list:?}): a fault names one, and a run injects one fault")
        };
        let target = if let Some(n) = target.strip_prefix("op=") {
            if n.contains(',') {
                return Err(one("operations", n));
            }
            FaultTarget::Operation(count(n)?)
        } else if let Some(rest) = target.strip_prefix("kernel=") {
            if rest.contains(',') {
                return Err(one("kernels", rest));
            }
            let (name, occurrence) = match rest.split_once('#') {
                Some((name, n)) => (name, count(n)?),
                None => (rest, 1),
            };
            if name.is_empty() {
                return Err("empty kernel name".into());
            }
            FaultTarget::Kernel {
                name: name.to_string(),
                occurrence,
            }
        } else {
            return Err("unknown target".into());
        };
        Ok(Self { target, kind })
    }
}

impl FromStr for FaultSpec {
    type Err = Error;

    /// Parses `op=N:KIND` or `kernel=NAME[#N]:KIND`, KIND being `device-lost` or
    /// `kernel-error` (`--fault`'s value; [`FaultSpec::from_variable`] reads a variable's).
    fn from_str(text: &str) -> Result<Self> {
        Self::parse(text).map_err(|why| {
            Error::Message(format!(
                "bad fault spec {text:?}: {why} (expected {}, KIND {})",
                Self::FORMS,
                Self::KINDS
            ))
        })
    }
}

thread_local! {
    /// The submission-order number of the next device operation of the region this thread
    /// is running, if any (see [`numbered`]).
    static NEXT_OPERATION: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Runs `body` (one region's native work, on the calling thread) with its device
/// operations numbered from `first`, their number in submission order.
pub(crate) fn numbered<T>(first: u64, body: impl FnOnce() -> T) -> T {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            NEXT_OPERATION.set(self.0);
        }
    }
    let _restore = Restore(NEXT_OPERATION.replace(Some(first)));
    body()
}

/// Counts native operations and fires the fault once.
#[derive(Debug, Default)]
pub(crate) struct FaultInjector {
    spec: Option<FaultSpec>,
    operations: AtomicU64,
    kernel_hits: AtomicU64,
    fired: AtomicBool,
    /// The fired fault's description until the runtime takes it for the trace.
    report: std::sync::Mutex<Option<String>>,
}

impl FaultInjector {
    pub fn new(spec: Option<FaultSpec>) -> Self {
        Self {
            spec,
            ..Self::default()
        }
    }

    /// Called before each native operation; `kernel` is the entry name of a dispatch.
    pub fn check(&self, kernel: Option<&str>, what: &str) -> Result<()> {
        let operation = match NEXT_OPERATION.get() {
            Some(number) => {
                NEXT_OPERATION.set(Some(number + 1));
                number
            }
            None => self.operations.fetch_add(1, Ordering::Relaxed) + 1,
        };
        let Some(spec) = &self.spec else {
            return Ok(());
        };
        let hit = match &spec.target {
            FaultTarget::Operation(n) => operation == *n,
            FaultTarget::Kernel { name, occurrence } => {
                kernel == Some(name.as_str())
                    && self.kernel_hits.fetch_add(1, Ordering::Relaxed) + 1 == *occurrence
            }
        };
        if !hit || self.fired.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let message = format!("injected fault {spec} at device operation {operation} ({what})");
        *crate::sync::lock(&self.report) = Some(message.clone());
        Err(match spec.kind {
            FaultKind::DeviceLost => Error::DeviceLost(message),
            FaultKind::KernelError => Error::Kernel(message),
        })
    }

    /// The injected fault, if any.
    pub fn spec(&self) -> Option<&FaultSpec> {
        self.spec.as_ref()
    }

    /// Dispatches of the target kernel counted so far (for a `kernel=` target).
    pub fn kernel_hits(&self) -> u64 {
        self.kernel_hits.load(Ordering::Relaxed)
    }

    /// Whether the fault has fired.
    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }

    /// The fired fault's description, once.
    pub fn take_report(&self) -> Option<String> {
        if !self.fired() {
            return None;
        }
        crate::sync::lock(&self.report).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_round_trip() {
        for text in [
            "op=7:device-lost",
            "kernel=hrx_sobel:kernel-error",
            "kernel=hrx_blur_h#3:device-lost",
        ] {
            assert_eq!(text.parse::<FaultSpec>().unwrap().to_string(), text);
        }
    }

    #[test]
    fn rejects_bad_specs_with_a_clear_message() {
        for text in [
            "",
            "op=0:device-lost",
            "op=x:device-lost",
            "op=3",
            "op=3:melt",
            "kernel=:device-lost",
            "disk=1:device-lost",
        ] {
            let error = text.parse::<FaultSpec>().unwrap_err().to_string();
            assert!(error.starts_with("bad fault spec"), "{text}: {error}");
        }
    }

    /// A count is digits only, and one past `u64::MAX` is said too large, not "not a whole
    /// number" (`+7` was taken: a break-it pass).
    #[test]
    fn counts_are_digits_and_too_large_ones_say_so() {
        for text in [
            "op=+7:device-lost",
            "kernel=k#+2:kernel-error",
            "op= 7:device-lost",
        ] {
            let error = text.parse::<FaultSpec>().unwrap_err().to_string();
            assert!(
                error.contains("the count must be a whole number from 1"),
                "{text}: {error}"
            );
        }
        let error = "op=18446744073709551616:device-lost"
            .parse::<FaultSpec>()
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("the count is too large (at most 18446744073709551615)"),
            "{error}"
        );
        let most = "op=18446744073709551615:device-lost".parse::<FaultSpec>();
        assert_eq!(most.unwrap().target, FaultTarget::Operation(u64::MAX));
    }

    /// A bad `HRX_FAULT` reads as every `HRX_` variable's bad value, the variable first, the
    /// parser's reason after it (it read `HRX_FAULT: bad fault spec ...`, as `--fault`'s
    /// parser words it, which it still does).
    #[test]
    fn a_bad_variable_reads_in_the_variables_shape() {
        let error = FaultSpec::from_variable("HRX_FAULT", "op=0:device-lost")
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "HRX_FAULT: expected op=N:KIND or kernel=NAME[#N]:KIND (KIND device-lost or \
             kernel-error), got \"op=0:device-lost\": the count must be a whole number from 1"
        );
        assert_eq!(
            FaultSpec::from_variable("HRX_FAULT", "kernel=k#2:device-lost").unwrap(),
            "kernel=k#2:device-lost".parse().unwrap()
        );
        let flag = "op=0:device-lost".parse::<FaultSpec>().unwrap_err();
        assert_eq!(
            flag.to_string(),
            "bad fault spec \"op=0:device-lost\": the count must be a whole number from 1 \
             (expected op=N:KIND or kernel=NAME[#N]:KIND, KIND device-lost or kernel-error)"
        );
    }

    /// Two kinds, or a list of kernels or operations, are said as such: `kernel=a,b` was
    /// taken as the kernel "a,b", `kernel=k:kernel-error:device-lost` as the kernel
    /// "k:kernel-error", and `op=3:kernel-error:device-lost` was "not a whole number".
    #[test]
    fn two_kinds_and_lists_are_said_as_such() {
        let error = |text: &str| text.parse::<FaultSpec>().unwrap_err().to_string();
        for text in [
            "kernel=hrx_blur_h:kernel-error:device-lost",
            "op=3:kernel-error:device-lost",
        ] {
            assert!(
                error(text)
                    .contains(": two kinds (kernel-error and device-lost): a fault has one kind ("),
                "{text}: {}",
                error(text)
            );
        }
        assert!(
            error("kernel=hrx_blur_h,hrx_sobel#2:kernel-error").contains(
                ": a list of kernels (\"hrx_blur_h,hrx_sobel#2\"): a fault names one, and a \
                 run injects one fault ("
            ),
            "{}",
            error("kernel=hrx_blur_h,hrx_sobel#2:kernel-error")
        );
        assert!(
            error("op=3,5:device-lost").contains(": a list of operations (\"3,5\")"),
            "{}",
            error("op=3,5:device-lost")
        );
        // A kernel name may still hold a colon (a namespace), before one kind.
        let spec: FaultSpec = "kernel=ns::k:kernel-error".parse().unwrap();
        assert_eq!(spec.to_string(), "kernel=ns::k:kernel-error");
    }

    #[test]
    fn fires_exactly_once_at_the_nth_operation() {
        let injector = FaultInjector::new(Some("op=3:kernel-error".parse().unwrap()));
        let results: Vec<bool> = (0..6)
            .map(|_| injector.check(None, "copy").is_err())
            .collect();
        assert_eq!(results, [false, false, true, false, false, false]);
        assert!(injector.fired());
    }

    #[test]
    fn numbered_operations_count_in_submission_order_not_execution_order() {
        let injector = FaultInjector::new(Some("op=5:kernel-error".parse().unwrap()));
        // A later submission's region (operations 7..) runs first: nothing fires.
        numbered(7, || {
            assert!(injector.check(None, "copy").is_ok());
            assert!(injector.check(None, "copy").is_ok());
        });
        // The earlier region's operations 4 and 5: the second one fails.
        numbered(4, || {
            assert!(injector.check(None, "fill").is_ok());
            let error = injector.check(None, "copy").unwrap_err();
            assert!(
                error.to_string().contains("at device operation 5 (copy)"),
                "{error}"
            );
        });
        // Outside a region: execution order, and the numbering was restored.
        assert!(NEXT_OPERATION.get().is_none());
    }

    #[test]
    fn kernel_target_counts_only_that_kernel() {
        let injector = FaultInjector::new(Some("kernel=k#2:device-lost".parse().unwrap()));
        assert!(injector.check(Some("k"), "k").is_ok());
        assert!(injector.check(Some("other"), "other").is_ok());
        let error = injector.check(Some("k"), "k").unwrap_err();
        assert!(error.is_device_loss(), "{error}");
        assert!(injector.check(Some("k"), "k").is_ok());
    }
}
