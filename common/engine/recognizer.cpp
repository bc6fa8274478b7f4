// The recognition engine (recognizer.h): loading, the search graph (compiled
// or cached), scoring blocks of frames and feeding the searcher.
#include "common/engine/recognizer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/engine/device_placement.h"
#include "common/engine/resource_cache.h"
#include "common/features/feature_pipeline.h"
#include "common/scoring/gaussian_scoring.h"
#include "common/model/acoustic_model.h"
#include "common/model/dictionary.h"
#include "common/features/postprocess.h"
#include "common/search/cpu_searcher.h"
#include "common/search/lm_rescorer.h"
#include "common/seconds_since.h"

#ifdef GPUSPEECH_HAVE_CUDA
#include "common/search/cuda_search_graph.h"
#include "common/search/cuda_searcher.h"
#endif

namespace gpuspeech {

bool batched_search_for(const std::string& mode, int streams) {
  if (mode == "on") return true;
  if (mode == "off") return false;
  if (mode == "auto") return streams >= kBatchedSearchAutoStreams;
  throw std::invalid_argument("must be on, off or auto, got '" + mode + "'");
}

RecognizerConfig RecognizerConfig::en_us_defaults(const std::string& model_root) {
  RecognizerConfig c;
  c.model_dir = model_root + "/en-us";
  c.dictionary = model_root + "/cmudict-en-us.dict";
  c.grammar_kind = GrammarKind::kNgram;
  c.grammar = model_root + "/en-us.lm.bin";
  return c;
}

struct Recognizer::Impl {
  // With device id -1, the device this stream was placed on; first, so that
  // it is released after everything on the device is gone.
  DeviceLease device_lease;
  std::shared_ptr<const RecognitionResources> res;  // model, graph, LMs (shared)
  bool res_shared = false;  // res was held by another stream already
  BackendPtr backend;
  std::unique_ptr<GaussianScorer> scorer;
  // recognize()'s front end, made on first use and kept: on a device its
  // set-up (filterbank and DCT uploads, FFT plans, buffers) costs more than
  // the features of a short utterance.
  std::unique_ptr<FeatureExtractor> extractor;
  // The front end: the model's with config's noise and silence removal.
  FeatureOptions features;
  std::unique_ptr<LmRescorer> rescorer;  // before `searcher`, which uses it
  std::unique_ptr<Searcher> searcher;
  std::vector<float> scores;  // block of frames x senones
#ifdef GPUSPEECH_HAVE_CUDA
  // Scoring on CUDA with the CUDA search on the same device: the scores of
  // a block stay in device memory, where the search reads them
  // (scores_stay_on_device()); null otherwise, the scores passing through
  // `scores` on the host.
  CudaSearcher* device_searcher = nullptr;
  BufferPtr device_scores;  // block of frames x senones, on the scoring backend
#endif
  int64_t frames = 0;
  // Alignment (keep_features_for_alignment): the aligner (on the shared
  // dictionary), and the features of frames [kept_from, frames), stored
  // from kept_offset frames into `kept` (the discarded prefix is dropped
  // lazily, so discarding costs amortised O(1) a frame).
  std::shared_ptr<const ForcedAligner> aligner;  // shared by the streams (immutable)
  std::vector<float> kept;
  int64_t kept_offset = 0;
  int64_t kept_from = 0;
  bool finished = false;
  RecognizerTimings timings;
};

namespace {

void append_log(std::string* log, const std::string& line) {
  if (log != nullptr) *log += line + "\n";
}

#ifdef GPUSPEECH_HAVE_CUDA
// Whether scores go from the scorer to the CUDA search in device memory:
// when the scoring backend is CUDA too (the same device: config's). A
// round trip through the host costs each stream two copies of every
// block's scores (20 KB a frame each way on en-us) on a PCIe bus that
// hundreds of streams share. GPUSPEECH_SCORES_VIA_HOST=1 keeps the round
// trip, to measure what it costs.
bool scores_stay_on_device(const std::string& scoring_backend) {
  if (scoring_backend != "cuda") return false;
  const char* env = std::getenv("GPUSPEECH_SCORES_VIA_HOST");
  return !(env && *env && *env != '0');
}
#endif

// The per-stream settings both constructors check before anything is
// loaded or allocated. Throws std::invalid_argument naming the setting.
void validate_stream_options(const RecognizerConfig& config) {
  config.search.validate();
  if (config.nbest < 0) throw std::invalid_argument("recognizer: nbest must be >= 0");
  if (!(config.lattice_word_insertion_penalty >= 0.0f) ||
      !std::isfinite(config.lattice_word_insertion_penalty))
    throw std::invalid_argument("recognizer: lattice_word_insertion_penalty must be >= 0 and finite");
}

}  // namespace

Recognizer::Recognizer(const RecognizerConfig& config, std::string* log)
    : config_(config), impl_(std::make_unique<Impl>()) {
  validate_stream_options(config_);
  impl_->res = acquire_recognition_resources(config_.resource_options(), log, &impl_->res_shared);
  open_stream(log);
}

Recognizer::Recognizer(std::shared_ptr<const RecognitionResources> resources,
                       const RecognizerConfig& config, std::string* log)
    : config_(config), impl_(std::make_unique<Impl>()) {
  if (!resources) throw std::invalid_argument("recognizer: no resources");
  validate_stream_options(config_);
  static_cast<ResourceOptions&>(config_) = resources->options();
  impl_->res = std::move(resources);
  impl_->res_shared = true;  // the caller holds them
  open_stream(log);
}

void Recognizer::open_stream(std::string* log) {
  Impl& m = *impl_;
  const RecognitionResources& res = *m.res;
  if (config_.device_id < 0) place_on_device(log);
  m.features = res.feature_options();
  m.features.noise.remove_noise = config_.remove_noise;
  m.features.noise.remove_silence = config_.remove_silence;
  m.features.noise.start_at_first_sound = config_.noise_start_at_first_sound;
  m.features.declip.enabled = config_.declip;
  m.features.norm.skip_negative_c0 = config_.cmn_skip_negative_c0;
  m.rescorer = res.make_rescorer();
  if (m.rescorer)
    append_log(log, "word-end rescoring with the full LM " + config_.grammar + " (" +
                        std::to_string(config_.search.lm_histories) + " LM histories per state)");
  if (config_.search.lattice.enabled()) {
    if (!m.rescorer) {
      // Three ways to have no rescorer; say which.
      std::string why = "a grammar or keyphrases";
      if (config_.grammar_kind == GrammarKind::kNgram)
        why = config_.rescore_with_full_lm
                  ? "the LM " + config_.grammar +
                        " was small enough to compile whole into the search graph, so no "
                        "word end is rescored and the pass has no full LM to apply"
                  : "word-end rescoring is off (--no-rescore)";
      throw std::invalid_argument(
          "recognizer: the word-lattice pass needs an n-gram LM searched with word-end "
          "rescoring, not " + why);
    }
    append_log(log, "final results from the word lattice, language weight " +
                        std::to_string(config_.search.lattice.language_weight));
  }
  std::string why;
  m.backend = open_backend(config_.scoring_backend, config_.device_id, &why);
  if (!why.empty()) append_log(log, why);
  ScorerOptions scoring;
  scoring.top_n = config_.top_n;
  scoring.density_floor = config_.density_floor;
  m.scorer = std::make_unique<GaussianScorer>(res.model().mixtures(), *m.backend, scoring);
  if (m.scorer->feature_dim() != res.feature_dim())
    throw std::runtime_error(config_.model_dir + ": the model's Gaussians have " +
                             std::to_string(m.scorer->feature_dim()) +
                             " dimensions but its front end makes " +
                             std::to_string(res.feature_dim()));

  // The lattice pass charges fillers what the graph does, and words what
  // the graph does unless the configuration gives it a cost of its own.
  SearchOptions search_options = config_.search;
  search_options.lattice.word_insertion_penalty = config_.lattice_word_insertion_penalty > 0.0f
                                                      ? config_.lattice_word_insertion_penalty
                                                      : config_.graph.word_insertion_penalty;
  search_options.lattice.silence_prob = config_.graph.silence_prob;
  search_options.lattice.filler_prob = config_.graph.filler_prob;
  std::string search = config_.search_backend;
  if (search == "auto") search = std::string(m.backend->name()) == "cuda" ? "cuda" : "cpu";
  if (search == "cpu") {
    m.searcher = std::make_unique<CpuSearcher>(res.graph(), search_options, m.rescorer.get(),
                                               GraphCheck::kCheckedByOwner);
  } else if (search == "cuda") {
#ifdef GPUSPEECH_HAVE_CUDA
    // The graph's device copy is shared by every stream on this device.
    const int device = config_.device_id;
    std::shared_ptr<const CudaSearchGraph> device_graph = res.attachment<CudaSearchGraph>(
        "cuda-search-graph:" + std::to_string(device),
        [&] { return CudaSearchGraph::upload(res.graph(), device); });
    auto searcher = std::make_unique<CudaSearcher>(res.graph(), search_options, device,
                                                   m.rescorer.get(), std::move(device_graph),
                                                   GraphCheck::kCheckedByOwner,
                                                   config_.batched_search);
    if (scores_stay_on_device(m.backend->name())) m.device_searcher = searcher.get();
    m.searcher = std::move(searcher);
#else
    throw BackendError("search backend cuda: this build has no CUDA");
#endif
  } else {
    throw std::invalid_argument("recognizer: search backend must be auto, cpu or cuda, got '" +
                                config_.search_backend + "'");
  }
  // Which senones are silence and noise: partial() then tells a path in
  // silence from one inside a word (Hypothesis::trailing_silence_frames).
  m.searcher->set_state_kinds(res.state_kinds());
  if (config_.keep_features_for_alignment) make_aligner(log);
  std::string scores_path;
#ifdef GPUSPEECH_HAVE_CUDA
  if (m.device_searcher != nullptr) scores_path = " (scores stay in device memory)";
#endif
  append_log(log, std::string("scoring on ") + m.backend->name() + " (" +
                      m.backend->device_name() + "), search on " + m.searcher->name() +
                      scores_path);
  if (config_.warm_up &&
      (std::string(m.backend->name()) != "cpu" || std::string(m.searcher->name()) != "cpu")) {
    // The first utterance on a device pays once for lazy kernel-module
    // loading, the BLAS and FFT libraries' set-up and the search's CUDA
    // graph captures (about 0.17 s on an H100): pay it here, with loading,
    // on one second of deterministic low-level noise. reset() afterwards
    // leaves nothing of it in the results.
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = static_cast<int64_t>(res.feature_options().frame.sample_rate);
    std::vector<float> noise(static_cast<size_t>(n));
    uint32_t x = 12345;
    for (float& v : noise) {
      x = x * 1103515245u + 12345u;
      v = static_cast<float>(static_cast<int>((x >> 16) % 201) - 100);
    }
    recognize(noise.data(), n);
    m.timings = RecognizerTimings{};
    append_log(log, "warm-up: " + std::to_string(seconds_since(t0)) + " s");
  }
  reset();
}

// Device id -1: the device of the stream's backend with the fewest streams
// (device_placement.h). The backend is the scoring one when it is a device
// backend ("auto" meaning cuda when a CUDA device answers), else cuda when
// the search runs there; on the CPU alone, device 0 (unused).
void Recognizer::place_on_device(std::string* log) {
  if (config_.device_id != -1)
    throw std::invalid_argument("recognizer: device id must be >= 0, or -1 to choose, got " +
                                std::to_string(config_.device_id));
  std::string kind = config_.scoring_backend;
  if (kind == "auto") kind = backend_device_count("cuda") > 0 ? "cuda" : "auto";
  if (kind != "cuda" && kind != "opencl" && config_.search_backend == "cuda") kind = "cuda";
  const int count = kind == "cuda" || kind == "opencl" ? backend_device_count(kind) : 0;
  if (count == 0) {
    config_.device_id = 0;
    return;
  }
  impl_->device_lease = DeviceLease(process_device_placement(kind, count));
  config_.device_id = impl_->device_lease.device();
  std::string load;
  for (int n : process_device_placement(kind, count).streams_per_device())
    load += (load.empty() ? "" : ", ") + std::to_string(n);
  append_log(log, "device-id -1: placed on " + kind + " device " +
                      std::to_string(config_.device_id) + " of " + std::to_string(count) +
                      " (streams per device now: " + load + ")");
}

Recognizer::~Recognizer() = default;

const std::shared_ptr<const RecognitionResources>& Recognizer::resources() const {
  return impl_->res;
}
bool Recognizer::resources_were_shared() const { return impl_->res_shared; }
const FeatureOptions& Recognizer::feature_options() const { return impl_->features; }
int Recognizer::feature_dim() const { return impl_->res->feature_dim(); }
const SearchGraph& Recognizer::graph() const { return impl_->res->graph(); }
Backend& Recognizer::scoring_backend() { return *impl_->backend; }
const char* Recognizer::search_backend() const { return impl_->searcher->name(); }
const SearchStats& Recognizer::search_stats() const { return impl_->searcher->stats(); }
const RecognizerTimings& Recognizer::timings() const { return impl_->timings; }

void Recognizer::set_lattice_result(bool on) { impl_->searcher->set_lattice_result(on); }

void Recognizer::reset() {
  impl_->searcher->reset();
  impl_->frames = 0;
  impl_->kept.clear();
  impl_->kept_offset = 0;
  impl_->kept_from = 0;
  impl_->finished = false;
}

void Recognizer::push_features(const float* frames, int64_t num_frames) {
  Impl& m = *impl_;
  if (m.finished) throw std::logic_error("recognizer: push_features() after finish(); call reset()");
  if (num_frames < 0) throw std::invalid_argument("recognizer: negative frame count");
  if (num_frames == 0) return;
  if (frames == nullptr) throw std::invalid_argument("recognizer: null features");
  const bool keep = config_.keep_features_for_alignment;
  // Kept features must stay exactly the frames the search has seen, [kept_from,
  // frames): each block is appended only once the searcher has taken it, so
  // a scoring or search failure part-way leaves both at the last good block.
  // The room is reserved first so that the appends themselves cannot throw.
  const int feature_dim = m.res->feature_dim();
  if (keep) m.kept.reserve(m.kept.size() + static_cast<size_t>(num_frames) * feature_dim);
  const int senones = m.scorer->num_senones();
  const int64_t block = 256;  // frames scored per call: bounded scratch
  const size_t block_scores = static_cast<size_t>(std::min(block, num_frames)) * senones;
#ifdef GPUSPEECH_HAVE_CUDA
  if (m.device_searcher != nullptr) {
    if (!m.device_scores || m.device_scores->size() < block_scores)
      m.device_scores = m.backend->alloc(block_scores);
  } else
#endif
    m.scores.resize(block_scores);
  for (int64_t f0 = 0; f0 < num_frames; f0 += block) {
    const int64_t n = std::min(block, num_frames - f0);
    const float* x = frames + f0 * feature_dim;
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
#ifdef GPUSPEECH_HAVE_CUDA
    if (m.device_searcher != nullptr) {
      m.scorer->score(x, n, *m.device_scores);
      m.backend->synchronize();  // the search reads them from another CUDA stream
    } else
#endif
      m.scorer->score(x, n, m.scores.data());
    const auto t1 = std::chrono::steady_clock::now();
    const double c1 = thread_cpu_seconds();
#ifdef GPUSPEECH_HAVE_CUDA
    if (m.device_searcher != nullptr)
      m.device_searcher->advance_device(cuda_buffer_pointer(*m.device_scores), n, senones);
    else
#endif
      m.searcher->advance(m.scores.data(), n, senones);
    m.timings.scoring += std::chrono::duration<double>(t1 - t0).count();
    m.timings.search += seconds_since(t1);
    m.timings.scoring_cpu += c1 - c0;
    m.timings.search_cpu += thread_cpu_seconds() - c1;
    if (keep) m.kept.insert(m.kept.end(), x, x + n * feature_dim);
    m.frames += n;
  }
}

RecognitionResult Recognizer::partial() {
  RecognitionResult r;
  r.best = impl_->searcher->partial();
  r.frames = impl_->frames;
  return r;
}

RecognitionResult Recognizer::finish() {
  Impl& m = *impl_;
  RecognitionResult r;
  r.best = m.searcher->best();
  if (config_.nbest > 0) r.nbest = m.searcher->nbest(config_.nbest);
  r.final = true;
  r.frames = m.frames;
  m.finished = true;
  return r;
}

const AcousticModel& Recognizer::acoustic_model() const { return impl_->res->model(); }

std::vector<float> Recognizer::compute_features(const float* samples, int64_t num_samples,
                                                std::vector<float>* cepstra) {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  const FeatureOptions& features = m.features;
  if (!m.extractor) m.extractor = std::make_unique<FeatureExtractor>(features, *m.backend);
  FeatureMatrix feats = m.extractor->compute(samples, num_samples);
  if (cepstra != nullptr) *cepstra = feats.data;
  const std::vector<uint8_t> learn = m.extractor->cmn_learn_rows();
  postprocess_utterance(features, feats, &learn);
  m.timings.features += seconds_since(t0);
  return std::move(feats.data);
}

RecognitionResult Recognizer::recognize(const float* samples, int64_t num_samples) {
  const std::vector<float> feats = compute_features(samples, num_samples);
  reset();
  push_features(feats.data(), static_cast<int64_t>(feats.size()) / feature_dim());
  RecognitionResult r = finish();
  map_to_audio_frames(r);
  return r;
}

int64_t Recognizer::audio_frame(int64_t frame) const {
  if (!impl_->extractor || frame < 0) return frame;
  const std::vector<int64_t>& kept = impl_->extractor->kept_frames();
  if (kept.empty()) return frame;
  const int64_t n = static_cast<int64_t>(kept.size());
  if (frame < n) return kept[static_cast<size_t>(frame)];
  return kept.back() + (frame - n + 1);
}

// Word frames index the frames decoded; users read them as times in the
// recording (--times, subtitles), so they go back to the audio's clock.
// pocketsphinx reports them on the kept frames' clock instead, where a word
// after a removed pause seems to start early.
void Recognizer::map_to_audio_frames(RecognitionResult& result) const {
  auto map = [this](Hypothesis& h) {
    for (HypothesisWord& w : h.words) {
      w.start_frame = static_cast<int32_t>(audio_frame(w.start_frame));
      w.end_frame = static_cast<int32_t>(audio_frame(w.end_frame));
    }
  };
  map(result.best);
  for (Hypothesis& h : result.nbest) map(h);
}

// The aligner reads the shared dictionary (parsed by the first stream
// that aligns: only the aligner needs it, the graph itself usually comes
// from the cache). It is immutable (align() is const), so the streams on
// these resources with the same alignment options share one: its
// per-Gaussian tables are made once, not per stream.
void Recognizer::make_aligner(std::string* log) {
  Impl& m = *impl_;
  if (m.aligner) return;
  bool parsed = false;
  const Dictionary& dictionary = m.res->alignment_dictionary(&parsed);
  const ForcedAlignerOptions& opt = config_.alignment;
  const RecognitionResources& res = *m.res;
  // The key holds every field of ForcedAlignerOptions.
  m.aligner = m.res->attachment<ForcedAligner>(
      std::string("forced-aligner:") + (opt.align_gaps_to_silence ? "gaps" : "words") +
          (opt.use_transition_probs ? ":tp" : ":no-tp"),
      [&res, &dictionary, &opt] {
        return std::make_shared<const ForcedAligner>(res.model(), dictionary, opt);
      });
  append_log(log, "alignment: features kept, dictionary " + config_.dictionary + " (" +
                      std::to_string(dictionary.num_words()) + " words" +
                      (parsed ? "" : ", shared") + ")");
}

FrameAlignment Recognizer::align(const std::vector<HypothesisWord>& words) {
  Impl& m = *impl_;
  if (!config_.keep_features_for_alignment)
    throw std::logic_error(
        "recognizer: align() needs the features, and keep_features_for_alignment is off");
  FrameAlignment empty;
  if (words.empty()) return empty;
  const int64_t first = words.front().start_frame;
  const int64_t last = words.back().end_frame;  // inclusive
  if (first < m.kept_from)
    throw std::out_of_range("recognizer: align(): word '" + words.front().text +
                            "' starts at frame " + std::to_string(first) +
                            ", but the features before frame " + std::to_string(m.kept_from) +
                            " were discarded (discard_features_before)");
  if (last >= m.frames)
    throw std::out_of_range("recognizer: align(): word '" + words.back().text +
                            "' ends at frame " + std::to_string(last) + ", but only " +
                            std::to_string(m.frames) + " frames were pushed");
  if (last < first)
    throw std::invalid_argument("recognizer: align(): the last word ends (frame " +
                                std::to_string(last) + ") before the first starts (frame " +
                                std::to_string(first) + ")");
  // keep_features_for_alignment made the aligner at construction.
  const float* feats =
      m.kept.data() + (first - m.kept_from + m.kept_offset) * static_cast<int64_t>(feature_dim());
  return m.aligner->align(feats, first, last - first + 1, words);
}

void Recognizer::discard_features_before(int64_t frame) {
  Impl& m = *impl_;
  frame = std::min(frame, m.frames);
  if (frame <= m.kept_from) return;
  m.kept_offset += frame - m.kept_from;
  m.kept_from = frame;
  // Drop the discarded prefix once it is at least half the buffer.
  const int dim = feature_dim();
  const int64_t stored = static_cast<int64_t>(m.kept.size()) / std::max(1, dim);
  if (2 * m.kept_offset >= stored) {
    m.kept.erase(m.kept.begin(), m.kept.begin() + m.kept_offset * dim);
    m.kept_offset = 0;
  }
}

int64_t Recognizer::features_kept_from() const { return impl_->kept_from; }

std::vector<float> Recognizer::features_from_cepstra(const float* cepstra, int64_t num_frames,
                                                    int dim) {
  // The stream's own options: the model's front end with this recognizer's CMN rule
  // (RecognizerConfig::cmn_skip_negative_c0); noise removal works on spectra
  // and has nothing to do here.
  const FeatureOptions& opts = impl_->features;
  if (dim != opts.base_dim())
    throw std::invalid_argument("recognizer: the model's front end makes " +
                                std::to_string(opts.base_dim()) +
                                " cepstra a frame before deltas, the input has " +
                                std::to_string(dim));
  if (num_frames < 0) throw std::invalid_argument("recognizer: negative frame count");
  if (num_frames > 0 && cepstra == nullptr) throw std::invalid_argument("recognizer: null cepstra");
  // A NaN or infinity would spread through CMN to every frame; say where it is.
  for (int64_t i = 0; i < num_frames * static_cast<int64_t>(dim); ++i)
    if (!std::isfinite(cepstra[i]))
      throw std::invalid_argument("recognizer: cepstra frame " + std::to_string(i / dim) +
                                  " coefficient " + std::to_string(i % dim) +
                                  " is not a finite number");
  const auto t0 = std::chrono::steady_clock::now();
  FeatureMatrix feats;
  feats.rows = num_frames;
  feats.dim = dim;
  feats.data.assign(cepstra, cepstra + num_frames * static_cast<int64_t>(dim));
  postprocess_utterance(opts, feats);
  impl_->timings.features += seconds_since(t0);
  return std::move(feats.data);
}

RecognitionResult Recognizer::recognize_cepstra(const float* cepstra, int64_t num_frames,
                                                int dim) {
  const std::vector<float> feats = features_from_cepstra(cepstra, num_frames, dim);
  reset();
  push_features(feats.data(), static_cast<int64_t>(feats.size()) / feature_dim());
  return finish();
}

}  // namespace gpuspeech
