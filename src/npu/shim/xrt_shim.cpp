// hrx's C shim over XRT's C++ API (xrt::device, xrt::xclbin, xrt::hw_context where the XRT
// version has it, xrt::kernel, xrt::bo, xrt::run), declared to Rust in src/npu/raw.rs.
//
// Rules of every entry point:
// - it never lets an exception escape: XRT reports errors by throwing, and a C++ exception
//   unwinding into Rust frames aborts the process (or is undefined behaviour), so each body
//   runs inside `guard`, which catches std::system_error, std::exception and `...`;
// - it returns 0 on success, else a HRX_XRT_* code with a NUL-terminated message (and, for
//   std::system_error, its error value) written into the caller's `hrx_xrt_error`;
// - handles are heap objects owned by the caller, released with the matching *_free, which
//   accepts null.
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include <xrt/xrt_bo.h>
#include <xrt/xrt_device.h>
#include <xrt/xrt_kernel.h>
#include <experimental/xrt_system.h>
#include <experimental/xrt_xclbin.h>
#include <version.h>  // XRT's: XRT_VERSION_CODE, XRT_VERSION(major, minor)

// xrt::hw_context arrived after XRT 2.13 (Debian bookworm ships 2.13, which lacks it): use it
// where both the version says so and the header exists.
#if defined(XRT_VERSION_CODE) && XRT_VERSION_CODE >= XRT_VERSION(2, 14) && \
    __has_include(<xrt/xrt_hw_context.h>)
#include <xrt/xrt_hw_context.h>
#define HRX_XRT_HW_CONTEXT 1
#else
#define HRX_XRT_HW_CONTEXT 0
#endif

extern "C" {

enum {
  HRX_XRT_OK = 0,
  HRX_XRT_EXCEPTION = 1,      // a std::exception (message: what())
  HRX_XRT_FOREIGN = 2,        // something else was thrown (caught by catch(...))
  HRX_XRT_INVALID = 3,        // a null handle or argument, refused before calling XRT
  HRX_XRT_NO_DEVICE = 4,      // XRT enumerates no device at that index
  HRX_XRT_SYSTEM = 5,         // a std::system_error (system_code holds its value)
};

struct hrx_xrt_error {
  int32_t system_code;
  char message[1024];
};

struct hrx_xrt_device { xrt::device device; unsigned index; };
struct hrx_xrt_xclbin { xrt::xclbin xclbin; };
struct hrx_xrt_program {
  xrt::device device;
  xrt::uuid uuid;
#if HRX_XRT_HW_CONTEXT
  xrt::hw_context context;
#endif
};
struct hrx_xrt_kernel { xrt::kernel kernel; };
struct hrx_xrt_bo { xrt::bo bo; };
struct hrx_xrt_run { xrt::run run; };

}  // extern "C"

namespace {

void set_message(hrx_xrt_error* error, const char* text) {
  if (error == nullptr) return;
  std::strncpy(error->message, text ? text : "", sizeof(error->message) - 1);
  error->message[sizeof(error->message) - 1] = '\0';
}

int fail(hrx_xrt_error* error, int code, const char* text) {
  set_message(error, text);
  return code;
}

template <typename F>
int guard(hrx_xrt_error* error, F&& body) noexcept {
  if (error != nullptr) {
    error->system_code = 0;
    error->message[0] = '\0';
  }
  try {
    return body();
  } catch (const std::system_error& e) {
    if (error != nullptr) error->system_code = e.code().value();
    return fail(error, HRX_XRT_SYSTEM, e.what());
  } catch (const std::exception& e) {
    return fail(error, HRX_XRT_EXCEPTION, e.what());
  } catch (...) {
    return fail(error, HRX_XRT_FOREIGN, "a non-standard C++ exception was thrown by XRT");
  }
}

template <typename T>
void destroy(T* handle) noexcept {
  try {
    delete handle;
  } catch (...) {
    // Destructors are noexcept; nothing can be reported from a free anyway.
  }
}

}  // namespace

extern "C" {

int32_t hrx_xrt_version_code(void) { return XRT_VERSION_CODE; }

int32_t hrx_xrt_has_hw_context(void) { return HRX_XRT_HW_CONTEXT; }

int32_t hrx_xrt_test_throw(int32_t kind, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    switch (kind) {
      case 0: return HRX_XRT_OK;
      case 1: throw std::runtime_error("hrx shim test: std::runtime_error");
      case 2: throw std::system_error(std::make_error_code(std::errc::no_such_device),
                                      "hrx shim test: std::system_error");
      case 3: throw 42;  // not a std::exception
      case 4: throw std::bad_alloc();
      default: return fail(error, HRX_XRT_INVALID, "hrx shim test: unknown kind");
    }
  });
}

int32_t hrx_xrt_device_count(uint32_t* count, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (count == nullptr) return fail(error, HRX_XRT_INVALID, "null count");
    *count = static_cast<uint32_t>(xrt::system::enumerate_devices());
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_device_open(uint32_t index, hrx_xrt_device** out, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (out == nullptr) return fail(error, HRX_XRT_INVALID, "null output handle");
    *out = nullptr;
    auto count = xrt::system::enumerate_devices();
    if (index >= count) {
      std::string text = "XRT found " + std::to_string(count) + " device(s), no device " +
                         std::to_string(index);
      return fail(error, HRX_XRT_NO_DEVICE, text.c_str());
    }
    *out = new hrx_xrt_device{xrt::device(index), index};
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_device_name(const hrx_xrt_device* device, char* name, size_t len,
                            hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (device == nullptr || name == nullptr || len == 0)
      return fail(error, HRX_XRT_INVALID, "null device or name buffer");
    auto text = device->device.get_info<xrt::info::device::name>();
    std::strncpy(name, text.c_str(), len - 1);
    name[len - 1] = '\0';
    return HRX_XRT_OK;
  });
}

