// Analysis windows, as each toolkit defines them.
#pragma once

#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// `length` coefficients. Hamming and Hanning are the symmetric forms
// (denominator length - 1) that Sphinx, HTK and Kaldi use; Povey is Kaldi's
// Hanning to the power 0.85.
std::vector<double> make_window(WindowType type, int length);

}  // namespace gpuspeech
