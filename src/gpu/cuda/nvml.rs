//! The GPU's clocks through NVML, the NVIDIA Management Library (`libnvidia-ml.so.1`, part of
//! the driver), loaded at run time with `libloading`: hrx builds and runs without it, and a
//! machine without it answers [`GpuClocksError::LibraryMissing`], never a panic.
//!
//! The calls (NVML API reference, <https://docs.nvidia.com/deploy/nvml-api/>; the
//! declarations and constants are `nvml.h`'s):
//! - `nvmlInit_v2` when a reader opens, `nvmlShutdown` when it drops (NVML counts them: other
//!   users of NVML in the process are not disturbed);
//! - `nvmlDeviceGetHandleByPciBusId_v2` with the bus id the CUDA driver gives for the
//!   runtime's device (`cuDeviceGetPCIBusId`: `domain:bus:device.function`, hex), so that the
//!   clocks are the GPU the runtime runs on whatever `CUDA_VISIBLE_DEVICES` renumbers;
//! - `nvmlDeviceGetClockInfo` and `nvmlDeviceGetMaxClockInfo` for `NVML_CLOCK_SM` (1) and
//!   `NVML_CLOCK_MEM` (2), in MHz;
//! - `nvmlDeviceGetCurrentClocksEventReasons` (driver 535 and newer), else its former name
//!   `nvmlDeviceGetCurrentClocksThrottleReasons` (the same bits): [`ClockLimits`];
//! - `nvmlDeviceGetTemperature` with `NVML_TEMPERATURE_GPU` (0), where the library has it and
//!   the GPU answers (else the reading has no temperature).
//!
//! NVML is thread-safe (its reference, "Thread-safety"): a reader may be used from any thread.

use crate::gpu::clocks::{ClockLimits, GpuClocks, GpuClocksError, NativeClockReader};
use std::ffi::{CString, c_char, c_int, c_uint, c_ulonglong, c_void};

/// NVML's library as the driver installs it.
pub(crate) const LIBRARY: &str = "libnvidia-ml.so.1";

/// `nvmlReturn_t`.
type NvmlReturn = c_int;
/// `nvmlDevice_t`, an opaque handle.
type NvmlDevice = *mut c_void;

const NVML_SUCCESS: NvmlReturn = 0;
/// `nvmlClockType_t`.
const NVML_CLOCK_SM: c_uint = 1;
const NVML_CLOCK_MEM: c_uint = 2;
/// `nvmlTemperatureSensors_t`.
const NVML_TEMPERATURE_GPU: c_uint = 0;

type Init = unsafe extern "C" fn() -> NvmlReturn;
type Shutdown = unsafe extern "C" fn() -> NvmlReturn;
type HandleByPciBusId = unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> NvmlReturn;
type ClockInfo = unsafe extern "C" fn(NvmlDevice, c_uint, *mut c_uint) -> NvmlReturn;
type Reasons = unsafe extern "C" fn(NvmlDevice, *mut c_ulonglong) -> NvmlReturn;
type Temperature = unsafe extern "C" fn(NvmlDevice, c_uint, *mut c_uint) -> NvmlReturn;

/// The clocks event reasons' two names, the current one first.
const REASONS: [&str; 2] = [
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
];

