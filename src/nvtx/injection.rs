//! NVTX 3's injection protocol, the way a program built with the header-only NVTX 3 reaches
//! a tool: CUDA 13 ships no `libnvToolsExt`, and Nsight Systems and Nsight Compute
//! (`--nvtx`) hand their NVTX handler to the program as a library named by the environment
//! variable `NVTX_INJECTION64_PATH`.
//!
//! The protocol (NVIDIA/NVTX, `c/include/nvtx3/nvtxDetail/nvtxInit.h`, `nvtxImpl.h` and
//! `nvtxTypes.h`; load sequence version 1, the variable only):
//! - open the library and call its `InitializeInjectionNvtx2(getExportTable)`; it returns
//!   non-zero when it attached, zero to refuse (the library is then closed again);
//! - `getExportTable(1)` is the callbacks table (`size_t struct_size`,
//!   `GetModuleFunctionTable`), `getExportTable(3)` the version table (`size_t struct_size`,
//!   `uint32_t version` = 3, `uint32_t reserved0`, `SetInjectionNvtxVersion`); any other id
//!   answers null;
//! - `GetModuleFunctionTable(module, &table, &size)` answers, for each module (1 core,
//!   2 CUDA, 3 OpenCL, 4 CUDA runtime, 5 core 2 (domains), 6 sync), an array of `size + 1`
//!   pointers to the program's function-pointer slots: entry 0 and entry `size` null,
//!   entries `1..size` one slot per callback id; the tool writes its handlers into the slots
//!   it implements. Unknown modules answer 0.
//!
//! hrx calls three of the core slots: `RangePushA` (9), `RangePop` (11) and `MarkA` (2).
//! Every module's slots exist (a tool may write into any of them), but a slot hrx does not
//! call stays unread. The slots are atomics read on every call, as NVTX 3 reads its globals
//! (a tool may write them later, from another thread), and live as long as the process (a
//! tool keeps their addresses). A tool that refuses has its slots cleared before its library
//! is closed.

use std::ffi::{CStr, OsStr, c_char, c_int, c_uint, c_void};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, OnceLock};

/// The environment variable naming the tool's injection library (64-bit processes).
pub(crate) const INJECTION_PATH_VAR: &str = "NVTX_INJECTION64_PATH";

/// A function-pointer slot as the tool sees it (`NvtxFunctionPointer`): written by the tool
/// (a plain pointer store from C, at its initialization or later, from any thread), read
/// here with an atomic load (a pointer-sized atomic has the layout of the pointer), cast to
/// the callback's own type when called.
type Slot = AtomicPtr<c_void>;

/// The modules (`NvtxCallbackModule`, 1..=6) and their `NVTX_CBID_*_SIZE`: callback ids run
/// `1..size`.
const MODULE_SIZES: [usize; 6] = [16, 9, 15, 7, 16, 7];
/// The largest module size: the slot arrays' length.
const MAX_SIZE: usize = 16;

/// Core callback ids (`NvtxCallbackIdCore`).
const CORE_MARK_A: usize = 2;
const CORE_RANGE_PUSH_A: usize = 9;
const CORE_RANGE_POP: usize = 11;

/// The version of NVTX this client speaks (`NVTX_VERSION`).
const NVTX_VERSION: u32 = 3;

type GetModuleFunctionTable =
    unsafe extern "C" fn(module: c_int, table: *mut *mut *mut Slot, size: *mut c_uint) -> c_int;
type GetExportTable = unsafe extern "C" fn(id: u32) -> *const c_void;
type InitializeInjection = unsafe extern "C" fn(get: GetExportTable) -> c_int;

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct Callbacks {
    struct_size: usize,
    get_module_function_table: GetModuleFunctionTable,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct VersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(u32),
}

static CALLBACKS: Callbacks = Callbacks {
    struct_size: size_of::<Callbacks>(),
    get_module_function_table,
};

