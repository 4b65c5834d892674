//! The GPU's clocks at one moment ([`GpuClocks`]), why they are where they are
//! ([`ClockLimits`]), and how a backend reads them ([`ClockReader`]).
//!
//! A timing is only as steady as the clocks it ran under: a GPU that sheds clock for its
//! power cap or its temperature runs the same kernel slower. The replay reads the clocks right
//! before its first timed repeat and right after its last, and its report says them.
//!
//! The figures are NVML's (the NVIDIA Management Library, `libnvidia-ml.so.1`, which comes with
//! the driver): `nvmlDeviceGetClockInfo` and `nvmlDeviceGetMaxClockInfo` for the SM and memory
//! clocks, `nvmlDeviceGetCurrentClocksEventReasons` for the limits, `nvmlDeviceGetTemperature`
//! for the GPU sensor (<https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html>).
//! The CUDA backend reads them (`gpu/cuda/nvml.rs`); other backends answer
//! [`GpuClocksError::NotApplicable`]. This file is pure data: no library is loaded here.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The GPU's clocks at one moment, in MHz, as NVML reports them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuClocks {
    /// The SM (streaming multiprocessor) clock now, in MHz (`NVML_CLOCK_SM`).
    pub sm_mhz: u32,
    /// The memory clock now, in MHz (`NVML_CLOCK_MEM`).
    pub mem_mhz: u32,
    /// The highest SM clock the GPU can run at, in MHz (`nvmlDeviceGetMaxClockInfo`).
    pub max_sm_mhz: u32,
    /// The highest memory clock, in MHz.
    pub max_mem_mhz: u32,
    /// What holds the clocks where they are now (NVML's clocks event reasons).
    pub limits: ClockLimits,
    /// The GPU's temperature in degrees Celsius (`NVML_TEMPERATURE_GPU`), where NVML gives it.
    pub temperature_c: Option<u32>,
}

impl fmt::Display for GpuClocks {
    /// `SM 1980/1980 MHz, memory 2619/2619 MHz, 41 °C, limited by: SW power cap` (now/max;
    /// the temperature and the limits where there are some).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SM {}/{} MHz, memory {}/{} MHz",
            self.sm_mhz, self.max_sm_mhz, self.mem_mhz, self.max_mem_mhz
        )?;
        if let Some(t) = self.temperature_c {
            write!(f, ", {t} °C")?;
        }
        if !self.limits.is_empty() {
            write!(f, ", limited by: {}", self.limits)?;
        }
        Ok(())
    }
}

/// What holds the GPU's clocks below their maximum: NVML's clocks event reasons, a bitmask
/// (`nvmlDeviceGetCurrentClocksEventReasons`; `nvmlDeviceGetCurrentClocksThrottleReasons`
/// before driver 535, same bits).
///
/// The bits are `nvml.h`'s `nvmlClocksEventReason*` (formerly `nvmlClocksThrottleReason*`):
/// `GpuIdle` 0x1, `ApplicationsClocksSetting` 0x2, `SwPowerCap` 0x4, `HwSlowdown` 0x8,
/// `SyncBoost` 0x10, `SwThermalSlowdown` 0x20, `HwThermalSlowdown` 0x40,
/// `HwPowerBrakeSlowdown` 0x80, `DisplayClockSetting` 0x100
/// (<https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html>). A bit NVML
/// adds later reads as `bit N`. In JSON, the list of names ([`ClockLimits::names`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClockLimits(pub u64);

/// Each known bit of [`ClockLimits`] and its name, in bit order.
const LIMIT_NAMES: [(u64, &str); 9] = [
    (0x1, "idle"),
    (0x2, "application clocks setting"),
    (0x4, "SW power cap"),
    (0x8, "HW slowdown"),
    (0x10, "sync boost"),
    (0x20, "SW thermal slowdown"),
    (0x40, "HW thermal slowdown"),
    (0x80, "HW power brake slowdown"),
    (0x100, "display clock setting"),
];

impl ClockLimits {
    /// `nvmlClocksEventReasonGpuIdle`: nothing runs on the GPU and its clocks are dropping.
    pub const IDLE: ClockLimits = ClockLimits(0x1);

    /// Whether no limit is active (the clocks are as high as they can be).
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether a limit other than [`ClockLimits::IDLE`] is active: one that slows work that
    /// runs (a power cap, a temperature, a clock setting, ...).
    pub fn limits_work(self) -> bool {
        self.0 & !ClockLimits::IDLE.0 != 0
    }