/// NVML, initialized, and one device's handle: a [`NativeClockReader`].
pub(crate) struct Nvml {
    device: NvmlDevice,
    clock_info: ClockInfo,
    max_clock_info: ClockInfo,
    reasons: (Reasons, &'static str),
    temperature: Option<Temperature>,
    shutdown: Shutdown,
    /// Kept loaded while the function pointers above are used; dropped after `shutdown`.
    _library: libloading::Library,
}

// SAFETY: NVML is thread-safe (NVML API reference, "Thread-safety"); the device handle is an
// opaque token NVML accepts from any thread, and nothing here is mutated after `open`.
unsafe impl Send for Nvml {}
// SAFETY: as above.
unsafe impl Sync for Nvml {}

/// `Ok` for `NVML_SUCCESS`, else [`GpuClocksError::Call`] naming `call`.
fn check(call: &'static str, code: NvmlReturn) -> Result<(), GpuClocksError> {
    match code {
        NVML_SUCCESS => Ok(()),
        code => Err(GpuClocksError::Call { call, code }),
    }
}

impl Nvml {
    /// Loads `library` (NVML: [`LIBRARY`]; tests load a stand-in), initializes it and finds the
    /// device at `pci_bus_id`.
    ///
    /// # Errors
    /// [`GpuClocksError::LibraryMissing`] when the library does not load (the loader's words);
    /// [`GpuClocksError::SymbolMissing`] naming the first function it lacks;
    /// [`GpuClocksError::Call`] when `nvmlInit_v2` fails; [`GpuClocksError::DeviceNotFound`]
    /// when no device has that bus id (with NVML's code).
    pub(crate) fn open(library: &str, pci_bus_id: &str) -> Result<Nvml, GpuClocksError> {
        // SAFETY: loading NVML runs its initializers, as any NVML user does; a test's stand-in
        // is built for this.
        let lib = unsafe { libloading::Library::new(library) }.map_err(|error| {
            // libloading's own text is "dlopen failed"; dlerror's words are its source.
            let reason = std::error::Error::source(&error)
                .map_or_else(|| error.to_string(), |source| source.to_string());
            GpuClocksError::LibraryMissing {
                library: library.to_owned(),
                reason,
            }
        })?;
        let missing = |symbol: &'static str| GpuClocksError::SymbolMissing {
            library: library.to_owned(),
            symbol,
        };
        /// The function `name` of `lib` as a `T`, copied out of its symbol.
        ///
        /// # Safety
        /// `T` is the function's C type, and the pointer is used only while `lib` is loaded.
        unsafe fn function<T: Copy>(lib: &libloading::Library, name: &str) -> Option<T> {
            // SAFETY: the caller's obligations.
            unsafe { lib.get::<T>(name.as_bytes()).ok().map(|symbol| *symbol) }
        }
        // SAFETY (each `function` below): the types are nvml.h's declarations of these
        // functions, and the pointers live in `Nvml` beside the library that holds them.
        let init: Init =
            unsafe { function(&lib, "nvmlInit_v2") }.ok_or_else(|| missing("nvmlInit_v2"))?;
        let shutdown: Shutdown =
            unsafe { function(&lib, "nvmlShutdown") }.ok_or_else(|| missing("nvmlShutdown"))?;
        let by_bus_id: HandleByPciBusId =
            unsafe { function(&lib, "nvmlDeviceGetHandleByPciBusId_v2") }
                .ok_or_else(|| missing("nvmlDeviceGetHandleByPciBusId_v2"))?;
        let clock_info: ClockInfo = unsafe { function(&lib, "nvmlDeviceGetClockInfo") }
            .ok_or_else(|| missing("nvmlDeviceGetClockInfo"))?;
        let max_clock_info: ClockInfo = unsafe { function(&lib, "nvmlDeviceGetMaxClockInfo") }
            .ok_or_else(|| missing("nvmlDeviceGetMaxClockInfo"))?;
        let reasons = REASONS
            .iter()
            .find_map(|&name| Some((unsafe { function::<Reasons>(&lib, name) }?, name)))
            .ok_or_else(|| missing(REASONS[0]))?;
        let temperature: Option<Temperature> =
            unsafe { function(&lib, "nvmlDeviceGetTemperature") };
        // SAFETY: no arguments; NVML counts initializations.
        check("nvmlInit_v2", unsafe { init() })?;
        // From here `Drop` shuts NVML down again, whatever fails next.
        let mut nvml = Nvml {
            device: std::ptr::null_mut(),
            clock_info,
            max_clock_info,
            reasons,
            temperature,
            shutdown,
            _library: lib,
        };
        let not_found = |code| GpuClocksError::DeviceNotFound {
            pci_bus_id: pci_bus_id.to_owned(),
            code,
        };
        // A bus id with a NUL in it names no device: NVML's INVALID_ARGUMENT (2).
        let id = CString::new(pci_bus_id).map_err(|_| not_found(2))?;
        // SAFETY: a NUL-terminated string and one handle written.
        let code = unsafe { by_bus_id(id.as_ptr(), &mut nvml.device) };
        if code != NVML_SUCCESS {
            return Err(not_found(code));
        }
        Ok(nvml)
    }

