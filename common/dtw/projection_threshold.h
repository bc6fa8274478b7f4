// The rejection threshold of a DTW projection map (feature_projection.h),
// from recordings of voices the map was not learnt from (corpus set 2 of
// tests/dtw/make_projection_corpus.sh when the map learnt set 1).
//
// Why simulate: the threshold has to hold for a user's library, whose
// words and voices nobody has seen. So the calibration plays users: it
// draws a small library (a few words, templates by a few voices), lets the
// remaining voices say those words, and scores each test against its own
// word's templates in the mapped space as the recogniser does (the mean of
// the k nearest). The threshold is the given share of those scores: the
// share of right words a user's library would keep, were its voices as far
// from each other as the corpus's.
//
// Tests are matched as the recogniser matches them: at each of its VTLN
// test warps, each template keeping its best warp (the best of five warps
// lowers the scores a good deal: for the shipped map, 1.84 from the
// unwarped tests, 1.60 from the warped ones).
//
// Recordings are named WORD_VOICE.wav (as the corpus script writes them);
// the voice is the file name's part after the first underscore.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/dtw/dtw_options.h"
#include "common/dtw/feature_projection.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {

struct ProjectionThresholdOptions {
  int words = 12;            // words of a simulated library
  int template_voices = 6;   // voices recording its templates; the others test
  int libraries = 20;        // simulated libraries drawn
  float keep = 0.95f;        // share of right words the threshold accepts
  int k_nearest = 2;         // as DtwDecisionOptions::k_nearest
  uint32_t seed = 1;         // draws by std::mt19937

  // Throws std::invalid_argument on a value out of range.
  void validate() const;
};

struct ProjectionThresholdReport {
  int64_t scores = 0;        // tests scored, all libraries
  float median = 0.0f;       // their median score
};

// The voice part of a recording's path ("dog_en.Max.wav" -> "en.Max");
// empty when the file name has no underscore.
std::string recording_voice(const std::string& path);

// `test_warps[i]`, when given, holds recording i's features at every test
// warp (DtwFeatureComputer::compute_warped, same size as the corpus);
// without it each recording is tested at its own features.
// Throws std::invalid_argument when a recording has no voice in its name,
// when fewer than opts.words words are recorded by more than
// opts.template_voices voices, or when the map does not take the corpus's
// frames.
float calibrate_projection_threshold(const TemplateLibrary& corpus, const DtwProjection& map,
                                     const DtwOptions& dtw, const ProjectionThresholdOptions& opts,
                                     const std::vector<std::vector<FeatureMatrix>>* test_warps = nullptr,
                                     ProjectionThresholdReport* report = nullptr);

// One threshold per library size: element n - 1 is the threshold with
// n template voices (opts.template_voices = n), for n = 1 ... max_voices,
// the DtwProjection::thresholds of a map. A word's score is the mean of its
// k nearest templates, and the nearest of few templates lies further from
// a new voice than the nearest of many: on the shipped map's calibration
// corpus 2.09 with one voice, 1.82 with two, 1.60 with six. `reports`, when
// given, gets one report per size. Throws as above, for the first size
// that cannot be drawn (max_voices must leave a voice to test).
std::vector<float> calibrate_projection_thresholds(const TemplateLibrary& corpus, const DtwProjection& map,
                                                   const DtwOptions& dtw, ProjectionThresholdOptions opts,
                                                   int max_voices,
                                                   const std::vector<std::vector<FeatureMatrix>>* test_warps = nullptr,
                                                   std::vector<ProjectionThresholdReport>* reports = nullptr);

}  // namespace gpuspeech
