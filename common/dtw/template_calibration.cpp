#include "common/dtw/template_calibration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "common/dtw/dtw.h"

namespace gpuspeech {

TemplateScale template_scale(const TemplateLibrary& library, const DtwOptions& dtw) {
  const std::vector<DtwTemplate>& ts = library.templates();
  std::vector<float> pairs;
  for (size_t t = 0; t < ts.size(); ++t) {
    int peers = 0;
    for (size_t p = 0; p < ts.size() && peers < kMaxCalibrationPeers; ++p) {
      if (p == t || ts[p].label != ts[t].label) continue;
      ++peers;
      const float x = dtw_distance(ts[t].features.data.data(), ts[t].features.rows, ts[p].features.data.data(),
                                   ts[p].features.rows, ts[t].features.dim, dtw);
      if (std::isfinite(x)) pairs.push_back(x);
    }
  }
  TemplateScale s;
  s.pairs = static_cast<int>(pairs.size());
  if (pairs.empty()) return s;
  const size_t q = (pairs.size() - 1) * 3 / 4;
  std::nth_element(pairs.begin(), pairs.begin() + static_cast<std::ptrdiff_t>(q), pairs.end());
  s.upper_quartile = pairs[q];
  return s;
}

float rejection_threshold(const TemplateLibrary& library, const DtwOptions& dtw,
                          const DtwDecisionOptions& decision) {
  decision.validate();
  switch (decision.reject) {
    case DtwDecisionOptions::Reject::kOff: return 0.0f;
    case DtwDecisionOptions::Reject::kFixed: return decision.reject_distance;
    case DtwDecisionOptions::Reject::kMapped: return 0.0f;  // the map's own (word_recognizer.cpp)
    case DtwDecisionOptions::Reject::kFromTemplates: break;
  }
  const TemplateScale s = template_scale(library, dtw);
  if (s.pairs == 0)
    throw std::invalid_argument(
        "rejection from the templates needs at least two templates of one word that DTW can match "
        "(e.g. the word by two voices); give a fixed threshold or turn rejection off");
  return decision.reject_scale * s.upper_quartile;
}

}  // namespace gpuspeech
