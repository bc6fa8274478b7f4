#include "backend_registry.h"

namespace gpuspeech {

const char* backend_choices() { return "auto|cuda|opencl|cpu"; }

namespace {

// Tries to open a backend and records what happened.
template <typename Open>
BackendInfo probe(const char* name, Open open) {
  BackendInfo info{name, true, false, ""};
  try {
    info.detail = open()->device_name();
    info.usable = true;
  } catch (const BackendError& e) {
    info.detail = e.what();
  }
  return info;
}

}  // namespace

std::vector<BackendInfo> list_backends() {
  std::vector<BackendInfo> out;
#ifdef GPUSPEECH_HAVE_CUDA
  out.push_back(probe("cuda", [] { return make_cuda_backend(0); }));
#else
  out.push_back({"cuda", false, false, "not compiled in"});
#endif
#ifdef GPUSPEECH_HAVE_OPENCL
  out.push_back(probe("opencl", [] { return make_opencl_backend(0); }));
#else
  out.push_back({"opencl", false, false, "not compiled in"});
#endif
  out.push_back(probe("cpu", [] { return make_cpu_backend(); }));
  return out;
}

int backend_device_count(const std::string& name) {
  if (name == "cpu") return 1;
#ifdef GPUSPEECH_HAVE_CUDA
  if (name == "cuda") return cuda_device_count();
#endif
#ifdef GPUSPEECH_HAVE_OPENCL
  if (name == "opencl") return opencl_device_count();
#endif
  return 0;
}

DeviceMemory backend_device_memory(const std::string& name, int device_id) {
#ifdef GPUSPEECH_HAVE_CUDA
  if (name == "cuda") return cuda_device_memory(device_id);
#endif
  (void)name;
  (void)device_id;
  return DeviceMemory{};
}

BackendPtr open_backend(const std::string& name, int device_id,
                        std::string* why) {
  if (device_id < 0)
    throw BackendError("device-id must be >= 0, got " +
                       std::to_string(device_id));
  if (name == "cpu") return make_cpu_backend();
  if (name == "cuda") {
#ifdef GPUSPEECH_HAVE_CUDA
    try {
      return make_cuda_backend(device_id);
    } catch (const BackendError& e) {
      throw BackendError(std::string("backend 'cuda' is not available: ") + e.what());
    }
#else
    throw BackendError(
        "backend 'cuda' is not available: this build has no CUDA support "
        "(configure with -Dcuda=enabled and nvcc installed)");
#endif
  }
  if (name == "opencl") {
#ifdef GPUSPEECH_HAVE_OPENCL
    try {
      return make_opencl_backend(device_id);
    } catch (const BackendError& e) {
      throw BackendError(std::string("backend 'opencl' is not available: ") + e.what());
    }
#else
    throw BackendError(
        "backend 'opencl' is not available: this build has no OpenCL support "
        "(install ocl-icd-opencl-dev, opencl-headers and libclfft-dev)");
#endif
  }
  if (name == "auto") {
    std::string reasons;
#ifdef GPUSPEECH_HAVE_CUDA
    try {
      auto b = make_cuda_backend(device_id);
      if (why) *why = "auto chose cuda: " + b->device_name();
      return b;
    } catch (const BackendError& e) {
      reasons += std::string("cuda: ") + e.what() + "; ";
    }
#else
    reasons += "cuda: not compiled in; ";
#endif
#ifdef GPUSPEECH_HAVE_OPENCL
    try {
      auto b = make_opencl_backend(device_id, /*gpu_only=*/true);
      if (why) *why = "auto chose opencl: " + b->device_name();
      return b;
    } catch (const BackendError& e) {
      reasons += std::string("opencl: ") + e.what() + "; ";
    }
#else
    reasons += "opencl: not compiled in; ";
#endif
    if (why) *why = "auto chose cpu (" + reasons.substr(0, reasons.size() - 2) + ")";
    return make_cpu_backend();
  }
  throw BackendError("unknown backend '" + name + "' (expected " +
                     backend_choices() + ")");
}

}  // namespace gpuspeech
