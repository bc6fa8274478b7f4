// Speaker adaptation for a live stream, with a second pass per utterance:
// what gpudecoder does by default with an n-gram LM, so that a microphone
// or a broadcast gets what gpuspeech-transcribe's two-pass fMLLR gives a
// file.
//
//   AdaptiveRedecoder a(recognizer);   // keep_features_for_alignment on
//   a.push_features(raw, n);           // any number of times: decoded
//                                      // under the speaker's transform
//   recognizer.partial();              // partials as usual
//   a.finish();                        // the utterance's final result
//   a.reset();                         // next utterance (or, instead of
//                                      // finish(), drop this one)
//
// The stream is one speaker. Its fMLLR statistics (fmllr_stats.h) grow with
// every utterance's final words. Frames are decoded under the transform
// estimated so far (the identity at first, or a prior's: see
// AdaptiveRedecoderOptions::prior), so partial results benefit from
// the utterances before. At the end of an utterance its first-pass words
// are aligned, its statistics added to the stream's, and the transform
// estimated again from all of them, this utterance included; when that
// gives a new transform, the utterance is decoded again under it and that
// decoding is the final result (the first pass's when no estimate was
// made: too little speech so far). The second decoding's words are aligned
// again, and it is their statistics that stay in the stream's, as in
// Kaldi's re-estimation from an adapted decoding.
//
// Why a second pass rather than only adapting the utterances that follow
// (gpufmllr): an utterance is adapted with its own speech, so the first
// sentences of a stream, and a speaker whose channel changed, are adapted
// too, as when gpuspeech-transcribe decodes a file in two passes. The cost
// is one more decoding of each utterance once the stream has enough speech
// (FmllrOptions::min_frames), on the streaming thread at the utterance's
// end: the final result comes that much later; partials do not wait.
//
// Once the stream has heard a good deal of its speaker, a new estimate
// barely moves the transform, and decoding the utterance again under it
// would give the same words for a decoding's cost. So the second decoding
// runs only when the estimate gains at least
// AdaptiveRedecoderOptions::min_redecode_gain over the transform in use;
// otherwise the new transform is kept for the utterances that follow and
// the first pass is the final result (its statistics, posteriors under the
// transform it was decoded with, are then the ones kept).
//
// The utterance normalised again (AdaptiveRedecoderOptions::
// own_utterance_cmn). Features normalised by live CMN upstream carry, when
// the client passes it, what live CMN subtracted from each frame
// (cmn_trace.h). At finish() the utterance's frames are then normalised
// again with the mean of the stream's speech up to the utterance's end,
// this utterance included (cmn_stream_frames), before their statistics are
// taken, and the second decoding decodes them so. For a stream's first
// utterance that is the utterance's own mean, as gpuspeech-transcribe's
// batch CMN normalises a file: it puts right a young stream's first words,
// which live CMN normalised with the model's average rather than the
// channel's mean. The first utterance usually has too little speech for a
// transform estimate (FmllrOptions::min_frames); it is decoded again with
// the new mean alone then. Later utterances are decoded again only when
// the transform's gain asks for it, as before; their statistics are of
// renormalised features all the same, so the transform is estimated in
// one space throughout.
//
// Statistics of raw features, posteriors on the features decoded (the EM
// step for the transform in use), as gpuspeech-transcribe's --fmllr
// two-pass; the estimate is FmllrOptions' (the full transform, as there).
// Not thread-safe: the Recognizer's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/engine/recognizer.h"
#include "common/features/cmn_trace.h"
#include "common/fmllr/channel_priors.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/fmllr/vtln_choice.h"

