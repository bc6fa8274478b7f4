// Online feature-space MLLR: adapts a stream of feature frames to the
// speaker while it flows, the engine of the gpufmllr element (and usable
// without GStreamer).
//
// The scheme. Every frame goes through the current transform (identity,
// the initial transform or the speaker's saved one until the first
// estimate). The raw and the adapted frame are kept, with their time, in a
// bounded history, because the supervision comes later than the frames:
//
//  - decoder supervision: a decoder downstream finalises words a second or
//    more after their frames passed and reports which senone each frame was
//    aligned to (add_alignment()). The frames are found in the history by
//    time; their component posteriors are computed on the adapted frames
//    (what the decoder scored) within the aligned senone, and the
//    statistics accumulated on the raw frames (the transform maps raw
//    frames). Frames already gone from the history are dropped and counted
//    (counters().frames_late), never an error.
//  - unsupervised: the posteriors of every frame come from the model's
//    Gaussians as one flat mixture (UnsupervisedPosteriors), as the frame
//    passes.
//  - auto: unsupervised until the first alignment arrives, then decoder
//    supervision only; at the switch the unsupervised statistics are
//    discarded (the transform estimated from them is kept), because the two
//    kinds come from different models of the data.
//
// Once update_interval_seconds of new supervised speech (the posterior
// weight added since the last estimation, in frames, over
// frames_per_second) has come in, the transform is re-estimated from all
// statistics of the current speaker, starting from the current transform
// (estimate_fmllr, with its guards: too little data or unusable statistics
// keep the transform, and the update says why). The new transform applies
// to the frames that follow; frames already passed are not redone.
//
// Speakers. set_speaker() starts a new speaker: statistics reset, frames in
// the history from the previous speaker no longer count (a late alignment
// for them is dropped and counted), and the transform becomes the
// speaker's saved one (transform_dir/<speaker>.mat, Kaldi text, fmllr_io.h)
// if there is one, else the initial transform, else the identity. After
// every successful estimation the transform is saved there. A speaker named
// "" is anonymous: adapted, never loaded or saved.
//
// Never worse than what is in use. A saved transform was usually estimated
// from more speech than a new session has at its first estimations, so:
//  - with update_type_by_data, an estimation never uses a poorer update
//    type than the transform in use (fmllr_transform_update_type): while
//    the statistics support only a poorer one, the transform is kept and
//    the update says so (outcome kTooFewFrames, update_type the type in
//    use, the frames that type needs in the message);
//  - an estimate whose objective on the speaker's statistics is below the
//    transform in use's (the diag and offset estimates do not start from
//    it, so they can be) is refused: kept, not saved (outcome kRefused).
//
// Not thread-safe: one caller at a time (the element holds a lock).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/model/gaussian_mixtures.h"

namespace gpuspeech {

// Where the statistics come from (see the top of this file).
enum class FmllrSupervision { kAuto, kDecoder, kUnsupervised };
const char* to_string(FmllrSupervision s);
// "auto", "decoder", "unsupervised"; false for anything else.
bool parse_fmllr_supervision(const std::string& name, FmllrSupervision* s);

struct OnlineFmllrOptions {
  // Re-estimate after this much new supervised speech, in seconds (the
  // posterior weight of the frames added since the last estimation divided
  // by frames_per_second). Five seconds: the first estimate comes once
  // estimation.min_frames (3 s) is passed with some margin, and later ones
  // often enough to follow the speaker without spending much time on them.
  double update_interval_seconds = 5.0;
  // Frame rate of the features (the element sets it from the caps).
  double frames_per_second = 100.0;
  FmllrSupervision supervision = FmllrSupervision::kAuto;
  // Estimation: min_frames (the guard below which the transform is kept),
  // iterations, update type (full, diag, offset) and the other guards;
  // FmllrOptions' defaults (fmllr_estimate.h). estimation.update is used
  // only when update_type_by_data is false.
  FmllrOptions estimation;
  // Choose the update type at each estimation by the amount of statistics
  // (fmllr_update_type_for_frames): offset first, diagonal once there are
  // frames_per_parameter frames for each of its 2d parameters, full once
  // there are as many for each of its d (d+1). Online adaptation starts
  // with little data: on 25 s of LibriVox (about 2200 aligned frames) a
  // full 39 x 40 transform from the first 522 frames moved ln|det A| by 8.8
  // and raised the WER, where a diagonal one moved it by 1.2 (docs/
  // fmllr.md). Growing the transform with the data is what HTK's and
  // Kaldi's recipes do for small amounts of adaptation data (Kaldi's basis
  // fMLLR estimates 0.2 parameters a frame). On by default; false: always
  // estimation.update.
  bool update_type_by_data = true;
  // Frames of statistics (posterior-weighted) per estimated parameter for
  // update_type_by_data. For d = 39: diagonal from 156 frames, full from
  // 3120 (31 s of aligned speech). Chosen on the flite development set
  // (docs/fmllr.md): online, 2 did better than 5 (Kaldi's basis-fMLLR scale
  // of 0.2 parameters a frame) on both channels, and offline full
  // transforms beat diagonal ones from 2.2 frames a parameter; a full
  // transform from a few hundred frames (0.3 a parameter) hurt on LibriVox.
  double frames_per_parameter = 2.0;
  // How long frames are kept for alignments that arrive late. The decoder
  // sends a word's alignment when it becomes final: usually within a
  // second or two, at the latest at the end of its utterance.
  double history_seconds = 30.0;
  // Gaussians kept per frame and stream for unsupervised posteriors (the
  // scorer's top-n, pocketsphinx -topn).
  int unsupervised_top_n = 4;
  // Supervised posteriors below this are dropped (supervised_posteriors()).
  double min_posterior = 1e-4;
  // Per-speaker transforms: DIR/<speaker>.mat ("" = none saved or loaded).
  std::string transform_dir;
  // Start transform for a speaker with no saved one ("" = identity). Read,
  // and its size checked against the model, by the constructor.
  std::string initial_transform;

