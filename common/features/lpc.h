// Linear prediction for PLP, on one row, in double precision: the CPU
// backend calls it per frame and the device kernels follow it step by step.
#pragma once

namespace gpuspeech {

// Levinson-Durbin on autocorrelation r[0..order]: writes a[0..order] with
// a[0] = 1 (A(z) = sum a_i z^-i) and returns the residual energy, or a value
// <= 0 if r[0] <= 0 or the recursion breaks down.
double levinson_durbin(const double* r, int order, double* a);

// See Backend::lpc_to_cepstrum for the definition. out: num_ceps floats.
void lpc_to_cepstrum_row(const float* r, int order, int num_ceps, float* out);

}  // namespace gpuspeech