static VERSION_INFO: VersionInfo = VersionInfo {
    struct_size: size_of::<VersionInfo>(),
    version: NVTX_VERSION,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// Every module's slots and the pointer tables handed to the tool. Leaked: the tool keeps
/// the addresses for the life of the process.
struct Tables {
    slots: [[Slot; MAX_SIZE]; 6],
    pointers: [[*mut Slot; MAX_SIZE + 1]; 6],
}

/// The process's one set of slots, as NVTX 3 keeps one set of globals per NVTX instance: a
/// tool may ask for its tables again at any time, from any thread.
static TABLES: OnceLock<&'static Tables> = OnceLock::new();

/// One tool initializes at a time (the runtime loads one per process; tests load several).
static LOADING: Mutex<()> = Mutex::new(());

// SAFETY: the slots are atomics; the pointer tables (raw pointers to the slots, for the
// tool) are written only while `Tables::leak` builds them, before they are shared.
unsafe impl Sync for Tables {}
unsafe impl Send for Tables {}

impl Tables {
    fn leak() -> &'static Tables {
        let tables: &'static mut Tables = Box::leak(Box::new(Tables {
            slots: std::array::from_fn(|_| {
                std::array::from_fn(|_| AtomicPtr::new(ptr::null_mut()))
            }),
            pointers: [[ptr::null_mut(); MAX_SIZE + 1]; 6],
        }));
        for (module, &size) in MODULE_SIZES.iter().enumerate() {
            for id in 1..size {
                tables.pointers[module][id] = ptr::from_ref(&tables.slots[module][id]).cast_mut();
            }
        }
        tables
    }
}

unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        1 => (&raw const CALLBACKS).cast(),
        3 => (&raw const VERSION_INFO).cast(),
        _ => ptr::null(),
    }
}

unsafe extern "C" fn get_module_function_table(
    module: c_int,
    table: *mut *mut *mut Slot,
    size: *mut c_uint,
) -> c_int {
    let Some(index) = usize::try_from(module)
        .ok()
        .and_then(|m| m.checked_sub(1))
        .filter(|&m| m < MODULE_SIZES.len())
    else {
        return 0;
    };
    let tables = tables();
    if !size.is_null() {
        // SAFETY: the tool passes a writable `unsigned int*` or null.
        unsafe { *size = MODULE_SIZES[index] as c_uint };
    }
    if !table.is_null() {
        // SAFETY: as above, a writable `NvtxFunctionTable*`. The array outlives the process's
        // use of it (leaked); the tool writes through its entries, not into the array.
        unsafe { *table = tables.pointers[index].as_ptr().cast_mut() };
    }
    1
}

unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

fn tables() -> &'static Tables {
    TABLES.get_or_init(Tables::leak)
}

/// A tool attached through its injection library: the handlers it wrote into the core slots.
pub(crate) struct Tool {
    tables: &'static Tables,
}

/// Why a tool's injection library gave no tool.
#[derive(Debug, thiserror::Error)]
pub(crate) enum InjectionError {
    /// The library did not open.
    #[error("NVTX injection library {path} did not load: {reason}")]
    Load {
        path: String,
        /// The loader's words (`dlerror`).
        reason: String,
    },
    /// The library has no `InitializeInjectionNvtx2`.
    #[error("NVTX injection library {path} has no InitializeInjectionNvtx2")]
    NoEntryPoint { path: String },
    /// `InitializeInjectionNvtx2` returned 0.
    #[error("NVTX injection library {path} refused to initialize")]
    Refused { path: String },
}

