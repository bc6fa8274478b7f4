// The decision after DTW: the nearest template's label, the nearest
// template of any other label (the runner-up), and rejection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspeech {

struct MatchDecision {
  std::string label;           // "" when nothing matched (every distance +inf)
  float distance = 0.0f;       // of the best template; +inf when none
  int64_t template_index = -1;
  std::string runner_up;       // best label other than `label`; "" if none
  float runner_up_distance = 0.0f;  // +inf when there is no runner-up
  // True when nothing matched, or the best distance is above the
  // rejection threshold.
  bool rejected = false;
};

// `distances[t]` belongs to `labels[t]`. `reject_above` <= 0 disables the
// threshold (only "nothing matched" rejects then). Ties go to the earlier
// template. Throws std::invalid_argument when the sizes differ.
MatchDecision decide_match(const std::vector<float>& distances,
                           const std::vector<std::string>& labels, float reject_above);

}  // namespace gpuspeech
