// A feature-space MLLR transform, x' = A x + b, and its application to
// blocks of frames on a backend.
//
// W = [A b] is d x (d+1), row-major, in double (estimation works in double;
// the backend gets float32). Application is one Backend::gemm_nt per block:
// X' (T x d) = [X 1] (T x (d+1)) * Wᵀ.
#pragma once

#include <cstdint>
#include <vector>

#include "common/backends/backend.h"

namespace gpuspeech {

struct FmllrTransform {
  int dim = 0;
  std::vector<double> w;  // dim x (dim + 1), [A b]

  static FmllrTransform identity(int dim);
  double& at(int row, int col) { return w[static_cast<size_t>(row) * (dim + 1) + col]; }
  double at(int row, int col) const { return w[static_cast<size_t>(row) * (dim + 1) + col]; }
  bool is_identity() const;
  // ln |det A| (LU with partial pivoting, in double); -inf when singular.
  double log_abs_det() const;
  bool all_finite() const;
};

// x' = A x + b in double on the host: the reference.
void apply_fmllr_reference(const FmllrTransform& t, const float* in, int64_t frames, float* out);

// Applies a transform on a backend. The [x; 1] rows are built on the host
// (the backend interface has no bias or padding operation), uploaded, and
// multiplied by Wᵀ on the device.
class FmllrApplier {
 public:
  FmllrApplier(Backend& backend, int dim, int64_t block_frames = 1024);
  int dim() const { return dim_; }
  // Throws std::invalid_argument for a transform of another dimension or
  // with non-finite entries.
  void set_transform(const FmllrTransform& t);
  // in, out: frames x dim on the host (may be the same buffer).
  void apply(const float* in, int64_t frames, float* out);
  // Leaves the result on the device: out[out_offset + f * dim + i].
  void apply(const float* in, int64_t frames, DeviceBuffer& out, size_t out_offset = 0);

 private:
  void upload_block(const float* in, int64_t n);
  Backend& backend_;
  int dim_;
  int64_t block_frames_;
  BufferPtr w_dev_, in_dev_, out_dev_;
  std::vector<float> in_host_;
};

}  // namespace gpuspeech
