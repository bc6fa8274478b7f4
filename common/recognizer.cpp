// The recognition engine (recognizer.h): loading, the search graph (compiled
// or cached), scoring blocks of frames and feeding the searcher.
#include "common/recognizer.h"

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

#include "common/backend_registry.h"
#include "common/feature_pipeline.h"
#include "common/gaussian_scoring.h"
#include "common/model/acoustic_model.h"
#include "common/model/dictionary.h"
#include "common/model/fsg.h"
#include "common/model/jsgf.h"
#include "common/model/keyphrase_list.h"
#include "common/model/model_error.h"
#include "common/model/ngram_model.h"
#include "common/model/vocabulary_check.h"
#include "common/model/word_graph.h"
#include "common/postprocess.h"
#include "common/search/cpu_searcher.h"
#include "common/search/graph_cache.h"
#include "common/search/lm_rescorer.h"
#include "common/search/word_grammar.h"

#ifdef GPUSPEECH_HAVE_CUDA
#include "common/search/cuda_searcher.h"
#endif

namespace gpuspeech {

const char* to_string(GrammarKind kind) {
  switch (kind) {
    case GrammarKind::kNgram: return "lm";
    case GrammarKind::kJsgf: return "jsgf";
    case GrammarKind::kFsg: return "fsg";
    case GrammarKind::kKeyphrases: return "kws";
  }
  return "?";
}

RecognizerConfig RecognizerConfig::en_us_defaults(const std::string& model_root) {
  RecognizerConfig c;
  c.model_dir = model_root + "/en-us";
  c.dictionary = model_root + "/cmudict-en-us.dict";
  c.grammar_kind = GrammarKind::kNgram;
  c.grammar = model_root + "/en-us.lm.bin";
  return c;
}

namespace {

#ifdef GPUSPEECH_HAVE_OPENFST
// Keyword spotting as a grammar: one state that loops through either any
// phone of the model (a filler pseudo-word "+PHONE+" per base phone, at
// -ln(phone_loop_penalty) each) or one of the keyphrases (entered at
// -ln(threshold)), so that a keyphrase wins where it explains the audio
// better than free phones by more than its threshold. The compiler scales
// grammar costs by the language weight; these are divided by it first so
// that they act unscaled, as pocketsphinx's kws search applies them.
constexpr double kKeyphraseDefaultThreshold = 1.0;  // pocketsphinx -kws_threshold
constexpr double kPhoneLoopPenalty = 0.1;           // pocketsphinx -kws_plp

WordGrammar keyphrase_grammar(const KeyphraseList& list, const ModelDefinition& mdef,
                              Dictionary& dict, float language_weight) {
  WordGrammar w;
  w.source = list.source;
  w.start = w.add_state();
  w.final_cost[w.start] = 0.0f;
  const float scale = 1.0f / language_weight;
  for (int p = 0; p < mdef.num_base_phones(); ++p) {
    if (mdef.is_filler(p)) continue;
    const std::string& phone = mdef.base_phone_name(p);
    const std::string name = "+" + phone + "+";
    if (!dict.contains(name)) dict.add_pronunciation(name, {phone}, true);
    w.add_arc(w.start, w.start, w.word_id(name),
              static_cast<float>(-std::log(kPhoneLoopPenalty)) * scale);
  }
  for (const Keyphrase& k : list.phrases) {
    if (k.words.empty()) continue;
    const double th = k.threshold.value_or(kKeyphraseDefaultThreshold);
    int32_t from = w.start;
    for (size_t i = 0; i < k.words.size(); ++i) {
      const int32_t to = i + 1 < k.words.size() ? w.add_state() : w.start;
      const float cost = i == 0 ? static_cast<float>(-std::log(th)) * scale : 0.0f;
      w.add_arc(from, to, w.word_id(k.words[i]), cost);
      from = to;
    }
  }
  return w;
}
#endif

}  // namespace

struct Recognizer::Impl {
  AcousticModel model;
  FeatureOptions features;
  int feature_dim = 0;
  SearchGraph graph;
  BackendPtr backend;
  std::unique_ptr<GaussianScorer> scorer;
  // recognize()'s front end, made on first use and kept: on a device its
  // set-up (filterbank and DCT uploads, FFT plans, buffers) costs more than
  // the features of a short utterance.
  std::unique_ptr<FeatureExtractor> extractor;
  std::unique_ptr<LmRescorer> rescorer;  // before `searcher`, which uses it
  std::unique_ptr<Searcher> searcher;
  std::vector<float> scores;  // block of frames x senones
  int64_t frames = 0;
  // Alignment (keep_features_for_alignment): the dictionary, loaded once,
  // the aligner, and the features of frames [kept_from, frames), stored
  // from kept_offset frames into `kept` (the discarded prefix is dropped
  // lazily, so discarding costs amortised O(1) a frame).
  std::unique_ptr<Dictionary> dictionary;
  std::unique_ptr<ForcedAligner> aligner;
  std::vector<float> kept;
  int64_t kept_offset = 0;
  int64_t kept_from = 0;
  bool finished = false;
  RecognizerTimings timings;
};

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

namespace {

void append_log(std::string* log, const std::string& line) {
  if (log != nullptr) *log += line + "\n";
}

// The search graph for `c`: n-gram models and grammars through the graph
// cache (graph_cache.h); keyphrase lists, quick to compile and not a cache
// source kind, compiled every time.
// `pruned_lm` (optional) receives the LM the graph was built from when it
// was pruned (null otherwise).
SearchGraph obtain_graph(const RecognizerConfig& c, const AcousticModel& am, std::string* log,
                         std::shared_ptr<const NgramModel>* pruned_lm = nullptr) {
  if (c.grammar_kind != GrammarKind::kKeyphrases) {
    GraphSources src;
    src.model_dir = c.model_dir;
    src.dictionary = c.dictionary;
    src.filler_dictionary = c.filler_dictionary;
    src.kind = c.grammar_kind == GrammarKind::kNgram  ? GraphSourceKind::kNgram
               : c.grammar_kind == GrammarKind::kJsgf ? GraphSourceKind::kJsgf
                                                      : GraphSourceKind::kFsg;
    src.grammar = c.grammar;
    src.jsgf_rule = c.jsgf_rule;
    GraphBuildOptions opts;
    opts.compile = c.graph;
    if (c.grammar_kind == GrammarKind::kNgram) opts.prune = c.lm_prune;
    opts.cache_dir = c.cache_dir;
    GraphBuildResult r = build_search_graph(src, opts);
    for (const std::string& line : r.log) append_log(log, line);
    if (!r.from_cache) append_log(log, r.report.summary());
    append_log(log, "graph: " + std::to_string(r.graph.num_states()) + " states, " +
                        std::to_string(r.graph.num_arcs()) + " arcs" +
                        (r.from_cache ? " (cached " + r.cache_path + ")" : ""));
    if (pruned_lm != nullptr) {  // (a cache hit says so by the pruned LM's file)
      *pruned_lm = r.pruned_lm;
      if (!*pruned_lm && !r.pruned_lm_path.empty())
        *pruned_lm = std::make_shared<const NgramModel>(read_ngram_model(r.pruned_lm_path));
    }
    return std::move(r.graph);
  }
#ifdef GPUSPEECH_HAVE_OPENFST
  const std::string filler =
      !c.filler_dictionary.empty() ? c.filler_dictionary : am.noise_dictionary_path();
  Dictionary dict = Dictionary::load(c.dictionary, filler);
  KeyphraseList list = read_keyphrase_list(c.grammar);
  for (const std::string& w : list.warnings) append_log(log, "warning: " + w);
  // As pocketsphinx does, a phrase with a word the dictionary lacks is left
  // out with a warning; only a list with nothing left is an error.
  std::vector<Keyphrase> usable;
  for (const Keyphrase& k : list.phrases) {
    const std::vector<std::string> missing = missing_words(k.words, dict);
    if (missing.empty()) {
      usable.push_back(k);
      continue;
    }
    std::string names;
    for (const std::string& w : missing) names += (names.empty() ? "" : ", ") + w;
    append_log(log, "warning: " + c.grammar + ":" + std::to_string(k.line) + ": keyphrase '" +
                        k.text() + "' left out, not in the dictionary: " + names);
  }
  if (usable.empty()) check_words(list, dict);  // throws, naming the words
  list.phrases = std::move(usable);
  const WordGrammar wg = keyphrase_grammar(list, am.mdef(), dict, c.graph.language_weight);
  GraphCompileReport report;
  SearchGraph g = compile_grammar_graph(am.mdef(), am.transitions(), dict, wg, c.graph, &report);
  append_log(log, report.summary());
  return g;
#else
  (void)am;
  throw std::runtime_error(c.grammar + ": keyphrase spotting needs the graph compiler, and this "
                           "build has none (OpenFst)");
#endif
}

}  // namespace

Recognizer::Recognizer(const RecognizerConfig& config, std::string* log)
    : config_(config), impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  config_.search.validate();
  config_.graph.validate();
  config_.lm_prune.validate();
  if (config_.model_dir.empty()) throw std::invalid_argument("recognizer: no acoustic model directory");
  if (config_.dictionary.empty()) throw std::invalid_argument("recognizer: no dictionary");
  if (config_.grammar.empty()) throw std::invalid_argument("recognizer: no language model or grammar");
  if (config_.nbest < 0) throw std::invalid_argument("recognizer: nbest must be >= 0");

