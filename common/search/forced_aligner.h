// Forced alignment of known words to the acoustic model's HMM states: for
// each frame of a recognised word, which senone emitted it. This is the
// supervision fMLLR needs (common/fmllr/fmllr_stats.h supervised_posteriors):
// the recogniser's best path says which words were spoken and when, but the
// graph is minimised and its state sequence is not kept, so the states are
// recovered here by a Viterbi pass of each word's own HMM over its frames.
//
// Every pronunciation of a word's dictionary entry (the base one and the
// alternates "word(2)", ...) is tried; over a run of touching words they
// are chosen jointly (the best sum of the words' scores), because each
// word's cross-word contexts come from its neighbours' chosen
// pronunciations. A word's HMM is the chain of its phones' HMMs, each
// phone the triphone pocketsphinx would pick (phone_context.h: Sphinx word
// positions, the neighbours' phones as cross-word context when the words
// touch, SIL when silence or nothing lies between), its states and
// transitions those of the model's mdef and
// transition matrices, as the graph compiler builds them: enter at the first
// emitting state, self-loops, forward steps and skips, leave through the
// non-emitting exit state. The word's frames must run from its first
// phone's first state to its last phone's exit.
//
// Scores are natural logs, computed on the host in double from the model's
// Gaussian mixtures (all Gaussians, no top-N selection); each (frame,
// codebook) Gaussian set and (frame, senone) mixture is evaluated once per
// align() call. Work is O(frames x HMM states of the word x pronunciations
// x distinct context phones the neighbours' pronunciations give it).
//
// An aligner is immutable once made (align() is const and keeps its work
// in locals), so one serves every stream of a set of resources, from any
// number of threads at once (Recognizer shares it).
//
// Docs: docs/alignment.md.
#pragma once

#include <cstdint>
#include <vector>

#include "common/model/acoustic_model.h"
#include "common/model/dictionary.h"
#include "common/search/token_passing.h"

namespace gpuspeech {

struct ForcedAlignerOptions {
  // Frames outside the words (silence, fillers, gaps between words and at
  // the edges of the span): false leaves them -1 (fMLLR is estimated from
  // speech frames); true aligns each gap to a loop of the silence phone's
  // HMM (a gap shorter than that HMM's minimum length stays -1).
  bool align_gaps_to_silence = false;
  // Include the transition log-probabilities in the Viterbi score (as the
  // decoder does). false: acoustic scores alone choose the path (the
  // topology still constrains it).
  bool use_transition_probs = true;
};

struct FrameAlignment {
  int64_t first_frame = 0;       // utterance frame index of senones[0]
  std::vector<int32_t> senones;  // one per frame; -1 = not aligned
  int words_aligned = 0;
  // Words left -1: shorter than their HMM's minimum length, or not in the
  // dictionary.
  int words_failed = 0;
  // Acoustic log-likelihood (natural log) of the aligned frames: the sum of
  // their senones' log-likelihoods along the Viterbi paths (transition
  // probabilities not included).
  double log_likelihood = 0.0;
  // Frames with a senone (words and, if asked for, gaps).
  int64_t aligned_frames() const;
};

class ForcedAligner {
 public:
  // `model` and `dictionary` must outlive the aligner. Throws ModelError when
  // the model's mdef, transition matrices and mixtures disagree.
  ForcedAligner(const AcousticModel& model, const Dictionary& dictionary,
                ForcedAlignerOptions options = {});

  // feats: num_frames x feature_dim() floats, the utterance's frames
  // [first_frame, first_frame + num_frames) exactly as the recogniser got
  // them. words: in order (each starts after the previous one ends), frames
  // in the utterance's numbering, inside that span; a word is found in the
  // dictionary by its text (HypothesisWord::text; "word(2)" names the word
  // "word"). The result covers the whole span [first_frame, first_frame +
  // num_frames). Throws std::invalid_argument for words out of order or
  // outside the span, a negative span or null features; a word that cannot
  // be aligned is counted in words_failed, never thrown.
  FrameAlignment align(const float* feats, int64_t first_frame, int64_t num_frames,
                       const std::vector<HypothesisWord>& words) const;

  int feature_dim() const { return feature_dim_; }
  const ForcedAlignerOptions& options() const { return options_; }

 private:
  // Per-Gaussian constants of the model, computed once.
  struct GaussianConstants {
    std::vector<double> inv_var;  // 1 / variance, laid out as the means
    std::vector<double> log_norm;  // -0.5 (d ln 2pi + sum ln var), per Gaussian
    std::vector<size_t> inv_var_offset, log_norm_offset;  // per stream
    // exp(log_weights): the mixture weights, laid out as log_weights
    // (senone, stream, Gaussian); 0 for a zero weight.
    std::vector<double> weight;
  };
  class Scorer;
  struct Hmm;
  Hmm word_hmm(const std::vector<int>& bases, int left_context, int right_context,
               bool loop) const;
  // Viterbi of `hmm` over frames [t0, t1) (relative to the span); fills
  // `senones` and returns the Viterbi score, or -infinity when it cannot fit.
  double viterbi(const Hmm& hmm, Scorer& scorer, int64_t t0, int64_t t1,
                 std::vector<int32_t>& senones, double* acoustic) const;

  const AcousticModel& model_;
  const Dictionary& dict_;
  ForcedAlignerOptions options_;
  int feature_dim_ = 0;
  GaussianConstants gauss_;
  // Dictionary phone index -> model base phone (-1: the model lacks it).
  std::vector<int> dict_phone_base_;
};

}  // namespace gpuspeech