impl Tool {
    /// Opens the injection library at `path` and lets it attach (see the module docs). The
    /// library stays loaded for the life of the process once it attached; a library that
    /// refuses is closed again, as NVTX 3 does.
    ///
    /// # Errors
    /// [`InjectionError`]: the library does not load, lacks the entry point, or refuses.
    pub(crate) fn load(path: &OsStr) -> Result<Tool, InjectionError> {
        let shown = path.to_string_lossy().into_owned();
        // SAFETY: loading a tool's library runs its initializers; that is what the user asked
        // for by naming it in NVTX_INJECTION64_PATH (or what the test built).
        let library = unsafe { libloading::Library::new(path) }.map_err(|error| {
            // libloading's own text is "dlopen failed"; dlerror's words are its source.
            let reason = std::error::Error::source(&error)
                .map_or_else(|| error.to_string(), |source| source.to_string());
            InjectionError::Load {
                path: shown.clone(),
                reason,
            }
        })?;
        // SAFETY: the symbol's type is NVTX's `NvtxInitializeInjectionNvtxFunc_t`.
        let init: InitializeInjection =
            match unsafe { library.get::<InitializeInjection>(b"InitializeInjectionNvtx2\0") } {
                Ok(symbol) => *symbol,
                Err(_) => return Err(InjectionError::NoEntryPoint { path: shown }),
            };
        let tables = tables();
        let attached = {
            let _loading = LOADING.lock().unwrap_or_else(|p| p.into_inner());
            // SAFETY: the entry point of a library that stays open for the call; the export
            // tables it receives are valid for the life of the process.
            unsafe { init(get_export_table) != 0 }
        };
        if !attached {
            // Whatever it wrote points into a library about to be closed: NVTX 3 sets every
            // slot to a no-op after a failed initialization.
            for slot in tables.slots.iter().flatten() {
                slot.store(ptr::null_mut(), Ordering::Release);
            }
            return Err(InjectionError::Refused { path: shown });
        }
        // The tool's handlers live in the library: keep it open for the process.
        std::mem::forget(library);
        Ok(Tool { tables })
    }

    /// The core slot `id`, as the tool left it: null when it handles no such call.
    fn core(&self, id: usize) -> *mut c_void {
        self.tables.slots[0][id].load(Ordering::Acquire)
    }

    /// `nvtxRangePushA(name)`, when the tool handles it; whether it was sent (a range whose
    /// push was not sent is not popped either: a tool that attaches its handlers late never
    /// sees a pop without its push).
    pub(crate) fn push(&self, name: &CStr) -> bool {
        let slot = self.core(CORE_RANGE_PUSH_A);
        if slot.is_null() {
            return false;
        }
        // SAFETY: the tool wrote its `nvtxRangePushA_impl_fntype` handler into this slot.
        let push: unsafe extern "C" fn(*const c_char) -> c_int =
            unsafe { std::mem::transmute(slot) };
        // SAFETY: a valid C string for the call.
        unsafe { push(name.as_ptr()) };
        true
    }

    /// `nvtxRangePop()`, when the tool handles it.
    pub(crate) fn pop(&self) {
        let slot = self.core(CORE_RANGE_POP);
        if !slot.is_null() {
            // SAFETY: the tool's `nvtxRangePop_impl_fntype` handler.
            let pop: unsafe extern "C" fn() -> c_int = unsafe { std::mem::transmute(slot) };
            // SAFETY: no arguments.
            unsafe { pop() };
        }
    }