  // Throws std::invalid_argument naming the bad value.
  void validate() const;
};

// The richest update type that has frames_per_parameter frames of
// statistics for each of its parameters (full: d (d+1), diag: 2d), offset
// (d parameters) below that: OnlineFmllrOptions::update_type_by_data.
FmllrUpdateType fmllr_update_type_for_frames(double frames, int dim, double frames_per_parameter);

// The update type a transform is of, judged from its A: the identity (b
// free) is kOffset, a diagonal A kDiag, an A of three diagonal blocks
// (fmllr_estimate.h) kBlock, anything else kFull. Only exact
// zeros (and ones) count: the diag and offset estimates write them exactly,
// and the Kaldi text format keeps them, so a transform they saved reads
// back as what it was; a transform from elsewhere with tiny off-diagonal
// values counts as full, the safe side (it is not replaced by a diagonal
// estimate while the data supports only that).
FmllrUpdateType fmllr_transform_update_type(const FmllrTransform& t);

// One estimation: what the element posts as its "gpufmllr" message.
struct OnlineFmllrUpdate {
  std::string speaker;
  FmllrSupervision source = FmllrSupervision::kDecoder;  // kDecoder or kUnsupervised
  // The type estimated; when the statistics support only a poorer type than
  // the transform in use (update_type_by_data), that one's, with outcome
  // kTooFewFrames and nothing estimated.
  FmllrUpdateType update_type = FmllrUpdateType::kFull;
  double frames = 0.0;          // beta of the speaker's statistics (weighted frames)
  // kTooFewFrames: below estimation.min_frames, or too few for the type in
  // use; kRefused: unusable statistics or estimate, or an estimate whose
  // objective is below the transform in use's. The message says which.
  FmllrOutcome outcome = FmllrOutcome::kUpdated;
  std::string message;          // FmllrEstimate::message, or why it was kept
  // Q / beta of the transform before and after (the same when not updated;
  // 0 without statistics).
  double objective_before = 0.0;
  double objective_after = 0.0;
  double log_det = 0.0;         // ln|det A| of the transform in use afterwards
  std::string saved_path;       // where the transform was written, "" if not
  std::string save_error;       // why writing failed, "" if it did not
};

// Cumulative counts since construction, for messages and tests.
struct OnlineFmllrCounters {
  int64_t frames_processed = 0;    // frames through process()
  int64_t frames_supervised = 0;   // aligned frames matched and accumulated
  int64_t frames_unaligned = 0;    // senone -1 in alignments
  int64_t frames_late = 0;         // aligned frames already dropped from the history
  int64_t frames_unmatched = 0;    // aligned frames at a time no frame had (gaps, the future)
  int64_t frames_other_speaker = 0;  // aligned frames of a previous speaker
  int64_t frames_repeated = 0;     // aligned frames that were already accumulated
  int64_t frames_non_finite = 0;   // frames with NaN/inf values, left out of the statistics
  int64_t alignments = 0;          // add_alignment() calls
  int64_t alignments_ignored = 0;  // ... ignored (unsupervised mode)
  int64_t estimations = 0;
  int64_t updates = 0;             // estimations that changed the transform
};

// "DIR/<speaker>.mat" file name of a speaker: bytes other than ASCII
// letters, digits, '-', '_' and '.' (and a leading '.') become %XX, so any
// name (a tag value with '/' or spaces) is one plain file name.
std::string fmllr_speaker_file_name(const std::string& speaker);
// `dir`/fmllr_speaker_file_name(speaker): where gpufmllr and
// gpuspeech-transcribe --fmllr-dir keep a speaker's transform, always a
// file directly inside `dir`.
std::string fmllr_speaker_path(const std::string& dir, const std::string& speaker);

class OnlineFmllr {
 public:
  // `mixtures` and `backend` must outlive this object. Throws
  // std::invalid_argument for bad options or a model without Gaussians,
  // FmllrFormatError for an initial transform that cannot be read or has
  // the wrong size (the message names the file and the reason).
  OnlineFmllr(const GaussianMixtures& mixtures, Backend& backend, OnlineFmllrOptions options = {});
  ~OnlineFmllr();
  OnlineFmllr(const OnlineFmllr&) = delete;
  OnlineFmllr& operator=(const OnlineFmllr&) = delete;

