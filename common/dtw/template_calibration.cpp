#include "common/dtw/template_calibration.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "common/dtw/dtw.h"
#include "common/dtw/template_matcher.h"

namespace gpuspeech {

TemplateScale template_scale(const TemplateLibrary& library, const DtwOptions& dtw, int k_nearest) {
  if (k_nearest < 1) throw std::invalid_argument("template_scale: k_nearest must be >= 1");
  const std::vector<DtwTemplate>& ts = library.templates();
  std::vector<float> scores;
  for (size_t t = 0; t < ts.size(); ++t) {
    std::vector<float> d;
    for (size_t p = 0; p < ts.size() && d.size() < static_cast<size_t>(kMaxCalibrationPeers); ++p) {
      if (p == t || ts[p].label != ts[t].label) continue;
      const float x = dtw_distance(ts[t].features.data.data(), ts[t].features.rows, ts[p].features.data.data(),
                                   ts[p].features.rows, ts[t].features.dim, dtw);
      if (std::isfinite(x)) d.push_back(x);
    }
    if (d.empty()) continue;
    // Scored as a test of this word would be, against the word's other templates.
    scores.push_back(label_score(d, k_nearest));
  }
  TemplateScale s;
  s.scored = static_cast<int>(scores.size());
  if (scores.empty()) return s;
  std::sort(scores.begin(), scores.end());
  const size_t n = scores.size();
  s.median = n % 2 ? scores[n / 2] : 0.5f * (scores[n / 2 - 1] + scores[n / 2]);
  return s;
}

float rejection_threshold(const TemplateLibrary& library, const DtwOptions& dtw,
                          const DtwDecisionOptions& decision) {
  decision.validate();
  switch (decision.reject) {
    case DtwDecisionOptions::Reject::kOff: return 0.0f;
    case DtwDecisionOptions::Reject::kFixed: return decision.reject_distance;
    case DtwDecisionOptions::Reject::kFromTemplates: break;
  }
  const TemplateScale s = template_scale(library, dtw, decision.k_nearest);
  if (s.scored == 0)
    throw std::invalid_argument(
        "rejection from the templates needs at least two templates of one word that DTW can match "
        "(e.g. the word by two voices); give a fixed threshold or turn rejection off");
  return decision.reject_scale * s.median;
}

}  // namespace gpuspeech