void hrx_xrt_device_free(hrx_xrt_device* device) { destroy(device); }

int32_t hrx_xrt_xclbin_from_file(const char* path, hrx_xrt_xclbin** out, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (path == nullptr || out == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    *out = new hrx_xrt_xclbin{xrt::xclbin(std::string(path))};
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_xclbin_from_bytes(const char* data, size_t len, hrx_xrt_xclbin** out,
                                  hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (data == nullptr || out == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    std::vector<char> bytes(data, data + len);
    *out = new hrx_xrt_xclbin{xrt::xclbin(bytes)};
    return HRX_XRT_OK;
  });
}

void hrx_xrt_xclbin_free(hrx_xrt_xclbin* xclbin) { destroy(xclbin); }

int32_t hrx_xrt_program_load(const hrx_xrt_device* device, const hrx_xrt_xclbin* xclbin,
                             hrx_xrt_program** out, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (device == nullptr || xclbin == nullptr || out == nullptr)
      return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    xrt::device dev = device->device;
    auto uuid = dev.load_xclbin(xclbin->xclbin);
#if HRX_XRT_HW_CONTEXT
    *out = new hrx_xrt_program{dev, uuid, xrt::hw_context(dev, uuid)};
#else
    *out = new hrx_xrt_program{dev, uuid};
#endif
    return HRX_XRT_OK;
  });
}

void hrx_xrt_program_free(hrx_xrt_program* program) { destroy(program); }

int32_t hrx_xrt_kernel_open(const hrx_xrt_program* program, const char* name,
                            hrx_xrt_kernel** out, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (program == nullptr || name == nullptr || out == nullptr)
      return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
#if HRX_XRT_HW_CONTEXT
    *out = new hrx_xrt_kernel{xrt::kernel(program->context, std::string(name))};
#else
    *out = new hrx_xrt_kernel{xrt::kernel(program->device, program->uuid, std::string(name))};
#endif
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_kernel_group_id(const hrx_xrt_kernel* kernel, int32_t arg, int32_t* group,
                                hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (kernel == nullptr || group == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    *group = kernel->kernel.group_id(arg);
    return HRX_XRT_OK;
  });
}

void hrx_xrt_kernel_free(hrx_xrt_kernel* kernel) { destroy(kernel); }

int32_t hrx_xrt_bo_import(const hrx_xrt_device* device, void* host, size_t len, uint32_t group,
                          hrx_xrt_bo** out, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (device == nullptr || host == nullptr || out == nullptr)
      return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    *out = new hrx_xrt_bo{xrt::bo(device->device, host, len, xrt::bo::flags::normal,
                                  static_cast<xrt::memory_group>(group))};
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_bo_alloc_host_only(const hrx_xrt_device* device, size_t len, uint32_t group,
                                   hrx_xrt_bo** out, void** host, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (device == nullptr || out == nullptr || host == nullptr)
      return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    *host = nullptr;
    auto* bo = new hrx_xrt_bo{xrt::bo(device->device, len, xrt::bo::flags::host_only,
                                      static_cast<xrt::memory_group>(group))};
    try {
      *host = bo->bo.map();
    } catch (...) {
      destroy(bo);
      throw;
    }
    *out = bo;
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_bo_sub(const hrx_xrt_bo* parent, size_t len, size_t offset, hrx_xrt_bo** out,
                       hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (parent == nullptr || out == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    *out = new hrx_xrt_bo{xrt::bo(parent->bo, len, offset)};
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_bo_address(const hrx_xrt_bo* bo, uint64_t* address, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (bo == nullptr || address == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    *address = bo->bo.address();
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_bo_sync(hrx_xrt_bo* bo, int32_t to_device, hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (bo == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    bo->bo.sync(to_device ? XCL_BO_SYNC_BO_TO_DEVICE : XCL_BO_SYNC_BO_FROM_DEVICE);
    return HRX_XRT_OK;
  });
}

void hrx_xrt_bo_free(hrx_xrt_bo* bo) { destroy(bo); }

int32_t hrx_xrt_run_create(const hrx_xrt_kernel* kernel, hrx_xrt_run** out,
                           hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (kernel == nullptr || out == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    *out = nullptr;
    *out = new hrx_xrt_run{xrt::run(kernel->kernel)};
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_run_set_bo(hrx_xrt_run* run, int32_t index, const hrx_xrt_bo* bo,
                           hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (run == nullptr || bo == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    run->run.set_arg(index, bo->bo);
    return HRX_XRT_OK;
  });
}

int32_t hrx_xrt_run_set_u32(hrx_xrt_run* run, int32_t index, uint32_t value,
                            hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (run == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    run->run.set_arg(index, value);
    return HRX_XRT_OK;
  });
}

// Starts the prepared run and waits for it; `state` receives the ert_cmd_state it ended in
// (ERT_CMD_STATE_COMPLETED = 4 on success).
int32_t hrx_xrt_run_execute(hrx_xrt_run* run, uint32_t timeout_ms, int32_t* state,
                            hrx_xrt_error* error) {
  return guard(error, [&]() -> int {
    if (run == nullptr || state == nullptr) return fail(error, HRX_XRT_INVALID, "null argument");
    run->run.start();
    *state = static_cast<int32_t>(run->run.wait(std::chrono::milliseconds(timeout_ms)));
    return HRX_XRT_OK;
  });
}

void hrx_xrt_run_free(hrx_xrt_run* run) { destroy(run); }

}  // extern "C"
