// A linear map of the DTW features, learnt from many voices other than the
// user's (projection_learner.h), under which a word's distance to its
// templates depends less on who speaks it (docs/dtw.md, "A projection learnt
// from other voices"; issue 16).
//
// Each frame is spliced with `splice` neighbours on either side (the first
// and last frame repeated at the edges) and multiplied by an output_dim x
// (2 splice + 1) input_dim matrix. `threshold` is the rejection distance
// learnt with the map: a distance in the mapped space, so that a user never
// has to guess one.
//
// File format (text, UTF-8; '#' starts a comment line, blank lines ignored):
//
//   gpuspeech-dtw-projection 1
//   features dtw-kind=plp;kind=plp;flavour=sphinx;...
//   input-dim 13
//   splice 2
//   output-dim 13
//   threshold 1.5
//   weights
//   <output-dim lines of (2 splice + 1) input-dim numbers>
//
// `features` names the features the map was learnt on (DtwFeatureConfig::
// frame_signature(): the DTW feature kind and the front end's signature),
// one word without blanks: a map of PLP cepstra means nothing for MFCCs of
// the same dimension, so a recogniser refuses a map whose features are not
// its templates'. The keys come in this order; every number must be finite (and a weight
// or the threshold within a float's range). Numbers are read and written
// the same in every locale.
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
  float threshold = 0.0f;  // <= 0: none learnt
  std::vector<float> weights;  // output_dim x spliced_dim(), row-major

  int spliced_dim() const { return input_dim * (2 * splice + 1); }
  bool empty() const { return output_dim == 0; }
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
