#include "common/dtw/band_limit.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "common/features/fft.h"
#include "common/features/window.h"

namespace gpuspeech {

double high_band_ratio_db(const float* samples, int64_t n, float sample_rate, const BandLimitOptions& opts) {
  constexpr int kSize = 512;
  constexpr int kHop = 256;
  if (n <= 0 || !(sample_rate > 2.0f * opts.high_band_hz[1])) return 0.0;
  const RealFft<double> fft(kSize);
  std::vector<double> frame(kSize);
  std::vector<std::complex<double>> bins(kSize / 2 + 1);
  const double hz_per_bin = static_cast<double>(sample_rate) / kSize;
  const auto bin_of = [&](float hz) { return static_cast<int>(std::lround(hz / hz_per_bin)); };
  const int low0 = bin_of(opts.low_band_hz[0]), low1 = bin_of(opts.low_band_hz[1]);
  const int high0 = bin_of(opts.high_band_hz[0]), high1 = bin_of(opts.high_band_hz[1]);
  // Whole frames only: a frame cut off by the recording's end would splash
  // the low band's power into the high band. A recording shorter than a
  // frame is one frame with a window of its own length, zero-padded.
  const int len = static_cast<int>(std::min<int64_t>(n, kSize));
  const std::vector<double> window = make_window(WindowType::kHanning, len);
  double low = 0.0, high = 0.0;
  for (int64_t start = 0; start == 0 || start + kSize <= n; start += kHop) {
    for (int i = 0; i < kSize; ++i) frame[i] = i < len ? window[i] * samples[start + i] : 0.0;
    fft.forward(frame.data(), bins.data());
    for (int b = low0; b <= low1; ++b) low += std::norm(bins[b]);
    for (int b = high0; b <= high1; ++b) high += std::norm(bins[b]);
  }
  if (!(low > 0.0)) return 0.0;
  if (!(high > 0.0)) return std::numeric_limits<double>::lowest();
  return 10.0 * std::log10(high / low);
}

bool is_band_limited(const float* samples, int64_t n, float sample_rate, const BandLimitOptions& opts) {
  return high_band_ratio_db(samples, n, sample_rate, opts) < opts.threshold_db;
}

}  // namespace gpuspeech
