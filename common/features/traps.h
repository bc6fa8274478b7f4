// TRAPS (LC-RC) temporal weights. Per band, the trajectory of log energies
// over 2*context+1 frames is split into a left half (frames t-context..t) and
// a right half (t..t+context); each half is weighted by half a Hamming window
// and reduced to num_coeffs DCT coefficients.
#pragma once

#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// Matrix for Backend::gemm_nt applied to spliced band energies.
// Input row layout (from Backend::splice): index = k * num_bands + b, frame
// offset k = 0..2*context, band b. Output row layout:
// index = b * (2 * num_coeffs) + h * num_coeffs + c, with h = 0 for the left
// half and 1 for the right. Shape: (num_bands * 2 * num_coeffs) rows x
// ((2 * context + 1) * num_bands) columns.
std::vector<float> traps_matrix(const TrapsOptions& traps, int num_bands);

}  // namespace gpuspeech