namespace gpuspeech {

// Where an adapting stream's host time goes: its thread's CPU seconds,
// summed over every finish() since the object was made (benchmarks).
struct AdaptationTimings {
  double first_result = 0.0;  // the first pass's finish() (search best path)
  double align = 0.0;         // forced alignments (first and second pass)
  double statistics = 0.0;    // transformed frames, posteriors, statistics
  double estimate = 0.0;      // estimate_fmllr
  // The second decoding: the utterance transformed and pushed again, and
  // its finish() (also counted in the Recognizer's scoring and search).
  double redecode = 0.0;
  double final_result = 0.0;  // the final finish() (the lattice pass)
  int64_t utterances = 0;     // finish() calls
  int64_t redecoded = 0;      // of them, those decoded again
  int64_t warped = 0;         // of them, those whose estimate was a VTLN warp (young_vtln)
  // Sums another stream's (a benchmark's report over its streams).
  void add(const AdaptationTimings& o) {
    utterances += o.utterances;
    redecoded += o.redecoded;
    warped += o.warped;
    first_result += o.first_result;
    align += o.align;
    statistics += o.statistics;
    estimate += o.estimate;
    redecode += o.redecode;
    final_result += o.final_result;
  }
};

struct AdaptiveRedecoderOptions {
  // The estimate (fmllr_estimate.h; the full transform by default).
  FmllrOptions estimation;
  // Decode an utterance again only when the new estimate raises the
  // objective (Q / beta over all of the stream's statistics, nats a frame)
  // by at least this much over the transform in use (0: whenever a new
  // transform is estimated). The gain falls from 8-12 at a stream's first
  // estimate to about 2 / k² at its k-th utterance (0.03 at the tenth), so
  // at 0.01 the second decoding stops after about 15 utterances. Against
  // 0: the same words on streams of 20 sentences, 5 words of 4 870 lost on
  // streams of 40; 256 live adapting streams on one H200 kept up where
  // with 0 they did not (docs/benchmarks.md, "The second decoding only
  // while the transform moves").
  double min_redecode_gain = 0.01;
  // Normalise each utterance again at finish() when every one of its
  // frames came with live CMN's trace (see the top of this file); false:
  // the frames as they came.
  bool own_utterance_cmn = true;
  // The mean it is normalised with: over the speech of the stream so far,
  // this utterance's included, with older speech halved in weight each
  // time the frames reach twice this many (a drifting channel); for a
  // stream's first utterance that is its own mean. 0: each utterance's own
  // mean alone. An utterance's own mean moves with what is said in it (c4
  // by 5 between two sentences of one voice in white noise), and decoding
  // with it lost words that the stream's mean keeps
  // (docs/benchmarks.md, "Each utterance normalised again").
  int cmn_stream_frames = 3000;
  // A prior: fMLLR statistics (fmllr_stats_io.h) of the channel the
  // streams come through, recorded once from other speakers (what
  // gpuspeech-transcribe --fmllr-dir writes beside each transform). They
  // join the stream's statistics at every estimate, scaled to weigh as
  // prior_frames frames, so a young stream's transform is mostly the
  // channel's and the stream's own speech outweighs them as it grows; a
  // stream's first pass is decoded under the transform of the prior alone.
  // Why: a stream's first sentence is adapted with only its own few
  // seconds, and on a codec's channel most of what the transform corrects
  // is the channel's (docs/benchmarks.md, "A channel's statistics as a
  // prior"). Shared by the streams, never changed. Null: none. The weight:
  // on GSM-coded speech 500 frames gained most (17.3 -> 11.0 % live; 100
  // frames half of that, 1000 a little less), and on channels that
  // distort less (clean, mp3, a telephone band) a prior of real speech
  // through them cost 0.4-3 points at 500.
  std::shared_ptr<const FmllrStats> prior;
  double prior_frames = 500.0;
  // Several priors, one chosen per stream (channel_priors.h): at every
  // estimate, the channel whose transform explains the stream's statistics
  // best by at least channel_min_gain nats a frame over the library's
  // reference joins them as `prior` would (weighing prior_frames frames);
  // when none does, none. A stream's first pass is decoded without one
  // (its statistics choose), later ones under the transform so estimated.
  // Null: none. Not with `prior` (validate() refuses both).
  std::shared_ptr<const ChannelPriorSet> channel_priors;
  double channel_min_gain = 1.5;
  // The prior's (or the chosen channel's) weight fades as the stream's own
  // statistics grow: prior_frames x (1 - own / prior_fade_frames), none
  // from prior_fade_frames own frames (30 s of speech) on. 0: it never
  // fades (count smoothing alone, a share of prior_frames / (prior_frames
  // + own)). Why: the prior is other speakers' speech through the
  // channel; once the stream has enough of its own for a full transform,
  // what the prior still adds is those speakers. On a 40-sentence GSM
  // stream of one voice the unfaded GSM channel gained its first sentence
  // (14 errors to 3) and lost sentences 3-10 (WER 17.0 without a prior,
  // 20.7 with it, 15.4 faded at 3 000; docs/benchmarks.md, "Channel
  // priors chosen per stream").
  double prior_fade_frames = 3000.0;
  // While the stream's own statistics hold fewer frames than
  // young_below_frames and no prior is joined to them (no `prior`, no
  // channel taken, or a channel of weight 0, or a prior faded out),
  // estimates take the form young_update whatever estimation.update says
  // (kBlock with a dimension not divisible by three: kDiag); otherwise
  // estimation.update's. 0: never. Why: a stream's first sentence gives
  // 300-400 aligned frames, its first four 1 200-1 600, few for the full
  // transform's 1 560 values; the three-block form's 546 (or the diagonal
  // one's 78) are estimated better from them. A prior's statistics carry
  // the full form instead: three blocks joined to a prior lost GSM
  // streams' first sentences (10.6 -> 13.3 % on the 20-sentence set).
  // Measured on issue 15's live sets (docs/benchmarks.md, "Three blocks
  // for a stream's first sentence" and "Three blocks until 1 500 frames,
  // full with a prior"): young at 600 frames of statistics, the prior's
  // weight counted, against none: 20 sentences of 4 voices, 14 conditions,
  // 256.5 -> 243.1 % summed, 40 sentences 225.9 -> 215.2; then own frames
  // below 1 500 and no prior: 237.2 and 207.2 (from 240.3 and 212.6 with the
  // mu-law channel of weight 0), and on the 8 far-field sentences of slt
  // and awb (109 words) 29.4 -> 24.8 %. The diagonal form lost clean
  // speech (4.7 -> 5.9 % at 600).
  double young_below_frames = 1500.0;
  FmllrUpdateType young_update = FmllrUpdateType::kBlock;
  // A young stream's first estimate a VTLN warp done on the cepstra with a
  // diagonal transform (vtln_choice.h), chosen by the objective with each
  // warp's own posteriors along the utterance's first-pass alignment
  // (choose_vtln_warp_on_alignment; the stream's earlier utterances, too short
  // for an estimate, as their statistics). The warp serves its own sentence:
  // the sentence is decoded again under it, its statistics taken from that
  // decoding's alignment with posteriors on its unadapted features (so that
  // the warp does not bias the estimates that follow), and the next utterance
  // starts under young_update's form estimated from the stream's statistics
  // then; later estimates as without the warp. Why: a stream's first sentence
  // is aligned by a first pass that is often wrong on hard audio, and one warp
  // factor cannot learn those errors as a transform of hundreds of values
  // does; kept as the stream's transform, the warp lost on later sentences and
  // on the next speaker of a stream whose speakers take turns
  // (docs/benchmarks.md, "The warp for its own sentence"). A front end linear
  // VTLN does not apply to (not MFCC, or s2_4x) keeps young_update.
  bool young_vtln = false;
  VtlnChoiceOptions vtln;

