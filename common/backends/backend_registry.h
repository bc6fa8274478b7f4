// The registry of backends: which exist in this build, which can run on this
// machine, and `auto` selection (a usable CUDA device, else an OpenCL GPU,
// else the CPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend.h"

namespace gpuspeech {

struct BackendInfo {
  std::string name;       // "cpu", "opencl", "cuda"
  bool compiled = false;  // built into this library
  bool usable = false;    // a device answered
  std::string detail;     // device name, or why it is not usable
};

// Every backend this library knows, in preference order (cuda, opencl, cpu).
std::vector<BackendInfo> list_backends();

// The backend names accepted by open_backend, for error messages and docs.
const char* backend_choices();  // "auto|cuda|opencl|cpu"

// Opens a backend by name ("auto", "cuda", "opencl", "cpu") on device
// `device_id` (ignored by cpu). A named backend that is not compiled in or
// has no usable device throws BackendError saying why; it never falls back.
// "auto" tries cuda, then an OpenCL GPU, then cpu. `why` (optional)
// receives a sentence on what auto chose and why, for logs and messages.
BackendPtr open_backend(const std::string& name, int device_id = 0,
                        std::string* why = nullptr);

// Devices backend `name` can open ("cuda", "opencl": the device ids
// 0..count-1 open_backend takes; "cpu": 1; 0 for a backend not compiled in,
// without a driver or devices, or an unknown name). Never throws.
int backend_device_count(const std::string& name);
// A device's memory as its driver reports it now, in bytes; -1 where the
// backend cannot say (cpu, opencl, not compiled in, no such device).
struct DeviceMemory {
  int64_t free = -1;
  int64_t total = -1;
  // In use by every process: for benchmarks, where the memory a stream
  // adds is the difference of two readings.
  int64_t used() const { return free < 0 || total < 0 ? -1 : total - free; }
};
// Device `device_id`'s memory ("cuda" only). Free memory is for sizing:
// how many streams a device can take. Never throws.
DeviceMemory backend_device_memory(const std::string& name, int device_id);

// Per-backend factories (backends/*.cpp). The cuda and opencl ones exist
// only when compiled in; they throw BackendError when no device is usable.
BackendPtr make_cpu_backend();
#ifdef GPUSPEECH_HAVE_OPENCL
// gpu_only: accept only CL_DEVICE_TYPE_GPU devices (used by auto).
BackendPtr make_opencl_backend(int device_id, bool gpu_only = false);
int opencl_device_count();  // every device of every platform; 0 on any failure
#endif
#ifdef GPUSPEECH_HAVE_CUDA
BackendPtr make_cuda_backend(int device_id);
int cuda_device_count();  // 0 when the runtime finds no device or fails
DeviceMemory cuda_device_memory(int device_id);  // -1s on any failure
// The device memory behind a CUDA backend's buffer, for CUDA code that
// reads a backend's results in place (the search reads the scorer's
// output). Work queued on the backend must have finished first
// (Backend::synchronize()). Throws BackendError for another backend's buffer.
float* cuda_buffer_pointer(const DeviceBuffer& buffer);
// How host threads wait for device `device_id`: GPUSPEECH_CUDA_WAIT=spin,
// yield or block (cudaDeviceScheduleSpin/Yield/BlockingSync), for
// measuring many streams' threads on few cores; unset leaves CUDA's choice
// (spinning while the process has fewer contexts than cores). Called by
// the CUDA backend and search when they open the device. Throws
// BackendError for another value or when the driver refuses.
void apply_cuda_wait_policy(int device_id);
#endif

}  // namespace gpuspeech
