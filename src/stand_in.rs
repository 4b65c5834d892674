//! Test support: stand-in shared libraries built from C with the system compiler (`cc`,
//! installed by `.ci/run`), for code that loads a vendor library at run time (NVTX's injected
//! tool, NVML), so its tests depend on no vendor software.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh scratch directory for one test: `hrx-{name}-{pid}` under the temporary directory.
pub(crate) fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hrx-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Builds `source` into `dir/lib{name}.so` with `defines`, panicking (naming `what`) when the
/// compiler does not run or fails.
pub(crate) fn build(dir: &Path, name: &str, source: &str, defines: &[&str], what: &str) -> PathBuf {
    let file = dir.join(format!("{name}.c"));
    std::fs::write(&file, source).unwrap();
    let library = dir.join(format!("lib{name}.so"));
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&file)
        .args(defines)
        .status()
        .unwrap_or_else(|e| panic!("the C compiler `cc` runs ({what} is built with it): {e}"));
    assert!(status.success(), "cc built {what}");
    library
}
