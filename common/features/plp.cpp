// PLP constant matrices (Hermansky, "Perceptual linear predictive (PLP)
// analysis of speech", JASA 87(4), 1990).
//
// Layout of the auditory spectrum. The num_filters = N critical bands are
// centred uniformly on the Bark axis at
//   z_j = B(low) + (j + 1) * step,  step = (B(high) - B(low)) / (N + 1),
// j = 0..N-1, so that together with the two band edges B(low) and B(high)
// they form N + 2 equally spaced points. The inverse DFT treats those N + 2
// points as the auditory spectrum sampled from "DC" (B(low)) to "Nyquist"
// (B(high)); the two edge points have no filter of their own (a critical
// band centred on an edge would be half outside the analysed range), so they
// copy their neighbours, the first and last band. HTK's PLP and Hermansky's
// original code treat the edges the same way.
#include "common/features/plp.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/features/cepstral_transform.h"
#include "common/features/mel_filterbank.h"

namespace gpuspeech {

namespace {

constexpr double kPi = 3.14159265358979323846;

void check_plp(const PlpOptions& plp) {
  if (plp.num_filters < 1)
    throw std::invalid_argument("plp: num_filters must be >= 1, got " +
                                std::to_string(plp.num_filters));
  if (plp.order < 1)
    throw std::invalid_argument("plp: order must be >= 1, got " +
                                std::to_string(plp.order));
  if (plp.num_ceps < 1)
    throw std::invalid_argument("plp: num_ceps must be >= 1, got " +
                                std::to_string(plp.num_ceps));
  if (plp.lifter < 0)
    throw std::invalid_argument("plp: lifter must be >= 0, got " +
                                std::to_string(plp.lifter));
}

// Hermansky's critical-band masking curve as a function of the distance
// dz = z - z_centre in Bark (1990, eq. 3): a flat top one Bark wide, a
// 25 dB/Bark lower skirt and a 10 dB/Bark upper skirt.
double critical_band_weight(double dz) {
  if (dz < -1.3 || dz > 2.5) return 0.0;
  if (dz < -0.5) return std::pow(10.0, 2.5 * (dz + 0.5));
  if (dz <= 0.5) return 1.0;
  return std::pow(10.0, -1.0 * (dz - 0.5));
}

}  // namespace

double vtln_unwarp_hz(double hz, double warp, double low_freq,
                      double high_freq, double nyquist,
                      const VtlnOptions& vtln) {
  if (warp == 1.0 || hz < low_freq || hz > high_freq) return hz;
  // W is continuous and increasing on [low, high] with W(low) = low and
  // W(high) = high (piecewise linear, so a closed form exists, but bisection
  // keeps this independent of where vtln_warp_hz puts its knees).
  double lo = low_freq, hi = high_freq;
  for (int it = 0; it < 200; ++it) {
    const double mid = 0.5 * (lo + hi);
    if (mid <= lo || mid >= hi) break;  // converged to adjacent doubles
    if (vtln_warp_hz(mid, warp, low_freq, high_freq, nyquist, vtln) < hz)
      lo = mid;
    else
      hi = mid;
  }
  const double x = 0.5 * (lo + hi);
  // A warp that is not increasing on [low, high] (knees outside the band)
  // has no inverse; say so rather than build a scrambled filterbank.
  if (std::fabs(vtln_warp_hz(x, warp, low_freq, high_freq, nyquist, vtln) - hz) >
      1e-6 * (1.0 + hz))
    throw std::invalid_argument(
        "VTLN warp " + std::to_string(warp) + " is not invertible on the band " +
        std::to_string(low_freq) + " .. " + std::to_string(high_freq) +
        " Hz: its cutoffs (vtln low " + std::to_string(vtln.low_cutoff) +
        ", high " + std::to_string(vtln.high_cutoff) +
        ") must lie inside the band");
  return x;
}

double hz_to_bark(double hz) { return 6.0 * std::asinh(hz / 600.0); }

double bark_to_hz(double bark) { return 600.0 * std::sinh(bark / 6.0); }

// Hermansky 1990, eq. 5a, with w = 2 pi f:
//   E(w) = (w^2 + 56.8e6) w^4 / ((w^2 + 6.3e6)^2 (w^2 + 0.38e9)).
// It approximates the ear's sensitivity at ~40 dB (about -20 dB at 100 Hz
// relative to its high-frequency asymptote of 1).
double plp_equal_loudness(double hz) {
  const double w2 = (2.0 * kPi * hz) * (2.0 * kPi * hz);
  const double d = w2 + 6.3e6;
  return (w2 + 56.8e6) * w2 * w2 / (d * d * (w2 + 0.38e9));
}

std::vector<float> plp_filterbank(const PlpOptions& plp, int fft_size,
                                  float sample_rate, float low_hz,
                                  float high_hz, const VtlnOptions& vtln,
                                  float warp) {
  check_plp(plp);
  if (fft_size < 2)
    throw std::invalid_argument("plp filterbank: fft_size must be >= 2, got " +
                                std::to_string(fft_size));
  if (!(sample_rate > 0.0f))
    throw std::invalid_argument("plp filterbank: sample rate must be > 0");
  const double nyquist = 0.5 * sample_rate;
  const double high = resolve_high_freq(high_hz, sample_rate);
  const double low = low_hz;
  if (!(low >= 0.0) || !(high > low) || high > nyquist + 1e-3)
    throw std::invalid_argument(
        "plp filterbank: need 0 <= low_freq < high_freq <= Nyquist, got " +
        std::to_string(low) + " .. " + std::to_string(high) + " Hz at " +
        std::to_string(sample_rate) + " Hz");
  if (!(warp > 0.0f))
    throw std::invalid_argument("plp filterbank: VTLN warp must be > 0, got " +
                                std::to_string(warp));

  const int n = plp.num_filters;
  const int bins = fft_size / 2 + 1;
  const double z_low = hz_to_bark(low);
  const double step = (hz_to_bark(high) - z_low) / (n + 1);

  // VTLN moves the filters, as it moves the mel filters' edges
  // (mel_filterbank.cpp applies vtln_warp_hz W to the edge frequencies), so
  // that a warp factor means the same for PLP as for MFCC: the band centred
  // at z on the unwarped axis is centred at W(z) on the real one. A bin at
  // frequency f is therefore read through the curves at W^-1(f). W maps
  // [low, high] onto itself, so bins outside [low, high] stay outside the
  // analysed band and contribute nothing (as with the mel triangles).
  std::vector<double> bin_bark(bins);
  std::vector<bool> in_band(bins);
  for (int k = 0; k < bins; ++k) {
    const double f = static_cast<double>(k) * sample_rate / fft_size;
    const double fu = warp == 1.0f
                          ? f
                          : vtln_unwarp_hz(f, warp, low, high, nyquist, vtln);
    in_band[k] = f >= low && f <= high;
    bin_bark[k] = hz_to_bark(fu);
  }

  std::vector<float> fb(static_cast<size_t>(n) * bins, 0.0f);
  for (int j = 0; j < n; ++j) {
    const double zc = z_low + (j + 1) * step;
    // The equal-loudness curve is sampled once per band, at its centre, and
    // folded into the row (as Hermansky's and HTK's code do): the weighting
    // then costs nothing per frame.
    const double eql = plp_equal_loudness(bark_to_hz(zc));
    float* row = fb.data() + static_cast<size_t>(j) * bins;
    for (int k = 0; k < bins; ++k) {
      if (!in_band[k]) continue;
      // Power is summed over the bins under the curve, not averaged: that
      // is the critical-band integration of the 1990 paper.
      row[k] = static_cast<float>(eql * critical_band_weight(bin_bark[k] - zc));
    }
  }
  return fb;
}

std::vector<float> plp_autocorr_matrix(const PlpOptions& plp) {
  check_plp(plp);
  // The compressed auditory spectrum P_0..P_{N+1} (P_0 = P_1 and
  // P_{N+1} = P_N, see the top of this file) is real and even, so its
  // inverse DFT over the full circle of 2(N+1) points is a cosine sum:
  //   r_k = (P_0 + (-1)^k P_{N+1} + 2 sum_{i=1..N} P_i cos(pi k i / (N+1)))
  //         / (2 (N + 1)).
  // Band j (0-based) is P_{j+1}; the edge terms fold into columns 0, N-1.
  // With a flat spectrum r = (1, 0, 0, ...): the scale is that of a true
  // autocorrelation, so c_0 = ln E is comparable across configurations.
  const int n = plp.num_filters;
  const int rows = plp.order + 1;
  const double norm = 1.0 / (2.0 * (n + 1));
  std::vector<float> m(static_cast<size_t>(rows) * n);
  for (int k = 0; k < rows; ++k) {
    for (int j = 0; j < n; ++j) {
      double v = 2.0 * std::cos(kPi * k * (j + 1) / (n + 1));
      if (j == 0) v += 1.0;                          // P_0 = P_1
      if (j == n - 1) v += (k % 2 == 0) ? 1.0 : -1.0;  // P_{N+1} = P_N
      m[static_cast<size_t>(k) * n + j] = static_cast<float>(v * norm);
    }
  }
  return m;
}

std::vector<float> plp_lifter_matrix(const PlpOptions& plp) {
  check_plp(plp);
  const int n = plp.num_ceps;
  std::vector<float> m(static_cast<size_t>(n) * n, 0.0f);
  for (int i = 0; i < n; ++i)
    m[static_cast<size_t>(i) * n + i] =
        static_cast<float>(lifter_weight(i, plp.lifter));
  return m;
}

}  // namespace gpuspeech
