// The recognition engine: what the gpudecoder element and
// gpuspeech-transcribe wrap, with no GStreamer in it.
//
//   Recognizer r(config);            // model, dictionary, LM or grammar,
//                                    // backends; the graph compiled or
//                                    // taken from the cache
//   r.push_features(frames, n);      // any number of times
//   r.partial();                     // words so far, the stable ones marked
//   r.finish();                      // final words, times, confidence, n-best
//   r.reset();                       // next utterance
//
// Features must be what the acoustic model expects: feature_options()
// (the model's feat.params over pocketsphinx's defaults), feature_dim()
// floats a frame. recognize() runs the whole chain on audio samples.
//
// What streams with the same model, dictionary and grammar can share (model,
// graph, LMs: RecognitionResources) is loaded once per process and shared
// through resource_cache.h; a Recognizer adds one stream's own state
// (scorer scratch, searcher, rescorer, kept features), so many recognizers
// with one model cost little more than one. Each Recognizer is used by one
// thread at a time; different Recognizers may run in parallel.
//
// Scoring (GaussianScorer) runs on the chosen backend (cpu, opencl, cuda),
// the search on the CPU or, with search "cuda", on a CUDA device; both
// searches follow token_passing.h and find the same best path on the same
// scores.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/engine/recognition_resources.h"
#include "common/features/feature_options.h"
#include "common/model/acoustic_model.h"
#include "common/search/forced_aligner.h"
#include "common/search/graph_compiler.h"
#include "common/search/lm_pruning.h"
#include "common/search/search_graph.h"
#include "common/search/token_passing.h"

namespace gpuspeech {

// A stream's configuration: the files and options of the shared resources
// (ResourceOptions: model, dictionary, grammar, graph and LM options, graph
// cache, rescoring; two streams with equal ones share one copy), then the
// stream's own settings below.
// Streams from which the tools turn batched_search on by default. It was
// 32 while 16 streams ran at the same speed either way; since the cluster
// kernel and device rescoring, 8 batched streams run at 339-343x real
// time against 190-192x in launches of their own (H200, en-us, LibriVox;
// docs/benchmarks.md, "Chains of several frames a launch"). Fewer than 8
// were not measured.
constexpr int kBatchedSearchAutoStreams = 8;
// The tools' --batched-search setting for `streams` streams: "on", "off",
// or "auto" (on from kBatchedSearchAutoStreams streams). Throws
// std::invalid_argument ("must be on, off or auto, got '...'") for any
// other word.
bool batched_search_for(const std::string& mode, int streams);

struct RecognizerConfig : ResourceOptions {
  std::string scoring_backend = "auto";  // auto|cuda|opencl|cpu
  // "cpu", "cuda", or "auto": cuda when scoring runs on cuda, else cpu.
  std::string search_backend = "auto";
  // Device index for cuda/opencl; -1: the least-loaded device of the
  // backend in this process (device_placement.h), config().device_id then
  // says which.
  int device_id = 0;
  // Gaussian selection in scoring (ScorerOptions::top_n, pocketsphinx
  // -topn): each codebook's top_n best Gaussians per frame; 0 = every
  // Gaussian (exact mixtures). 16, not pocketsphinx's 4: on the degraded
  // sets of issue 15 top 16 was better than top 4 on eight of nine
  // conditions and equal on clean LibriVox, for a scoring stage that is a
  // small part of decoding (docs/benchmarks.md, "The sweep of --topn").
  int top_n = 16;
  // Densities floored this many nats below the best of their stream at each
  // frame (ScorerOptions::density_floor; pocketsphinx's bound, whose value
  // this is); 0 = exact densities.
  float density_floor = 9.83f;

