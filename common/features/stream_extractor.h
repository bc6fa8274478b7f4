// Streaming feature extraction: audio arrives in pieces of any size (down to
// one sample), feature frames leave as soon as they are final.
//
// The output is the same frame sequence compute_features() (feature_pipeline.h)
// gives for the whole utterance, however the audio was cut:
//  - bitwise identical on the CPU backend whether the audio arrives whole or
//    in random pieces (every frame is computed from the same samples by the
//    same per-row operations; only the grouping of rows into blocks differs);
//  - equal to compute_features() within float rounding (<= 1e-5 relative).
//
// How it works. Samples are kept in a sliding window (the samples of frames
// still to be computed, plus one earlier sample for continuous
// pre-emphasis; consumed samples are dropped in bulk, amortised O(1) per
// sample, so it works as a ring buffer that stays contiguous for upload). Whenever new frames are complete, a block of them is cut
// straight from that window by FeatureExtractor::compute_device with a
// FramingSpec whose first_frame_offset skips the one history sample, so the
// first frame of the block is pre-emphasised against its true predecessor
// (FramingSpec step 3). Then, on the host and in frame order:
//   live CMN (LiveCmn, postprocess.h) -> deltas (add_deltas_rows with
//   delta_context() frames of history and look-ahead) -> output.
// With set_cmn_trace(true) the means live CMN used go through the same
// deltas, so that each frame's trace (cmn_trace.h) undoes its CMN exactly.
//
// Look-ahead. A frame is emitted once everything it depends on has arrived:
// its own samples, spectral_context() later frames (TRAPS), and
// delta_context() later frames (deltas). latency_samples() says how many
// samples that is. At end of stream flush() emits the rest exactly as the
// whole-utterance path ends an utterance: the zero-padded last partial frame
// (unless snip_edges), TRAPS trajectories and deltas replicating the last
// frame.
//
// TRAPS. Each band-energy trajectory needs spectral_context() frames on both
// sides. Rather than reaching into the pipeline's intermediate band
// energies, each block is computed together with its context frames (the
// context frames' spectra are recomputed and discarded), so the splice and
// the TRAPS GEMM run exactly as on a whole utterance, clamped at the true
// utterance edges only. The cost is 2 * context extra spectral frames per
// block: with one new frame per call (10 ms buffers) and context 25 that is
// 51 spectral frames computed per frame out; 100 ms buffers bring it down
// to 6. MFCC, fbank and PLP have no such cost.
//
// Whole-utterance normalisation (cmn batch, cvn, min_max) needs every frame
// before the first one can be normalised: in that mode (buffers_utterance())
// accept() computes spectral features as audio arrives but returns nothing,
// and flush() normalises the utterance with postprocess_utterance() and
// returns all of it, identical to compute_features().
//
// Dither (FrameOptions::dither > 0) draws one Gaussian value per sample from
// a generator seeded with dither_seed at each utterance start, in sample
// order, exactly as FeatureExtractor::compute does, so it too is
// independent of the cutting.
//
// Declipping (DeclipOptions::enabled, declipper.h) comes first, before
// dither: it holds back at most Declipper::max_delay() samples (counted in
// latency_samples()), and its output does not depend on the cutting either.
//
// Sphinx noise removal (NoiseOptions::remove_noise) runs frame by frame in
// order, as on a whole utterance, and restarts at each reset(), and at each
// flush() unless set_noise_carry(true).
// remove_silence (dropping frames) is not supported: the constructor throws
// std::invalid_argument. The tracker's speech decisions still reach live
// CMN (the tracker runs for them even without remove_noise), which learns
// only from the frames the VAD calls speech
// (NormOptions::live_from_speech), as FeatureExtractor::cmn_learn_rows
// gives them for a whole utterance.
//
// Not thread-safe; one extractor per stream.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "common/backends/backend.h"
#include "common/features/cmn_trace.h"
#include "common/features/declipper.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_options.h"
#include "common/features/postprocess.h"
#include "common/features/sphinx_noise.h"

