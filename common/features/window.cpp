#include "common/features/window.h"

#include <cmath>

namespace gpuspeech {

std::vector<double> make_window(WindowType type, int length) {
  std::vector<double> w(length, 1.0);
  if (length < 2) return w;
  const double denom = length - 1.0;
  for (int i = 0; i < length; ++i) {
    const double c = std::cos(2.0 * M_PI * i / denom);
    switch (type) {
      case WindowType::kHamming: w[i] = 0.54 - 0.46 * c; break;
      case WindowType::kHanning: w[i] = 0.5 - 0.5 * c; break;
      case WindowType::kPovey: w[i] = std::pow(0.5 - 0.5 * c, 0.85); break;
      case WindowType::kRectangular: w[i] = 1.0; break;
      case WindowType::kBlackman:
        w[i] = 0.42 - 0.5 * c + 0.08 * std::cos(4.0 * M_PI * i / denom);
        break;
    }
  }
  return w;
}

}  // namespace gpuspeech