    /// `nvtxMarkA(name)`, when the tool handles it.
    pub(crate) fn mark(&self, name: &CStr) {
        let slot = self.core(CORE_MARK_A);
        if !slot.is_null() {
            // SAFETY: the tool's `nvtxMarkA_impl_fntype` handler.
            let mark: unsafe extern "C" fn(*const c_char) = unsafe { std::mem::transmute(slot) };
            // SAFETY: a valid C string for the call.
            unsafe { mark(name.as_ptr()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};

    /// A stand-in tool written to NVTX 3's injection side: it checks the export tables and
    /// every module's table as a tool walks them, counts what it is sent and remembers the
    /// last name. `REFUSE` builds one that writes its handlers, then declines to attach.
    const TOOL: &str = r#"
#include <stdint.h>
#include <stddef.h>
#include <string.h>
typedef void (*fp)(void);
typedef int (*gmft_t)(int, fp***, unsigned*);
typedef const void* (*get_t)(uint32_t);
struct callbacks { size_t size; gmft_t gmft; };
struct version { size_t size; uint32_t version; uint32_t reserved; void (*set)(uint32_t); };
static int pushes, pops, marks;
static char last[256];
static unsigned sizes[8];
static int push_a(const char* m) { pushes++; strncpy(last, m, 255); return pushes - pops - 1; }
static int pop(void) { pops++; return pushes - pops; }
static void mark_a(const char* m) { marks++; strncpy(last, m, 255); }
int InitializeInjectionNvtx2(get_t get) {
  const struct callbacks* cb = get(1);
  const struct version* v = get(3);
  if (!cb || cb->size != sizeof *cb || !v || v->size != sizeof *v || v->version != 3) return 0;
  if (get(2) || get(4)) return 0;
  for (int m = 1; m <= 6; m++) {
    fp** t = 0; unsigned n = 0;
    if (!cb->gmft(m, &t, &n) || !t || t[0] || t[n]) return 0;
    for (unsigned i = 1; i < n; i++) if (!t[i]) return 0;
    sizes[m] = n;
  }
  fp** t = 0; unsigned n = 0;
  if (cb->gmft(7, &t, &n) || cb->gmft(0, &t, &n)) return 0;
  cb->gmft(1, &t, &n);
  *t[2] = (fp)mark_a;
  *t[9] = (fp)push_a;
  *t[11] = (fp)pop;
#ifdef REFUSE
  return 0; /* after writing its handlers: they must not outlive its library */
#endif
  return 1;
}
int tool_pushes(void) { return pushes; }
int tool_pops(void) { return pops; }
int tool_marks(void) { return marks; }
const char* tool_last(void) { return last; }
unsigned tool_size(int m) { return sizes[m]; }
"#;

    fn build_tool(dir: &Path, name: &str, defines: &[&str]) -> PathBuf {
        crate::stand_in::build(dir, name, TOOL, defines, "a stand-in NVTX tool")
    }

    fn scratch(name: &str) -> PathBuf {
        crate::stand_in::scratch(&format!("nvtx-{name}"))
    }

    /// One test, in order: the process has one set of slots, which a refusing tool writes.
    #[test]
    fn a_tool_attaches_through_the_injection_protocol_and_one_that_cannot_leaves_no_handler() {
        let dir = scratch("attach");
        let refusing = build_tool(&dir, "refusing", &["-DREFUSE"]);
        let err = Tool::load(refusing.as_os_str()).err().expect("refused");
        assert!(matches!(err, InjectionError::Refused { .. }), "{err}");
        // It wrote its handlers before refusing; they were cleared before its library closed.
        let tables = tables();
        for id in [CORE_MARK_A, CORE_RANGE_PUSH_A, CORE_RANGE_POP] {
            assert!(
                tables.slots[0][id].load(Ordering::Acquire).is_null(),
                "slot {id}"
            );
        }

        let missing = dir.join("libnot-there.so");
        let err = Tool::load(missing.as_os_str()).err().expect("not loaded");
        assert!(matches!(err, InjectionError::Load { .. }), "{err}");
        assert!(err.to_string().contains("libnot-there.so"), "{err}");
        // dlerror's words, not only "dlopen failed".
        assert!(err.to_string().contains("No such file"), "{err}");

        // A library that is no NVTX tool (libc has no InitializeInjectionNvtx2).
        let err = Tool::load(OsStr::new("libc.so.6"))
            .err()
            .expect("no entry point");
        assert!(matches!(err, InjectionError::NoEntryPoint { .. }), "{err}");

        let path = build_tool(&dir, "tool", &[]);
        let tool = Tool::load(path.as_os_str()).expect("the tool attaches");
        assert!(tool.push(c"region 3 (compute)"));
        assert!(tool.push(c"inner"));
        tool.pop();
        tool.mark(c"frame");
        tool.pop();

        // SAFETY: the same library (already loaded: dlopen returns the same handle) and the
        // stand-in's own counters.
        unsafe {
            let lib = libloading::Library::new(&path).unwrap();
            let count =
                |name: &[u8]| (*lib.get::<unsafe extern "C" fn() -> c_int>(name).unwrap())();
            assert_eq!(count(b"tool_pushes\0"), 2);
            assert_eq!(count(b"tool_pops\0"), 2);
            assert_eq!(count(b"tool_marks\0"), 1);
            let last = (*lib
                .get::<unsafe extern "C" fn() -> *const c_char>(b"tool_last\0")
                .unwrap())();
            assert_eq!(CStr::from_ptr(last), c"frame");
            let size = *lib
                .get::<unsafe extern "C" fn(c_int) -> c_uint>(b"tool_size\0")
                .unwrap();
            let sizes: Vec<c_uint> = (1..=6).map(|m| size(m)).collect();
            assert_eq!(sizes, [16, 9, 15, 7, 16, 7], "NVTX_CBID_*_SIZE per module");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}
