// The band-limit detector of common/dtw/band_limit.h on synthetic signals
// (fresh random ones each run; the seed is printed): wide-band noise is not
// band-limited, a sum of random tones below 3.6 kHz is, the same with a
// 5 kHz tone 40 dB down is not (and the ratio says -40 dB), white noise
// added after the band limit makes it wide band again, and silence or an
// empty or short recording give an answer without failing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "common/dtw/band_limit.h"

namespace gpuspeech {
namespace {

constexpr float kRate = 16000.0f;
constexpr int kSamples = 16000;  // 1 s

std::mt19937& rng() {
  static std::mt19937 g = [] {
    const unsigned seed = std::random_device{}();
    std::printf("band limit tests: seed %u\n", seed);
    return std::mt19937(seed);
  }();
  return g;
}

// 40 tones of random frequency in [100, 3600] Hz, phase and amplitude.
std::vector<float> narrow_band(int n) {
  // (In double: a float phase at 20 000 radians is off by a thousandth,
  // which is broad-band noise about 55 dB down.)
  std::uniform_real_distribution<double> hz(100.0, 3600.0), phase(0.0, 6.283185307179586), amp(100.0, 1000.0);
  std::vector<double> sum(static_cast<size_t>(n), 0.0);
  for (int k = 0; k < 40; ++k) {
    const double f = hz(rng()), p = phase(rng()), a = amp(rng());
    for (int i = 0; i < n; ++i) sum[i] += a * std::sin(6.283185307179586 * f * i / kRate + p);
  }
  return std::vector<float>(sum.begin(), sum.end());
}

double power(const std::vector<float>& x) {
  double s = 0.0;
  for (float v : x) s += static_cast<double>(v) * v;
  return s / static_cast<double>(x.size());
}

TEST(BandLimit, WideBandNoiseIsNotLimited) {
  std::normal_distribution<float> noise(0.0f, 1000.0f);
  std::vector<float> x(kSamples);
  for (float& v : x) v = noise(rng());
  const double r = high_band_ratio_db(x.data(), kSamples, kRate);
  // White noise: power per hertz is flat, and the bands are 3.3 and 3.4 kHz wide.
  EXPECT_NEAR(r, 10.0 * std::log10(3300.0 / 3400.0), 1.0);
  EXPECT_FALSE(is_band_limited(x.data(), kSamples, kRate));
}

TEST(BandLimit, TonesBelowTheEdgeAreLimited) {
  const std::vector<float> x = narrow_band(kSamples);
  // The float samples' rounding (about 140 dB down) is what is left.
  EXPECT_LT(high_band_ratio_db(x.data(), kSamples, kRate), -80.0);
  EXPECT_TRUE(is_band_limited(x.data(), kSamples, kRate));
}

TEST(BandLimit, AToneAboveTheEdgeFortyDecibelsDownIsWideBand) {
  std::vector<float> x = narrow_band(kSamples);
  // A 5 kHz tone with a hundredth of the signal's power.
  const double a = std::sqrt(2.0 * power(x) * 1e-4);
  for (int i = 0; i < kSamples; ++i) x[i] += static_cast<float>(a * std::sin(6.2831853 * 5000.0 * i / kRate));
  const double r = high_band_ratio_db(x.data(), kSamples, kRate);
  EXPECT_NEAR(r, -40.0, 3.0);
  EXPECT_FALSE(is_band_limited(x.data(), kSamples, kRate));
}

TEST(BandLimit, NoiseAddedAfterTheLimitMakesItWideBand) {
  std::vector<float> x = narrow_band(kSamples);
  // White noise 30 dB below the tones.
  std::normal_distribution<float> noise(0.0f, static_cast<float>(std::sqrt(power(x) * 1e-3)));
  for (float& v : x) v += noise(rng());
  EXPECT_FALSE(is_band_limited(x.data(), kSamples, kRate));
}

TEST(BandLimit, SilenceEmptyAndShortRecordings) {
  const std::vector<float> zeros(kSamples, 0.0f);
  EXPECT_EQ(high_band_ratio_db(zeros.data(), kSamples, kRate), 0.0);
  EXPECT_FALSE(is_band_limited(zeros.data(), kSamples, kRate));
  EXPECT_EQ(high_band_ratio_db(nullptr, 0, kRate), 0.0);
  // Shorter than one frame: one zero-padded frame.
  const std::vector<float> x = narrow_band(300);
  EXPECT_TRUE(is_band_limited(x.data(), 300, kRate));
  // A rate that cannot hold the high band: no evidence either way.
  EXPECT_EQ(high_band_ratio_db(x.data(), 300, 8000.0f), 0.0);
}

}  // namespace
}  // namespace gpuspeech
