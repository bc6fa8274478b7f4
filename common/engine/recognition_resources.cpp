// Loading the shared recognition resources (recognition_resources.h): the
// acoustic model, the search graph (compiled or cached), the LMs of
// word-end rescoring.
#include "common/engine/recognition_resources.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <utility>

#include "common/file_identity.h"
#include "common/model/fsg.h"
#include "common/model/jsgf.h"
#include "common/model/keyphrase_list.h"
#include "common/model/model_error.h"
#include "common/model/vocabulary_check.h"
#include "common/search/graph_cache.h"
#include "common/search/ngram_image.h"
#include "common/search/lm_rescorer.h"
#include "common/search/token_passing.h"
#include "common/search/word_grammar.h"

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

void ResourceOptions::validate() const {
  graph.validate();
  lm_prune.validate();
  if (model_dir.empty()) throw std::invalid_argument("recognizer: no acoustic model directory");
  if (dictionary.empty()) throw std::invalid_argument("recognizer: no dictionary");
  if (grammar.empty()) throw std::invalid_argument("recognizer: no language model or grammar");
}

namespace {

// The files of a Sphinx model directory that AcousticModel::load reads.
constexpr const char* kModelFiles[] = {"mdef",      "means",   "variances", "mixture_weights",
                                       "transition_matrices", "feat.params", "noisedict",
                                       "sendump",   "feature_transform", "svspec"};

}  // namespace

std::string ResourceOptions::sharing_key() const {
  // The language weight resolved: left to the kind and given as the
  // kind's value make the same graph.
  const GraphCompileOptions resolved =
      grammar_kind == GrammarKind::kNgram ? graph.for_ngram() : graph.for_grammar();
  std::string key = "v1;kind=" + std::string(to_string(grammar_kind)) + ";rule=" + jsgf_rule +
                    ";graph=" + resolved.fingerprint() + ";prune=" + lm_prune.fingerprint() +
                    ";rescore=" + (rescore_with_full_lm ? "1" : "0") + ";";
  for (const char* f : kModelFiles) append_file_identity(key, model_dir + "/" + f);
  append_file_identity(key, dictionary);
  append_file_identity(key, filler_dictionary.empty() ? model_dir + "/noisedict" : filler_dictionary);
  append_file_identity(key, grammar);
  return key;
}