  // Throws std::invalid_argument naming the bad value.
  void validate() const;
};

// What the last finish() did, for logs.
struct RedecodeReport {
  bool redecoded = false;        // the result is the second pass's
  // The utterance was normalised again (own_utterance_cmn), with the mean
  // of the stream's speech up to its end (cmn_stream_frames): its
  // statistics and, when redecoded, its second decoding.
  bool own_cmn = false;
  // With own_cmn: the largest shift of c0 between live CMN's and the
  // utterance's own normalisation, over its frames.
  float cmn_shift = 0.0f;
  // With own_cmn: first words of the first pass left out as heard before
  // the detector's speech (see finish()).
  int64_t leading_words_dropped = 0;
  // The result was decoded under a speaker transform: the second pass's,
  // or the first pass's when the stream already had a transform (a small
  // gain keeps it, or an estimate that was not made).
  bool adapted = false;
  FmllrOutcome outcome = FmllrOutcome::kTooFewFrames;
  // The estimate's objective gain over the transform in use (nats a frame;
  // 0 when no estimate was made). Below min_redecode_gain the first pass
  // is kept though the outcome is kUpdated.
  double gain = 0.0;
  std::string message;           // estimate_fmllr's, when not updated
  int64_t frames_aligned = 0;    // this utterance's, first pass
  double stream_weight = 0.0;    // the stream's statistics (posterior frames)
  double log_abs_det = 0.0;      // of the transform now in use
  // With channel_priors: the channel chosen at this estimate ("" for
  // none) and its objective over the reference's (nats a frame; the best
  // channel's when none was chosen).
  std::string channel;
  double channel_gain = 0.0;
  // With young_vtln: the warp of this estimate's VTLN form (0: the
  // estimate was not of that form).
  double warp = 0.0;
};

// Drops `h`'s first words while the middle of the word lies before frame
// `speech_from`; returns how many.
size_t drop_words_before(Hypothesis& h, int64_t speech_from);

// No detected silence: finish() keeps every word.
constexpr int64_t kNoSilence = INT64_MAX;

// Drops `h`'s last words that the search heard in a pause, given the frame
// where a voice activity detector's silence began (`silence_start`;
// kNoSilence: none); returns how many. A last word goes while its middle
// lies kSilenceGraceFrames or more into the silence (the noise after the
// last real word: "off" after "year" in white noise), unless it began
// kSpeechBeganFrames or more before the silence did: a word begun in the
// speech is the speaker's, however far into the pause the search stretched
// it ("lake" held for 1.2 s of brown noise at 10 dB, begun 42 frames
// before the silence). Why 30: in white noise at 20 dB a noise word ("off"
// after "friends") began 18 frames before the detector's silence, which
// lags the speech's end there; 10 kept it, and with it the stream's
// adaptation took another path. Where the detector lags more, 30 still
// keeps such words (white noise on 40 sentences lost what pink and brown
// gained: docs/benchmarks.md, "Last words begun in the speech").
// The grace after the silence's start is for the weak end of a last word
// that the detector at 10 dB already calls silence ("the sun came up" lost
// its "up" in brown noise without it).
size_t drop_words_from(Hypothesis& h, int64_t silence_start);
constexpr int64_t kSilenceGraceFrames = 10;
constexpr int64_t kSpeechBeganFrames = 30;

class AdaptiveRedecoder {
 public:
  // `recognizer` must keep its features (config().keep_features_for_alignment,
  // std::invalid_argument otherwise) and outlive this object; its client
  // must not discard features of the utterance in progress before
  // finish() (words before features_kept_from() are left out of the
  // statistics). Starts with the identity transform (the prior's, with
  // one) and no statistics. std::invalid_argument for options that fail
  // validate() or a prior of another dimension than the features'.
  explicit AdaptiveRedecoder(Recognizer& recognizer, const AdaptiveRedecoderOptions& options = {});