namespace gpuspeech {

class StreamingFeatureExtractor {
 public:
  // Validates `opts` (std::invalid_argument naming the option) and uploads
  // the pipeline's constants to `backend`, which must outlive this object.
  StreamingFeatureExtractor(const FeatureOptions& opts, Backend& backend);
  ~StreamingFeatureExtractor();
  StreamingFeatureExtractor(const StreamingFeatureExtractor&) = delete;
  StreamingFeatureExtractor& operator=(const StreamingFeatureExtractor&) =
      delete;

  const FeatureOptions& options() const { return opts_; }
  int output_dim() const { return output_dim_; }
  int frame_length() const { return frame_length_; }  // samples
  int frame_shift() const { return frame_shift_; }    // samples
  // True when output waits for flush() (cmn batch, cvn or min_max).
  bool buffers_utterance() const { return buffered_; }

  // Feeds `n` samples (16-bit units, see feature_pipeline.h) and appends
  // every frame that became final to `out` (out.dim is set to output_dim();
  // `out` must be empty or already have that dim). n may be 0.
  void accept(const float* samples, size_t n, FeatureMatrix& out);

  // Ends the utterance: appends the remaining frames to `out`, so that the
  // frames returned since the last reset() are exactly
  // compute_features(all samples). Then resets for the next utterance.
  // With live CMN and `live_cmn_mean`, that is set to the running mean as
  // the utterance left it (base_dim values; cleared without live CMN, or
  // while it has no mean: no cmn_init and no frame): a
  // later stream of the same channel can start from it
  // (NormOptions::cmn_init) instead of the model's average.
  void flush(FeatureMatrix& out, std::vector<float>* live_cmn_mean = nullptr);

  // Drops all pending audio and frames (and their CMN trace) and starts a
  // new utterance (after a FLUSH or DISCONT). Live CMN restarts from
  // cmn_init.
  void reset();

  // Live CMN of the utterance just started (after flush() or reset(),
  // before its audio) starts from `start` instead of cmn_init: the mean
  // the previous utterance of the same channel left (flush()'s
  // live_cmn_mean). std::logic_error without live CMN or once audio has
  // arrived; std::invalid_argument for a start of another dimension.
  void restart_live_cmn_from(const std::vector<float>& start);

  // Whether flush() keeps Sphinx noise removal's trackers (noise estimate,
  // signal floor, peaks; NoiseOptions) for the next utterance instead of
  // starting them afresh: the same channel goes on, as sphinxbase keeps
  // them across the utterances of one stream. Off by default, so that each
  // utterance's frames are compute_features() of its audio alone; with it
  // on, a later utterance's frames are those with the trackers as the
  // earlier utterances left them. reset() restarts them either way. The
  // voice activity detector restarts at every utterance (in silence).
  void set_noise_carry(bool on) { noise_carry_ = on; }
  bool noise_carry() const { return noise_carry_; }

  // Samples that must arrive after the first sample of a frame before that
  // frame is emitted (frame length + (TRAPS context + delta context) frame
  // shifts). For a stream, a frame timestamped at its first sample leaves
  // this much later. In buffers_utterance() mode output waits for flush().
  int64_t latency_samples() const;

  // Frame t of the current utterance starts at this sample (counted from the
  // utterance's first sample). Use it for timestamps.
  int64_t frame_start_sample(int64_t frame) const {
    return frame * frame_shift_;
  }

  // Samples accepted (those the declipper still holds included) and frames
  // emitted since the last reset().
  int64_t samples_accepted() const { return samples_accepted_; }
  int64_t frames_emitted() const { return frames_emitted_; }

  // Where the voice activity detector's current silence began: the first
  // frame (utterance numbering) of the non-speech run that ended the last
  // speech, or 0 while no speech has been heard since the last reset();
  // -1 while it is in speech, and always -1 without a detector (it runs
  // with live CMN learning from speech and the noise stage, as in the
  // front end gpudecoder configures). The detector is Sphinx's with its
  // hangover (SphinxVad): speech ends after vad_postspeech non-speech
  // frames in a row, so the value appears that many frames after the
  // frame it names. Frames are counted as their spectral features are
  // computed, which runs the delta context ahead of frames_emitted().
  // A decoder downstream can end an utterance on it when its own search
  // hears words in noise (gpudecoder, the `gpuspeech-vad` event).
  int64_t vad_silence_start() const { return vad_silence_start_; }

