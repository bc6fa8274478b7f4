// The graph compiler (graph_compiler.h has the pipeline; docs/graph-compiler.md
// the reasoning). Label spaces used along the way:
//
//   G     words: 1 + graph word id; back-off "#0" = num_words + 1 (input
//         side only; its output is epsilon).
//   L, LG input: position-tagged phones 1 + 4 * base + position (Sphinx's
//         position numbers: 0 internal, 1 begin, 2 end, 3 single), then the
//         disambiguation symbols #0, #1, ... from first_disambig.
//   HCLG input: 1 + index of an "HMM state symbol" (base phone, word
//         position, transition matrix, emitting state, senone), then the
//         disambiguation symbols from kHmmDisambigBase; 0 for the epsilon
//         arcs that carry word labels at word ends.
#include "common/search/graph_compiler.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "common/model/acoustic_model.h"
#include "common/model/model_error.h"
#include "common/model/ngram_model.h"
#include "common/model/vocabulary_check.h"
#include "common/search/phone_context.h"

#ifdef GPUSPEECH_HAVE_OPENFST
#include <fst/fstlib.h>
#endif

namespace gpuspeech {

int64_t peak_rss_bytes() {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

GraphCompileOptions GraphCompileOptions::for_ngram() const {
  GraphCompileOptions o = *this;
  if (o.language_weight == kLanguageWeightByKind) o.language_weight = kNgramLanguageWeight;
  return o;
}

GraphCompileOptions GraphCompileOptions::for_grammar() const {
  GraphCompileOptions o = *this;
  if (o.language_weight == kLanguageWeightByKind) o.language_weight = kGrammarLanguageWeight;
  return o;
}

void GraphCompileOptions::validate() const {
  auto bad = [](const std::string& why) { throw std::invalid_argument("graph options: " + why); };
  if (language_weight != kLanguageWeightByKind &&
      (!(language_weight > 0) || !std::isfinite(language_weight)))
    bad("language weight must be > 0");
  if (!(word_insertion_penalty > 0) || !std::isfinite(word_insertion_penalty))
    bad("word insertion penalty must be > 0");
  if (!(silence_prob > 0 && silence_prob <= 1)) bad("silence probability must be in (0, 1]");
  if (!(filler_prob > 0 && filler_prob <= 1)) bad("filler probability must be in (0, 1]");
  if (!(phone_insertion_penalty > 0) || !std::isfinite(phone_insertion_penalty))
    bad("phone insertion penalty must be > 0");
  if (max_copied_arcs < 0) bad("max_copied_arcs must be >= 0");
  if (max_states < 1) bad("max_states must be >= 1");
}

std::string GraphCompileOptions::fingerprint() const {
  std::ostringstream s;
  s.precision(9);
  s << "lw=" << language_weight << " wip=" << word_insertion_penalty << " silprob=" << silence_prob
    << " fillprob=" << filler_prob << " pip=" << phone_insertion_penalty
    << " fillers=" << use_fillers << " copy=" << max_copied_arcs
    << " eps-labels=" << word_labels_on_epsilon;
  return s.str();
}

std::string GraphCompileReport::summary() const {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(2);
  for (const Stage& st : stages) {
    s << "  " << st.name << ": " << st.seconds << " s";
    if (st.states || st.arcs) s << ", " << st.states << " states, " << st.arcs << " arcs";
    s << "\n";
  }
  s << "graph: " << num_states << " states, " << num_arcs << " arcs (" << num_epsilon_arcs
    << " epsilon), " << num_words << " words, " << num_pronunciations << " pronunciations\n";
  if (lm_ngrams_skipped) {
    s << "n-grams left out for words not in the dictionary: " << lm_ngrams_skipped << " (";
    for (size_t i = 0; i < lm_words_missing.size(); ++i)
      s << (i ? " " : "") << lm_words_missing[i];
    s << (lm_words_missing.size() >= 20 ? " ...)\n" : ")\n");
  }
  for (const std::string& n : notes) s << n << "\n";
  s << "build time " << seconds << " s, peak RSS " << peak_rss_bytes / (1024 * 1024) << " MiB";
  return s.str();
}

#ifdef GPUSPEECH_HAVE_OPENFST

namespace {

using fst::StdArc;
using fst::StdVectorFst;
using Weight = fst::TropicalWeight;
using Label = StdArc::Label;
using StateId = StdArc::StateId;

constexpr int kPositions = 4;
constexpr float kInf = std::numeric_limits<float>::infinity();

bool is_word_final(WordPosition pos) { return pos == WordPosition::kEnd || pos == WordPosition::kSingle; }

class Stopwatch {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void restart() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

int64_t count_arcs(const StdVectorFst& f) {
  int64_t n = 0;
  for (StateId s = 0; s < f.NumStates(); ++s) n += f.NumArcs(s);
  return n;
}

void check_fst(const StdVectorFst& f, const std::string& what) {
  if (f.Properties(fst::kError, false))
    throw std::runtime_error("graph compiler: OpenFst failed while " + what);
}

// A phone HMM without self-loops as the paths it allows through its
// emitting states: each path a list of (symbol, cost) arcs.
struct HmmPaths {
  std::vector<std::vector<std::pair<Label, float>>> paths;
};

// A read-only FST held as compressed rows (one array of arcs, offsets per
// state): what the context expansion produces and the determinisation
// reads. A VectorFst spends some 100 bytes per state on its own; HCLG before
// determinisation has tens of millions of states, most with a single arc.
class CsrFst : public fst::ExpandedFst<StdArc> {
 public:
  using Weight = StdArc::Weight;

  CsrFst() = default;
  // From (source state, arc) pairs in any order; `finals` per state
  // (+infinity: not final).
  CsrFst(StateId start, std::vector<float> finals,
         std::vector<std::pair<StateId, StdArc>>&& pairs)
      : start_(start), finals_(std::move(finals)) {
    const size_t n = finals_.size();
    begin_.assign(n + 1, 0);
    for (const auto& p : pairs) ++begin_[p.first + 1];
    for (size_t i = 0; i < n; ++i) begin_[i + 1] += begin_[i];
    arcs_.resize(pairs.size());
    std::vector<int64_t> fill(begin_.begin(), begin_.end() - 1);
    for (const auto& p : pairs) arcs_[fill[p.first]++] = p.second;
    std::vector<std::pair<StateId, StdArc>>().swap(pairs);
  }

  StateId Start() const override { return start_; }
  Weight Final(StateId s) const override {
    return finals_[s] == kInf ? Weight::Zero() : Weight(finals_[s]);
  }
  size_t NumArcs(StateId s) const override { return begin_[s + 1] - begin_[s]; }
  size_t NumInputEpsilons(StateId s) const override {
    size_t n = 0;
    for (int64_t a = begin_[s]; a < begin_[s + 1]; ++a) n += arcs_[a].ilabel == 0;
    return n;
  }
  size_t NumOutputEpsilons(StateId s) const override {
    size_t n = 0;
    for (int64_t a = begin_[s]; a < begin_[s + 1]; ++a) n += arcs_[a].olabel == 0;
    return n;
  }
  StateId NumStates() const override { return static_cast<StateId>(finals_.size()); }
  uint64_t Properties(uint64_t mask, bool test) const override {
    if (test && (known_ & mask) != mask) {
      uint64_t known = 0;
      props_ = fst::internal::ComputeProperties(*this, mask | fst::kExpanded, &known);
      known_ = known;
    }
    return (props_ | fst::kExpanded) & mask;
  }
  const std::string& Type() const override {
    static const std::string type = "gpuspeech-csr";
    return type;
  }
  CsrFst* Copy(bool = false) const override { return new CsrFst(*this); }
  const fst::SymbolTable* InputSymbols() const override { return nullptr; }
  const fst::SymbolTable* OutputSymbols() const override { return nullptr; }
  void InitStateIterator(fst::StateIteratorData<StdArc>* data) const override {
    data->base = nullptr;
    data->nstates = NumStates();
  }
  void InitArcIterator(StateId s, fst::ArcIteratorData<StdArc>* data) const override {
    data->base = nullptr;
    data->arcs = arcs_.data() + begin_[s];
    data->narcs = NumArcs(s);
    data->ref_count = nullptr;
  }

  int64_t num_arcs() const { return static_cast<int64_t>(arcs_.size()); }
  std::vector<StdArc>& mutable_arcs() {
    known_ = 0;
    props_ = 0;
    return arcs_;
  }
  // A VectorFst copy (for the transducer determinisation).
  StdVectorFst to_vector() const { return StdVectorFst(*this); }

 private:
  StateId start_ = fst::kNoStateId;
  std::vector<float> finals_;
  std::vector<int64_t> begin_{0};
  std::vector<StdArc> arcs_;
  mutable uint64_t props_ = 0;
  mutable uint64_t known_ = 0;
};

// The compiler's state for one build.
class Compiler {
  using Stage = GraphCompileReport::Stage;

 public:
  Compiler(const ModelDefinition& mdef, const TransitionMatrices& tmats, const Dictionary& dict,
           const GraphCompileOptions& options, GraphCompileReport* report)
      : mdef_(mdef), tmats_(tmats), dict_(dict), opt_(options), report_(report) {
    opt_.validate();
    // OpenFst's errors (e.g. a non-functional transducer met while
    // determinising) would otherwise end the process; this way they mark
    // the result, which check_fst() turns into an exception.
    FLAGS_fst_error_fatal = false;
    if (tmats_.num_emitting < 1 || tmats_.num_tmats < 1)
      throw GraphInputError("acoustic model: no transition matrices");
    if (tmats_.log_probs.size() != static_cast<size_t>(tmats_.num_tmats) * tmats_.num_emitting *
                                       (tmats_.num_emitting + 1))
      throw GraphInputError("acoustic model: transition matrix array has the wrong size");
    if (mdef_.num_emitting_states() != 0 && mdef_.num_emitting_states() != tmats_.num_emitting)
      throw GraphInputError("acoustic model: mdef has " +
                            std::to_string(mdef_.num_emitting_states()) +
                            " emitting states per phone but the transition matrices " +
                            std::to_string(tmats_.num_emitting));
    num_base_ = mdef_.num_base_phones();
    first_disambig_ = 1 + kPositions * num_base_;
    context_end_ = num_base_;  // "utterance edge" context value
    // Phone names of the dictionary -> base phone ids of the model.
    dict_phone_to_base_.assign(dict_.phone_names().size(), -2);
    build_phone_map();
  }

  SearchGraph compile_grammar(const WordGrammar& grammar) {
    grammar.validate();
    const std::vector<std::string> missing = missing_words(grammar.used_words(), dict_);
    if (!missing.empty()) {
      const size_t shown = std::min<size_t>(missing.size(), 20);
      std::string msg = grammar.source + ": " + std::to_string(missing.size()) +
                        (missing.size() == 1 ? " word is" : " words are") +
                        " not in the dictionary " + dictionary_name() + ":";
      for (size_t i = 0; i < shown; ++i) msg += " " + missing[i];
      if (shown < missing.size()) msg += " ... (" + std::to_string(missing.size() - shown) + " more)";
      throw ModelError(msg);
    }
    Stopwatch sw;
    std::vector<Label> word_label(grammar.words.size(), 0);
    for (const WordGrammar::Arc& a : grammar.arcs) {
      if (a.word == WordGrammar::kEpsilon || word_label[a.word] != 0) continue;
      const int id = dict_.word_id(grammar.words[a.word]);
      const std::string& spelled = dict_.word(id);
      if (spelled == "<s>" || spelled == "</s>")
        throw GraphInputError(grammar.source + ": the sentence marker " + spelled +
                              " cannot be a grammar word");
      word_label[a.word] = add_graph_word(id);
    }
    add_fillers();

    // G: the grammar as given, then without null transitions, determinised
    // and minimised (it is small), then fillers and edge silences.
    StdVectorFst g;
    for (int32_t s = 0; s < grammar.num_states; ++s) g.AddState();
    g.SetStart(grammar.start);
    const float lw = opt_.language_weight;
    const float wip = -std::log(opt_.word_insertion_penalty);
    for (const WordGrammar::Arc& a : grammar.arcs) {
      if (a.cost == kInf) continue;  // unspeakable (a JSGF weight of 0)
      const float cost = a.cost * lw;
      if (a.word == WordGrammar::kEpsilon)
        g.AddArc(a.from, StdArc(0, 0, cost, a.to));
      else
        g.AddArc(a.from, StdArc(word_label[a.word], word_label[a.word], cost + wip, a.to));
    }
    for (int32_t s = 0; s < grammar.num_states; ++s)
      if (grammar.final_cost[s] != kInf) g.SetFinal(s, lw * grammar.final_cost[s]);
    fst::Connect(&g);
    if (g.Start() == fst::kNoStateId)
      throw GraphInputError(grammar.source + ": the grammar accepts no word sequence");
    fst::RmEpsilon(&g);
    StdVectorFst gd;
    determinize(g, &gd, "determinising the grammar");
    minimize_encoded(&gd);
    add_filler_loops(&gd, /*scale=*/lw);
    stage("grammar G", sw, gd);
    return finish(std::move(gd));
  }

  SearchGraph compile_ngram(const NgramModel& lm) {
    Stopwatch sw;
    StdVectorFst g = ngram_fst(lm);
    add_fillers();
    add_filler_loops(&g, /*scale=*/1.0f);
    stage("n-gram G", sw, g);
    return finish(std::move(g));
  }

 private:
  // ------------------------------------------------------------ words
  std::string dictionary_name() const {
    if (dict_.files().empty()) return "(built in code)";
    std::string s;
    for (const std::string& f : dict_.files()) s += (s.empty() ? "" : " + ") + f;
    return s;
  }

  Label add_graph_word(int dict_word) {
    auto it = graph_word_of_dict_.find(dict_word);
    if (it != graph_word_of_dict_.end()) return it->second + 1;
    const int id = static_cast<int>(graph_words_.size());
    graph_words_.push_back(dict_word);
    graph_word_of_dict_.emplace(dict_word, id);
    return id + 1;
  }

  void add_fillers() {
    if (!opt_.use_fillers) return;
    for (int w = 0; w < dict_.num_words(); ++w) {
      if (!dict_.is_filler(w)) continue;
      const std::string& s = dict_.word(w);
      if (s == "<s>" || s == "</s>") continue;
      const Label label = add_graph_word(w);
      const bool silence = s == "<sil>";
      if (silence) silence_label_ = label;
      filler_labels_.push_back({label, silence});
    }
  }

  // Fillers loop on every state; an optional free <sil> at both ends.
  void add_filler_loops(StdVectorFst* g, float scale) {
    if (filler_labels_.empty()) return;
    const StateId n = g->NumStates();
    for (StateId s = 0; s < n; ++s) {
      std::vector<char> has(graph_words_.size() + 2, 0);
      for (fst::ArcIterator<StdVectorFst> ai(*g, s); !ai.Done(); ai.Next())
        if (ai.Value().ilabel > 0 && static_cast<size_t>(ai.Value().ilabel) < has.size())
          has[ai.Value().ilabel] = 1;
      for (const auto& f : filler_labels_) {
        if (has[f.first]) continue;  // the grammar itself says what happens here
        const float cost =
            scale * -std::log(f.second ? opt_.silence_prob : opt_.filler_prob);
        g->AddArc(s, StdArc(f.first, f.first, cost, s));
      }
    }
    if (silence_label_ == 0) return;
    // The new start is a copy of the old one, less its silence loop, plus a
    // free silence into the old one. (A back-off arc into the old start
    // instead, with the free silence beside it, made the determinisation of
    // HCLG run away on turtle.lm.bin.)
    const StateId old_start = g->Start();
    const StateId start = g->AddState();
    std::vector<StdArc> copied;
    for (fst::ArcIterator<StdVectorFst> ai(*g, old_start); !ai.Done(); ai.Next())
      if (!(ai.Value().ilabel == silence_label_ && ai.Value().nextstate == old_start))
        copied.push_back(ai.Value());
    for (const StdArc& a : copied) g->AddArc(start, a);
    g->SetFinal(start, g->Final(old_start));
    g->AddArc(start, StdArc(silence_label_, silence_label_, 0.0f, old_start));
    const StateId end = g->AddState();
    g->SetFinal(end, 0.0f);
    for (StateId s = 0; s < n; ++s)
      if (g->Final(s) != Weight::Zero())
        g->AddArc(s, StdArc(silence_label_, silence_label_, g->Final(s).Value(), end));
    g->SetStart(start);
  }

  Label backoff_label() const {
    // Word labels are 1 .. kMaxGraphWords; #0 sits after all of them so the
    // label space does not depend on how many fillers come later.
    return kWordDisambig;
  }
  static constexpr Label kWordDisambig = std::numeric_limits<int32_t>::max() - 1;
  // HCLG input labels from here on are disambiguation symbols.
  static constexpr Label kHmmDisambigBase = 1 << 30;

  // ------------------------------------------------------------ n-gram G
  StdVectorFst ngram_fst(const NgramModel& lm) {
    const int order = lm.order();
    if (order < 1) throw GraphInputError(lm.source() + ": the language model has no n-grams");
    const int V = lm.vocabulary_size();
    // LM word -> graph label (0 where the dictionary lacks the word).
    std::vector<Label> label(V, 0);
    int sentence_start = NgramModel::kNoWord, sentence_end = NgramModel::kNoWord;
    for (int w = 0; w < V; ++w) {
      const std::string& s = lm.word(w);
      if (s == "<s>") { sentence_start = w; continue; }
      if (s == "</s>") { sentence_end = w; continue; }
      const int d = dict_.word_id(s);
      if (d == Dictionary::kNoWord || dict_.is_filler(d)) {
        if (d == Dictionary::kNoWord && report_ && report_->lm_words_missing.size() < 20)
          report_->lm_words_missing.push_back(s);
        continue;
      }
      label[w] = add_graph_word(d);
    }
    const float lw = opt_.language_weight;
    const float wip = -std::log(opt_.word_insertion_penalty);
    const float ln10 = static_cast<float>(std::log(10.0));

    // States: the empty history, <s>, and every history some listed n-gram
    // continues.
    std::unordered_map<std::string, StateId> state_of;
    auto key = [](const int* w, int n) {
      return std::string(reinterpret_cast<const char*>(w), sizeof(int) * n);
    };
    StdVectorFst g;
    const StateId unigram_state = g.AddState();
    state_of.emplace(std::string(), unigram_state);
    auto ensure_state = [&](const int* w, int n) {
      auto r = state_of.emplace(key(w, n), fst::kNoStateId);
      if (r.second) r.first->second = g.AddState();
      return r.first->second;
    };
    StateId start = unigram_state;
    if (sentence_start != NgramModel::kNoWord) start = ensure_state(&sentence_start, 1);
    for (int n = 2; n <= order; ++n)
      lm.for_each_ngram(n, [&](const int* w, int, float, float, bool) { ensure_state(w, n - 1); });
    g.SetStart(start);
    auto find_state = [&](const int* w, int n) {
      auto it = state_of.find(key(w, n));
      return it == state_of.end() ? fst::kNoStateId : it->second;
    };
    // The state for history w[0..n): its longest suffix that has a state.
    auto longest_suffix_state = [&](const int* w, int n) {
      for (int k = std::min(n, order - 1); k > 0; --k) {
        StateId s = find_state(w + n - k, k);
        if (s != fst::kNoStateId) return s;
      }
      return unigram_state;
    };

    int64_t skipped = 0;
    for (int n = 1; n <= order; ++n) {
      lm.for_each_ngram(n, [&](const int* w, int, float log10p, float, bool) {
        const int word = w[n - 1];
        if (word == sentence_start) return;
        for (int i = 0; i + 1 < n; ++i)
          if (w[i] != sentence_start && label[w[i]] == 0) return;  // unreachable history
        const StateId src = n == 1 ? unigram_state : find_state(w, n - 1);
        if (src == fst::kNoStateId) return;
        const float cost = -log10p * ln10 * lw;
        if (word == sentence_end) {
          g.SetFinal(src, std::min(g.Final(src).Value(), cost));
          return;
        }
        if (label[word] == 0) {
          ++skipped;
          return;
        }
        const StateId dest = longest_suffix_state(w, n);
        g.AddArc(src, StdArc(label[word], label[word], cost + wip, dest));
      });
    }
    // Back-off arcs: from each history to its longest suffix with a state,
    // through the back-off weights of the histories skipped on the way.
    for (const auto& entry : state_of) {
      const int n = static_cast<int>(entry.first.size() / sizeof(int));
      if (n == 0) continue;
      const int* w = reinterpret_cast<const int*>(entry.first.data());
      float cost = -lm.backoff_log10(w, n) * ln10 * lw;
      StateId dest = unigram_state;
      for (int k = n - 1; k > 0; --k) {
        StateId s = find_state(w + n - k, k);
        if (s != fst::kNoStateId) {
          dest = s;
          break;
        }
        cost += -lm.backoff_log10(w + n - k, k) * ln10 * lw;
      }
      g.AddArc(entry.second, StdArc(backoff_label(), 0, cost, dest));
    }
    if (report_) report_->lm_ngrams_skipped = skipped;
    fst::Connect(&g);
    if (g.Start() == fst::kNoStateId)
      throw GraphInputError(lm.source() +
                            ": no word of the language model is in the dictionary " +
                            dictionary_name());
    return g;
  }

  // ------------------------------------------------------------ phones
  void build_phone_map() {
    for (size_t p = 0; p < dict_.phone_names().size(); ++p) {
      const std::string& name = dict_.phone_names()[p];
      int base = mdef_.base_phone_id(name);
      if (base < 0 && !dict_.options().case_sensitive) {
        for (int b = 0; b < num_base_ && base < 0; ++b) {
          const std::string& m = mdef_.base_phone_name(b);
          if (m.size() == name.size() &&
              std::equal(m.begin(), m.end(), name.begin(), [](char x, char y) {
                return std::tolower(static_cast<unsigned char>(x)) ==
                       std::tolower(static_cast<unsigned char>(y));
              }))
            base = b;
        }
      }
      dict_phone_to_base_[p] = base;
    }
  }

  // The tagged phone sequence of one pronunciation; GraphInputError names
  // the dictionary line if the model lacks a phone.
  std::vector<Label> tagged_phones(int pron_id) {
    const Pronunciation& pr = dict_.pronunciation(pron_id);
    std::vector<Label> out;
    for (size_t i = 0; i < pr.phones.size(); ++i) {
      const int base = dict_phone_to_base_.at(pr.phones[i]);
      if (base < 0) {
        const std::string where = pr.file >= 0 && static_cast<size_t>(pr.file) < dict_.files().size()
                                      ? dict_.files()[pr.file] + ":" + std::to_string(pr.line)
                                      : dictionary_name();
        throw GraphInputError(where + ": word '" + dict_.word(pr.word) + "' uses phone '" +
                              dict_.phone_names()[pr.phones[i]] +
                              "', which the acoustic model does not have");
      }
      const WordPosition pos = position_in_word(i, pr.phones.size());
      out.push_back(1 + kPositions * base + static_cast<int>(pos));
    }
    return out;
  }
  static int tag_base(Label t) { return (t - 1) / kPositions; }
  static WordPosition tag_position(Label t) { return static_cast<WordPosition>((t - 1) % kPositions); }

  // ------------------------------------------------------------ L
  StdVectorFst lexicon_fst() {
    StdVectorFst l;
    const StateId loop = l.AddState();
    l.SetStart(loop);
    l.SetFinal(loop, Weight::One());
    std::map<std::vector<Label>, int> homophones;  // sequence -> count so far
    struct Entry {
      Label word;
      std::vector<Label> phones;
    };
    std::vector<Entry> entries;
    for (size_t gw = 0; gw < graph_words_.size(); ++gw) {
      for (int pron : dict_.pronunciations(graph_words_[gw])) {
        Entry e{static_cast<Label>(gw + 1), tagged_phones(pron)};
        if (e.phones.empty()) continue;
        ++homophones[e.phones];
        entries.push_back(std::move(e));
      }
    }
    std::map<std::vector<Label>, int> used;
    for (const Entry& e : entries) {
      StateId cur = loop;
      const int k = homophones[e.phones] > 1 ? ++used[e.phones] : 0;
      for (size_t i = 0; i < e.phones.size(); ++i) {
        const bool last = i + 1 == e.phones.size();
        const bool ends_here = last && k == 0;
        const StateId next = ends_here ? loop : l.AddState();
        l.AddArc(cur, StdArc(e.phones[i], i == 0 ? e.word : 0, Weight::One(), next));
        cur = next;
        if (last && k > 0) l.AddArc(cur, StdArc(first_disambig_ + k, 0, Weight::One(), loop));
      }
    }
    // G's back-off symbol passes through as the phone-level #0.
    l.AddArc(loop, StdArc(first_disambig_, backoff_label(), Weight::One(), loop));
    if (report_) report_->num_pronunciations = static_cast<int>(entries.size());
    return l;
  }

  // ------------------------------------------------------------ H
  // The HMM-state symbol of emitting state j of a phone. It names the base
  // phone and the word position as well as the senone and transitions, so
  // that two different phone strings, or one phone string cut into words
  // differently ("anyway" / "any way"), never read the same: HCLG must be
  // functional to be determinised, and with word labels on emitting arcs no
  // epsilon marks where words end.
  Label hmm_symbol(int base, WordPosition pos, int tmat, int j, int senone) {
    const std::array<int, 5> k = {base, static_cast<int>(pos), tmat, j, senone};
    auto it = symbol_index_.find(k);
    if (it != symbol_index_.end()) return it->second;
    const Label id = static_cast<Label>(symbols_.size()) + 1;
    symbols_.push_back({senone, tmat, j});
    symbol_index_.emplace(k, id);
    return id;
  }

  // Paths of the HMM of the triphone (left, tagged, right) as pocketsphinx
  // would pick it; cached.
  const HmmPaths& hmm_paths(int left, Label tagged, int right) {
    const uint64_t k = (static_cast<uint64_t>(left) * 65536 + tagged) * 65536 + right;
    auto it = hmm_cache_.find(k);
    if (it != hmm_cache_.end()) return it->second;
    const int base = tag_base(tagged);
    const WordPosition pos = tag_position(tagged);
    const int phone = context_dependent_phone(mdef_, base, left == context_end_ ? -1 : left,
                                              right == context_end_ ? -1 : right, pos);
    const int tmat = mdef_.tmat_of(phone);
    if (tmat < 0 || tmat >= tmats_.num_tmats)
      throw GraphInputError("acoustic model: phone '" + mdef_.phone_name(phone) +
                            "' uses transition matrix " + std::to_string(tmat) + " of " +
                            std::to_string(tmats_.num_tmats));
    const std::vector<int> senones = mdef_.senones_of(phone);
    const int N = tmats_.num_emitting;
    if (static_cast<int>(senones.size()) != N)
      throw GraphInputError("acoustic model: phone '" + mdef_.phone_name(phone) + "' has " +
                            std::to_string(senones.size()) + " states, the transition matrices " +
                            std::to_string(N));
    HmmPaths hp;
    const float pip = -std::log(opt_.phone_insertion_penalty);
    // Depth-first over forward transitions from state 0 to the exit N.
    std::vector<std::pair<Label, float>> path;
    std::function<void(int, float)> walk = [&](int j, float into_cost) {
      path.push_back({hmm_symbol(base, pos, tmat, j, senones[j]), into_cost});
      for (int k = j + 1; k <= N; ++k) {
        const float lp = tmats_.log_prob(tmat, j, k);
        if (lp == -kInf || std::isnan(lp)) continue;
        if (k == N) {
          hp.paths.push_back(path);
          hp.paths.back().back().second += -lp;  // exit folded into the last arc
        } else {
          walk(k, -lp);
        }
      }
      path.pop_back();
    };
    walk(0, pip);
    if (hp.paths.empty())
      throw GraphInputError("acoustic model: transition matrix " + std::to_string(tmat) +
                            " has no path from the first state to the exit");
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < j; ++k)
        if (tmats_.log_prob(tmat, j, k) > -kInf)
          throw GraphInputError("acoustic model: transition matrix " + std::to_string(tmat) +
                                " has a backward transition");
    return hmm_cache_.emplace(k, std::move(hp)).first->second;
  }

  // ------------------------------------------------------------ C + H
  // Expands LG into HCLG without self-loops (see the header). A phone's HMM
  // needs its right neighbour, so it is emitted one LG arc late, when that
  // neighbour is read (Kaldi's C with its one-phone delay): a state is (LG
  // state, left context of the pending phone, the pending tagged phone,
  // the label of the pending phone's word if known). The label goes out
  // with the word's last phone, on the arc into its last HMM state.
  struct ExpansionKey {
    int32_t q;
    int32_t left;
    int32_t pending;  // tagged phone, or kNone before the first phone
    int32_t label;    // word label of the pending phone's word, 0 if not known yet
    bool operator==(const ExpansionKey& o) const {
      return q == o.q && left == o.left && pending == o.pending && label == o.label;
    }
  };
  struct ExpansionKeyHash {
    size_t operator()(const ExpansionKey& k) const {
      uint64_t h = static_cast<uint32_t>(k.q);
      h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint32_t>(k.left);
      h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint32_t>(k.pending);
      h = h * 0x9e3779b97f4a7c15ULL + static_cast<uint32_t>(k.label);
      return static_cast<size_t>(h ^ (h >> 29));
    }
  };
  static constexpr int32_t kNone = 0;

  class Expander {
   public:
    Expander(Compiler& c, const StdVectorFst& lg) : c_(c), lg_(lg) {}

    CsrFst run() {
      const int32_t sil = c_.mdef_.silence_phone() >= 0 ? c_.mdef_.silence_phone() : c_.context_end_;
      const StateId start = state({static_cast<int32_t>(lg_.Start()), sil, kNone, 0});
      end_ = add_state();
      finals_[end_] = 0.0f;
      while (!work_.empty()) {
        const auto item = work_.front();
        work_.pop_front();
        prefix_.clear();
        expand(item.first, item.second, 0.0f);
        if (static_cast<int64_t>(finals_.size()) > c_.opt_.max_states)
          throw std::runtime_error("graph compiler: context expansion exceeds max_states");
      }
      ids_.clear();
      return CsrFst(start, std::move(finals_), std::move(arcs_));
    }

   private:
    StateId add_state() {
      finals_.push_back(kInf);
      return static_cast<StateId>(finals_.size() - 1);
    }
    void add_arc(StateId from, const StdArc& a) { arcs_.emplace_back(from, a); }

    StateId state(const ExpansionKey& k) {
      auto r = ids_.emplace(k, fst::kNoStateId);
      if (r.second) {
        r.first->second = add_state();
        work_.emplace_back(r.first->second, k);
      }
      return r.first->second;
    }

    static int32_t merge_label(int32_t have, int32_t more) {
      if (more == 0) return have;
      if (have != 0 && have != more)
        throw std::logic_error("graph compiler: two word labels in one word");
      return more;
    }

    // The arcs of expansion state `k`, leaving `src`, `extra` added to the
    // first arc of each (the weight of the LG arc that led to a virtual
    // state, see below).
    void expand(StateId src, const ExpansionKey& k, float extra) {
      const Weight qf = lg_.Final(k.q);
      if (k.pending == kNone) {
        // Nothing read yet: this is the start, or a state reached from it
        // by disambiguation symbols only. Reading the first phone emits
        // nothing, so rather than an epsilon arc to the state that holds
        // it, that state's arcs are made here directly.
        if (qf != Weight::Zero()) finals_[src] = qf.Value() + extra;
        for (fst::ArcIterator<StdVectorFst> ai(lg_, k.q); !ai.Done(); ai.Next()) {
          const StdArc& e = ai.Value();
          const float w = extra + e.weight.Value();
          if (is_phone(e.ilabel))
            expand(src, {static_cast<int32_t>(e.nextstate), k.left, e.ilabel, e.olabel}, w);
          else
            add_arc(src, StdArc(hclg_label(e.ilabel), 0, w,
                                    state({static_cast<int32_t>(e.nextstate), k.left, kNone,
                                           merge_label(k.label, e.olabel)})));
        }
        return;
      }
      const bool word_end = is_word_final(tag_position(k.pending));
      if (word_end && k.label == 0 && (qf != Weight::Zero() || has_phone_arc(k.q)))
        throw std::logic_error("graph compiler: a word's label was not determined at its end");
      const Label end_label = word_end ? k.label : 0;
      const int32_t base = tag_base(k.pending);
      for (fst::ArcIterator<StdVectorFst> ai(lg_, k.q); !ai.Done(); ai.Next()) {
        const StdArc& e = ai.Value();
        const float w = extra + e.weight.Value();
        if (!is_phone(e.ilabel)) {
          // A disambiguation symbol: the pending phone waits.
          add_arc(src, StdArc(hclg_label(e.ilabel), 0, w,
                                  state({static_cast<int32_t>(e.nextstate), k.left, k.pending,
                                         merge_label(k.label, e.olabel)})));
          continue;
        }
        // The next phone is known: emit the pending one.
        const int32_t next_label = word_end ? e.olabel : merge_label(k.label, e.olabel);
        const StateId dest = state({static_cast<int32_t>(e.nextstate), base, e.ilabel, next_label});
        emit(src, c_.hmm_paths(k.left, k.pending, tag_base(e.ilabel)), w, end_label, dest);
      }
      // The utterance may end here: the pending phone, then silence.
      if (qf != Weight::Zero())
        emit(src, c_.hmm_paths(k.left, k.pending, c_.context_end_), extra + qf.Value(), end_label,
             end_);
    }

    // The HMM's paths from src to dest, `first_cost` added to their first
    // arc, `label` on their last (or on an epsilon arc after it). Paths leaving src share their common
    // prefixes (same labels and costs): the same set of paths with far
    // fewer states, as the variants of a triphone for different right
    // contexts mostly differ in their last states only.
    void emit(StateId src, const HmmPaths& hp, float first_cost, Label label, StateId dest) {
      for (const auto& path : hp.paths) {
        StateId cur = src;
        const bool label_after = label != 0 && c_.opt_.word_labels_on_epsilon;
        for (size_t j = 0; j < path.size(); ++j) {
          const float cost = path[j].second + (j == 0 ? first_cost : 0.0f);
          if (j + 1 == path.size() && !label_after) {
            add_arc(cur, StdArc(path[j].first, label, cost, dest));
            break;
          }
          uint32_t bits;
          std::memcpy(&bits, &cost, sizeof bits);
          const uint64_t pk = (static_cast<uint64_t>(cur) * 0x9e3779b97f4a7c15ULL) ^
                              (static_cast<uint64_t>(path[j].first) << 32) ^ bits;
          auto r = prefix_.emplace(pk, fst::kNoStateId);
          if (r.second) {
            r.first->second = add_state();
            add_arc(cur, StdArc(path[j].first, 0, cost, r.first->second));
          }
          cur = r.first->second;
        }
        if (label_after) add_arc(cur, StdArc(0, label, 0.0f, dest));
      }
    }

    bool is_phone(Label l) const { return l > 0 && l < c_.first_disambig_; }
    Label hclg_label(Label lg_label) const {
      // Disambiguation symbols go far above every HMM state symbol.
      return lg_label == 0 ? 0 : kHmmDisambigBase + (lg_label - c_.first_disambig_);
    }
    bool has_phone_arc(StateId q) const {
      for (fst::ArcIterator<StdVectorFst> ai(lg_, q); !ai.Done(); ai.Next())
        if (is_phone(ai.Value().ilabel)) return true;
      return false;
    }

    Compiler& c_;
    const StdVectorFst& lg_;
    std::vector<float> finals_;
    std::vector<std::pair<StateId, StdArc>> arcs_;
    StateId end_ = fst::kNoStateId;
    std::unordered_map<ExpansionKey, StateId, ExpansionKeyHash> ids_;
    std::deque<std::pair<StateId, ExpansionKey>> work_;
    std::unordered_map<uint64_t, StateId> prefix_;  // shared chain prefixes of one source state
  };

  CsrFst expand_context(const StdVectorFst& lg) {
    CsrFst out = Expander(*this, lg).run();
    if (static_cast<int64_t>(symbols_.size()) >= kHmmDisambigBase)
      throw GraphInputError("acoustic model: too many HMM states");
    return out;
  }

  // ------------------------------------------------------------ FST helpers
  // Determinisation here never needs many more states than its input has
  // (it shrinks HCLG); a result growing far beyond that means a machine
  // that cannot be determinised, which would otherwise take all memory.
  void determinize(const fst::Fst<StdArc>& in, StdVectorFst* out, const std::string& what) {
    const int64_t limit = std::min<int64_t>(
        {opt_.max_states, 8 * static_cast<int64_t>(fst::CountStates(in)) + 1'000'000,
         std::numeric_limits<int32_t>::max()});
    fst::DeterminizeOptions<StdArc> dopts(fst::kDelta, Weight::Zero(), static_cast<StateId>(limit));
    fst::Determinize(in, out, dopts);
    check_fst(*out, what);
    if (out->NumStates() >= limit)
      throw std::runtime_error("graph compiler: " + what + " ran past " + std::to_string(limit) +
                               " states: this input cannot be determinised");
  }

  // HCLG's output labels never need delaying: two paths that read the same
  // HMM-state symbols say the same words at the same places (the symbols
  // carry word positions, homophones differ by their disambiguation
  // symbol, which comes first). Determinising it as an acceptor over
  // (input, output) pairs then gives the transducer determinisation's
  // result, at a fraction of its time and memory (no output strings to
  // carry). Checked: should the result not be input-deterministic, the
  // transducer determinisation runs instead. `in` is left encoded.
  void determinize_pairs(CsrFst* in, StdVectorFst* out, const std::string& what) {
    // Encode: each (input, output) pair becomes one label, on both sides.
    std::unordered_map<uint64_t, Label> code;
    std::vector<std::pair<Label, Label>> decode = {{0, 0}};
    code.emplace(0, 0);
    for (StdArc& a : in->mutable_arcs()) {
      const uint64_t k = (static_cast<uint64_t>(static_cast<uint32_t>(a.ilabel)) << 32) |
                         static_cast<uint32_t>(a.olabel);
      auto r = code.emplace(k, static_cast<Label>(decode.size()));
      if (r.second) decode.emplace_back(a.ilabel, a.olabel);
      a.ilabel = a.olabel = r.first->second;
    }
    determinize(*in, out, what);
    for (StateId s = 0; s < out->NumStates(); ++s) {
      for (fst::MutableArcIterator<StdVectorFst> ai(out, s); !ai.Done(); ai.Next()) {
        StdArc a = ai.Value();
        const auto& d = decode.at(a.ilabel);
        a.ilabel = d.first;
        a.olabel = d.second;
        ai.SetValue(a);
      }
    }
    std::unordered_set<Label> seen;
    for (StateId s = 0; s < out->NumStates(); ++s) {
      seen.clear();
      for (fst::ArcIterator<StdVectorFst> ai(*out, s); !ai.Done(); ai.Next()) {
        if (seen.insert(ai.Value().ilabel).second) continue;
        // Not input-deterministic after all: decode the input and do it the
        // general way.
        if (report_) report_->notes.push_back("HCLG needed transducer determinisation");
        for (StdArc& a : in->mutable_arcs()) {
          a.ilabel = decode[a.ilabel].first;
          a.olabel = decode[a.olabel].second;
        }
        const StdVectorFst v = in->to_vector();
        *in = CsrFst();
        *out = StdVectorFst();
        determinize(v, out, what);
        return;
      }
    }
  }

  // Gives freed heap back to the system, so that the peak memory of one
  // stage does not stay counted against the next.
  static void release_memory() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
  }

  // Minimisation with labels and weights encoded: merges states with the
  // same future without moving weights (no weight pushing).
  static void minimize_encoded(StdVectorFst* f) {
    fst::EncodeMapper<StdArc> encoder(fst::kEncodeLabels | fst::kEncodeWeights, fst::ENCODE);
    fst::Encode(f, &encoder);
    fst::Minimize(f);
    fst::Decode(f, encoder);
    check_fst(*f, "minimising");
  }

  void stage(const std::string& name, Stopwatch& sw, const StdVectorFst& f) {
    stage(name, sw, f.NumStates(), count_arcs(f));
  }
  void stage(const std::string& name, Stopwatch& sw, int64_t states, int64_t arcs) {
    const Stage st{name, sw.seconds(), states, arcs};
    if (report_) report_->stages.push_back(st);
    if (opt_.progress) {
      std::ostringstream s;
      s.setf(std::ios::fixed);
      s.precision(2);
      s << name << ": " << st.seconds << " s, " << st.states << " states, " << st.arcs
        << " arcs, peak RSS " << peak_rss_bytes() / (1024 * 1024) << " MiB";
      opt_.progress(s.str());
    }
    sw.restart();
  }

  // ------------------------------------------------------------ the rest
  SearchGraph finish(StdVectorFst g) {
    Stopwatch sw;
    fst::ArcSort(&g, fst::ILabelCompare<StdArc>());
    StdVectorFst l = lexicon_fst();
    stage("lexicon L", sw, l);
    fst::ArcSort(&l, fst::OLabelCompare<StdArc>());
    StdVectorFst lg;
    fst::Compose(l, g, &lg);
    check_fst(lg, "composing L and G");
    l = StdVectorFst();
    g = StdVectorFst();
    stage("compose L o G", sw, lg);
    StdVectorFst lgd;
    determinize(lg, &lgd, "determinising L o G");
    lg = StdVectorFst();
    stage("determinise LG", sw, lgd);
    minimize_encoded(&lgd);
    stage("minimise LG", sw, lgd);

    CsrFst hclg0 = expand_context(lgd);
    lgd = StdVectorFst();
    stage("expand context + HMMs", sw, hclg0.NumStates(), hclg0.num_arcs());
    StdVectorFst hclg;
    if (opt_.pair_determinization) {
      determinize_pairs(&hclg0, &hclg, "determinising HCLG");
    } else {
      const StdVectorFst v = hclg0.to_vector();
      hclg0 = CsrFst();
      determinize(v, &hclg, "determinising HCLG");
    }
    hclg0 = CsrFst();
    release_memory();
    stage("determinise HCLG", sw, hclg);
    minimize_encoded(&hclg);
    stage("minimise HCLG", sw, hclg);
    SearchGraph out = to_search_graph(std::move(hclg));
    const Stage st{"self-loops + CSR", sw.seconds(), out.num_states(), out.num_arcs()};
    if (report_) report_->stages.push_back(st);
    if (opt_.progress) {
      std::ostringstream s;
      s.setf(std::ios::fixed);
      s.precision(2);
      s << st.name << ": " << st.seconds << " s, " << st.states << " states, " << st.arcs
        << " arcs, peak RSS " << peak_rss_bytes() / (1024 * 1024) << " MiB";
      opt_.progress(s.str());
    }
    return out;
  }
  // Disambiguation symbols -> epsilon, self-loops, CSR in breadth-first order.
  SearchGraph to_search_graph(StdVectorFst f) {
    struct Arc {
      int32_t src, dst, ilabel, olabel;
      float cost;
    };
    const StateId n = f.NumStates();
    std::vector<Arc> arcs;
    std::vector<float> final_cost(n, kInf);
    for (StateId s = 0; s < n; ++s) {
      if (f.Final(s) != Weight::Zero()) final_cost[s] = f.Final(s).Value();
      for (fst::ArcIterator<StdVectorFst> ai(f, s); !ai.Done(); ai.Next()) {
        const StdArc& a = ai.Value();
        int32_t il = a.ilabel >= kHmmDisambigBase ? 0 : a.ilabel;
        arcs.push_back({static_cast<int32_t>(s), static_cast<int32_t>(a.nextstate), il,
                        static_cast<int32_t>(a.olabel), a.weight.Value()});
      }
    }
    const StateId start = f.Start();
    f = StdVectorFst();
    release_memory();
    // Incoming classes per state: -2 none yet, symbol, or -1 mixed.
    std::vector<std::vector<int32_t>> in_symbols(n);
    std::vector<char> has_eps_in(n, 0);
    has_eps_in[start] = 1;  // the initial token has not emitted anything
    for (const Arc& a : arcs) {
      if (a.ilabel == 0) {
        has_eps_in[a.dst] = 1;
      } else {
        auto& v = in_symbols[a.dst];
        if (std::find(v.begin(), v.end(), a.ilabel) == v.end()) v.push_back(a.ilabel);
      }
    }
    std::vector<std::vector<size_t>> out_arcs(n);
    for (size_t i = 0; i < arcs.size(); ++i) out_arcs[arcs[i].src].push_back(i);
    // Split states: copy id per (state, symbol).
    std::vector<std::unordered_map<int32_t, int32_t>> copies(n);
    int32_t next_id = static_cast<int32_t>(n);
    std::vector<int32_t> copy_of;     // copy id - n -> original state
    std::vector<int32_t> copy_symbol; // copy id - n -> symbol
    for (StateId s = 0; s < n; ++s) {
      const auto& v = in_symbols[s];
      if (v.empty() || (v.size() == 1 && !has_eps_in[s])) continue;
      for (int32_t sym : v) {
        copies[s].emplace(sym, next_id++);
        copy_of.push_back(static_cast<int32_t>(s));
        copy_symbol.push_back(sym);
      }
    }
    auto redirect = [&](const Arc& a) {
      if (a.ilabel == 0 || copies[a.dst].empty()) return a.dst;
      return copies[a.dst].at(a.ilabel);
    };
    std::vector<Arc> all;
    all.reserve(arcs.size() * 5 / 4);
    for (const Arc& a : arcs) {
      Arc b = a;
      b.dst = redirect(a);
      all.push_back(b);
    }
    final_cost.resize(next_id, kInf);
    auto loop_cost = [&](int32_t sym) { return symbols_.at(sym - 1).loop_cost(tmats_); };
    for (StateId s = 0; s < n; ++s) {
      if (!copies[s].empty() || in_symbols[s].empty()) continue;
      const int32_t sym = in_symbols[s][0];
      const float c = loop_cost(sym);
      if (c < kInf) all.push_back({static_cast<int32_t>(s), static_cast<int32_t>(s), sym, 0, c});
    }
    int64_t join_arcs = 0;
    for (size_t i = 0; i < copy_of.size(); ++i) {
      const int32_t id = static_cast<int32_t>(n + i);
      const int32_t s = copy_of[i];
      const int32_t sym = copy_symbol[i];
      final_cost[id] = final_cost[s];
      const float c = loop_cost(sym);
      if (c < kInf) all.push_back({id, id, sym, 0, c});
      if (static_cast<int>(out_arcs[s].size()) <= opt_.max_copied_arcs) {
        for (size_t ai : out_arcs[s]) {
          Arc b = arcs[ai];
          b.src = id;
          b.dst = redirect(arcs[ai]);
          all.push_back(b);
        }
      } else {
        all.push_back({id, s, 0, 0, 0.0f});
        ++join_arcs;
      }
    }
    arcs.clear();
    arcs.shrink_to_fit();

    // Breadth-first numbering from the start; unreachable states dropped.
    const int32_t total = next_id;
    std::vector<int64_t> begin(total + 1, 0);
    for (const Arc& a : all) ++begin[a.src + 1];
    for (int32_t s = 0; s < total; ++s) begin[s + 1] += begin[s];
    std::vector<size_t> order(all.size());
    {
      std::vector<int64_t> fill(begin.begin(), begin.end() - 1);
      for (size_t i = 0; i < all.size(); ++i) order[fill[all[i].src]++] = i;
    }
    std::vector<int32_t> new_id(total, -1);
    std::vector<int32_t> queue;
    queue.reserve(total);
    new_id[start] = 0;
    queue.push_back(static_cast<int32_t>(start));
    for (size_t qi = 0; qi < queue.size(); ++qi) {
      const int32_t s = queue[qi];
      for (int64_t k = begin[s]; k < begin[s + 1]; ++k) {
        const int32_t d = all[order[k]].dst;
        if (new_id[d] < 0) {
          new_id[d] = static_cast<int32_t>(queue.size());
          queue.push_back(d);
        }
      }
    }
    SearchGraph g;
    g.start_state = 0;
    g.num_senones = mdef_.num_senones();
    g.final_cost.resize(queue.size());
    g.arc_begin.assign(queue.size() + 1, 0);
    int64_t epsilon_arcs = 0, word_epsilon_arcs = 0;
    for (size_t i = 0; i < queue.size(); ++i) {
      const int32_t s = queue[i];
      g.final_cost[i] = final_cost[s];
      // Self-loop first, then the rest in input-label order: cache-friendly
      // and deterministic.
      std::vector<size_t> mine(order.begin() + begin[s], order.begin() + begin[s + 1]);
      std::sort(mine.begin(), mine.end(), [&](size_t x, size_t y) {
        const Arc& a = all[x];
        const Arc& b = all[y];
        const bool la = a.dst == a.src, lb = b.dst == b.src;
        if (la != lb) return la;
        if (a.ilabel != b.ilabel) return a.ilabel < b.ilabel;
        if (new_id[a.dst] != new_id[b.dst]) return new_id[a.dst] < new_id[b.dst];
        return a.olabel < b.olabel;
      });
      for (size_t x : mine) {
        const Arc& a = all[x];
        g.arc_dest.push_back(new_id[a.dst]);
        g.arc_ilabel.push_back(a.ilabel == 0 ? 0 : symbols_.at(a.ilabel - 1).senone + 1);
        g.arc_olabel.push_back(a.olabel);
        g.arc_cost.push_back(a.cost);
        if (a.ilabel == 0) ++epsilon_arcs;
        if (a.ilabel == 0 && a.olabel != 0) ++word_epsilon_arcs;
      }
      g.arc_begin[i + 1] = static_cast<int64_t>(g.arc_dest.size());
    }
    for (int w : graph_words_) {
      g.words.push_back(dict_.word(w));
      g.word_is_filler.push_back(dict_.is_filler(w) ? 1 : 0);
    }
    g.validate();
    if (report_) {
      report_->num_states = g.num_states();
      report_->num_arcs = g.num_arcs();
      report_->num_epsilon_arcs = epsilon_arcs;
      report_->notes.push_back(
          "epsilon arcs: " + std::to_string(word_epsilon_arcs) + " carry word labels, " +
          std::to_string(join_arcs) + " join split states, " +
          std::to_string(epsilon_arcs - word_epsilon_arcs - join_arcs) +
          " were back-off/homophone symbols; " + std::to_string(copy_of.size()) +
          " states added by splitting");
      report_->num_words = static_cast<int>(g.words.size());
    }
    return g;
  }

  struct HmmSymbol {
    int senone, tmat, state;
    float loop_cost(const TransitionMatrices& t) const {
      const float lp = t.log_prob(tmat, state, state);
      return (lp == -kInf || std::isnan(lp)) ? kInf : -lp;
    }
  };

  const ModelDefinition& mdef_;
  const TransitionMatrices& tmats_;
  const Dictionary& dict_;
  GraphCompileOptions opt_;
  GraphCompileReport* report_;
  int num_base_ = 0;
  Label first_disambig_ = 0;
  int32_t context_end_ = 0;
  std::vector<int> dict_phone_to_base_;
  std::vector<int> graph_words_;  // graph word id -> dictionary word id
  std::unordered_map<int, int> graph_word_of_dict_;
  std::vector<std::pair<Label, bool>> filler_labels_;  // (label, is <sil>)
  Label silence_label_ = 0;
  std::vector<HmmSymbol> symbols_;
  std::map<std::array<int, 5>, Label> symbol_index_;
  std::unordered_map<uint64_t, HmmPaths> hmm_cache_;
};

}  // namespace

SearchGraph compile_grammar_graph(const ModelDefinition& mdef, const TransitionMatrices& tmats,
                                  const Dictionary& dict, const WordGraph& grammar,
                                  const GraphCompileOptions& options, GraphCompileReport* report) {
  return compile_grammar_graph(mdef, tmats, dict, WordGrammar::from(grammar), options, report);
}

SearchGraph compile_grammar_graph(const ModelDefinition& mdef, const TransitionMatrices& tmats,
                                  const Dictionary& dict, const WordGrammar& grammar,
                                  const GraphCompileOptions& options, GraphCompileReport* report) {
  Stopwatch sw;
  Compiler c(mdef, tmats, dict, options.for_grammar(), report);
  SearchGraph g = c.compile_grammar(grammar);
  if (report) {
    report->seconds = sw.seconds();
    report->peak_rss_bytes = peak_rss_bytes();
  }
  return g;
}

SearchGraph compile_ngram_graph(const ModelDefinition& mdef, const TransitionMatrices& tmats,
                                const Dictionary& dict, const NgramModel& lm,
                                const GraphCompileOptions& options, GraphCompileReport* report) {
  Stopwatch sw;
  Compiler c(mdef, tmats, dict, options.for_ngram(), report);
  SearchGraph g = c.compile_ngram(lm);
  if (report) {
    report->seconds = sw.seconds();
    report->peak_rss_bytes = peak_rss_bytes();
  }
  return g;
}

#endif  // GPUSPEECH_HAVE_OPENFST

}  // namespace gpuspeech
