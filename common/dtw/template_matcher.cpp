#include "common/dtw/template_matcher.h"

#include <limits>
#include <stdexcept>

namespace gpuspeech {

MatchDecision decide_match(const std::vector<float>& distances,
                           const std::vector<std::string>& labels, float reject_above) {
  if (distances.size() != labels.size())
    throw std::invalid_argument("decide_match: " + std::to_string(distances.size()) +
                                " distances for " + std::to_string(labels.size()) + " labels");
  constexpr float kInf = std::numeric_limits<float>::infinity();
  MatchDecision d;
  d.distance = kInf;
  d.runner_up_distance = kInf;
  for (size_t t = 0; t < distances.size(); ++t)
    if (distances[t] < d.distance) {
      d.distance = distances[t];
      d.template_index = static_cast<int64_t>(t);
    }
  if (d.template_index < 0) {
    d.rejected = true;
    return d;
  }
  d.label = labels[static_cast<size_t>(d.template_index)];
  for (size_t t = 0; t < distances.size(); ++t)
    if (labels[t] != d.label && distances[t] < d.runner_up_distance) {
      d.runner_up_distance = distances[t];
      d.runner_up = labels[t];
    }
  d.rejected = reject_above > 0.0f && d.distance > reject_above;
  return d;
}

}  // namespace gpuspeech