  m.model = AcousticModel::load(config_.model_dir);
  for (const std::string& w : m.model.warnings()) append_log(log, "warning: " + w);
  m.features = m.model.feature_options();  // throws if the front end is not expressible
  m.features.validate();
  m.feature_dim = m.features.output_dim();
  append_log(log, std::string("acoustic model: ") + config_.model_dir + " (" +
                      to_string(m.model.type()) + ", " +
                      std::to_string(m.model.mixtures().num_senones) + " senones)");

  std::shared_ptr<const NgramModel> pruned_lm;
  const bool rescore =
      config_.rescore_with_full_lm && config_.grammar_kind == GrammarKind::kNgram;
  m.graph = obtain_graph(config_, m.model, log, rescore ? &pruned_lm : nullptr);
  if (pruned_lm) {  // the graph has a pruned LM: the full one at word ends
    auto full = std::make_shared<const NgramModel>(read_ngram_model(config_.grammar));
    m.rescorer = std::make_unique<LmRescorer>(full, pruned_lm, m.graph.words,
                                              m.graph.word_is_filler,
                                              config_.graph.language_weight);
    append_log(log, "word-end rescoring with the full LM " + config_.grammar + " (" +
                        std::to_string(config_.search.lm_histories) + " LM histories per state)");
  }
  if (m.graph.num_senones > m.model.mixtures().num_senones)
    throw std::runtime_error("search graph for " + config_.grammar + " uses " +
                             std::to_string(m.graph.num_senones) + " senones but " +
                             config_.model_dir + " has " +
                             std::to_string(m.model.mixtures().num_senones));

