// PLP (perceptual linear prediction, Hermansky 1990) constant matrices: the
// Bark-scale critical-band filterbank with the equal-loudness curve folded
// in, and the inverse DFT that turns compressed band powers into an
// autocorrelation. The per-frame LPC work is Backend::lpc_to_cepstrum.
#pragma once

#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// Bark(f) = 6 asinh(f / 600).
double hz_to_bark(double hz);
double bark_to_hz(double bark);

// Hermansky's (1990) equal-loudness weight at `hz`: rising monotonically
// towards 1 (0.85 at 7 kHz), about -33 dB at 100 Hz.
double plp_equal_loudness(double hz);

// The inverse of vtln_warp_hz (mel_filterbank.h) for the same arguments:
// the frequency x with vtln_warp_hz(x, ...) == hz. Throws
// std::invalid_argument when the warp is not invertible on the band.
double vtln_unwarp_hz(double hz, double warp, double low_freq,
                      double high_freq, double nyquist,
                      const VtlnOptions& vtln);

// num_filters x (fft_size/2 + 1), row-major: critical-band masking curves
// centred uniformly on the Bark axis between low_hz and high_hz, each
// multiplied by the equal-loudness weight at its centre. `warp` is a VTLN
// factor (1 = none) that moves the curves the way mel_filterbank moves the
// mel filters: each curve is warped by vtln_warp_hz, i.e. bin frequency f
// is evaluated at vtln_unwarp_hz(f).
std::vector<float> plp_filterbank(const PlpOptions& plp, int fft_size,
                                  float sample_rate, float low_hz,
                                  float high_hz, const VtlnOptions& vtln,
                                  float warp);

// (order + 1) x num_filters: r[k] = sum_j M[k][j] * band[j], the inverse DFT
// of the (real, even) auditory spectrum, with the first and last band
// standing in for the missing edge bands as in HTK and Hermansky's code.
std::vector<float> plp_autocorr_matrix(const PlpOptions& plp);

// num_ceps x num_ceps diagonal lifter (identity when plp.lifter == 0).
std::vector<float> plp_lifter_matrix(const PlpOptions& plp);

}  // namespace gpuspeech