    /// The names of the active limits, in bit order (`bit N` for a bit this build does not
    /// know).
    pub fn names(self) -> Vec<String> {
        (0..64)
            .map(|bit| 1u64 << bit)
            .filter(|mask| self.0 & mask != 0)
            .map(|mask| match LIMIT_NAMES.iter().find(|(m, _)| *m == mask) {
                Some((_, name)) => (*name).to_owned(),
                None => format!("bit {}", mask.trailing_zeros()),
            })
            .collect()
    }

    /// The limits named by `names` ([`ClockLimits::names`] read back).
    ///
    /// # Errors
    /// The first name that is neither a known limit nor `bit N` (N below 64).
    pub fn from_names<S: AsRef<str>>(names: &[S]) -> Result<ClockLimits, String> {
        let mut bits = 0;
        for name in names {
            let name = name.as_ref();
            let known = LIMIT_NAMES
                .iter()
                .find(|(_, n)| *n == name)
                .map(|(m, _)| *m);
            let other = || {
                let bit: u32 = name.strip_prefix("bit ")?.parse().ok()?;
                1u64.checked_shl(bit)
            };
            bits |= known
                .or_else(other)
                .ok_or_else(|| format!("unknown clock limit {name:?}"))?;
        }
        Ok(ClockLimits(bits))
    }
}

impl fmt::Display for ClockLimits {
    /// The names joined by `, `; `none` when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&self.names().join(", "))
    }
}

impl Serialize for ClockLimits {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.names().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ClockLimits {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let names = Vec::<String>::deserialize(deserializer)?;
        ClockLimits::from_names(&names).map_err(serde::de::Error::custom)
    }
}

/// Why the GPU's clocks could not be read: one line each.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GpuClocksError {
    /// The backend has no clocks to read (the software device; HIP, not yet).
    #[error("GPU clocks are read through NVML on CUDA only, not on {backend}")]
    NotApplicable {
        /// The backend.
        backend: &'static str,
    },
    /// NVML's library did not load.
    #[error("NVML library {library} not found ({reason}); it comes with the NVIDIA driver")]
    LibraryMissing {
        /// The library asked for (`libnvidia-ml.so.1`).
        library: String,
        /// The loader's words (`dlerror`).
        reason: String,
    },
    /// NVML's library lacks a function.
    #[error("NVML library {library} lacks {symbol} (the NVIDIA driver is too old)")]
    SymbolMissing {
        /// The library.
        library: String,
        /// The missing function.
        symbol: &'static str,
    },
    /// The CUDA driver did not say which PCI device the runtime's GPU is.
    #[error("no PCI bus id for the GPU: {why}")]
    NoBusId {
        /// The failed driver call and its code.
        why: String,
    },
    /// NVML knows no device at the runtime's GPU's PCI bus id.
    #[error(
        "NVML found no device at PCI bus id {pci_bus_id}: nvmlDeviceGetHandleByPciBusId_v2 \
         returned {} ({code})", nvml_error_name(*code)
    )]
    DeviceNotFound {
        /// The bus id asked for (`domain:bus:device.function`, hex).
        pci_bus_id: String,
        /// NVML's `nvmlReturn_t`.
        code: i32,
    },
    /// An NVML call failed.
    #[error("{call} returned {} ({code})", nvml_error_name(*code))]
    Call {
        /// The NVML function.
        call: &'static str,
        /// NVML's `nvmlReturn_t`.
        code: i32,
    },
}

/// The name of an NVML return code (`nvmlReturn_t` in `nvml.h`), `NVML_ERROR_` dropped:
/// `NOT_SUPPORTED` for 3; `code N` for one this build does not know.
pub fn nvml_error_name(code: i32) -> String {
    const NAMES: [&str; 30] = [
        "SUCCESS",
        "UNINITIALIZED",
        "INVALID_ARGUMENT",
        "NOT_SUPPORTED",
        "NO_PERMISSION",
        "ALREADY_INITIALIZED",
        "NOT_FOUND",
        "INSUFFICIENT_SIZE",
        "INSUFFICIENT_POWER",
        "DRIVER_NOT_LOADED",
        "TIMEOUT",
        "IRQ_ISSUE",
        "LIBRARY_NOT_FOUND",
        "FUNCTION_NOT_FOUND",
        "CORRUPTED_INFOROM",
        "GPU_IS_LOST",
        "RESET_REQUIRED",
        "OPERATING_SYSTEM",
        "LIB_RM_VERSION_MISMATCH",
        "IN_USE",
        "MEMORY",
        "NO_DATA",
        "VGPU_ECC_NOT_SUPPORTED",
        "INSUFFICIENT_RESOURCES",
        "FREQ_NOT_SUPPORTED",
        "ARGUMENT_VERSION_MISMATCH",
        "DEPRECATED",
        "NOT_READY",
        "GPU_NOT_FOUND",
        "INVALID_STATE",
    ];
    match usize::try_from(code).ok().and_then(|i| NAMES.get(i)) {
        Some(name) => (*name).to_owned(),
        None if code == 999 => "UNKNOWN".to_owned(),
        None => format!("code {code}"),
    }
}

