// A second pass over the best few words: each word's DTW score is an
// average of local distances along the path, so a template that matches
// most of the word closely and one part badly (the /t/ of "start" against
// "stop", the onset of "no" against "go") can still score well. The second
// pass backtracks the path of each of the best words' k nearest templates
// (at the test warp that template's distance came from) and adds the
// generalised mean of the local distances along it, which weights the
// badly matched parts more:
//
//   rescored(word) = score(word) + weight x mean_k ( (1/L sum_path d^p)^(1/p) )
//
// score(word) being decide_match's (mean of the k nearest template
// distances), L the number of path cells. The word with the smallest
// rescored value wins. Measured on the cross-speaker benchmark
// (docs/dtw.md): p = 3 and weight 0.5 gain on the test voices of the
// six-voice library (92.6 -> 94.0 %) and, without any test voice, on the
// templates recognised with their own voice left out (93.1 -> 95.8 %); on
// the ten-voice library they trade two errors for two.
//
// It runs on the host (dtw_distance with the path) from the features and
// the engine's distances, so every backend gives the same labels. Cost: at
// most words x k DTWs with backtracking per utterance, whatever the number
// of templates.
#pragma once

#include <string>
#include <vector>

#include "common/dtw/dtw_options.h"
#include "common/dtw/template_library.h"
#include "common/dtw/template_matcher.h"
#include "common/features/feature_pipeline.h"

namespace gpuspeech {

// (1/L sum over the best path's cells of d(i,j)^power)^(1/power), L the
// path's cell count: the DTW path of `dtw` between test (n x dim) and ref
// (m x dim). +inf when no path exists. Throws std::invalid_argument for
// power < 1 or what dtw_distance refuses.
float path_power_mean(const float* test, int64_t n, const float* ref, int64_t m, int dim,
                      const DtwOptions& dtw, float power);

// The decision with the second pass. `warped` holds the test's features
// per test warp, `per_warp` the engine's distances per warp (one list per
// warp, one distance per template of `templates`), `labels[t]` the label
// of template t. With decision.rescore_words == 0 it is decide_match() on
// the best warp per template. Otherwise the rescore_words best words by
// decide_match's score are rescored as above; `label`, `runner_up` and
// `template_index` follow the rescored order, and `distance` /
// `runner_up_distance` stay the words' decide_match scores (so a rejection
// threshold on distances keeps its meaning); rejection as decide_match.
MatchDecision decide_rescored(const std::vector<FeatureMatrix>& warped,
                              const std::vector<std::vector<float>>& per_warp,
                              const std::vector<DtwTemplate>& templates, const std::vector<std::string>& labels,
                              const DtwOptions& dtw, const DtwDecisionOptions& decision, float reject_above);

}  // namespace gpuspeech
