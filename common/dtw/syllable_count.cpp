// See syllable_count.h.
#include "common/dtw/syllable_count.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuspeech {

std::vector<float> syllable_band_level(const float* samples, int64_t n, float sample_rate,
                                       const SyllableCountOptions& opts) {
  const int64_t hop = static_cast<int64_t>(sample_rate / 100.0f);
  std::vector<double> energy;
  if (hop < 1) return {};
  const double pi = 3.14159265358979323846;
  const double a_high = std::exp(-2.0 * pi * opts.band_high_hz / sample_rate);
  const double a_low = std::exp(-2.0 * pi * opts.band_low_hz / sample_rate);
  double y_high = 0.0, y_low = 0.0, acc = 0.0;
  int64_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = samples[i];
    y_high = (1.0 - a_high) * x + a_high * y_high;
    y_low = (1.0 - a_low) * x + a_low * y_low;
    const double b = y_high - y_low;
    acc += b * b;
    if (++k == hop) {
      energy.push_back(acc / static_cast<double>(hop));
      acc = 0.0;
      k = 0;
    }
  }
  if (energy.empty()) return {};
  // Silence 60 dB below the loudest frame is as low as the level goes: the
  // nuclei lie within floor_db of the top, far above it.
  const double top = *std::max_element(energy.begin(), energy.end());
  const double floor = top > 0.0 ? top * 1e-6 : 1e-30;
  std::vector<float> db(energy.size());
  for (size_t i = 0; i < energy.size(); ++i) db[i] = static_cast<float>(10.0 * std::log10(energy[i] + floor));
  // Centred moving average over smooth_frames (fewer at the ends).
  const int half = std::max(0, opts.smooth_frames / 2);
  std::vector<float> smooth(db.size());
  for (size_t i = 0; i < db.size(); ++i) {
    const size_t lo = i >= static_cast<size_t>(half) ? i - half : 0;
    const size_t hi = std::min(db.size(), i + half + 1);
    double sum = 0.0;
    for (size_t j = lo; j < hi; ++j) sum += db[j];
    smooth[i] = static_cast<float>(sum / static_cast<double>(hi - lo));
  }
  return smooth;
}

int count_nuclei(const std::vector<float>& level, const SyllableCountOptions& opts,
                 const std::vector<float>* fricative) {
  if (level.size() < 3) return 0;
  std::vector<bool> voiced(level.size(), true);
  if (fricative && opts.voiced_margin_db > 0.0f && fricative->size() == level.size())
    for (size_t i = 0; i < level.size(); ++i) voiced[i] = level[i] - (*fricative)[i] >= opts.voiced_margin_db;
  float top = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < level.size(); ++i)
    if (voiced[i]) top = std::max(top, level[i]);
  if (!std::isfinite(top)) return 0;  // nothing voiced
  const float threshold = top - opts.floor_db;
  int nuclei = 0;
  float last = 0.0f;    // the current nucleus's level
  float lowest = 0.0f;  // the lowest level since the current nucleus began
  for (size_t i = 1; i + 1 < level.size(); ++i) {
    const float v = level[i];
    const bool peak = voiced[i] && v >= threshold && v >= level[i - 1] && v >= level[i + 1];
    if (nuclei == 0) {
      if (peak) {
        nuclei = 1;
        last = lowest = v;
      }
      continue;
    }
    // Rising above the current nucleus with no dip since: the same one (a
    // fricative next to it does not become its level).
    if (v > last && lowest >= last - opts.dip_db) {
      if (voiced[i]) last = v;
      continue;
    }
    lowest = std::min(lowest, v);
    if (peak && lowest <= std::min(last, v) - opts.dip_db) {  // parted by a dip: a new one
      ++nuclei;
      last = lowest = v;
    }
  }
  return nuclei;
}

int count_syllables(const float* samples, int64_t n, float sample_rate, const SyllableCountOptions& opts) {
  const std::vector<float> level = syllable_band_level(samples, n, sample_rate, opts);
  const float top_hz = 0.49f * sample_rate;
  if (opts.voiced_margin_db <= 0.0f || opts.fricative_low_hz >= top_hz) return count_nuclei(level, opts);
  SyllableCountOptions fricative = opts;
  fricative.band_low_hz = opts.fricative_low_hz;
  fricative.band_high_hz = top_hz;
  const std::vector<float> f = syllable_band_level(samples, n, sample_rate, fricative);
  return count_nuclei(level, opts, &f);
}

}  // namespace gpuspeech
