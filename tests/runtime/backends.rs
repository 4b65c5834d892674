//! Backend selection for the optional HIP and XRT backends: without their hardware, choosing
//! one answers a clear "no device" error naming its library, and `auto` skips it. With the
//! features off, choosing one says how to build it in.

use hrx::{BackendChoice, Error, NpuBackendChoice, Runtime, RuntimeOptions};

/// Options that ignore the environment, so `HRX_BACKEND`/`HRX_NPU_BACKEND` cannot interfere.
fn options() -> RuntimeOptions {
    RuntimeOptions::default().environment(false)
}

#[test]
fn npu_backend_names_parse_and_xrt_is_not_a_gpu_backend() {
    assert_eq!(
        "xrt".parse::<NpuBackendChoice>().unwrap(),
        NpuBackendChoice::Xrt
    );
    assert_eq!(
        "SIM".parse::<NpuBackendChoice>().unwrap(),
        NpuBackendChoice::Sim
    );
    assert_eq!(
        "".parse::<NpuBackendChoice>().unwrap(),
        NpuBackendChoice::Auto
    );
    assert!("cuda".parse::<NpuBackendChoice>().is_err());
    let error = "xrt".parse::<BackendChoice>().unwrap_err();
    assert!(error.to_string().contains("HRX_NPU_BACKEND=xrt"), "{error}");
}

#[test]
fn the_npu_simulator_is_chosen_explicitly_and_by_default_without_xrt_hardware() {
    let rt = Runtime::new(options().npu_backend(NpuBackendChoice::Sim)).unwrap();
    assert_eq!(rt.npu_info().backend, "sim");
    let rt = Runtime::new(options().backend(BackendChoice::Sim)).unwrap();
    if cfg!(feature = "xrt") && rt.npu_info().backend == "xrt" {
        eprintln!("skipped: an XRT device is present");
        return;
    }
    assert_eq!(rt.npu_info().backend, "sim");
}

#[test]
fn choosing_hip_without_a_device_is_a_clear_error() {
    match Runtime::new(options().backend(BackendChoice::Hip)) {
        Ok(rt) => {
            assert_eq!(rt.device_info().backend, "hip");
            eprintln!("skipped: HIP device {} is present", rt.device_info().name);
        }
        Err(error) => {
            let Error::Unsupported(message) = &error else {
                panic!("expected Unsupported, got {error}");
            };
            assert!(message.contains("libamdhip64"), "{message}");
            if cfg!(feature = "hip") {
                assert!(message.contains("HIP: no device 0"), "{message}");
            } else {
                assert!(message.contains("--features hip"), "{message}");
            }
        }
    }
}

#[test]
fn choosing_xrt_without_a_device_is_a_clear_error() {
    match Runtime::new(options().npu_backend(NpuBackendChoice::Xrt)) {
        Ok(rt) => {
            assert_eq!(rt.npu_info().backend, "xrt");
            eprintln!("skipped: XRT device {} is present", rt.npu_info().name);
        }
        Err(error) => {
            let Error::Unsupported(message) = &error else {
                panic!("expected Unsupported, got {error}");
            };
            assert!(message.contains("libxrt_coreutil"), "{message}");
            if cfg!(feature = "xrt") {
                assert!(message.contains("XRT NPU: no device 0"), "{message}");
            } else {
                assert!(message.contains("--features xrt"), "{message}");
            }
        }
    }
}

#[test]
fn auto_skips_hip_and_xrt_without_devices_and_still_runs_work() {
    let rt = Runtime::new(options()).unwrap();
    let gpu = rt.device_info().backend;
    let npu = rt.npu_info().backend;
    if gpu == "hip" || npu == "xrt" {
        eprintln!("skipped: auto found hardware ({gpu}, {npu})");
        return;
    }
    assert!(gpu == "sim" || gpu == "cuda", "{gpu}");
    assert_eq!(npu, "sim");
    // The NPU path through the backend-dispatching BOs and prepared runs still works.
    let kernel = rt
        .npu_kernel(&hrx::kernels::npu_threshold(64, 100))
        .unwrap();
    let (g0, g1) = (kernel.group(0).unwrap(), kernel.group(1).unwrap());
    let input = rt
        .buffer(64, hrx::Placement::NpuShared { group: g0 })
        .unwrap();
    let output = rt
        .buffer(64, hrx::Placement::NpuShared { group: g1 })
        .unwrap();
    let data: Vec<u8> = (0..64u8).map(|i| i * 4).collect();
    input.write(0, &data).unwrap();
    let mut graph = rt.graph();
    graph
        .npu(&kernel, &[input.whole(), output.whole()])
        .unwrap();
    graph.prepare().unwrap().submit().unwrap().wait().unwrap();
    let expected: Vec<u8> = data
        .iter()
        .map(|&v| if v >= 100 { 255 } else { 0 })
        .collect();
    assert_eq!(output.to_vec().unwrap(), expected);
}

#[test]
fn an_injected_fault_refuses_the_hardware_backends() {
    let fault: hrx::FaultSpec = "op=1:device-lost".parse().unwrap();
    let error = Runtime::new(
        options()
            .npu_backend(NpuBackendChoice::Xrt)
            .fault(fault.clone()),
    )
    .err()
    .expect("xrt with a fault");
    assert!(matches!(error, Error::Unsupported(_)), "{error}");
    let rt = Runtime::new(options().fault(fault)).unwrap();
    assert_eq!(rt.device_info().backend, "sim");
    assert_eq!(rt.npu_info().backend, "sim");
}
