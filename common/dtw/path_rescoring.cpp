#include "common/dtw/path_rescoring.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <utility>

#include "common/dtw/dtw.h"

namespace gpuspeech {

float path_power_mean(const float* test, int64_t n, const float* ref, int64_t m, int dim, const DtwOptions& dtw,
                      float power) {
  if (!(power >= 1.0f)) throw std::invalid_argument("path_power_mean: power must be >= 1");
  std::vector<std::pair<int64_t, int64_t>> path;
  const float d = dtw_distance(test, n, ref, m, dim, dtw, &path);
  if (!std::isfinite(d) || path.empty()) return std::numeric_limits<float>::infinity();
  // In double and in path order: the same sum on every run and platform.
  double sum = 0.0;
  for (const auto& [i, j] : path)
    sum += std::pow(static_cast<double>(dtw_local_distance(test + i * dim, ref + j * dim, dim, dtw.distance)),
                    static_cast<double>(power));
  return static_cast<float>(std::pow(sum / static_cast<double>(path.size()), 1.0 / power));
}

MatchDecision decide_rescored(const std::vector<FeatureMatrix>& warped,
                              const std::vector<std::vector<float>>& per_warp,
                              const std::vector<DtwTemplate>& templates, const std::vector<std::string>& labels,
                              const DtwOptions& dtw, const DtwDecisionOptions& decision, float reject_above) {
  decision.validate();
  if (warped.size() != per_warp.size())
    throw std::invalid_argument("decide_rescored: " + std::to_string(warped.size()) + " feature matrices for " +
                                std::to_string(per_warp.size()) + " distance lists");
  if (templates.size() != labels.size())
    throw std::invalid_argument("decide_rescored: " + std::to_string(templates.size()) + " templates for " +
                                std::to_string(labels.size()) + " labels");
  const std::vector<float> best = best_over_warps(per_warp);
  if (best.size() != templates.size())
    throw std::invalid_argument("decide_rescored: " + std::to_string(best.size()) + " distances for " +
                                std::to_string(templates.size()) + " templates");
  MatchDecision m = decide_match(best, labels, reject_above, decision.k_nearest);
  if (decision.rescore_words <= 1 || m.label.empty()) return m;

  // Each word's reachable templates, nearest first (ties in template
  // order), and its score by decide_match's rule.
  struct Word {
    std::string label;
    std::vector<size_t> nearest;
    float score = std::numeric_limits<float>::infinity();
    float rescored = std::numeric_limits<float>::infinity();
  };
  std::map<std::string, Word> by_label;
  for (size_t t = 0; t < best.size(); ++t) {
    Word& w = by_label[labels[t]];
    w.label = labels[t];
    if (std::isfinite(best[t])) w.nearest.push_back(t);
  }
  std::vector<Word> words;
  for (auto& [name, w] : by_label) {
    if (w.nearest.empty()) continue;
    std::stable_sort(w.nearest.begin(), w.nearest.end(), [&](size_t a, size_t b) { return best[a] < best[b]; });
    std::vector<float> d;
    for (size_t t : w.nearest) d.push_back(best[t]);
    w.score = label_score(d, decision.k_nearest);
    words.push_back(std::move(w));
  }
  // decide_match's order: score, then the nearest template's position.
  std::sort(words.begin(), words.end(), [](const Word& a, const Word& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.nearest[0] < b.nearest[0];
  });
  words.resize(std::min(words.size(), static_cast<size_t>(decision.rescore_words)));
  for (Word& w : words) {
    // The same k as label_score: never all of a word's several templates.
    const size_t k = std::min(std::max<size_t>(1, w.nearest.size() - 1), static_cast<size_t>(decision.k_nearest));
    double sum = 0.0;
    for (size_t q = 0; q < k; ++q) {
      const size_t t = w.nearest[q];
      // The warp this template's distance came from (the first on ties, as
      // best_over_warps keeps the minimum).
      size_t warp = 0;
      for (size_t x = 1; x < per_warp.size(); ++x)
        if (per_warp[x][t] < per_warp[warp][t]) warp = x;
      const FeatureMatrix& f = warped[warp];
      const FeatureMatrix& r = templates[t].features;
      sum += path_power_mean(f.data.data(), f.rows, r.data.data(), r.rows, f.dim, dtw, decision.rescore_power);
    }
    w.rescored = w.score + decision.rescore_weight * static_cast<float>(sum / static_cast<double>(k));
  }
  // Stable: equal rescored values keep decide_match's order.
  std::stable_sort(words.begin(), words.end(), [](const Word& a, const Word& b) { return a.rescored < b.rescored; });
  m.label = words[0].label;
  m.distance = words[0].score;
  m.template_index = static_cast<int64_t>(words[0].nearest[0]);
  if (words.size() > 1) {
    m.runner_up = words[1].label;
    m.runner_up_distance = words[1].score;
  }
  m.rejected = reject_above > 0.0f && m.distance > reject_above;
  return m;
}

}  // namespace gpuspeech
