// The graph compiler: acoustic model + dictionary + grammar or n-gram LM
// -> the decoding graph (HCLG) in the runtime's CSR form (search_graph.h).
// It is the only OpenFst user; builds without OpenFst leave it out
// (GPUSPEECH_HAVE_OPENFST undefined) and still load compiled graphs.
//
// Pipeline (docs/graph-compiler.md has the details and the reasoning):
//
//  G  the grammar (WordGrammar: null transitions removed, determinised,
//     minimised) or the n-gram model (NgramModel, optionally pruned first
//     with lm_pruning.h): one state per history, back-off arcs labelled
//     with the disambiguation symbol #0. Costs: language_weight * -ln P
//     - ln(word_insertion_penalty) per word. Filler words (the filler
//     dictionary's, less <s> and </s>) loop on every state: <sil> at
//     -ln(silence_prob), others at -ln(filler_prob), both times the language
//     weight for grammars (pocketsphinx's fsg_model_add_silence) and
//     unscaled for n-grams (pocketsphinx's ngram_search silpen/fillpen). An
//     optional <sil> before the first and after the last word is free (it
//     stands for pocketsphinx's <s> and </s> silences).
//  L  the lexicon: each pronunciation (alternates included; their output is
//     the base word) as a chain of position-tagged phones (Sphinx word
//     positions b/i/e/s), the word on its first arc; homophones get
//     disambiguation symbols #1, #2, ... LG = min(det(L o G)).
//  C  cross-word triphones, exactly as pocketsphinx picks them: expanding
//     LG with a one-phone delay (Kaldi's C), each phone's HMM is looked up
//     with its left and right neighbours (across word boundaries; SIL at
//     the utterance edges) and its word position through ModelDefinition::
//     nearest_phone_id (pocketsphinx's back-off: other word positions, then
//     SIL for filler and outer contexts, then the base phone).
//  H  each phone's HMM from its senones and transition matrix, without
//     self-loops: the arc into emitting state j costs -ln a(j-1 -> j) (skips
//     likewise), the exit cost is folded into the arc entering the last
//     state, -ln(phone_insertion_penalty) on the first arc. Each word's
//     output label is moved to the end of the word (the arc into its last
//     HMM state, or an epsilon arc after it: word_labels_on_epsilon), so
//     that the searcher sees a word when it ends (token_passing.h).
//  HCLG = min(det(H o C o LG)) (minimised with labels and weights encoded),
//     disambiguation symbols replaced by epsilon, then self-loops added:
//     a state whose incoming arcs all emit HMM state j of a phone gets j's
//     self-loop (-ln a(j -> j)); a state entered by several different
//     HMM states is split first (one copy per HMM state, joined to it by an
//     epsilon arc, or given copies of its arcs when it has few).
//
// Input labels of the result are 1 + senone, output labels 1 + word id
// (SearchGraph::words: the words of G plus the fillers), costs -ln.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/dictionary.h"
#include "common/model/mdef.h"
#include "common/search/search_graph.h"
#include "common/model/word_graph.h"
#include "common/search/word_grammar.h"

