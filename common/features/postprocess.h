// Utterance-level post-processing on the host: cepstral mean and variance
// normalisation (batch and live), min/max scaling, and deltas. These are
// cheap, sequential, and identical for every backend.
#pragma once

#include <cstdint>
#include <vector>

#include "common/features/feature_pipeline.h"
#include "common/features/feature_options.h"

namespace gpuspeech {

// Subtracts the per-dimension mean over all rows; with cvn also divides by
// the standard deviation (dimensions with zero variance are left at 0).
// With `skip_negative_c0` the mean is over the rows whose first value (c0)
// is >= 0 only, as Sphinx's CMN takes it (NormOptions::skip_negative_c0),
// or over all rows when none is; every row is normalised either way.
void apply_batch_cmn(FeatureMatrix& feats, bool cvn, bool skip_negative_c0 = false);

// Scales each dimension to [0, 1] over the utterance (constant dims -> 0).
void apply_min_max(FeatureMatrix& feats);

// Live CMN for streams: keeps a running mean that starts from `init` (Sphinx
// -cmninit, weighted as `init_frames` frames, NormOptions::live_init_frames;
// empty means the first frame, with weight 1) and is updated after every
// frame it learns from, so the result depends only on
// the frame sequence, never on how audio was chunked. Whenever the weight
// reaches 2 * window the sums are halved (back to `window`), so the estimate
// averages the last window..2*window frames and follows a drifting channel.
class LiveCmn {
 public:
  // Throws std::invalid_argument for dim, window or init_frames < 1, or an
  // init of another dimension.
  // With `skip_negative_c0` a frame whose c0 (its first value) is negative
  // never learns (NormOptions::skip_negative_c0).
  LiveCmn(int dim, std::vector<float> init, int window, int init_frames,
          bool skip_negative_c0 = false);
  // Normalises one frame in place with the current mean, then, if `learn`,
  // updates the mean with it (NormOptions::live_from_speech passes false
  // for the frames the VAD calls silence). A frame that does not learn
  // still starts the mean when there is no cmn_init.
  // Returns whether the frame learnt (false too for a negative c0 under
  // skip_negative_c0). `mean_used`, if given (dim values), receives the
  // mean the frame was normalised with (cmn_trace.h).
  bool process(float* frame, bool learn = true, float* mean_used = nullptr);
  void reset();
  // reset(), but this once from `start` (dim values, weighted as
  // init_frames frames) instead of init: the mean a previous utterance of
  // the same channel left. The next reset() starts from init again.
  // std::invalid_argument for a start of another dimension.
  void restart_from(const std::vector<float>& start);
  const std::vector<float>& mean() const { return mean_; }
  // False while there is no mean yet (no cmn_init and no frame seen).
  bool started() const { return started_; }

 private:
  // The mean set to `start` (dim values), weighted as init_frames frames.
  void start_with(const std::vector<float>& start);

  int dim_;
  std::vector<float> init_;
  int window_;
  int init_frames_;
  bool skip_negative_c0_;
  std::vector<double> sum_;
  double count_ = 0;
  std::vector<float> mean_;
  bool started_ = false;
};

// Frames of context deltas need on each side (0 for kNone; 3 for Sphinx
// 1s_c_d_dd; 4 for Sphinx s2_4x; order * window for regression).
int delta_context(const DeltaOptions& opts);

// Appends deltas to a whole utterance: rows stay, dim grows to
// dim * (1 + order) (39 for Sphinx 1s_c_d_dd with 13 cepstra; s2_4x
// rearranges 13 cepstra into its 51-dim layout, see DeltaOptions). Frames
// outside the utterance replicate the first and last frame.
FeatureMatrix add_deltas(const FeatureMatrix& feats, const DeltaOptions& opts);

// Deltas for rows [first, first + count) of `feats`, where `feats` is a
// window of the utterance and rows outside it are clamped to the window.
// Used by the streaming extractor, which keeps delta_context() frames of
// history and look-ahead, so results equal add_deltas on the whole.
void add_deltas_rows(const FeatureMatrix& feats, int64_t first, int64_t count,
                     const DeltaOptions& opts, float* out);

// Normalisation, then deltas, as opts.norm and opts.delta ask. kLive runs
// LiveCmn over the rows in order, so a whole utterance and a stream of the
// same audio give the same numbers.
// `learn` (kLive only): one value per row, whether live CMN learns from it
// (FeatureExtractor::cmn_learn_rows()); null or empty: every row.
void postprocess_utterance(const FeatureOptions& opts, FeatureMatrix& feats,
                           const std::vector<uint8_t>* learn = nullptr);

}  // namespace gpuspeech
