// TRAPS (LC-RC) temporal weights: half-Hamming windows and DCTs over the
// left and right halves of each band's log-energy trajectory (Schwarz,
// Matejka, Cernocky: "Towards lower error rates in phoneme recognition",
// 2004), as one matrix so that the device does a single GEMM.
//
// Conventions:
//  * The window is the symmetric Hamming window of length 2C + 1 (C =
//    context), w[k] = 0.54 - 0.46 cos(2 pi k / (2C)), k = 0..2C. The left
//    half takes w[0..C] (rising to 1 at the current frame), the right half
//    w[C..2C] (falling from 1): the current frame belongs to both halves, so
//    each half is M = C + 1 frames long.
//  * Each half is read in time order (oldest frame first) and transformed
//    by the orthonormal DCT-II of length M:
//      X[c] = s_c sqrt(2/M) sum_{n=0..M-1} x[n] cos(pi c (n + 1/2) / M),
//    s_0 = 1/sqrt(2), s_c = 1 otherwise. Orthonormal so that the
//    coefficients keep the scale of the log energies whatever the context
//    length, and dropping high coefficients is a least-squares truncation.
#include "common/features/traps.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuspeech {

namespace {
constexpr double kPi = 3.14159265358979323846;
}

std::vector<float> traps_matrix(const TrapsOptions& traps, int num_bands) {
  const int ctx = traps.context;
  const int nc = traps.num_coeffs;
  if (ctx < 1)
    throw std::invalid_argument("traps: context must be >= 1 frame, got " +
                                std::to_string(ctx));
  if (nc < 1 || nc > ctx + 1)
    throw std::invalid_argument(
        "traps: num_coeffs must be between 1 and context + 1 = " +
        std::to_string(ctx + 1) + ", got " + std::to_string(nc));
  if (num_bands < 1)
    throw std::invalid_argument("traps: need at least one band, got " +
                                std::to_string(num_bands));

  const int span = 2 * ctx + 1;  // frame offsets k = 0..2C (t - C .. t + C)
  const int half = ctx + 1;      // frames per half
  std::vector<double> hamming(span);
  for (int k = 0; k < span; ++k)
    hamming[k] = 0.54 - 0.46 * std::cos(2.0 * kPi * k / (span - 1));

  const int out_rows = num_bands * 2 * nc;
  const int in_cols = span * num_bands;
  std::vector<float> m(static_cast<size_t>(out_rows) * in_cols, 0.0f);
  for (int b = 0; b < num_bands; ++b) {
    for (int h = 0; h < 2; ++h) {
      const int k0 = h == 0 ? 0 : ctx;  // first frame offset of this half
      for (int c = 0; c < nc; ++c) {
        const double scale =
            std::sqrt(2.0 / half) * (c == 0 ? std::sqrt(0.5) : 1.0);
        const size_t row = static_cast<size_t>(b) * 2 * nc + h * nc + c;
        for (int i = 0; i < half; ++i) {
          const int k = k0 + i;
          const double dct = scale * std::cos(kPi * c * (i + 0.5) / half);
          m[row * in_cols + static_cast<size_t>(k) * num_bands + b] =
              static_cast<float>(dct * hamming[k]);
        }
      }
    }
  }
  return m;
}

}  // namespace gpuspeech
