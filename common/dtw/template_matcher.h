// The decision after DTW: the best label, the best other label (the
// runner-up), and rejection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspeech {

struct MatchDecision {
  std::string label;           // "" when nothing matched (every distance +inf)
  // The winning label's score: the mean of its k nearest template distances
  // (k = 1: the best template's distance); +inf when none.
  float distance = 0.0f;
  int64_t template_index = -1; // the winning label's nearest template
  std::string runner_up;       // best label other than `label`; "" if none
  float runner_up_distance = 0.0f;  // its score; +inf when there is no runner-up
  // True when nothing matched, or the score is above the rejection
  // threshold.
  bool rejected = false;
};

// `distances[t]` belongs to `labels[t]`. A label's score is the mean of its
// min(k_nearest, max(1, n - 1)) smallest finite distances, n being how many
// it has (+inf when it has none): never all of a word's templates when it
// has several, so a word with two templates scores its nearest one. The
// smallest score wins, ties going to the label whose
// nearest template comes first. `reject_above` <= 0 disables the threshold
// (only "nothing matched" rejects then). Throws std::invalid_argument when
// the sizes differ or k_nearest < 1.
MatchDecision decide_match(const std::vector<float>& distances, const std::vector<std::string>& labels,
                           float reject_above, int k_nearest = 1);

// One word's score from its template distances (finite ones; +inf when
// none), by decide_match's rule. `d` is reordered.
float label_score(std::vector<float>& d, int k_nearest);

// The per-template minimum over several distance lists of equal size (one
// per VTLN warp of the test utterance): each template keeps its best warp.
std::vector<float> best_over_warps(const std::vector<std::vector<float>>& per_warp);

}  // namespace gpuspeech