  int dim() const { return dim_; }
  const OnlineFmllrOptions& options() const { return options_; }
  // The feature frame rate (> 0): the unit of update_interval_seconds and
  // history_seconds. Resizes the history (dropping it) when it changes.
  void set_frames_per_second(double fps);

  // Adapts `frames` frames of dim() floats: out = W [in; 1] (identity: an
  // exact copy). `in` and `out` may be the same buffer. `first_time` is
  // the time of the first frame and `frame_duration` (> 0) the step, in
  // any unit alignments use too (the element: nanoseconds of buffer time).
  // A block whose first time is not after the last frame's (a new segment,
  // a loop) starts the history afresh. With unsupervised statistics in
  // effect, the frames are accumulated and may trigger an estimation,
  // returned.
  std::optional<OnlineFmllrUpdate> process(const float* in, int64_t frames, float* out,
                                           int64_t first_time, int64_t frame_duration);

  // Decoder supervision for `count` frames at first_time + i *
  // frame_duration: senones[i] the senone, -1 for none. A frame matches the
  // history frame within half a frame_duration of its time. Ignored (and
  // counted) in unsupervised mode. Throws std::invalid_argument for a
  // senone outside [-1, num_senones) or frame_duration <= 0.
  std::optional<OnlineFmllrUpdate> add_alignment(int64_t first_time, int64_t frame_duration,
                                                 const int32_t* senones, int64_t count);

  // Starts a new speaker unless `speaker` is the current one (then nothing
  // happens). `error` is set, and the fallback transform used, when the
  // speaker's saved file exists but cannot be read or has the wrong size.
  struct SpeakerChange {
    bool changed = false;
    bool loaded = false;  // from `path`
    std::string path;     // the speaker's file ("" without transform_dir or for "")
    std::string error;
  };
  SpeakerChange set_speaker(const std::string& speaker);
  const std::string& speaker() const { return speaker_; }
  // transform_dir/<file name>, or "" when there is no directory or the
  // speaker is anonymous.
  std::string transform_path(const std::string& speaker) const;

  const FmllrTransform& transform() const { return transform_; }
  // The statistics of the current speaker so far.
  const FmllrStats& stats() const;
  // Supervised weight added since the last estimation (frames).
  double pending_frames() const { return pending_frames_; }
  // The supervision in effect now: kDecoder or kUnsupervised (auto
  // resolved).
  FmllrSupervision active_supervision() const;
  const OnlineFmllrCounters& counters() const { return counters_; }
  // Forgets the frame history (a flushing seek): later alignments for
  // those frames count as late. Statistics and transform stay.
  void clear_history();

 private:
  std::optional<OnlineFmllrUpdate> maybe_estimate(FmllrSupervision source);
  void use_transform(const FmllrTransform& t, FmllrUpdateType type);
  void resize_history();
  int64_t find_frame(int64_t time, int64_t tolerance, int64_t from) const;

  const GaussianMixtures& mixtures_;
  Backend& backend_;
  OnlineFmllrOptions options_;
  int dim_;
  FmllrAccumulator accumulator_;
  FmllrApplier applier_;
  std::unique_ptr<UnsupervisedPosteriors> unsupervised_;  // made when first needed
  FmllrTransform fallback_;   // initial transform or identity
  FmllrTransform transform_;
  // fmllr_transform_update_type of transform_ when it was loaded, or the
  // type it was estimated with: the floor for update_type_by_data.
  FmllrUpdateType transform_type_ = FmllrUpdateType::kOffset;
  bool identity_ = true;      // transform_ is the identity: process() copies
  std::string speaker_;
  uint32_t generation_ = 0;   // speaker number, to tell history frames apart
  bool decoder_seen_ = false; // auto: an alignment has arrived
  double pending_frames_ = 0.0;
  OnlineFmllrCounters counters_;

  // The history: a ring of `capacity_` frames, absolute frame numbers
  // [begin_, end_) in slots n % capacity_; times increase.
  int64_t capacity_ = 0;
  int64_t begin_ = 0, end_ = 0;
  std::vector<float> raw_, adapted_;
  std::vector<int64_t> time_;
  std::vector<uint32_t> generation_of_;
  std::vector<uint8_t> used_;
  bool have_last_time_ = false;
  int64_t last_time_ = 0;       // of the newest frame processed
  bool have_dropped_ = false;
  int64_t dropped_until_ = 0;   // time of the newest frame no longer in the history
  std::vector<float> scratch_raw_, scratch_adapted_;
  std::vector<int32_t> scratch_senones_;
};

}  // namespace gpuspeech
