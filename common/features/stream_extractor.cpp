#include "common/features/stream_extractor.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>

namespace gpuspeech {

namespace {

void append_rows(FeatureMatrix& out, const float* rows, int64_t count) {
  if (count <= 0) return;
  out.data.insert(out.data.end(), rows, rows + count * out.dim);
  out.rows += count;
}

// Refusals specific to streaming come before the pipeline is built.
const FeatureOptions& checked_for_streaming(const FeatureOptions& opts) {
  if (opts.noise.remove_silence)
    throw std::invalid_argument(
        "remove_silence is not supported for streaming feature extraction "
        "(dropping frames would need per-frame timestamps downstream); use "
        "it with whole utterances (compute_features, gpuspeech-features)");
  return opts;
}

}  // namespace

StreamingFeatureExtractor::StreamingFeatureExtractor(const FeatureOptions& opts,
                                                     Backend& backend)
    : opts_(checked_for_streaming(opts)),
      extractor_(opts_, backend),
      backend_(backend) {
  frame_length_ = extractor_.frame_length();
  frame_shift_ = extractor_.frame_shift();
  base_dim_ = extractor_.num_warps() * extractor_.base_dim();
  output_dim_ = opts_.output_dim();
  spectral_context_ = extractor_.spectral_context();
  delta_context_ = delta_context(opts_.delta);
  // Anything that needs the whole utterance before the first frame can be
  // finished goes through postprocess_utterance at flush().
  buffered_ = opts_.norm.cmn == NormOptions::Cmn::kBatch || opts_.norm.cvn ||
              opts_.norm.min_max;
  live_cmn_enabled_ = !buffered_ && opts_.norm.cmn == NormOptions::Cmn::kLive;
  if (live_cmn_enabled_)
    live_cmn_ = std::make_unique<LiveCmn>(base_dim_, opts_.norm.cmn_init,
                                          opts_.norm.live_window,
                                          opts_.norm.live_init_frames,
                                          opts_.cmn_skips_negative_c0());
  if (live_cmn_ && opts_.live_cmn_from_speech() && extractor_.has_noise_stage())
    cmn_vad_ = std::make_unique<SphinxVad>(opts_.noise);
  if (opts_.declip.enabled)
    declipper_ = std::make_unique<Declipper>(opts_.declip, opts_.frame.sample_rate);
  reset();
}

StreamingFeatureExtractor::~StreamingFeatureExtractor() = default;

void StreamingFeatureExtractor::set_max_block_frames(int frames) {
  if (frames < 1)
    throw std::invalid_argument("max block frames must be >= 1, got " +
                                std::to_string(frames));
  max_block_frames_ = frames;
}

void StreamingFeatureExtractor::reset() { start_utterance(/*restart_noise=*/true); }

void StreamingFeatureExtractor::start_utterance(bool restart_noise) {
  window_.clear();
  window_start_ = 0;
  total_samples_ = 0;
  samples_accepted_ = 0;
  if (declipper_) declipper_->reset();
  next_spectral_ = 0;
  frames_emitted_ = 0;
  history_ = FeatureMatrix{};
  history_.dim = base_dim_;
  history_first_ = 0;
  history_means_ = FeatureMatrix{};
  history_means_.dim = base_dim_;
  history_learned_.clear();
  trace_.clear();
  trace_.dim = output_dim_;
  utterance_ = FeatureMatrix{};
  utterance_.dim = base_dim_;
  if (live_cmn_) live_cmn_->reset();
  if (cmn_vad_) cmn_vad_->reset();
  vad_silence_start_ = cmn_vad_ ? 0 : -1;  // the detector starts in silence
  // Sphinx noise removal tracks the stream frame by frame; every frame
  // passes through compute_device exactly once and in order (no spectral
  // context without TRAPS), so restarting the trackers here matches
  // FeatureExtractor::compute on the whole utterance. Kept, they go on
  // from the last utterance's frames as if the two had been one call.
  if (restart_noise) extractor_.reset_noise_state();
  if (opts_.frame.dither > 0.0f) {
    dither_gen_.seed(opts_.frame.dither_seed);
    dither_ = std::make_unique<std::normal_distribution<float>>(
        0.0f, opts_.frame.dither);
  }
}

void StreamingFeatureExtractor::set_cmn_trace(bool on) {
  if (on && !live_cmn_)
    throw std::logic_error("StreamingFeatureExtractor: a CMN trace needs live CMN");
  if (samples_accepted_ > 0)
    throw std::logic_error("StreamingFeatureExtractor: the CMN trace switched inside an utterance");
  trace_on_ = on;
}

void StreamingFeatureExtractor::take_cmn_trace(CmnTrace& out) {
  out = std::move(trace_);
  trace_ = CmnTrace{};
  trace_.dim = output_dim_;
}

void StreamingFeatureExtractor::restart_live_cmn_from(const std::vector<float>& start) {
  if (!live_cmn_)
    throw std::logic_error("StreamingFeatureExtractor: no live CMN to restart");
  if (samples_accepted_ > 0)
    throw std::logic_error("StreamingFeatureExtractor: live CMN restarted inside an utterance");
  live_cmn_->restart_from(start);
}

int64_t StreamingFeatureExtractor::latency_samples() const {
  return frame_length_ +
         static_cast<int64_t>(spectral_context_ + delta_context_) *
             frame_shift_ +
         (declipper_ ? declipper_->max_delay() : 0);
}

int64_t StreamingFeatureExtractor::complete_frames(int64_t num_samples) const {
  if (num_samples < frame_length_) return 0;
  return (num_samples - frame_length_) / frame_shift_ + 1;
}

void StreamingFeatureExtractor::prepare_out(FeatureMatrix& out) const {
  if (out.rows == 0) {
    out.dim = output_dim_;
    out.data.clear();
  } else if (out.dim != output_dim_) {
    throw std::invalid_argument(
        "StreamingFeatureExtractor: output matrix has dim " +
        std::to_string(out.dim) + " but the features have " +
        std::to_string(output_dim_));
  }
}

void StreamingFeatureExtractor::accept(const float* samples, size_t n,
                                       FeatureMatrix& out) {
  prepare_out(out);
  if (n == 0) return;
  samples_accepted_ += static_cast<int64_t>(n);
  if (declipper_) {
    declipped_.clear();
    declipper_->accept(samples, n, declipped_);
    take_samples(declipped_.data(), declipped_.size(), out);
  } else {
    take_samples(samples, n, out);
  }
}

void StreamingFeatureExtractor::take_samples(const float* samples, size_t n,
                                             FeatureMatrix& out) {
  if (n == 0) return;
  const size_t old_size = window_.size();
  window_.insert(window_.end(), samples, samples + n);
  if (dither_) {
    // The same generator, drawn once per sample in order from the
    // utterance start, as FeatureExtractor::compute does: the dithered
    // signal does not depend on how the audio was cut.
    for (size_t i = old_size; i < window_.size(); ++i)
      window_[i] += (*dither_)(dither_gen_);
  }
  total_samples_ += static_cast<int64_t>(n);

  const int64_t complete = complete_frames(total_samples_);
  // A frame's spectral features are final once its TRAPS context is here.
  const int64_t ready = complete - spectral_context_;
  if (ready > next_spectral_)
    compute_spectral(next_spectral_, ready, complete, out);
  drop_consumed_samples();
}

void StreamingFeatureExtractor::flush(FeatureMatrix& out, std::vector<float>* live_cmn_mean) {
  prepare_out(out);
  if (declipper_) {
    declipped_.clear();
    declipper_->flush(declipped_);
    take_samples(declipped_.data(), declipped_.size(), out);
  }
  const int64_t total = extractor_.num_frames(total_samples_);
  if (total > next_spectral_)
    compute_spectral(next_spectral_, total, total, out);
  if (buffered_) {
    if (utterance_.rows > 0) {
      postprocess_utterance(opts_, utterance_);
      if (utterance_.dim != output_dim_)
        throw std::logic_error(
            "postprocess_utterance produced dim " +
            std::to_string(utterance_.dim) + ", expected " +
            std::to_string(output_dim_));
      append_rows(out, utterance_.data.data(), utterance_.rows);
      frames_emitted_ += utterance_.rows;
    }
  } else {
    emit_ready(/*at_end=*/true, out);
  }
  if (live_cmn_mean != nullptr) {
    live_cmn_mean->clear();
    if (live_cmn_ && live_cmn_->started()) *live_cmn_mean = live_cmn_->mean();
  }
  // The last frames' trace waits for take_cmn_trace() across the reset.
  CmnTrace last = std::move(trace_);
  start_utterance(/*restart_noise=*/!noise_carry_);
  trace_ = std::move(last);
}

void StreamingFeatureExtractor::compute_spectral(int64_t t0, int64_t t1,
                                                 int64_t available,
                                                 FeatureMatrix& out) {
  const int64_t ctx = spectral_context_;
  for (int64_t c0 = t0; c0 < t1; c0 += max_block_frames_) {
    const int64_t c1 = std::min<int64_t>(t1, c0 + max_block_frames_);
    // Frames [a, b) are computed so that [c0, c1) see their full context;
    // the splice clamps at a and b, which are the utterance's edges or at
    // least `ctx` frames away from every frame kept.
    const int64_t a = std::max<int64_t>(0, c0 - ctx);
    const int64_t b = std::min<int64_t>(available, c1 + ctx);
    // One sample before frame a feeds continuous pre-emphasis; before the
    // utterance start the zero rule of FramingSpec gives x(-1) = 0, as in
    // the whole-utterance path.
    const int64_t first_sample = a * frame_shift_ - (a > 0 ? 1 : 0);
    const int64_t last_needed = (b - 1) * frame_shift_ + frame_length_;
    const int64_t valid =
        std::min(total_samples_, last_needed) - first_sample;
    if (first_sample < window_start_ ||
        first_sample + valid > window_start_ +
                                   static_cast<int64_t>(window_.size()))
      throw std::logic_error(
          "StreamingFeatureExtractor: samples of frames " + std::to_string(a) +
          ".." + std::to_string(b) + " are no longer buffered");

    FramingSpec spec = extractor_.framing_for(1, valid, valid);
    spec.frames_per_utt = b - a;
    spec.first_frame_offset = a * frame_shift_ - first_sample;

    const size_t signal_floats = static_cast<size_t>(std::max<int64_t>(valid, 1));
    if (!device_signal_ || device_signal_->size() < signal_floats)
      device_signal_ = backend_.alloc(signal_floats);
    if (valid > 0)
      backend_.upload(*device_signal_,
                      window_.data() + (first_sample - window_start_),
                      static_cast<size_t>(valid));
    const size_t feature_floats = static_cast<size_t>((b - a) * base_dim_);
    if (!device_features_ || device_features_->size() < feature_floats)
      device_features_ = backend_.alloc(feature_floats);
    extractor_.compute_device(*device_signal_, spec, *device_features_);

    const size_t kept = static_cast<size_t>((c1 - c0) * base_dim_);
    block_host_.resize(kept);
    backend_.download(*device_features_, block_host_.data(), kept,
                      static_cast<size_t>((c0 - a) * base_dim_));
    next_spectral_ = c1;
    take_spectral(block_host_.data(), c1 - c0, c0 - a, out);
  }
}

void StreamingFeatureExtractor::take_spectral(const float* rows, int64_t count,
                                              int64_t first_decision, FeatureMatrix& out) {
  if (buffered_) {
    append_rows(utterance_, rows, count);
    return;
  }
  const int64_t first_new = history_.rows;
  append_rows(history_, rows, count);
  if (live_cmn_) {
    // The VAD's state after each frame's decision, as
    // FeatureExtractor::cmn_learn_rows gives for a whole utterance.
    const std::vector<uint8_t>& decisions = extractor_.speech_flags();
    if (cmn_vad_ && decisions.size() < static_cast<size_t>(first_decision + count))
      throw std::logic_error("StreamingFeatureExtractor: speech decisions do not match the frames");
    for (int64_t r = first_new; r < history_.rows; ++r) {
      const size_t i = static_cast<size_t>(first_decision + (r - first_new));
      bool learn = true;
      if (cmn_vad_) {
        const bool was_speech = cmn_vad_->in_speech();
        learn = cmn_vad_->push_state(decisions[i] != 0);
        if (was_speech && !learn) {
          // The run of non-speech frames that ended the speech began
          // vad_postspeech - 1 frames before this one.
          const int64_t frame = history_first_ + r;
          vad_silence_start_ = std::max<int64_t>(0, frame - opts_.noise.vad_postspeech + 1);
        } else if (learn) {
          vad_silence_start_ = -1;
        }
      }
      if (trace_on_) {
        // history_means_ runs parallel to history_ (rows appended here,
        // dropped with history_'s in emit_ready).
        append_rows(history_means_, history_.row(r), 1);
        const bool learnt = live_cmn_->process(history_.row(r), learn, history_means_.row(history_means_.rows - 1));
        history_learned_.push_back(learnt ? 1 : 0);
      } else {
        live_cmn_->process(history_.row(r), learn);
      }
    }
  }
  emit_ready(/*at_end=*/false, out);
}

void StreamingFeatureExtractor::emit_ready(bool at_end, FeatureMatrix& out) {
  const int64_t have = history_first_ + history_.rows;
  const int64_t upto = at_end ? have : have - delta_context_;
  if (upto <= frames_emitted_) return;
  const int64_t count = upto - frames_emitted_;
  const int64_t first_row = frames_emitted_ - history_first_;
  const size_t old_size = out.data.size();
  out.data.resize(old_size + static_cast<size_t>(count) * output_dim_);
  float* dst = out.data.data() + old_size;
  if (opts_.delta.layout == DeltaOptions::Layout::kNone) {
    std::memcpy(dst, history_.row(first_row),
                static_cast<size_t>(count) * base_dim_ * sizeof(float));
  } else {
    // history_ starts delta_context_ frames before frames_emitted_ (or at
    // the utterance start) and, unless at_end, reaches delta_context_
    // frames past the last frame emitted here, so the clamping inside
    // add_deltas_rows happens only at the true utterance edges.
    add_deltas_rows(history_, first_row, count, opts_.delta, dst);
  }
  out.rows += count;
  if (trace_on_) {
    // The offsets: the same layout over the means, on the same window, so
    // the clamping at the utterance's edges is the features' own.
    const size_t old_trace = trace_.offsets.size();
    trace_.offsets.resize(old_trace + static_cast<size_t>(count) * output_dim_);
    float* o = trace_.offsets.data() + old_trace;
    if (opts_.delta.layout == DeltaOptions::Layout::kNone)
      std::memcpy(o, history_means_.row(first_row), static_cast<size_t>(count) * base_dim_ * sizeof(float));
    else
      add_deltas_rows(history_means_, first_row, count, opts_.delta, o);
    trace_.learned.insert(trace_.learned.end(), history_learned_.begin() + first_row,
                          history_learned_.begin() + first_row + count);
  }
  frames_emitted_ = upto;

  // Keep delta_context_ frames before the next frame to emit.
  const int64_t keep_from =
      std::max(history_first_, frames_emitted_ - delta_context_);
  const int64_t drop = keep_from - history_first_;
  if (drop > 0) {
    history_.data.erase(history_.data.begin(),
                        history_.data.begin() + drop * base_dim_);
    history_.rows -= drop;
    history_first_ = keep_from;
    if (trace_on_) {
      history_means_.data.erase(history_means_.data.begin(),
                                history_means_.data.begin() + drop * base_dim_);
      history_means_.rows -= drop;
      history_learned_.erase(history_learned_.begin(), history_learned_.begin() + drop);
    }
  }
}

void StreamingFeatureExtractor::drop_consumed_samples() {
  // The next block starts at frame next_spectral_ - context (its TRAPS
  // context) and needs one sample before that for pre-emphasis.
  const int64_t first_frame =
      std::max<int64_t>(0, next_spectral_ - spectral_context_);
  const int64_t keep_from =
      std::max<int64_t>(0, first_frame * frame_shift_ - 1);
  const int64_t drop = keep_from - window_start_;
  // Erase in bulk only when it pays (amortised O(1) per sample even for
  // one-sample input).
  if (drop > 0 && drop >= static_cast<int64_t>(window_.size()) / 2 &&
      drop >= 1024) {
    window_.erase(window_.begin(), window_.begin() + drop);
    window_start_ = keep_from;
  }
}

}  // namespace gpuspeech