  SearchOptions search;
  // The word-lattice pass's cost per word, as a probability (-ln of it a
  // word; LatticeOptions::word_insertion_penalty); 0: the graph's
  // (ResourceOptions::graph.word_insertion_penalty), as the search pays.
  // Why the pass may want its own: a lattice node's acoustic cost is the
  // least of its records', each from its own left context, so a path of
  // more, shorter words collects more of that optimism than the search's
  // path could (docs/benchmarks.md, "A prior for the full transform, and a
  // word cost for the lattice pass").
  float lattice_word_insertion_penalty = 0.0f;
  int nbest = 0;  // alternatives in the final result (0 = none)
  // With a device backend or the CUDA search, decode one second of noise at
  // load time, so that the first utterance does not pay for the device's
  // one-time set-up (module loading, library handles, graph captures).
  bool warm_up = true;
  // Keep the features pushed in an utterance so that align() can align its
  // words to senones (fMLLR supervision); also loads the dictionary at
  // construction. Costs feature_dim() floats a frame until
  // discard_features_before() or reset().
  bool keep_features_for_alignment = false;
  ForcedAlignerOptions alignment;
  // Sphinx spectral noise subtraction and silence removal in the front end
  // that compute_features() and recognize() run (sphinx_noise.h), as
  // pocketsphinx does by default (-remove_noise yes -remove_silence yes).
  // They override the model's feat.params; its -vad_* values are kept.
  // feature_options() reports them. A streaming client that cuts frames
  // itself (gpudecoder behind gpufeatures) cannot drop frames and turns
  // remove_silence off; see docs/gpudecoder.md.
  bool remove_noise = true;
  bool remove_silence = true;
  // NoiseOptions::start_at_first_sound for that front end. Off here, so
  // that the defaults above give sphinx_fe's numbers; gpuspeech-transcribe
  // turns it on (it gains on files that begin in noise and changes little
  // elsewhere: docs/benchmarks.md, "The noise estimate started at the first
  // sound").
  bool noise_start_at_first_sound = false;
  // Restore clipped peaks before the front end (DeclipOptions, declipper.h;
  // the model's toolkit has no such stage). On by default: on the degraded
  // sets' clipped condition it took the WER from about 50 % to about 20 %,
  // and it leaves audio without a recurring plateau at its peak level as
  // it is (docs/benchmarks.md, "Restoring clipped peaks").
  bool declip = true;
  // CMN leaves frames with a negative c0 (digital silence) out of its
  // mean, as Sphinx's CMN does (NormOptions::skip_negative_c0). On by
  // default: with the n-gram LM's language weight of 7.5 it gained on
  // most degraded conditions and on LibriVox (docs/benchmarks.md, "The
  // language weight by the graph's kind").
  bool cmn_skip_negative_c0 = true;
  // With the CUDA search: this stream's closure rounds run as lanes of its
  // device's shared launches (the batched search, cuda_round_batcher.h)
  // instead of launches of its own. Same words and times; faster when
  // many streams decode at once (64 or more measured, docs/benchmarks.md),
  // slower for a stream alone. GPUSPEECH_CUDA_BATCH=1 or 0 overrides it.
  bool batched_search = false;

  // The installed pocketsphinx-en-us model, dictionary and LM (the
  // transcribe tool's defaults); paths under `model_root`.
  static RecognizerConfig en_us_defaults(
      const std::string& model_root = "/usr/share/pocketsphinx/model/en-us");
  // The part that decides the shared resources.
  const ResourceOptions& resource_options() const { return *this; }
};

struct RecognitionResult {
  // Words (fillers left out), times, confidences (the hypothesis' and each
  // word's, token_passing.h), and trailing_silence_frames: how long the
  // path has been in silence or fillers since its last word (endpointing).
  Hypothesis best;
  std::vector<Hypothesis> nbest;   // finish() only, when asked for
  bool final = false;              // from finish()
  int64_t frames = 0;              // frames pushed in this utterance
  std::string text() const { return best.text(); }
};

// Wall-clock seconds spent in each stage since the recognizer was made
// (every call waits for its device work, so the split is accurate).
struct RecognizerTimings {
  double features = 0.0;  // recognize() only
  double scoring = 0.0;
  double search = 0.0;
  // The calling thread's CPU time in the same two stages (waits that block
  // cost none; spinning ones do).
  double scoring_cpu = 0.0;
  double search_cpu = 0.0;
};

class Recognizer {
 public:
  // Loads and checks everything; compiles the graph or loads it from the
  // cache. Throws ModelError / GraphInputError / std::runtime_error naming
  // the file at fault, BackendError for a backend that cannot run.
  // `log` (optional) receives what was loaded, the graph's source and size.
  // The resources come from the process's cache (resource_cache.h): loaded
  // here unless another Recognizer with the same files and options holds
  // them.
  explicit Recognizer(const RecognizerConfig& config, std::string* log = nullptr);
  // A stream on resources the caller already holds; config's resource
  // fields (resource_options()) are replaced by those of `resources`.
  Recognizer(std::shared_ptr<const RecognitionResources> resources,
             const RecognizerConfig& config, std::string* log = nullptr);
  ~Recognizer();
  Recognizer(const Recognizer&) = delete;
  Recognizer& operator=(const Recognizer&) = delete;

  const RecognizerConfig& config() const { return config_; }
  // The shared, immutable part of this stream.
  const std::shared_ptr<const RecognitionResources>& resources() const;
  // True when another stream held these resources already when this one
  // was made (they were not loaded for it).
  bool resources_were_shared() const;
  // The front end: the model's (feat.params over pocketsphinx's defaults)
  // with config's remove_noise / remove_silence; and its output width.
  const FeatureOptions& feature_options() const;
  int feature_dim() const;
  const SearchGraph& graph() const;
  Backend& scoring_backend();
  const char* search_backend() const;

  // Scores and searches `num_frames` frames (num_frames x feature_dim()
  // floats). Throws std::logic_error after finish() until reset().
  void push_features(const float* frames, int64_t num_frames);
  // The best path so far: words, stable_words, confidences and
  // trailing_silence_frames. Costs O(live tokens) on the host; called every
  // few hundred ms by a streaming client.
  RecognitionResult partial();
  // The utterance's final result. It may be taken again before reset(),
  // e.g. with the lattice result turned on after a first result without it
  // (set_lattice_result): the pass runs then on the records the search kept.
  RecognitionResult finish();
  // Starts the next utterance.
  void reset();
  // Whether finish() gives the word-lattice pass's result (when the
  // config has one) or the search's Viterbi path; on by default
  // (Searcher::set_lattice_result).
  void set_lattice_result(bool on);

