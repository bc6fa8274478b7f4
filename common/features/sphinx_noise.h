// Sphinx's front-end noise removal and voice activity detection, as
// sphinxbase 5prealpha does them (fe_noise.c, fe_interface.c and
// fe_prespch_buf.c; sphinx_fe and pocketsphinx run both by default:
// -remove_noise yes -remove_silence yes).
//
// Where they sit in the Sphinx front end, for every frame in order:
//   power spectrum -> mel filterbank -> [SphinxNoiseRemover::process]
//   -> ln(x + 1e-4) -> DCT -> lifter -> [SphinxVad::push]
// The remover works on the frame's mel *power* energies (before the log):
// it tracks a smoothed power, a noise estimate and a signal floor per band,
// derives a gain per band (spectral subtraction with temporal masking) and
// multiplies the energies by the gains smoothed over neighbouring bands.
// The same trackers give a per-frame speech / non-speech decision (an SNR
// test plus a loudness test). SphinxVad turns those decisions into the
// frames that are kept: it waits for vad_startspeech speech frames in a row
// before it declares speech (releasing up to vad_prespeech + 1 frames that
// were held back), and declares silence again after vad_postspeech
// non-speech frames in a row.
//
// Both are sequential by nature (each frame's result depends on every
// earlier frame), so they run on the host; FeatureExtractor downloads the
// band energies after the filterbank GEMM, runs SphinxNoiseRemover and
// uploads them again (feature_pipeline.cpp). Both classes are streaming
// friendly: feed frames one at a time, across any number of calls.
//
// Numbers: the trackers run in double precision, as sphinxbase does
// (its powspec_t is double); the constants below come from sphinxbase's
// fe_noise.c and were checked against the machine code of Debian's
// libsphinxbase.so.3 (0.8+5prealpha+1), whose own build differs from the
// last upstream commit in one detail (the noise estimate starts at
// energy / MAX_GAIN, not at the energy). NoiseOptions::start_at_first_sound
// takes upstream's start instead, after any leading digital silence.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// Spectral-subtraction noise removal on mel power energies, plus the
// frame-level speech decision that sphinxbase derives from the same
// trackers (fe_track_snr). One instance per audio stream.
class SphinxNoiseRemover {
 public:
  // `num_filters` bands per frame. Throws std::invalid_argument for
  // num_filters < 1.
  SphinxNoiseRemover(int num_filters, const NoiseOptions& opts);

  int num_filters() const { return num_filters_; }

  // Processes the next frame: `bands` holds its num_filters mel power
  // energies (>= 0). When opts.remove_noise is set they are replaced by the
  // noise-reduced energies. Returns the frame's own speech decision
  // (before any hangover): true when the largest per-band log SNR reaches
  // vad_threshold and the frame is not much quieter than the recent loud
  // frames. The trackers and the decision run whatever the options; with
  // remove_noise off the bands are left as they are (FeatureExtractor then
  // wants the decision alone: for remove_silence, or for live CMN from
  // speech, NormOptions::live_from_speech).
  bool process(float* bands);

  // Forgets everything: the next frame re-initialises the trackers, as at
  // the start of a Sphinx stream (fe_start_stream). sphinxbase keeps these
  // statistics across the utterances of one stream.
  void reset();

 private:
  int num_filters_;
  NoiseOptions opts_;
  bool fresh_ = true;        // the next frame initialises the trackers
  double slow_peak_ = 0.0;   // slowly decaying peak of ln(sum of signal)
  std::vector<double> power_;   // smoothed power
  std::vector<double> noise_;   // noise estimate (lower envelope of power)
  std::vector<double> floor_;   // floor of the noise-subtracted signal
  std::vector<double> peak_;    // decaying peak for temporal masking
  std::vector<double> signal_;  // per-frame scratch
  std::vector<double> gain_;    // per-frame scratch
};

// Sphinx's speech / silence hangover (fe_vad_hangover with the pre-speech
// buffer of fe_prespch_buf.c and the frame release of fe_process_frames):
// turns per-frame speech decisions into the indices of the frames that are
// kept, in order. Frames are numbered from 0 at the last reset().
//
//  - In silence, each frame goes into a ring of the last vad_prespeech + 1
//    frames and is not released.
//  - vad_startspeech speech frames in a row switch to speech: the ring
//    (which ends with the current frame) is released.
//  - In speech, each frame is released at once; vad_postspeech non-speech
//    frames in a row switch back to silence. The frame that completes the
//    count is dropped and the ring emptied.
//
// A streaming caller must therefore hold on to the features of the last
// held_frames_max() frames until they are released or dropped.
//
// This is the release order of sphinxbase's fe_process_frames when the
// caller's output buffer has room for the whole ring. sphinx_fe's buffer
// holds only (blocksize 2048 - frame length) / frame shift = 10 frames per
// call, and it drains the rest of a ring on its next calls; so its output
// differs from this class in one corner only: when speech starts in the
// file's last call (the last ~2 frames), the ring frames not yet written
// are lost there, while SphinxVad releases them.
class SphinxVad {
 public:
  // Throws std::invalid_argument for negative counts.
  explicit SphinxVad(const NoiseOptions& opts);

  // Feeds the decision for the next frame and appends the indices of the
  // frames released by it to `keep`.
  void push(bool is_speech, std::vector<int64_t>& keep);

  // Feeds the utterance's last frame when it is the zero-padded leftover
  // frame that sphinx_fe computes in fe_end_utt: that frame is kept when the
  // state after it is speech, but frames still held in the ring are not
  // released (sphinxbase drops them there).
  void push_final(bool is_speech, std::vector<int64_t>& keep);

  // push() for a caller that wants the state alone, not the frames
  // released: returns in_speech() after the decision. What live CMN learns
  // from (NormOptions::live_from_speech); the ring is left as push leaves it.
  bool push_state(bool is_speech);

  bool in_speech() const { return in_speech_; }
  int64_t frames_seen() const { return next_frame_; }
  // Frames held back while in silence (at most vad_prespeech + 1).
  int held_frames() const { return static_cast<int>(ring_.size()); }
  int held_frames_max() const { return ring_capacity_; }

  // Starts a new utterance (fe_start_utt): silence, empty ring, frame 0.
  void reset();

 private:
  // fe_vad_hangover: holds the frame while in silence, then updates the
  // speech / silence state.
  void update(bool is_speech);

  NoiseOptions opts_;
  int ring_capacity_;
  bool in_speech_ = false;
  int pre_speech_frames_ = 0;   // speech frames in a row while in silence
  int post_speech_frames_ = 0;  // non-speech frames in a row while in speech
  int64_t next_frame_ = 0;
  std::deque<int64_t> ring_;
};

// SphinxVad's state (1 = in speech) after each of `decisions` in order, from
// a fresh VAD: the frames live CMN learns from.
std::vector<uint8_t> speech_states_after_hangover(const std::vector<uint8_t>& decisions,
                                                  const NoiseOptions& opts);

}  // namespace gpuspeech
