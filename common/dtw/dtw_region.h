// The cells of one DTW column that the constraints allow (dtw_options.h),
// as one inline function that the host code and the CUDA kernels share, so
// that every engine computes exactly the same cells. (The OpenCL kernel
// kernels/opencl/dtw.cl has a line-for-line copy in OpenCL C; the
// cross-engine tests compare them.)
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define GPUSPEECH_DTW_HD __host__ __device__
#else
#define GPUSPEECH_DTW_HD
#endif

namespace gpuspeech {
namespace dtw_region {

GPUSPEECH_DTW_HD inline int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// Column i of a test of n frames against a template of m frames: cells
// [*lo, *hi]; false when empty. itakura: the parallelogram of slopes 1/2..2
// (floor(i/2) <= j <= 2i from the start, the same from the end); band >= 0:
// |j (n-1) - i (m-1)| <= band (n-1).
GPUSPEECH_DTW_HD inline bool column_range(bool itakura, int band, int64_t n, int64_t m, int64_t i,
                                          int64_t* lo, int64_t* hi) {
  int64_t a = 0, b = m - 1;
  if (itakura) {
    const int64_t rest = n - 1 - i;
    const int64_t a2 = (m - 1) - 2 * rest, b2 = (m - 1) - rest / 2;
    a = i / 2 > a2 ? i / 2 : a2;
    b = 2 * i < b2 ? 2 * i : b2;
  }
  if (band >= 0 && n > 1) {
    const int64_t c = i * (m - 1), w = static_cast<int64_t>(band) * (n - 1);
    const int64_t a3 = -floor_div(w - c, n - 1);  // ceil((c - w) / (n - 1))
    const int64_t b3 = floor_div(c + w, n - 1);
    if (a3 > a) a = a3;
    if (b3 < b) b = b3;
  }
  if (a < 0) a = 0;
  if (b > m - 1) b = m - 1;
  *lo = a;
  *hi = b;
  return a <= b;
}

}  // namespace dtw_region
}  // namespace gpuspeech