    /// One clock of `kind` (`NVML_CLOCK_*`) through `f`, named `call` in errors.
    fn clock(&self, f: ClockInfo, call: &'static str, kind: c_uint) -> Result<u32, GpuClocksError> {
        let mut mhz: c_uint = 0;
        // SAFETY: a handle NVML gave and one value written.
        check(call, unsafe { f(self.device, kind, &mut mhz) })?;
        Ok(mhz)
    }
}

impl NativeClockReader for Nvml {
    fn read(&self) -> Result<GpuClocks, GpuClocksError> {
        let now = |kind| self.clock(self.clock_info, "nvmlDeviceGetClockInfo", kind);
        let max = |kind| self.clock(self.max_clock_info, "nvmlDeviceGetMaxClockInfo", kind);
        let (reasons, reasons_name) = self.reasons;
        let mut bits: c_ulonglong = 0;
        // SAFETY: a handle NVML gave and one value written.
        check(reasons_name, unsafe { reasons(self.device, &mut bits) })?;
        let temperature_c = self.temperature.and_then(|f| {
            let mut celsius: c_uint = 0;
            // SAFETY: a handle NVML gave and one value written.
            let code = unsafe { f(self.device, NVML_TEMPERATURE_GPU, &mut celsius) };
            (code == NVML_SUCCESS).then_some(celsius)
        });
        Ok(GpuClocks {
            sm_mhz: now(NVML_CLOCK_SM)?,
            mem_mhz: now(NVML_CLOCK_MEM)?,
            max_sm_mhz: max(NVML_CLOCK_SM)?,
            max_mem_mhz: max(NVML_CLOCK_MEM)?,
            limits: ClockLimits(bits),
            temperature_c,
        })
    }
}