/// A backend's reader of its GPU's clocks (NVML on CUDA), kept open between readings.
pub trait NativeClockReader: Send + Sync {
    /// The clocks now.
    ///
    /// # Errors
    /// [`GpuClocksError::Call`] naming the NVML call that failed and its code.
    fn read(&self) -> Result<GpuClocks, GpuClocksError>;
}

/// Reads one GPU's clocks ([`crate::Runtime::gpu_clock_reader`]); the library behind it stays
/// loaded and initialized until the reader is dropped, so a reading costs a few driver calls.
pub struct ClockReader(Box<dyn NativeClockReader>);

impl ClockReader {
    /// Wraps a backend's reader.
    pub fn new(native: Box<dyn NativeClockReader>) -> Self {
        Self(native)
    }

    /// The clocks now.
    ///
    /// # Errors
    /// [`GpuClocksError::Call`] naming the NVML call that failed and its code.
    pub fn read(&self) -> Result<GpuClocks, GpuClocksError> {
        self.0.read()
    }
}

impl fmt::Debug for ClockReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClockReader")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_bits_decode_into_nvmls_reasons_in_bit_order() {
        assert_eq!(ClockLimits(0).names(), Vec::<String>::new());
        assert_eq!(ClockLimits(0).to_string(), "none");
        let all = ClockLimits(0x1ff);
        assert_eq!(
            all.names(),
            [
                "idle",
                "application clocks setting",
                "SW power cap",
                "HW slowdown",
                "sync boost",
                "SW thermal slowdown",
                "HW thermal slowdown",
                "HW power brake slowdown",
                "display clock setting",
            ]
        );
        assert_eq!(
            ClockLimits(0x4 | 0x40).to_string(),
            "SW power cap, HW thermal slowdown"
        );
        // A bit this build does not know is named by its number, and reads back.
        let later = ClockLimits(0x4 | 1 << 9);
        assert_eq!(later.names(), ["SW power cap", "bit 9"]);
        assert_eq!(ClockLimits::from_names(&later.names()), Ok(later));
        assert_eq!(ClockLimits::from_names(&all.names()), Ok(all));
        assert!(ClockLimits::from_names(&["warp drive"]).is_err());
        assert!(ClockLimits::from_names(&["bit 64"]).is_err());
    }

    #[test]
    fn idle_alone_does_not_limit_work() {
        assert!(!ClockLimits(0).limits_work());
        assert!(!ClockLimits::IDLE.limits_work());
        assert!(ClockLimits(0x1 | 0x4).limits_work());
        assert!(ClockLimits(0x2).limits_work());
    }

    #[test]
    fn clocks_read_as_now_over_max_and_serialize_their_limits_by_name() {
        let clocks = GpuClocks {
            sm_mhz: 1755,
            mem_mhz: 2619,
            max_sm_mhz: 1980,
            max_mem_mhz: 2619,
            limits: ClockLimits(0x4),
            temperature_c: Some(61),
        };
        assert_eq!(
            clocks.to_string(),
            "SM 1755/1980 MHz, memory 2619/2619 MHz, 61 °C, limited by: SW power cap"
        );
        let quiet = GpuClocks {
            limits: ClockLimits(0),
            temperature_c: None,
            ..clocks.clone()
        };
        assert_eq!(quiet.to_string(), "SM 1755/1980 MHz, memory 2619/2619 MHz");
        let json = serde_json::to_value(&clocks).unwrap();
        assert_eq!(json["limits"], serde_json::json!(["SW power cap"]));
        assert_eq!(json["sm_mhz"], 1755);
        let back: GpuClocks = serde_json::from_value(json).unwrap();
        assert_eq!(back, clocks);
    }

    #[test]
    fn nvml_codes_have_their_names() {
        assert_eq!(nvml_error_name(3), "NOT_SUPPORTED");
        assert_eq!(nvml_error_name(6), "NOT_FOUND");
        assert_eq!(nvml_error_name(29), "INVALID_STATE");
        assert_eq!(nvml_error_name(999), "UNKNOWN");
        assert_eq!(nvml_error_name(77), "code 77");
        assert_eq!(nvml_error_name(-1), "code -1");
        let e = GpuClocksError::Call {
            call: "nvmlDeviceGetClockInfo",
            code: 3,
        };
        assert_eq!(
            e.to_string(),
            "nvmlDeviceGetClockInfo returned NOT_SUPPORTED (3)"
        );
    }
}