  // Raw features (frames x recognizer.feature_dim()): kept, transformed
  // and pushed to the recognizer. `cmn_offsets` (frames x dim) and
  // `cmn_learned` (frames), both or neither: live CMN's trace of these
  // frames (cmn_trace.h); an utterance with a frame pushed without it is
  // not normalised again.
  void push_features(const float* frames, int64_t num_frames, const float* cmn_offsets = nullptr,
                     const uint8_t* cmn_learned = nullptr);
  // The utterance's final result (see the top of this file). The
  // recognizer then holds the decoding that gave it (its features can be
  // aligned) until reset(). An alignment or estimation that fails leaves
  // the first pass's result (reported in last_report()). Last words that
  // the search heard in the pause after `silence_start` (a frame of the
  // utterance where a voice activity detector says the speech ended;
  // drop_words_from has the rule) are left out of each pass's words before
  // they supervise the statistics, and of the result.
  // Likewise, when the utterance is normalised with its own mean, first
  // words whose middle lies more than kSpeechOnsetGraceFrames before the
  // first frame live CMN learnt from (where the detector heard speech
  // begin): its own mean, taken over speech, turned a stream's leading
  // digital silence into "up" or "mm" where live CMN's average had kept it
  // silence (the batch path never decodes those frames: Sphinx's silence
  // removal drops them).
  RecognitionResult finish(int64_t silence_start = kNoSilence);
  static constexpr int64_t kSpeechOnsetGraceFrames = 10;
  // Starts the next utterance: the recognizer reset, the raw frames
  // dropped. Without finish() before, the utterance is dropped unlearnt.
  void reset();
  // Another speaker: statistics cleared, the identity transform (the
  // prior's, with one).
  void new_speaker();

