// A CMU Sphinx acoustic model directory, as pocketsphinx loads it (-hmm DIR):
//
//   mdef                 model definition (text or binary; mdef.h)
//   means, variances     Gaussian codebooks (s3_params.h)
//   mixture_weights      float mixture weights (s3_params.h), or
//   sendump              quantised ones (sendump.h; semi-continuous and PTM
//                        models only, and preferred there, as pocketsphinx)
//   transition_matrices  HMM transitions (s3_params.h)
//   feat.params          front-end settings (common/features/feat_params.h), optional
//   noisedict            filler dictionary (path only; the Dictionary reader
//                        in dictionary.h parses it), optional
//
// The model type follows pocketsphinx's order of tries (acmod.c):
//   PTM             codebooks == base phones: each senone uses the codebook
//                   of its base phone (ModelDefinition::senone_base_phone,
//                   pocketsphinx's sen2cimap);
//   semi-continuous one codebook shared by all senones;
//   continuous      codebooks == senones, senone s uses codebook s.
// Anything else is an error.
//
// Numbers are prepared as pocketsphinx prepares them, but kept in natural
// logs and floating point rather than its integer log base 1.0001:
//   variances   below var_floor are raised to it (-varfloor);
//   mixture_weights rows are normalised, values below mixw_floor raised to
//               it (-mixwfloor), renormalised, then ln; a row summing to 0
//               becomes uniform (pocketsphinx warns and does the same);
//   sendump     weights converted exactly (sendump.h), no renormalisation;
//   transition  rows normalised, non-zero values below tmat_floor raised to
//               it (-tmatfloor), renormalised, then ln (zero: -infinity).
//               Backward transitions or skips of more than one state are
//               errors, as in pocketsphinx (tmat.c).
//
// Feature streams (GaussianMixtures::stream_components) come from -svspec in
// feat.params when given (en-us: 0-12/13-25/26-38), else one stream per
// codebook stream with consecutive components in order. They are checked
// against the codebooks' stream sizes and, when the front end is one
// FeatureOptions can express, against its output dimension.
//
// Every problem is a ModelError naming the file: "DIR/means: offset 72: ...",
// "DIR/mdef:12: ..." or, for disagreements between files,
// "DIR/variances: ... differs from DIR/means ...".
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/features/feat_params.h"
#include "common/model/gaussian_mixtures.h"
#include "common/model/mdef.h"
#include "common/model/model_error.h"

namespace gpuspeech {

enum class AcousticModelType { kContinuous, kSemiContinuous, kPtm };
const char* to_string(AcousticModelType type);

struct AcousticModelOptions {
  double var_floor = 1e-4;   // pocketsphinx -varfloor
  double mixw_floor = 1e-7;  // pocketsphinx -mixwfloor
  double tmat_floor = 1e-4;  // pocketsphinx -tmatfloor
};

// HMM transition matrices in natural log. Matrix m, from emitting state i
// (0 .. num_emitting-1) to state j (0 .. num_emitting; j == num_emitting is
// the final, non-emitting exit state).
struct TransitionMatrices {
  int num_tmats = 0;
  int num_emitting = 0;
  // num_tmats x num_emitting x (num_emitting + 1); -infinity where the
  // transition is impossible.
  std::vector<float> log_probs;

  float log_prob(int tmat, int from, int to) const {
    return log_probs[(static_cast<size_t>(tmat) * num_emitting + from) * (num_emitting + 1) + to];
  }
};

class AcousticModel {
 public:
  // Reads the model in `dir`. Throws ModelError.
  static AcousticModel load(const std::string& dir, const AcousticModelOptions& options = {});

  const std::string& directory() const { return dir_; }
  AcousticModelType type() const { return type_; }
  const ModelDefinition& mdef() const { return mdef_; }
  const GaussianMixtures& mixtures() const { return mixtures_; }
  const TransitionMatrices& transitions() const { return tmats_; }
  const AcousticModelOptions& options() const { return options_; }
  // Variance values raised to var_floor (pocketsphinx logs the same count:
  // "N variance values floored").
  int num_floored_variances() const { return floored_variances_; }
  // "sendump" or "mixture_weights": the file the weights came from.
  const std::string& weights_file() const { return weights_file_; }

  // The front end the model was trained with: feat.params over
  // pocketsphinx's defaults (all defaults when the model has no
  // feat.params). Throws ModelError when feat.params asks for a front end
  // FeatureOptions cannot express (e.g. tidigits' "-feat s2_4x"); the rest of
  // the model still loads, and has_feature_options() says which case holds.
  bool has_feature_options() const { return feature_error_.empty(); }
  const FeatureOptions& feature_options() const;
  // feat.params as written (name without '-', value), in file order; empty
  // when there is none.
  const std::vector<std::pair<std::string, std::string>>& feat_params_entries() const {
    return feat_entries_;
  }

  // DIR/noisedict, or "" if the model has none.
  const std::string& noise_dictionary_path() const { return noisedict_; }

  // Tolerated oddities, each "FILE: what" (feat.params warnings included).
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::string dir_;
  AcousticModelOptions options_;
  AcousticModelType type_ = AcousticModelType::kContinuous;
  ModelDefinition mdef_;
  GaussianMixtures mixtures_;
  TransitionMatrices tmats_;
  std::string weights_file_;
  int floored_variances_ = 0;
  FeatureOptions feature_options_;
  std::string feature_error_;
  std::vector<std::pair<std::string, std::string>> feat_entries_;
  std::string noisedict_;
  std::vector<std::string> warnings_;

  friend class AcousticModelLoader;
};

}  // namespace gpuspeech
