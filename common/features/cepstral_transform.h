// The cepstral transforms (DCT variants) as matrices of num_ceps rows x
// num_filters columns, with the lifter folded in, so that
// cepstra = log filterbank energies x matrix^T (one GEMM).
#pragma once

#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// Lifter weight for coefficient i: 1 + L/2 sin(pi i / L); 1 when L == 0.
double lifter_weight(int i, int lifter);

std::vector<float> cepstral_matrix(CepstralTransform transform, int num_ceps,
                                   int num_filters, int lifter);

}  // namespace gpuspeech