  const FmllrTransform& transform() const { return transform_; }
  // With channel_priors: the stream's channel as last chosen, or null.
  const ChannelPrior* channel() const;
  const FmllrStats& stats() const { return stream_; }
  const RedecodeReport& last_report() const { return report_; }
  const AdaptationTimings& timings() const { return timings_; }

 private:
  // Aligns `words` on the features the recognizer holds (the utterance
  // as decoded), and puts their statistics in utterance_ (reset first);
  // returns the frames aligned. The alignment goes to `alignment` when
  // non-null (left as it was when no word could be aligned). The
  // Gaussian posteriors are taken on the features as decoded (transform_
  // applied), or on the raw ones with posteriors_unadapted.
  int64_t accumulate_words(const std::vector<HypothesisWord>& words, FrameAlignment* alignment = nullptr,
                           bool posteriors_unadapted = false);
  void push_transformed(const float* raw, int64_t n);

  Recognizer& rec_;
  AdaptiveRedecoderOptions options_;
  int dim_;
  FmllrStats stream_;           // the speaker's statistics, utterances done
  FmllrAccumulator utterance_;  // one utterance's
  FmllrApplier applier_;
  FmllrTransform transform_;
  // With young_vtln: the candidates (null when linear VTLN does not apply
  // to the front end).
  std::unique_ptr<LinearVtlnCandidates> vtln_;
  // The speaker has had an estimate (its first is the VTLN form).
  bool first_estimated_ = false;
  // The transform of the prior alone: a new speaker's first.
  FmllrTransform start_transform_;
  int channel_ = -1;  // into options_.channel_priors->channels
  std::vector<float> raw_;      // the utterance's raw frames
  // Live CMN's trace of raw_'s frames, while every frame came with one.
  CmnTrace trace_;
  bool trace_whole_ = true;
  // Which of the model's feature dims are static (static_dims_of_layout of
  // the recognizer's front end); empty when that front end does not give
  // the feature dim (then no own CMN).
  std::vector<uint8_t> static_dims_;
  // The stream's speech so far, without CMN (cmn_stream_frames).
  CmnSums stream_cmn_;
  std::vector<float> scratch_;  // transformed frames
  // The most frames one push_features() call has brought: the second
  // decoding pushes the utterance in blocks this large, so that its scoring
  // scratch is the one the stream already holds (the recogniser's grows to
  // its largest block; the whole utterance at once made every adapting
  // stream hold 256 frames of densities and scores, 22 MB for en-us).
  int64_t largest_push_ = 0;
  RedecodeReport report_;
  AdaptationTimings timings_;
};

}  // namespace gpuspeech
