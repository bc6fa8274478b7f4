// One utterance against every template at once: the DTW distance of
// dtw.h for each template, on the host or a device.
//
//   cpu     the reference: dtw_distance() per template, templates spread
//           over threads.
//   cuda    kernels/cuda/dtw.cu, one thread block per template, one launch.
//   opencl  kernels/opencl/dtw.cl, one work-group per template, one launch.
//
// Inside a block, kItakura sweeps column by column (column i needs only
// column i-1, so the threads take the cells of a column in parallel);
// kSymmetric sweeps anti-diagonals (cell (i,j) needs (i-1,j), (i,j-1) and
// (i-1,j-1), all on the two diagonals before). Both keep their columns or
// diagonals in on-chip memory and compute only the cells of
// dtw_column_range(); distances agree with the CPU within float rounding
// (the tests ask for 1e-4 relative).
//
// This is deliberately not part of the Backend interface (backend.h): the
// engines set up their own device context, so DTW depends on nothing but
// the runtime libraries.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtw/dtw_options.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {

class DtwEngine {
 public:
  virtual ~DtwEngine() = default;
  virtual const char* name() const = 0;  // "cpu", "cuda", "opencl"
  virtual std::string device_name() const = 0;

  // Replaces the template set (uploads it once). Throws
  // std::invalid_argument for an empty set, BackendError when the device
  // cannot hold it (e.g. a template longer than max_template_frames()).
  virtual void set_templates(const PackedTemplates& templates) = 0;
  // The DTW distance of `utterance` (frames x dim, row-major, dim as the
  // templates') to every template, in template order; +inf where no path
  // satisfies the constraints.
  virtual std::vector<float> match(const float* utterance, int64_t frames) = 0;
  // Longest template the engine accepts (device engines keep a template's
  // columns in on-chip memory); 0 = no limit.
  virtual int64_t max_template_frames() const { return 0; }
};

// The engines compiled into this library, for messages: "cpu", "cpu|opencl|cuda".
const char* dtw_engine_choices();

// Opens an engine by backend name: "cpu", "cuda", "opencl" or "auto" (cuda,
// then an OpenCL GPU, then cpu, like open_backend). A named engine that is
// not compiled in or has no device throws BackendError; never a fallback.
// `device_id` picks the device (ignored by cpu); `threads` the host
// threads of the cpu engine (0 = all cores).
std::unique_ptr<DtwEngine> make_dtw_engine(const std::string& name, const DtwOptions& options,
                                           int device_id = 0, int threads = 0);

std::unique_ptr<DtwEngine> make_cpu_dtw_engine(const DtwOptions& options, int threads = 0);
#ifdef GPUSPEECH_HAVE_OPENCL
std::unique_ptr<DtwEngine> make_opencl_dtw_engine(const DtwOptions& options, int device_id,
                                                  bool gpu_only = false);
#endif
#ifdef GPUSPEECH_HAVE_CUDA
std::unique_ptr<DtwEngine> make_cuda_dtw_engine(const DtwOptions& options, int device_id);
#endif

}  // namespace gpuspeech