namespace gpuspeech {

class NgramModel;
struct TransitionMatrices;

// The language weight a graph gets unless one is given, by its kind.
// Grammars: 6.5, pocketsphinx's -lw, with which its grammar search (one
// pass) runs. N-gram LMs: 7.5. pocketsphinx searches them at 6.5 first
// and then rescores with the exact LM at -fwdflatlw 8.5 and -bestpathlw
// 9.5; our one pass applies the exact LM at every word end, and 7.5 (with
// RecognizerConfig's CMN rule, also new then) beat 6.5 on a held-out
// development set of degraded speech, on the test set and on LibriVox
// (docs/benchmarks.md, "The language weight by the graph's kind").
constexpr float kGrammarLanguageWeight = 6.5f;
constexpr float kNgramLanguageWeight = 7.5f;
// GraphCompileOptions::language_weight left to the graph's kind.
constexpr float kLanguageWeightByKind = -1.0f;

struct GraphCompileOptions {
  // -lw; kLanguageWeightByKind: kNgramLanguageWeight or
  // kGrammarLanguageWeight, as for_ngram() and for_grammar() resolve it
  // (the compilers and the graph cache do). The rest: pocketsphinx's
  // defaults (-wip, -silprob, -fillprob, -pip).
  float language_weight = kLanguageWeightByKind;
  float word_insertion_penalty = 0.65f;  // a probability: -ln(wip) per word
  float silence_prob = 0.005f;
  float filler_prob = 1e-8f;
  float phone_insertion_penalty = 1.0f;
  // Allow filler words (silence, noises) between words (-fsgusefiller).
  bool use_fillers = true;
  // Where a word's output label goes. true: on an epsilon arc leaving the
  // word's last HMM state, exactly at the word's end (the searcher reports
  // a word as ending where its label is passed); false: on the arc
  // entering that state, so the state's self-loop frames count towards the
  // next word, for about a quarter fewer states and arcs.
  bool word_labels_on_epsilon = true;
  // Determinise HCLG as an acceptor over (input, output) label pairs (fast;
  // exact here, see graph_compiler.cpp) rather than as a transducer. Off
  // only to check the one against the other.
  bool pair_determinization = true;
  // When adding self-loops, a state entered by k different HMM states is
  // split into k copies; copies get their own copies of the state's arcs
  // when it has at most this many (no epsilon arc), else an epsilon arc to it.
  int max_copied_arcs = 4;
  // Safety net against grammars OpenFst cannot determinise (non-terminating
  // determinisation): give up past this many states in any intermediate
  // machine.
  int64_t max_states = 200'000'000;
  // Called after each stage with a one-line description (progress for long
  // builds); not part of what the graph depends on.
  std::function<void(const std::string&)> progress;

  // These options with the language weight resolved for an n-gram LM or
  // a grammar (unchanged when it was given).
  GraphCompileOptions for_ngram() const;
  GraphCompileOptions for_grammar() const;

  // Throws std::invalid_argument naming the bad field.
  void validate() const;
  // A canonical text form of everything that changes the graph (part of the
  // cache key).
  std::string fingerprint() const;
};

// What a compilation did, for the tool and the logs.
struct GraphCompileReport {
  struct Stage {
    std::string name;
    double seconds = 0;
    int64_t states = 0;
    int64_t arcs = 0;
  };
  std::vector<Stage> stages;
  int64_t num_states = 0;
  int64_t num_arcs = 0;
  int64_t num_epsilon_arcs = 0;
  int num_words = 0;               // in the graph, fillers included
  int num_pronunciations = 0;      // in L
  int64_t lm_ngrams_skipped = 0;   // n-grams with a word the dictionary lacks
  std::vector<std::string> lm_words_missing;  // their words (first 20)
  double seconds = 0;
  int64_t peak_rss_bytes = 0;
  std::vector<std::string> notes;  // e.g. pruning done, warnings

  std::string summary() const;  // multi-line, human-readable
};

// A grammar word, or a pronunciation phone, the inputs cannot supply.
class GraphInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

#ifdef GPUSPEECH_HAVE_OPENFST

// The graph for a word grammar (FSG, compiled JSGF, keyphrase loop).
// Throws ModelError "SOURCE: N words are not in the dictionary DICT: ..."
// (as vocabulary_check.h words it), GraphInputError naming the dictionary
// entry whose phone the model lacks, std::invalid_argument on bad options
// or a malformed grammar.
SearchGraph compile_grammar_graph(const ModelDefinition& mdef, const TransitionMatrices& tmats,
                                  const Dictionary& dict, const WordGrammar& grammar,
                                  const GraphCompileOptions& options,
                                  GraphCompileReport* report = nullptr);
SearchGraph compile_grammar_graph(const ModelDefinition& mdef, const TransitionMatrices& tmats,
                                  const Dictionary& dict, const WordGraph& grammar,
                                  const GraphCompileOptions& options,
                                  GraphCompileReport* report = nullptr);

// The graph for an n-gram model (prune it first for large models: see
// lm_pruning.h). N-grams with words the dictionary lacks are left out (as
// pocketsphinx does), counted in the report.
SearchGraph compile_ngram_graph(const ModelDefinition& mdef, const TransitionMatrices& tmats,
                                const Dictionary& dict, const NgramModel& lm,
                                const GraphCompileOptions& options,
                                GraphCompileReport* report = nullptr);

#endif

// Peak resident set size of this process so far, in bytes (0 if unknown).
int64_t peak_rss_bytes();

}  // namespace gpuspeech
