// Learns a DtwProjection (feature_projection.h) from a corpus of words
// spoken by many voices (tests/dtw/make_projection_corpus.sh), so that a
// word's templates by other voices lie nearer and other words lie farther.
//
// How: every corpus recording is a template (its label the word). Each is
// aligned by DTW with a few random recordings of its own word (other
// voices) and a few of other words; the differences of aligned frames,
// spliced with their neighbours, give a within-word and a between-word
// scatter. The within scatter, regularised by adding a share of its mean
// eigenvalue, whitens; the leading directions of the between scatter in the
// whitened space are kept (linear discriminant analysis on aligned
// differences). Kept unweighted: each direction counts alike in the
// Euclidean distance DTW takes.
#pragma once

#include <cstdint>

#include "common/dtw/dtw_options.h"
#include "common/dtw/feature_projection.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {

struct ProjectionLearnerOptions {
  int splice = 2;                // frames of context either side
  int output_dim = 13;           // directions kept (at most the spliced dimension)
  float within_regularisation = 10.0f;  // times the within scatter's mean eigenvalue
  int pairs_per_template = 4;    // same-word and other-word partners each
  uint32_t seed = 1;             // partners are drawn by std::mt19937 from it

  // Throws std::invalid_argument on a value out of range.
  void validate() const;
};

// What the learner saw, for the tool's report.
struct ProjectionLearnerReport {
  int64_t within_pairs = 0, between_pairs = 0;    // aligned recordings
  double within_frames = 0, between_frames = 0;   // aligned frame pairs
  std::vector<double> kept_ratios;  // between / within variance of each kept direction
};

// Throws std::invalid_argument when the corpus has no word with two
// recordings or fewer than two words, or std::runtime_error when no pair
// could be aligned.
DtwProjection learn_dtw_projection(const TemplateLibrary& corpus, const DtwOptions& dtw,
                                   const ProjectionLearnerOptions& opts,
                                   ProjectionLearnerReport* report = nullptr);

}  // namespace gpuspeech