impl Drop for Nvml {
    fn drop(&mut self) {
        // SAFETY: NVML was initialized by `open`; its result has nowhere to go (never a panic
        // in `Drop`), and the library stays loaded until the field drops after this.
        let _ = unsafe { (self.shutdown)() };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A stand-in for libnvidia-ml: the functions the reader calls, with fixed answers, and
    /// counters of its initializations. `-DTHROTTLE_ONLY` exports the reasons under their
    /// former name only and no temperature; `-DMEM_CLOCK_FAILS` answers NOT_SUPPORTED for
    /// the memory clock.
    const STAND_IN: &str = r#"
#include <string.h>
static int open_count = 0;
static int dev = 1;
int nvmlInit_v2(void) { open_count++; return 0; }
int nvmlShutdown(void) { open_count--; return 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char* id, void** device) {
  if (strcmp(id, "0000:19:00.0") != 0) return 6; /* NVML_ERROR_NOT_FOUND */
  *device = &dev;
  return 0;
}
int nvmlDeviceGetClockInfo(void* device, unsigned kind, unsigned* mhz) {
  if (device != &dev) return 2;
#ifdef MEM_CLOCK_FAILS
  if (kind == 2) return 3; /* NVML_ERROR_NOT_SUPPORTED */
#endif
  *mhz = kind == 1 ? 1755 : kind == 2 ? 2619 : 0;
  return kind == 1 || kind == 2 ? 0 : 2;
}
int nvmlDeviceGetMaxClockInfo(void* device, unsigned kind, unsigned* mhz) {
  if (device != &dev) return 2;
  *mhz = kind == 1 ? 1980 : kind == 2 ? 2619 : 0;
  return kind == 1 || kind == 2 ? 0 : 2;
}
#ifdef THROTTLE_ONLY
int nvmlDeviceGetCurrentClocksThrottleReasons(void* device, unsigned long long* bits) {
  *bits = 0x40; /* HW thermal slowdown */
  return 0;
}
#else
int nvmlDeviceGetCurrentClocksEventReasons(void* device, unsigned long long* bits) {
  *bits = 0x4 | 0x1; /* SW power cap, idle */
  return 0;
}
int nvmlDeviceGetTemperature(void* device, unsigned sensor, unsigned* celsius) {
  if (sensor != 0) return 2;
  *celsius = 61;
  return 0;
}
#endif
int stand_in_open_count(void) { return open_count; }
"#;

    fn build(dir: &Path, name: &str, defines: &[&str]) -> PathBuf {
        crate::stand_in::build(dir, name, STAND_IN, defines, "a stand-in NVML")
    }

    fn scratch(name: &str) -> PathBuf {
        crate::stand_in::scratch(&format!("nvml-{name}"))
    }

    /// How many times the stand-in at `path` is initialized and not shut down.
    fn open_count(path: &Path) -> i32 {
        // SAFETY: the stand-in built above (already loaded, or loaded again: its initializers
        // are none) and its counter's type.
        unsafe {
            let lib = libloading::Library::new(path).unwrap();
            (*lib
                .get::<unsafe extern "C" fn() -> c_int>(b"stand_in_open_count")
                .unwrap())()
        }
    }

    #[test]
    fn a_missing_library_is_a_one_line_reason_naming_it() {
        let error = Nvml::open("libhrx-no-such-nvml.so.1", "0000:19:00.0")
            .err()
            .expect("no such library");
        assert!(
            matches!(&error, GpuClocksError::LibraryMissing { library, .. } if library == "libhrx-no-such-nvml.so.1"),
            "{error:?}"
        );
        let line = error.to_string();
        assert!(
            line.starts_with("NVML library libhrx-no-such-nvml.so.1 not found ("),
            "{line}"
        );
        // dlerror's words, not only "dlopen failed".
        assert!(line.contains("No such file"), "{line}");
        assert!(!line.contains('\n'), "{line}");
        // A library that is no NVML (libc lacks its functions).
        let error = Nvml::open("libc.so.6", "0000:19:00.0")
            .err()
            .expect("no NVML");
        assert_eq!(
            error,
            GpuClocksError::SymbolMissing {
                library: "libc.so.6".into(),
                symbol: "nvmlInit_v2"
            }
        );
    }

    #[test]
    fn the_stand_in_reads_clocks_limits_and_temperature_and_shuts_down_on_drop() {
        let dir = scratch("read");
        let path = build(&dir, "nvml-events", &[]);
        let library = path.to_str().unwrap();
        let nvml = Nvml::open(library, "0000:19:00.0").expect("the stand-in opens");
        assert_eq!(nvml.reasons.1, "nvmlDeviceGetCurrentClocksEventReasons");
        let clocks = nvml.read().unwrap();
        assert_eq!(
            clocks,
            GpuClocks {
                sm_mhz: 1755,
                mem_mhz: 2619,
                max_sm_mhz: 1980,
                max_mem_mhz: 2619,
                limits: ClockLimits(0x5),
                temperature_c: Some(61),
            }
        );
        assert_eq!(clocks.limits.names(), ["idle", "SW power cap"]);
        assert_eq!(open_count(&path), 1);
        drop(nvml);
        assert_eq!(open_count(&path), 0, "nvmlShutdown when the reader drops");

        // Another bus id: not found, with NVML's code, and NVML shut down again.
        let error = Nvml::open(library, "0000:3b:00.0")
            .err()
            .expect("no device");
        assert_eq!(
            error.to_string(),
            "NVML found no device at PCI bus id 0000:3b:00.0: \
             nvmlDeviceGetHandleByPciBusId_v2 returned NOT_FOUND (6)"
        );
        assert_eq!(open_count(&path), 0);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn an_older_library_answers_through_the_throttle_reasons_and_a_failed_call_says_its_code() {
        let dir = scratch("older");
        let path = build(&dir, "nvml-throttle", &["-DTHROTTLE_ONLY"]);
        let nvml = Nvml::open(path.to_str().unwrap(), "0000:19:00.0").unwrap();
        assert_eq!(nvml.reasons.1, "nvmlDeviceGetCurrentClocksThrottleReasons");
        let clocks = nvml.read().unwrap();
        assert_eq!(clocks.limits.names(), ["HW thermal slowdown"]);
        assert_eq!(clocks.temperature_c, None, "no nvmlDeviceGetTemperature");

        let path = build(&dir, "nvml-mem-fails", &["-DMEM_CLOCK_FAILS"]);
        let nvml = Nvml::open(path.to_str().unwrap(), "0000:19:00.0").unwrap();
        let error = nvml.read().expect_err("the memory clock fails");
        assert_eq!(
            error.to_string(),
            "nvmlDeviceGetClockInfo returned NOT_SUPPORTED (3)"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
