// What live CMN subtracted from each frame, so that a later stage can
// normalise an utterance again with another mean: the utterance's own, or
// that of a stream's speech so far (AdaptiveRedecoder).
//
// Live CMN (LiveCmn, postprocess.h) normalises each frame with the running
// mean as it stood at that frame. At a stream's start that mean is the
// model's average (cmn_init), not the channel's, and the first words come
// out wrong; the batch path (gpuspeech-transcribe) normalises each
// utterance with its own mean and gets them right. A decoder that decodes
// an utterance a second time anyway (AdaptiveRedecoder) can do the same if
// it knows what was subtracted.
//
// Deltas are linear in the cepstra, so the whole feature vector is linear
// in the mean: if frame t was normalised with mean m_t, the features without
// any CMN are
//   u_t = x_t + offset_t,   offset_t = the feature layout applied to the
//                           sequence of means (m_t in the static dims, its
//                           deltas in the delta dims),
// where the deltas of the means are taken over the same frames, with the
// same clamping at the utterance's edges, as the features' own
// (StreamingFeatureExtractor computes both with add_deltas_rows). A constant
// mean M has zero deltas, so batch CMN by M is u_t minus M in the static
// dims alone. That is exact: the result equals the features computed with
// that constant mean from the start.
//
// Which dims are static: the layout applied to a constant vector of ones
// gives 1 there and 0 in every delta dim (static_dims_of_layout()).
#pragma once

#include <cstdint>
#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// Per frame of output: the offset (dim floats) and whether live CMN learnt
// from the frame (its VAD called it speech and c0 passed the
// skip_negative_c0 rule): the frames an utterance's own mean is taken over,
// as batch CMN after Sphinx's silence removal takes it.
struct CmnTrace {
  int dim = 0;
  std::vector<float> offsets;   // rows x dim
  std::vector<uint8_t> learned; // rows
  int64_t rows() const { return static_cast<int64_t>(learned.size()); }
  void clear() {
    offsets.clear();
    learned.clear();
  }
  // Appends another trace's frames (the same dim; std::invalid_argument
  // otherwise, unless this one is empty).
  void append(const CmnTrace& more);
  void append(const float* offsets_rows, const uint8_t* learned_rows, int64_t n);
};

// 1 for each output dim that holds a normalised base feature, 0 for each
// delta dim, under `delta`'s layout for `base_dim` base features.
std::vector<uint8_t> static_dims_of_layout(const DeltaOptions& delta, int base_dim);

// Sums, over the frames live CMN learnt from, of the features without CMN
// (features + offsets), in the static dims (0 elsewhere): what a mean over
// several utterances is made of.
struct CmnSums {
  std::vector<double> sum;  // dim values
  double count = 0.0;       // frames
  void add(const CmnSums& o);
  // Halves sum and count: older frames weigh less (a drifting channel).
  void halve();
  std::vector<float> mean() const;  // sum / count (zeros when count is 0)
};
// std::invalid_argument when the trace does not cover the rows or dims.
CmnSums learned_sums(const float* features, int64_t rows, int dim, const CmnTrace& trace,
                     const std::vector<uint8_t>& static_dims);

// Replaces live CMN in `features` (rows x dim, normalised as `trace` says)
// by `mean` (dim values; used in the static dims): features + offsets -
// mean there, features + offsets elsewhere. `moved`, if given: as below.
void renormalise_with_mean(float* features, int64_t rows, int dim, const CmnTrace& trace,
                           const std::vector<uint8_t>& static_dims, const std::vector<float>& mean,
                           float* moved = nullptr);

// Replaces live CMN in `features` (rows x dim, normalised as `trace` says)
// by the utterance's own mean: the mean, over the frames live CMN learnt
// from, of the features without CMN, subtracted in the static dims
// (`static_dims`, dim values). Returns false, leaving `features` as they
// were, when no frame learnt (nothing to take a mean of), or when the
// trace does not cover the rows. `moved`, if given, is set to the largest
// shift of c0 (the first static dim) over the frames: how far the
// utterance's own normalisation lies from the live one.
bool normalise_with_own_mean(float* features, int64_t rows, int dim, const CmnTrace& trace,
                             const std::vector<uint8_t>& static_dims, float* moved = nullptr);

}  // namespace gpuspeech