namespace {

void append_log(std::string* log, const std::string& line) {
  if (log != nullptr) *log += line + "\n";
}

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

// The search graph for `c`: n-gram models and grammars through the graph
// cache (graph_cache.h); keyphrase lists, quick to compile and not a cache
// source kind, compiled every time.
// `pruned_lm` (optional) receives the LM the graph was built from when it
// was pruned (null otherwise), and then `full_lm` the LM itself; both are
// read beside the graph on a cache hit (GraphBuildOptions::read_rescoring_lms).
SearchGraph obtain_graph(const ResourceOptions& c, const AcousticModel& am, std::string* log,
                         std::shared_ptr<const NgramModel>* pruned_lm = nullptr,
                         std::shared_ptr<const NgramModel>* full_lm = nullptr) {
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
    opts.read_rescoring_lms = pruned_lm != nullptr;
    GraphBuildResult r = build_search_graph(src, opts);
    for (const std::string& line : r.log) append_log(log, line);
    if (!r.from_cache) append_log(log, r.report.summary());
    append_log(log, "graph: " + std::to_string(r.graph.num_states()) + " states, " +
                        std::to_string(r.graph.num_arcs()) + " arcs" +
                        (r.from_cache ? " (cached " + r.cache_path + ")" : ""));
    if (pruned_lm != nullptr) {  // (a cache hit says so by the pruned LM's file)
      *pruned_lm = r.pruned_lm;
      if (!*pruned_lm && !r.pruned_lm_path.empty())
        *pruned_lm = std::make_shared<const NgramModel>(read_cached_ngram_model(r.pruned_lm_path));
      if (full_lm != nullptr) {
        *full_lm = r.full_lm;
        if (*pruned_lm && !*full_lm)  // (compiled here: not read beside the graph)
          *full_lm = std::make_shared<const NgramModel>(read_ngram_model(c.grammar));
      }
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
  const WordGrammar wg = keyphrase_grammar(list, am.mdef(), dict, c.graph.for_grammar().language_weight);
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

std::shared_ptr<const RecognitionResources> RecognitionResources::load(
    const ResourceOptions& options, std::string* log) {
  options.validate();
  // (make_shared cannot reach the private constructor.)
  std::shared_ptr<RecognitionResources> res(new RecognitionResources());
  RecognitionResources& r = *res;
  r.options_ = options;
  std::string& own_log = r.load_log_;

  r.model_ = AcousticModel::load(options.model_dir);
  for (const std::string& w : r.model_.warnings()) append_log(&own_log, "warning: " + w);
  r.features_ = r.model_.feature_options();  // throws if the front end is not expressible
  r.features_.validate();
  r.feature_dim_ = r.features_.output_dim();
  append_log(&own_log, std::string("acoustic model: ") + options.model_dir + " (" +
                           to_string(r.model_.type()) + ", " +
                           std::to_string(r.model_.mixtures().num_senones) + " senones)");

  const bool rescore = options.rescore_with_full_lm && options.grammar_kind == GrammarKind::kNgram;
  std::shared_ptr<const NgramModel> pruned_lm, full_lm;
  r.graph_ = obtain_graph(options, r.model_, &own_log, rescore ? &pruned_lm : nullptr,
                          rescore ? &full_lm : nullptr);
  if (pruned_lm) {  // the graph has a pruned LM: the full one at word ends
    r.full_lm_ = std::move(full_lm);
    r.pruned_lm_ = std::move(pruned_lm);
    // Made once here so that a word missing from either LM fails the load,
    // not the first stream.
    (void)r.make_rescorer();
  }
  if (r.graph_.num_senones > r.model_.mixtures().num_senones)
    throw std::runtime_error("search graph for " + options.grammar + " uses " +
                             std::to_string(r.graph_.num_senones) + " senones but " +
                             options.model_dir + " has " +
                             std::to_string(r.model_.mixtures().num_senones));

  const ModelDefinition& mdef = r.model_.mdef();
  r.filler_senones_.assign(
      static_cast<size_t>(std::max(mdef.num_senones(), r.graph_.num_senones)), 0);
  for (int p = 0; p < mdef.num_phones(); ++p)
    if (mdef.is_filler(p))
      for (int s : mdef.senones_of(p))
        if (s >= 0 && static_cast<size_t>(s) < r.filler_senones_.size()) r.filler_senones_[s] = 1;
  // What every stream's searcher would check of the graph, once here
  // (the streams are made with GraphCheck::kCheckedByOwner).
  Searcher::check_graph(r.graph_, r.rescores());
  r.state_kinds_ = Searcher::state_kinds(r.graph_, r.filler_senones_);

  if (log != nullptr) *log += own_log;
  return res;
}

std::unique_ptr<LmRescorer> RecognitionResources::make_rescorer() const {
  if (!rescores()) return nullptr;
  return std::make_unique<LmRescorer>(full_lm_, pruned_lm_, graph_.words, graph_.word_is_filler,
                                      options_.graph.for_ngram().language_weight);
}

const Dictionary& RecognitionResources::alignment_dictionary(bool* loaded) const {
  bool parsed = false;
  std::call_once(dictionary_once_, [&] {
    const std::string filler = !options_.filler_dictionary.empty()
                                   ? options_.filler_dictionary
                                   : model_.noise_dictionary_path();
    dictionary_ = std::make_unique<Dictionary>(Dictionary::load(options_.dictionary, filler));
    parsed = true;
  });
  if (loaded != nullptr) *loaded = parsed;
  return *dictionary_;
}

}  // namespace gpuspeech