  std::string why;
  m.backend = open_backend(config_.scoring_backend, config_.device_id, &why);
  if (!why.empty()) append_log(log, why);
  ScorerOptions scoring;
  scoring.top_n = config_.top_n;
  m.scorer = std::make_unique<GaussianScorer>(m.model.mixtures(), *m.backend, scoring);
  if (m.scorer->feature_dim() != m.feature_dim)
    throw std::runtime_error(config_.model_dir + ": the model's Gaussians have " +
                             std::to_string(m.scorer->feature_dim()) +
                             " dimensions but its front end makes " +
                             std::to_string(m.feature_dim));

  std::string search = config_.search_backend;
  if (search == "auto") search = std::string(m.backend->name()) == "cuda" ? "cuda" : "cpu";
  if (search == "cpu") {
    m.searcher = std::make_unique<CpuSearcher>(m.graph, config_.search, m.rescorer.get());
  } else if (search == "cuda") {
#ifdef GPUSPEECH_HAVE_CUDA
    m.searcher = std::make_unique<CudaSearcher>(m.graph, config_.search, config_.device_id,
                                                m.rescorer.get());
#else
    throw BackendError("search backend cuda: this build has no CUDA");
#endif
  } else {
    throw std::invalid_argument("recognizer: search backend must be auto, cpu or cuda, got '" +
                                config_.search_backend + "'");
  }
  // Which senones are silence and noise: partial() then tells a path in
  // silence from one inside a word (Hypothesis::trailing_silence_frames).
  {
    const ModelDefinition& mdef = m.model.mdef();
    std::vector<uint8_t> filler_senones(
        static_cast<size_t>(std::max(mdef.num_senones(), m.graph.num_senones)), 0);
    for (int p = 0; p < mdef.num_phones(); ++p)
      if (mdef.is_filler(p))
        for (int s : mdef.senones_of(p))
          if (s >= 0 && static_cast<size_t>(s) < filler_senones.size()) filler_senones[s] = 1;
    m.searcher->set_filler_senones(filler_senones);
  }
  if (config_.keep_features_for_alignment) make_aligner(log);
  append_log(log, std::string("scoring on ") + m.backend->name() + " (" +
                      m.backend->device_name() + "), search on " + m.searcher->name());
  if (config_.warm_up &&
      (std::string(m.backend->name()) != "cpu" || std::string(m.searcher->name()) != "cpu")) {
    // The first utterance on a device pays once for lazy kernel-module
    // loading, the BLAS and FFT libraries' set-up and the search's CUDA
    // graph captures (about 0.17 s on an H100): pay it here, with loading,
    // on one second of deterministic low-level noise. reset() afterwards
    // leaves nothing of it in the results.
    const auto t0 = std::chrono::steady_clock::now();
    const int64_t n = static_cast<int64_t>(m.features.frame.sample_rate);
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

Recognizer::~Recognizer() = default;

const FeatureOptions& Recognizer::feature_options() const { return impl_->features; }
int Recognizer::feature_dim() const { return impl_->feature_dim; }
const SearchGraph& Recognizer::graph() const { return impl_->graph; }
Backend& Recognizer::scoring_backend() { return *impl_->backend; }
const char* Recognizer::search_backend() const { return impl_->searcher->name(); }
const SearchStats& Recognizer::search_stats() const { return impl_->searcher->stats(); }
const RecognizerTimings& Recognizer::timings() const { return impl_->timings; }

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
  if (keep) m.kept.reserve(m.kept.size() + static_cast<size_t>(num_frames) * m.feature_dim);
  const int senones = m.scorer->num_senones();
  const int64_t block = 256;  // frames scored per call: bounded host scratch
  m.scores.resize(static_cast<size_t>(std::min(block, num_frames)) * senones);
  for (int64_t f0 = 0; f0 < num_frames; f0 += block) {
    const int64_t n = std::min(block, num_frames - f0);
    const float* x = frames + f0 * m.feature_dim;
    const auto t0 = std::chrono::steady_clock::now();
    m.scorer->score(x, n, m.scores.data());
    const auto t1 = std::chrono::steady_clock::now();
    m.searcher->advance(m.scores.data(), n, senones);
    m.timings.scoring += std::chrono::duration<double>(t1 - t0).count();
    m.timings.search += seconds_since(t1);
    if (keep) m.kept.insert(m.kept.end(), x, x + n * m.feature_dim);
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

const AcousticModel& Recognizer::acoustic_model() const { return impl_->model; }

std::vector<float> Recognizer::compute_features(const float* samples, int64_t num_samples) {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  if (!m.extractor) m.extractor = std::make_unique<FeatureExtractor>(m.features, *m.backend);
  FeatureMatrix feats = m.extractor->compute(samples, num_samples);
  postprocess_utterance(m.features, feats);
  m.timings.features += seconds_since(t0);
  return std::move(feats.data);
}

RecognitionResult Recognizer::recognize(const float* samples, int64_t num_samples) {
  const std::vector<float> feats = compute_features(samples, num_samples);
  reset();
  push_features(feats.data(), static_cast<int64_t>(feats.size()) / impl_->feature_dim);
  return finish();
}

// The dictionary the graph was compiled from (with the same filler
// dictionary), parsed once per recognizer: only the aligner needs it, the
// graph itself usually comes from the cache.
void Recognizer::make_aligner(std::string* log) {
  Impl& m = *impl_;
  if (m.aligner) return;
  const std::string filler = !config_.filler_dictionary.empty() ? config_.filler_dictionary
                                                                : m.model.noise_dictionary_path();
  m.dictionary = std::make_unique<Dictionary>(Dictionary::load(config_.dictionary, filler));
  m.aligner = std::make_unique<ForcedAligner>(m.model, *m.dictionary, config_.alignment);
  append_log(log, "alignment: features kept, dictionary " + config_.dictionary + " (" +
                      std::to_string(m.dictionary->num_words()) + " words)");
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
      m.kept.data() + (first - m.kept_from + m.kept_offset) * static_cast<int64_t>(m.feature_dim);
  return m.aligner->align(feats, first, last - first + 1, words);
}

void Recognizer::discard_features_before(int64_t frame) {
  Impl& m = *impl_;
  frame = std::min(frame, m.frames);
  if (frame <= m.kept_from) return;
  m.kept_offset += frame - m.kept_from;
  m.kept_from = frame;
  // Drop the discarded prefix once it is at least half the buffer.
  const int64_t stored = static_cast<int64_t>(m.kept.size()) / std::max(1, m.feature_dim);
  if (2 * m.kept_offset >= stored) {
    m.kept.erase(m.kept.begin(), m.kept.begin() + m.kept_offset * m.feature_dim);
    m.kept_offset = 0;
  }
}

int64_t Recognizer::features_kept_from() const { return impl_->kept_from; }

std::vector<float> Recognizer::features_from_cepstra(const float* cepstra, int64_t num_frames,
                                                    int dim) {
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
  push_features(feats.data(), static_cast<int64_t>(feats.size()) / impl_->feature_dim);
  return finish();
}

}  // namespace gpuspeech
