#include "common/engine/adaptive_redecoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "common/features/linear_vtln.h"
#include "common/seconds_since.h"

namespace gpuspeech {

void AdaptiveRedecoderOptions::validate() const {
  if (!(min_redecode_gain >= 0.0) || !std::isfinite(min_redecode_gain))
    throw std::invalid_argument("speaker adaptation: min_redecode_gain must be a finite number >= 0, not " +
                                std::to_string(min_redecode_gain));
  if (cmn_stream_frames < 0)
    throw std::invalid_argument("speaker adaptation: cmn_stream_frames must be >= 0, not " +
                                std::to_string(cmn_stream_frames));
  if (prior && !(prior->beta > 0.0 && std::isfinite(prior->beta)))
    throw std::invalid_argument("speaker adaptation: prior statistics with no frames");
  if (!(young_below_frames >= 0.0) || !std::isfinite(young_below_frames))
    throw std::invalid_argument("speaker adaptation: young_below_frames must be a finite number >= 0, not " +
                                std::to_string(young_below_frames));
  if (prior && channel_priors)
    throw std::invalid_argument("speaker adaptation: a prior and channel priors, give one or the other");
  if (channel_priors && (!channel_priors->reference.stats || channel_priors->channels.empty()))
    throw std::invalid_argument("speaker adaptation: channel priors without a reference or a channel");
  if (!std::isfinite(channel_min_gain))
    throw std::invalid_argument("speaker adaptation: channel_min_gain must be finite");
  if (!(prior_fade_frames >= 0.0) || !std::isfinite(prior_fade_frames))
    throw std::invalid_argument("speaker adaptation: prior_fade_frames must be a finite number >= 0, not " +
                                std::to_string(prior_fade_frames));
  if ((prior || channel_priors) && !(prior_frames > 0.0 && std::isfinite(prior_frames)))
    throw std::invalid_argument("speaker adaptation: prior_frames must be a finite number > 0, not " +
                                std::to_string(prior_frames));
  if (young_vtln) vtln.validate();
}

size_t drop_words_from(Hypothesis& h, int64_t silence_start) {
  // Frames are int32: beyond that no word can reach (and the sums below
  // would overflow).
  if (silence_start > std::numeric_limits<int32_t>::max()) return 0;
  const size_t before = h.words.size();
  while (!h.words.empty()) {
    const HypothesisWord& w = h.words.back();
    const bool middle_in_silence =
        static_cast<int64_t>(w.start_frame) + w.end_frame >= 2 * (silence_start + kSilenceGraceFrames);
    const bool began_in_speech = w.start_frame <= silence_start - kSpeechBeganFrames;
    if (!middle_in_silence || began_in_speech) break;
    h.words.pop_back();
  }
  if (h.stable_words > static_cast<int32_t>(h.words.size()))
    h.stable_words = static_cast<int32_t>(h.words.size());
  return before - h.words.size();
}

size_t drop_words_before(Hypothesis& h, int64_t speech_from) {
  size_t n = 0;
  while (n < h.words.size() &&
         static_cast<int64_t>(h.words[n].start_frame) + h.words[n].end_frame < 2 * speech_from)
    ++n;
  if (n == 0) return 0;
  h.words.erase(h.words.begin(), h.words.begin() + static_cast<std::ptrdiff_t>(n));
  h.stable_words = std::max<int32_t>(0, h.stable_words - static_cast<int32_t>(n));
  return n;
}

AdaptiveRedecoder::AdaptiveRedecoder(Recognizer& recognizer, const AdaptiveRedecoderOptions& options)
    : rec_(recognizer),
      options_(options),
      dim_(recognizer.feature_dim()),
      stream_(recognizer.feature_dim()),
      utterance_(recognizer.acoustic_model().mixtures(), recognizer.scoring_backend()),
      applier_(recognizer.scoring_backend(), recognizer.feature_dim()),
      transform_(FmllrTransform::identity(recognizer.feature_dim())),
      start_transform_(transform_) {
  if (!rec_.config().keep_features_for_alignment)
    throw std::invalid_argument(
        "speaker adaptation needs a recognizer that keeps its features "
        "(keep_features_for_alignment)");
  options_.validate();
  if (options_.prior) {
    if (options_.prior->dim != dim_)
      throw std::invalid_argument("speaker adaptation: prior statistics of dimension " +
                                  std::to_string(options_.prior->dim) + ", the features have " +
                                  std::to_string(dim_));
    // The prior's own transform (scaling statistics does not move their
    // estimate, but min_frames looks at the weight: the prior's full
    // frames here).
    const FmllrEstimate est = estimate_fmllr(*options_.prior, options_.estimation);
    if (est.outcome == FmllrOutcome::kUpdated && est.transform.all_finite()) start_transform_ = est.transform;
    transform_ = start_transform_;
  }
  if (options_.channel_priors) {
    const ChannelPriorSet& set = *options_.channel_priors;
    if (set.reference.stats->dim != dim_ || set.reference.transform.dim != dim_)
      throw std::invalid_argument("speaker adaptation: channel priors of dimension " +
                                  std::to_string(set.reference.stats->dim) + ", the features have " +
                                  std::to_string(dim_));
    for (const ChannelPrior& c : set.channels) {
      if (!c.stats || c.stats->dim != dim_ || c.transform.dim != dim_)
        throw std::invalid_argument("speaker adaptation: channel prior " + c.name + " of another dimension");
      if (!(c.weight >= 0.0 && c.weight <= 1.0))
        throw std::invalid_argument("speaker adaptation: channel prior " + c.name + ": weight must be 0 to 1");
    }
  }
  applier_.set_transform(transform_);
  // Linear VTLN where the front end allows it (MFCC, whole blocks of its
  // cepstra); elsewhere young_update's form, as documented.
  if (options_.young_vtln && rec_.feature_options().kind == FeatureKind::kMfcc &&
      linear_vtln_blocks(rec_.feature_options()) > 0 && rec_.feature_options().output_dim() == dim_)
    vtln_ = std::make_unique<LinearVtlnCandidates>(rec_.feature_options(), dim_, options_.vtln);
  const FeatureOptions& fo = rec_.feature_options();
  if (fo.output_dim() == dim_) static_dims_ = static_dims_of_layout(fo.delta, fo.base_dim());
  if (static_cast<int>(static_dims_.size()) != dim_) static_dims_.clear();
  trace_.dim = dim_;
}

void AdaptiveRedecoder::push_transformed(const float* raw, int64_t n) {
  if (n <= 0) return;
  if (transform_.is_identity()) {
    rec_.push_features(raw, n);
    return;
  }
  scratch_.resize(static_cast<size_t>(n) * dim_);
  applier_.apply(raw, n, scratch_.data());
  rec_.push_features(scratch_.data(), n);
}

void AdaptiveRedecoder::push_features(const float* frames, int64_t num_frames,
                                      const float* cmn_offsets, const uint8_t* cmn_learned) {
  if (num_frames <= 0) return;
  raw_.insert(raw_.end(), frames, frames + num_frames * dim_);
  if (cmn_offsets && cmn_learned && trace_whole_)
    trace_.append(cmn_offsets, cmn_learned, num_frames);
  else
    trace_whole_ = false;
  largest_push_ = std::max(largest_push_, num_frames);
  push_transformed(frames, num_frames);
}

int64_t AdaptiveRedecoder::accumulate_words(const std::vector<HypothesisWord>& words, FrameAlignment* alignment,
                                            bool posteriors_unadapted) {
  utterance_.reset();
  // Words whose features the client let go are left out (align() refuses
  // them); the rest keep their order.
  std::vector<HypothesisWord> kept;
  for (const HypothesisWord& w : words)
    if (w.start_frame >= rec_.features_kept_from()) kept.push_back(w);
  if (kept.empty()) return 0;
  double c0 = thread_cpu_seconds();
  const FrameAlignment al = rec_.align(kept);
  double c1 = thread_cpu_seconds();
  timings_.align += c1 - c0;
  const int64_t n = static_cast<int64_t>(al.senones.size());
  const int64_t rows = static_cast<int64_t>(raw_.size()) / dim_;
  if (n == 0) return 0;
  if (al.first_frame < 0 || al.first_frame + n > rows)
    throw std::logic_error("speaker adaptation: an alignment outside the utterance's frames");
  // Posteriors on the features decoded (the transform in use applied to
  // the raw ones) unless asked otherwise, statistics of the raw features.
  const float* x = raw_.data() + al.first_frame * dim_;
  std::vector<float> y(static_cast<size_t>(n) * dim_);
  if (transform_.is_identity() || posteriors_unadapted)
    std::copy(x, x + n * dim_, y.begin());
  else
    applier_.apply(x, n, y.data());
  const GaussianMixtures& gm = rec_.acoustic_model().mixtures();
  utterance_.accumulate(x, n, supervised_posteriors(gm, y.data(), n, al.senones.data()));
  timings_.statistics += thread_cpu_seconds() - c1;
  int64_t aligned = 0;
  for (int32_t s : al.senones) aligned += s >= 0;
  if (alignment) *alignment = al;
  return aligned;
}

RecognitionResult AdaptiveRedecoder::finish(int64_t silence_start) {
  report_ = RedecodeReport{};
  RecognitionResult first;
  double c0 = thread_cpu_seconds();
  {
    const LatticeResultOff off(rec_);
    first = rec_.finish();
  }
  drop_words_from(first.best, silence_start);
  timings_.first_result += thread_cpu_seconds() - c0;
  // The transform the first pass was decoded under.
  const bool first_adapted = !transform_.is_identity();
  RecognitionResult result;
  bool have_result = false;
  bool holds_first = true;  // the recognizer still holds the first pass
  // Normalised again: words before this frame (the detector's speech, less
  // a grace) are left out.
  int64_t speech_from = 0;
  CmnSums utterance_cmn;  // its speech's, for the stream's mean
  try {
    // Normalised again from here on (the stream's mean, the utterance's
    // own for a stream's first): its statistics, and its second decoding
    // if there is one.
    const int64_t rows = static_cast<int64_t>(raw_.size()) / dim_;
    if (options_.own_utterance_cmn && trace_whole_ && !static_dims_.empty() && rows > 0) {
      utterance_cmn = learned_sums(raw_.data(), rows, dim_, trace_, static_dims_);
      if (utterance_cmn.count > 0.0) {
        CmnSums total = options_.cmn_stream_frames > 0 ? stream_cmn_ : CmnSums{};
        total.add(utterance_cmn);
        renormalise_with_mean(raw_.data(), rows, dim_, trace_, static_dims_, total.mean(),
                              &report_.cmn_shift);
        report_.own_cmn = true;
      }
    }
    if (report_.own_cmn) {
      const auto learnt = std::find(trace_.learned.begin(), trace_.learned.end(), 1);
      speech_from = static_cast<int64_t>(learnt - trace_.learned.begin()) - kSpeechOnsetGraceFrames;
      report_.leading_words_dropped = static_cast<int64_t>(drop_words_before(first.best, speech_from));
    }
    // The first pass's alignment, kept while a VTLN choice may need it.
    FrameAlignment first_alignment;
    const bool may_warp = vtln_ != nullptr && !first_estimated_;
    report_.frames_aligned = accumulate_words(first.best.words, may_warp ? &first_alignment : nullptr);
    FmllrStats total = stream_;
    total.add(utterance_.stats());
    // The prior in effect: the fixed one, or the channel the stream's own
    // statistics choose (validate() allows one or the other).
    const FmllrStats* prior = options_.prior.get();
    double prior_weight = options_.prior_frames;
    if (options_.channel_priors) {
      const ChannelChoice choice = options_.channel_priors->choose(total, options_.channel_min_gain);
      channel_ = choice.index;
      report_.channel_gain = choice.gain;
      if (const ChannelPrior* c = channel()) {
        report_.channel = c->name;
        prior = c->stats.get();
        prior_weight *= c->weight;
      }
    }
    if (options_.prior_fade_frames > 0.0)
      prior_weight *= std::max(0.0, 1.0 - total.beta / options_.prior_fade_frames);
    const bool prior_joined = prior != nullptr && prior_weight > 0.0;
    // Young: the stream's own frames alone, with no prior's to carry the
    // richer form (see young_below_frames).
    const bool young = !prior_joined && total.beta < options_.young_below_frames;
    if (prior_joined) total.add_scaled(*prior, prior_weight / prior->beta);
    const FmllrTransform start = transform_;
    c0 = thread_cpu_seconds();
    FmllrOptions estimation = options_.estimation;
    if (young) {
      estimation.update = options_.young_update;
      // The default young form needs the static/delta/acceleration layout
      // (a dimension divisible by three); a model without it gets the
      // diagonal form rather than no transform.
      if (estimation.update == FmllrUpdateType::kBlock && total.dim % kFmllrBlocks != 0)
        estimation.update = FmllrUpdateType::kDiag;
    }
    // The young VTLN form: the warp and diagonal transform the statistics
    // favour, its gain over the transform in use by the same objective
    // (the warp matrices' own ln|det| left out unless the options count it).
    const bool vtln = young && vtln_ != nullptr && !first_estimated_ && total.beta >= estimation.min_frames;
    FmllrEstimate est;
    if (vtln) {
      // The utterance's frames as the first pass aligned them (raw_, the
      // features before any transform), the stream's earlier utterances as
      // their statistics.
      std::vector<AlignedFrames> speech;
      if (!first_alignment.senones.empty())
        speech.push_back({raw_.data() + first_alignment.first_frame * dim_,
                          static_cast<int64_t>(first_alignment.senones.size()), first_alignment.senones.data()});
      const VtlnChoice c = choose_vtln_warp_on_alignment(speech, rec_.acoustic_model().mixtures(), *vtln_,
                                                         &stream_, options_.vtln);
      est.transform = c.transform;
      // The transform in use is never a warp here (a warp is only a
      // speaker's first estimate), so no warp ln|det| is left out of its
      // objective either.
      est.objective = {fmllr_objective(total, start) / total.beta, c.objective};
      report_.warp = c.warp;
    } else {
      est = estimate_fmllr(total, estimation, &start);
    }
    timings_.estimate += thread_cpu_seconds() - c0;
    if (est.outcome == FmllrOutcome::kUpdated) first_estimated_ = true;
    report_.outcome = est.outcome;
    report_.message = est.message;
    const bool updated = est.outcome == FmllrOutcome::kUpdated && est.transform.all_finite();
    if (updated && est.objective.size() >= 2)
      report_.gain = est.objective.back() - est.objective.front();
    // Too little speech yet for a transform: with its own mean the
    // utterance is still worth a second decoding (a stream's first).
    const bool own_mean_alone = report_.own_cmn && est.outcome == FmllrOutcome::kTooFewFrames &&
                                report_.frames_aligned > 0;
    if (updated && report_.gain < options_.min_redecode_gain) {
      // Too small a change to decode again: the utterances that follow
      // get the new transform, this one keeps its first pass, and the
      // first pass's statistics (posteriors under the transform it was
      // decoded with) are the utterance's.
      transform_ = est.transform;
      applier_.set_transform(transform_);
    } else if (updated || own_mean_alone) {
      if (updated) {
        transform_ = est.transform;
        applier_.set_transform(transform_);
      }
      holds_first = false;
      c0 = thread_cpu_seconds();
      rec_.reset();
      // A floor on the block keeps the calls (each a device round trip on
      // a GPU) few for a stream fed a frame or two at a time.
      constexpr int64_t kMinBlock = 32;
      const int64_t block = std::max(largest_push_, kMinBlock);
      for (int64_t f0 = 0; f0 < rows; f0 += block)
        push_transformed(raw_.data() + f0 * dim_, std::min(block, rows - f0));
      {
        const LatticeResultOff off(rec_);
        RecognitionResult second = rec_.finish();
        drop_words_from(second.best, silence_start);
        drop_words_before(second.best, speech_from);
        timings_.redecode += thread_cpu_seconds() - c0;
        // The adapted decoding's words are the better supervision; their
        // statistics are the ones kept, with posteriors under the new
        // transform, except under a warp (the VTLN form): there the
        // posteriors come from the unadapted features. Why: a warp is one
        // of a few fixed candidates, and posteriors under it pull the
        // speaker's statistics towards it; every later estimate holds this
        // utterance's statistics, so the bias stayed. Measured on the
        // 40-sentence live set, the last four sentences a voice: 413
        // errors with the warp's posteriors, 381 with the unadapted ones
        // (375 without the warp); the first six 596 and 601 (616). See
        // docs/benchmarks.md, "The warped sentence's statistics".
        accumulate_words(second.best.words, nullptr, /*posteriors_unadapted=*/report_.warp != 0.0);
      }
      c0 = thread_cpu_seconds();
      result = rec_.finish();  // the lattice pass's, when configured
      drop_words_from(result.best, silence_start);
      drop_words_before(result.best, speech_from);
      timings_.final_result += thread_cpu_seconds() - c0;
      have_result = true;
      report_.redecoded = true;
    }
    stream_.add(utterance_.stats());
    if (vtln && updated) {
      // The warp serves its own sentence only: the utterances that follow
      // start under the young form estimated from the stream's statistics
      // now (this sentence's from the warped decoding's alignment). Why:
      // a warp is an extreme transform, right for the speaker it was
      // chosen on; in a stream whose speakers take turns the next
      // speaker's first pass ran under it. Measured (docs/benchmarks.md,
      // "The warp for its own sentence"): speakers taking turns, 14
      // conditions summed, the warp kept 331.1, for its sentence 310.2
      // (without the warp 321.9); one speaker a recording, 199.3 and
      // 202.5 (212.8), every row within issue 15's bound.
      c0 = thread_cpu_seconds();
      const FmllrEstimate young_est = estimate_fmllr(stream_, estimation, &start);
      timings_.estimate += thread_cpu_seconds() - c0;
      if (young_est.outcome == FmllrOutcome::kUpdated && young_est.transform.all_finite()) {
        transform_ = young_est.transform;
        applier_.set_transform(transform_);
      }
    }
    if (report_.own_cmn && options_.cmn_stream_frames > 0) {
      stream_cmn_.add(utterance_cmn);
      while (stream_cmn_.count >= 2.0 * options_.cmn_stream_frames) stream_cmn_.halve();
    }
  } catch (const std::exception& e) {
    report_.outcome = FmllrOutcome::kRefused;
    report_.message = std::string("not adapted: ") + e.what();
  }
  if (!have_result) {
    // The first pass stands: with the lattice pass, when configured, unless
    // a failed second decoding took the recognizer's first one away.
    c0 = thread_cpu_seconds();
    result = holds_first ? rec_.finish() : first;
    drop_words_from(result.best, silence_start);
    drop_words_before(result.best, speech_from);
    timings_.final_result += thread_cpu_seconds() - c0;
  }
  report_.adapted = report_.redecoded ? !transform_.is_identity() : first_adapted;
  report_.stream_weight = stream_.beta;
  report_.log_abs_det = transform_.log_abs_det();
  ++timings_.utterances;
  timings_.redecoded += report_.redecoded;
  timings_.warped += report_.warp != 0.0;
  return result;
}

const ChannelPrior* AdaptiveRedecoder::channel() const {
  if (!options_.channel_priors || channel_ < 0) return nullptr;
  return &options_.channel_priors->channels[static_cast<size_t>(channel_)];
}

void AdaptiveRedecoder::reset() {
  rec_.reset();
  raw_.clear();
  trace_.clear();
  trace_.dim = dim_;
  trace_whole_ = true;
}

void AdaptiveRedecoder::new_speaker() {
  reset();
  stream_.reset(dim_);
  stream_cmn_ = CmnSums{};
  channel_ = -1;
  transform_ = start_transform_;
  first_estimated_ = false;
  applier_.set_transform(transform_);
}

}  // namespace gpuspeech
