//! Build script of hrx: compiles the XRT shim (src/npu/shim/xrt_shim.cpp) and links XRT's
//! libraries, only when the `xrt` feature is on. The default build compiles and links nothing
//! here.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "xrt")]
    xrt();
}

/// Compiles the shim against XRT's headers and links libxrt_coreutil (and libuuid). XRT's headers include each other relative to their own root
/// (`xrt.h`, `xrt/xrt_bo.h`, `experimental/...`, `version.h`): that root is `/usr/include/xrt`
/// for Debian's `libxrt-dev`, or `$XILINX_XRT/include` for an XRT installed by AMD's packages
/// (whose libraries are then in `$XILINX_XRT/lib`).
#[cfg(feature = "xrt")]
fn xrt() {
    const SHIM: &str = "src/npu/shim/xrt_shim.cpp";
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-env-changed=XILINX_XRT");
    let mut build = cc::Build::new();
    build.cpp(true).std("c++17").file(SHIM).warnings(true);
    match std::env::var_os("XILINX_XRT") {
        Some(root) => {
            let root = std::path::PathBuf::from(root);
            build.include(root.join("include"));
            println!(
                "cargo:rustc-link-search=native={}",
                root.join("lib").display()
            );
        }
        None => {
            build.include("/usr/include/xrt");
        }
    }
    build.compile("hrx_xrt_shim");
    // libxrt_coreutil opens the driver's shim (libxrt_core) itself at run time, from
    // $XILINX_XRT/lib; XRT's inline uuid helpers need libuuid.
    println!("cargo:rustc-link-lib=dylib=xrt_coreutil");
    println!("cargo:rustc-link-lib=dylib=uuid");
}