  // One whole utterance from samples in 16-bit units at the model's sample
  // rate: features with feature_options() on the scoring backend, then
  // reset(), push_features() and finish(). With remove_silence the words'
  // frames are mapped back to the audio's frames (audio_frame()), so their
  // times are those of the recording, not of the frames kept;
  // RecognitionResult::frames counts the frames decoded.
  RecognitionResult recognize(const float* samples, int64_t num_samples);

  // One whole utterance from cepstra as the front end's spectral stage
  // makes them, before normalisation and deltas (feature_options().base_dim()
  // floats a frame: the 13 of a sphinx_fe .mfc file, what pocketsphinx_batch
  // decodes with -adcin no): the model's CMN and deltas (postprocess.h; e.g.
  // tidigits' -cmn current and -feat s2_4x), then reset(), push_features()
  // and finish(). std::invalid_argument if `dim` is not base_dim().
  RecognitionResult recognize_cepstra(const float* cepstra, int64_t num_frames, int dim);
  // recognize_cepstra()'s features alone (num_frames x feature_dim()
  // floats), for clients that transform them before decoding; the same
  // checks and errors.
  std::vector<float> features_from_cepstra(const float* cepstra, int64_t num_frames, int dim);

  // The acoustic model, for clients that transform features (fMLLR).
  const AcousticModel& acoustic_model() const;
  // The front end alone, on the scoring backend: samples (16-bit units, the
  // model's rate) -> frames x feature_dim() floats, normalised and with
  // deltas, exactly as recognize() makes them. `cepstra`, when given, also
  // gets the front end's frames before normalisation and deltas (the kept
  // frames' cepstra, feature_options().base_dim() wide): what speaker
  // clustering compares.
  std::vector<float> compute_features(const float* samples, int64_t num_samples,
                                      std::vector<float>* cepstra = nullptr);
  // For the last compute_features(): the audio frame (0-based, 10 ms at
  // en-us' rate) that decoded frame `frame` came from. The identity unless
  // remove_silence dropped frames; frames past the last kept one count on
  // from it.
  int64_t audio_frame(int64_t frame) const;
  // Maps a result's word frames from decoded frames to audio frames
  // (audio_frame()), as recognize() does; for clients that call
  // compute_features() and push_features() themselves.
  void map_to_audio_frames(RecognitionResult& result) const;

  // Aligns words of the current utterance (partial().best.words' stable
  // part, or finish()'s words; frames in utterance numbering) to senones
  // (forced_aligner.h), from the features pushed in this utterance, which
  // the recognizer keeps when config().keep_features_for_alignment is true.
  // The result spans from the first word's first frame to the last word's
  // last frame (empty, first_frame 0, for no words). Throws
  // std::logic_error when features are not kept, std::out_of_range when a
  // word reaches frames discarded or not pushed yet, std::invalid_argument
  // for words out of order.
  FrameAlignment align(const std::vector<HypothesisWord>& words);
  // Frees kept features before `frame` (utterance numbering): a streaming
  // client calls it once it has aligned everything before that frame.
  // Frames already discarded and frames beyond those pushed are fine (the
  // latter discards all). reset() discards everything.
  void discard_features_before(int64_t frame);
  // First frame still kept (utterance numbering); frames [kept_from,
  // frames pushed) can be aligned.
  int64_t features_kept_from() const;

  const SearchStats& search_stats() const;
  const RecognizerTimings& timings() const;

 private:
  // Everything per stream, on the resources in impl_.
  void open_stream(std::string* log);
  // device_id -1: picks the device (device_placement.h).
  void place_on_device(std::string* log);
  // Takes the shared dictionary and makes the aligner (once).
  void make_aligner(std::string* log);

  struct Impl;
  RecognizerConfig config_;
  std::unique_ptr<Impl> impl_;
};

// For its lifetime, finish() gives the search's own best path, the
// word-lattice pass (when configured) left out: what a forced alignment
// wants from a pass whose words only supervise the next (two-pass fMLLR),
// the pass being left to the final decoding. The lattice result is on
// again however the scope ends, so that no later decoding of the stream
// loses it.
class LatticeResultOff {
 public:
  explicit LatticeResultOff(Recognizer& recognizer) : rec_(recognizer) {
    rec_.set_lattice_result(false);
  }
  ~LatticeResultOff() { rec_.set_lattice_result(true); }
  LatticeResultOff(const LatticeResultOff&) = delete;
  LatticeResultOff& operator=(const LatticeResultOff&) = delete;

 private:
  Recognizer& rec_;
};

}  // namespace gpuspeech
