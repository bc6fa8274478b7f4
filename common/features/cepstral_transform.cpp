#include "common/features/cepstral_transform.h"

#include <cmath>
#include <stdexcept>

namespace gpuspeech {

double lifter_weight(int i, int lifter) {
  if (lifter <= 0) return 1.0;
  return 1.0 + 0.5 * lifter * std::sin(M_PI * i / lifter);
}

std::vector<float> cepstral_matrix(CepstralTransform transform, int num_ceps,
                                   int num_filters, int lifter) {
  if (num_ceps < 1 || num_ceps > num_filters)
    throw std::invalid_argument("num-ceps must be in 1..num-filters");
  const int n = num_filters;
  std::vector<float> m(static_cast<size_t>(num_ceps) * n);
  for (int i = 0; i < num_ceps; ++i) {
    double scale = 1.0;
    switch (transform) {
      case CepstralTransform::kSphinxDct:
      case CepstralTransform::kKaldiDct:
        // Orthonormal DCT-II: sqrt(1/N) for c0, sqrt(2/N) for the rest
        // (sphinxbase fe_dct2 without its htk flag; Kaldi's ComputeDctMatrix).
        scale = i == 0 ? std::sqrt(1.0 / n) : std::sqrt(2.0 / n);
        break;
      case CepstralTransform::kHtkDct:
        scale = std::sqrt(2.0 / n);
        break;
      case CepstralTransform::kSphinxLegacy:
        // sphinxbase fe_spec2cep: cosine-weighted mean over the filters,
        // the first filter at half weight (applied below).
        scale = 1.0 / n;
        break;
    }
    const double lift = lifter_weight(i, lifter);
    for (int j = 0; j < n; ++j) {
      double basis = std::cos(M_PI * i * (j + 0.5) / n);
      if (transform == CepstralTransform::kSphinxLegacy && j == 0) basis *= 0.5;
      m[static_cast<size_t>(i) * n + j] = static_cast<float>(scale * lift * basis);
    }
  }
  return m;
}

}  // namespace gpuspeech
