#include "common/features/mel_filterbank.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gpuspeech {

double mel_sphinx(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double mel_sphinx_inverse(double mel) {
  return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
}
double mel_htk(double hz) { return 1127.0 * std::log(1.0 + hz / 700.0); }
double mel_htk_inverse(double mel) { return 700.0 * (std::exp(mel / 1127.0) - 1.0); }

double resolve_high_freq(double high_freq, double sample_rate) {
  return high_freq > 0 ? high_freq : sample_rate / 2.0 + high_freq;
}

void check_vtln(const MelOptions& mel, double sample_rate, double warp) {
  if (!(warp > 0.5 && warp < 2.0))
    throw std::invalid_argument("VTLN warp factors must be in (0.5, 2), got " +
                                std::to_string(warp));
  if (warp == 1.0) return;
  const double low = mel.low_freq;
  const double high = resolve_high_freq(mel.high_freq, sample_rate);
  const double nyquist = sample_rate / 2.0;
  const double high_cutoff =
      mel.vtln.high_cutoff > 0 ? mel.vtln.high_cutoff : nyquist + mel.vtln.high_cutoff;
  const double lower_knee = mel.vtln.low_cutoff * std::max(1.0, warp);
  const double upper_knee = high_cutoff * std::min(1.0, warp);
  if (!(low < lower_knee && lower_knee < upper_knee && upper_knee < high))
    throw std::invalid_argument(
        "VTLN warp " + std::to_string(warp) + ": its knees (" + std::to_string(lower_knee) +
        " and " + std::to_string(upper_knee) + " Hz) must lie inside the filterbank band (" +
        std::to_string(low) + " to " + std::to_string(high) +
        " Hz); set the VTLN low and high cutoffs inside the band");
}

double vtln_warp_hz(double hz, double warp, double low_freq, double high_freq,
                    double nyquist, const VtlnOptions& vtln) {
  if (warp == 1.0) return hz;
  if (hz < low_freq || hz > high_freq) return hz;
  const double high_cutoff =
      vtln.high_cutoff > 0 ? vtln.high_cutoff : nyquist + vtln.high_cutoff;
  // The knees move with the warp so the warped band stays inside
  // [low_freq, high_freq] for any factor.
  const double lower_knee = vtln.low_cutoff * std::max(1.0, warp);
  const double upper_knee = high_cutoff * std::min(1.0, warp);
  const double scale = 1.0 / warp;
  if (hz < lower_knee) {
    const double slope = (scale * lower_knee - low_freq) / (lower_knee - low_freq);
    return low_freq + slope * (hz - low_freq);
  }
  if (hz < upper_knee) return scale * hz;
  const double slope = (high_freq - scale * upper_knee) / (high_freq - upper_knee);
  return high_freq + slope * (hz - high_freq);
}

namespace {

// sphinxbase's fe_build_melfilters, in float32 like the original so that
// edge frequencies round to the same DFT bins.
std::vector<float> sphinx_filterbank(const MelOptions& mel, int fft_size,
                                     float sample_rate, float warp) {
  const int bins = fft_size / 2 + 1;
  const int nfilt = mel.num_filters;
  const float high = static_cast<float>(resolve_high_freq(mel.high_freq, sample_rate));
  const auto to_mel = [](float hz) {
    return static_cast<float>(2595.0 * std::log10(1.0 + hz / 700.0));
  };
  const auto from_mel = [](float m) {
    return static_cast<float>(700.0 * (std::pow(10.0, m / 2595.0) - 1.0));
  };
  const float melmin = to_mel(mel.low_freq);
  const float melmax = to_mel(high);
  const float melbw = (melmax - melmin) / static_cast<float>(nfilt + 1);
  const float fftfreq = sample_rate / static_cast<float>(fft_size);
  std::vector<float> fb(static_cast<size_t>(nfilt) * bins, 0.0f);
  for (int i = 0; i < nfilt; ++i) {
    float freqs[3];
    for (int j = 0; j < 3; ++j) {
      float hz = from_mel(static_cast<float>(i + j) * melbw + melmin);
      hz = static_cast<float>(vtln_warp_hz(hz, warp, mel.low_freq, high,
                                           sample_rate / 2.0, mel.vtln));
      // Edges snap to DFT points with sphinx_fe -round_filters yes (its
      // default); with -round_filters no they stay where the mel spacing
      // puts them, and the triangles are sampled at the bins in between.
      freqs[j] = mel.round_filters
                     ? static_cast<float>(static_cast<int>(hz / fftfreq + 0.5f)) * fftfreq
                     : hz;
    }
    if (!(freqs[2] > freqs[0]) || !(freqs[1] > freqs[0]) || !(freqs[2] > freqs[1]))
      throw std::invalid_argument(
          "mel filter " + std::to_string(i) +
          " is narrower than one FFT bin: use fewer filters or a larger FFT");
    // Unrounded edges can leave a filter with no bin inside it, which
    // sphinx accepts and then floors the log of its zero energy: refuse it.
    if (!mel.round_filters &&
        std::floor(freqs[2] / fftfreq) < std::ceil(freqs[0] / fftfreq))
      throw std::invalid_argument(
          "mel filter " + std::to_string(i) +
          " contains no FFT bin: use fewer filters or a larger FFT");
    // Bins from the first at or above the left edge up to (not including)
    // the first above the right edge or the Nyquist bin.
    for (int j = 0; j < fft_size / 2; ++j) {
      const float hz = static_cast<float>(j) * fftfreq;
      if (hz < freqs[0]) continue;
      if (hz > freqs[2]) break;
      float lo = (hz - freqs[0]) / (freqs[1] - freqs[0]);
      float hi = (freqs[2] - hz) / (freqs[2] - freqs[1]);
      const float area = 2.0f / (freqs[2] - freqs[0]);  // unit-area triangles
      lo *= area;
      hi *= area;
      fb[static_cast<size_t>(i) * bins + j] = std::min(lo, hi);
    }
  }
  return fb;
}

// Triangles of peak 1 on the 1127 ln(1 + f/700) mel axis, as in HTK and
// Kaldi: each bin contributes by where its centre frequency falls on the mel
// axis. VTLN warps the filters' edges (Kaldi's VtlnWarpMelFreq).
std::vector<float> htk_filterbank(const MelOptions& mel, int fft_size,
                                  float sample_rate, float warp,
                                  bool include_nyquist) {
  const int bins = fft_size / 2 + 1;
  const int nfilt = mel.num_filters;
  const double nyquist = sample_rate / 2.0;
  const double low = mel.low_freq;
  const double high = resolve_high_freq(mel.high_freq, sample_rate);
  const double mel_low = mel_htk(low), mel_high = mel_htk(high);
  const double delta = (mel_high - mel_low) / (nfilt + 1);
  const double bin_width = static_cast<double>(sample_rate) / fft_size;
  const auto warp_mel = [&](double m) {
    return mel_htk(vtln_warp_hz(mel_htk_inverse(m), warp, low, high, nyquist, mel.vtln));
  };
  std::vector<float> fb(static_cast<size_t>(nfilt) * bins, 0.0f);
  const int last_bin = include_nyquist ? bins : bins - 1;
  for (int b = 0; b < nfilt; ++b) {
    double left = mel_low + b * delta;
    double centre = mel_low + (b + 1) * delta;
    double right = mel_low + (b + 2) * delta;
    if (warp != 1.0) {
      left = warp_mel(left);
      centre = warp_mel(centre);
      right = warp_mel(right);
    }
    for (int i = 0; i < last_bin; ++i) {
      const double m = mel_htk(bin_width * i);
      if (m > left && m < right) {
        const double w = m <= centre ? (m - left) / (centre - left)
                                     : (right - m) / (right - centre);
        fb[static_cast<size_t>(b) * bins + i] = static_cast<float>(w);
      }
    }
  }
  return fb;
}

}  // namespace

std::vector<float> mel_filterbank(const MelOptions& mel, int fft_size,
                                  float sample_rate, float warp,
                                  bool include_nyquist) {
  if (mel.scale == MelScale::kSphinx)
    return sphinx_filterbank(mel, fft_size, sample_rate, warp);
  return htk_filterbank(mel, fft_size, sample_rate, warp, include_nyquist);
}

}  // namespace gpuspeech
