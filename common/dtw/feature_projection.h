// A linear map of the DTW features, learnt from many voices other than the
// user's (projection_learner.h), under which a word's distance to its
// templates depends less on who speaks it (docs/dtw.md, "A projection learnt
// from other voices"; issue 16).
//
// Each frame is spliced with `splice` neighbours on either side (the first
// and last frame repeated at the edges) and multiplied by an output_dim x
// (2 splice + 1) input_dim matrix. `thresholds` holds the rejection distances
// learnt with the map: distances in the mapped space, so that a user never
// has to guess one. One per number of templates a word has (1, 2, ... n,
// the last for more): a word's score is the mean of its k nearest
// templates, and the nearest of two templates lies further from a new
// voice than the nearest of eight, so one distance cannot serve a library
// of two voices and one of ten alike (docs/dtw.md, "Thresholds by the
// templates a word has").
//
// File format (text, UTF-8; '#' starts a comment line, blank lines ignored):
//
//   gpuspeech-dtw-projection 1
//   features dtw-kind=plp;kind=plp;flavour=sphinx;...
//   input-dim 13
//   splice 2
//   output-dim 13
//   threshold 2.09 1.82 1.71 1.66 1.63 1.60 1.57 1.56
//   weights
//   <output-dim lines of (2 splice + 1) input-dim numbers>
//
// `features` names the features the map was learnt on (DtwFeatureConfig::
// frame_signature(): the DTW feature kind and the front end's signature),
// one word without blanks: a map of PLP cepstra means nothing for MFCCs of
// the same dimension, so a recogniser refuses a map whose features are not
// its templates'. `threshold` takes 1 to 64 numbers: one applies to every
// word; 0 (alone) means none was learnt, and a map without one cannot
// reject. The keys come in this order; every number must be finite (and a
// weight or a threshold within a float's range, a threshold > 0). Numbers
// are read and written the same in every locale.
#pragma once

#include <string>
#include <vector>

#include "common/features/feature_pipeline.h"

namespace gpuspeech {

struct DtwProjection {
  std::string features;  // DtwFeatureConfig::frame_signature() of what it was learnt on
  int input_dim = 0;
  int splice = 0;
  int output_dim = 0;
  // [n - 1]: the threshold of a word with n templates, the last for more;
  // empty: none learnt.
  std::vector<float> thresholds;
  std::vector<float> weights;  // output_dim x spliced_dim(), row-major

  int spliced_dim() const { return input_dim * (2 * splice + 1); }
  bool empty() const { return output_dim == 0; }
  bool has_threshold() const { return !thresholds.empty(); }
  // The threshold of a word with `templates` templates (at least 1); 0 when
  // none was learnt.
  float threshold_for(size_t templates) const;
  // Throws std::invalid_argument when the fields disagree with each other.
  void validate() const;
  // Maps every frame of `m` (m.dim must be input_dim; std::invalid_argument
  // otherwise).
  FeatureMatrix apply(const FeatureMatrix& m) const;
};

// Each frame followed by its neighbours: row i holds frames i - k ... i + k
// (clamped to the matrix), so the result has (2k + 1) m.dim columns.
FeatureMatrix splice_frames(const FeatureMatrix& m, int k);

// Parses the text format above; `source` names the text in errors
// (std::runtime_error "SOURCE:LINE: reason").
DtwProjection parse_dtw_projection(const std::string& text, const std::string& source);
// Reads and parses a file (std::runtime_error naming the file when it
// cannot be read).
DtwProjection load_dtw_projection(const std::string& path);
// The text format; parse_dtw_projection(format_dtw_projection(p)) == p
// (each float written as the shortest text that reads back as it).
std::string format_dtw_projection(const DtwProjection& p, const std::string& comment = "");

}  // namespace gpuspeech