  // Live CMN's trace (cmn_trace.h): with `on`, every frame emitted from
  // now on has its offset and learn flag recorded, for take_cmn_trace().
  // Off by default. std::logic_error without live CMN, or inside an
  // utterance (after its first audio).
  void set_cmn_trace(bool on);
  bool cmn_trace_enabled() const { return trace_on_; }
  // Moves the trace of the frames emitted since the last call into `out`
  // (replacing what it held): one row per frame accept()/flush() returned,
  // in order. Which of the output dims are static:
  // static_dims_of_layout(options().delta, base dim).
  void take_cmn_trace(CmnTrace& out);

  // Largest number of frames computed in one backend call (device memory is
  // sized for this plus the TRAPS context). Default 1024.
  void set_max_block_frames(int frames);

 private:
  int64_t complete_frames(int64_t num_samples) const;
  // Computes final spectral features of frames [t0, t1); `available` is the
  // number of frames whose samples are all here (or, at the end of the
  // utterance, num_frames(total)), which bounds the TRAPS context.
  void compute_spectral(int64_t t0, int64_t t1, int64_t available,
                        FeatureMatrix& out);
  // Hands spectral rows to normalisation and deltas.
  // `first_decision`: the index of rows[0]'s speech decision in
  // extractor_.speech_flags() (the block's spectral context comes first).
  void take_spectral(const float* rows, int64_t count, int64_t first_decision,
                     FeatureMatrix& out);
  void emit_ready(bool at_end, FeatureMatrix& out);
  // accept() after the declipper: samples final in every stage before
  // framing.
  void take_samples(const float* samples, size_t n, FeatureMatrix& out);
  void drop_consumed_samples();
  void prepare_out(FeatureMatrix& out) const;
  // reset() without restarting the noise trackers when `restart_noise` is
  // false (flush() with noise carry).
  void start_utterance(bool restart_noise);

  FeatureOptions opts_;
  FeatureExtractor extractor_;
  Backend& backend_;
  int frame_length_ = 0;
  int frame_shift_ = 0;
  int base_dim_ = 0;
  int output_dim_ = 0;
  int spectral_context_ = 0;  // TRAPS frames each side
  int delta_context_ = 0;
  bool buffered_ = false;
  bool live_cmn_enabled_ = false;
  int max_block_frames_ = 1024;
  bool noise_carry_ = false;

  // Sliding window of samples: window_[i] is sample window_start_ + i.
  std::vector<float> window_;
  int64_t window_start_ = 0;
  int64_t total_samples_ = 0;     // past the declipper
  int64_t samples_accepted_ = 0;  // given to accept()
  std::unique_ptr<Declipper> declipper_;  // null unless opts.declip.enabled
  std::vector<float> declipped_;

  int64_t next_spectral_ = 0;  // first frame whose spectral features are due
  int64_t frames_emitted_ = 0;

  // Normalised spectral frames kept for deltas: row r is frame
  // history_first_ + r.
  FeatureMatrix history_;
  int64_t history_first_ = 0;
  std::unique_ptr<LiveCmn> live_cmn_;
  // With the trace on: row r is the mean live CMN normalised history_'s
  // row r with, and history_learned_[r] whether it learnt from it.
  bool trace_on_ = false;
  FeatureMatrix history_means_;
  std::vector<uint8_t> history_learned_;
  CmnTrace trace_;  // frames emitted, not yet taken
  // NormOptions::live_from_speech with the noise stage: the VAD whose state
  // decides which frames live CMN learns from; null otherwise.
  std::unique_ptr<SphinxVad> cmn_vad_;
  int64_t vad_silence_start_ = -1;  // see vad_silence_start()
  // buffers_utterance() mode: every spectral frame of the utterance.
  FeatureMatrix utterance_;

  std::mt19937 dither_gen_;
  std::unique_ptr<std::normal_distribution<float>> dither_;

  BufferPtr device_signal_;
  BufferPtr device_features_;
  std::vector<float> block_host_;
};

}  // namespace gpuspeech
