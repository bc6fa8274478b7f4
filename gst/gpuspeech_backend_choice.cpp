// The elements' shared `backend` enumeration (gpuspeech_backend_choice.h).
#include "gpuspeech_backend_choice.h"

namespace gpuspeech {

GType
backend_choice_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {(gint) BackendChoice::kAuto,
        "A CUDA device, else an OpenCL GPU, else the CPU", "auto"},
    {(gint) BackendChoice::kCuda, "CUDA (cuFFT, cuBLAS, CUDA kernels)", "cuda"},
    {(gint) BackendChoice::kOpenCL, "OpenCL (clFFT, OpenCL kernels)", "opencl"},
    {(gint) BackendChoice::kCpu, "CPU reference backend", "cpu"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type,
        g_enum_register_static ("GstGpuSpeechBackend", values));
  return type;
}

const char *
backend_choice_name (BackendChoice choice)
{
  switch (choice) {
    case BackendChoice::kCuda:
      return "cuda";
    case BackendChoice::kOpenCL:
      return "opencl";
    case BackendChoice::kCpu:
      return "cpu";
    case BackendChoice::kAuto:
      break;
  }
  return "auto";
}

}  // namespace gpuspeech
