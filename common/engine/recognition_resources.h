// What every stream decoding with the same model, dictionary and grammar
// reads and none writes: the acoustic model, the front end it expects, the
// search graph, the LMs of word-end rescoring, the dictionary for
// alignment. Loaded once and shared (resource_cache.h hands out one copy
// per process for each distinct set of files and options); a stream's own
// state (scorer scratch, searcher, rescorer memo, kept features) lives in
// its Recognizer.
//
// Everything here is const after load() and safe to read from any number
// of threads: the one lazily made member, the alignment dictionary, is
// made under std::call_once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/model/acoustic_model.h"
#include "common/model/dictionary.h"
#include "common/model/ngram_model.h"
#include "common/features/feature_options.h"
#include "common/search/graph_compiler.h"
#include "common/search/lm_pruning.h"
#include "common/search/search_graph.h"

namespace gpuspeech {

class LmRescorer;

enum class GrammarKind {
  kNgram,       // -lm: ARPA or Sphinx binary (.lm.bin)
  kJsgf,        // -jsgf
  kFsg,         // -fsg
  kKeyphrases,  // -kws: keyphrase list, spotted in a phone loop
};
const char* to_string(GrammarKind kind);

// The graph compiler's defaults, except that each word's output label goes
// on an epsilon arc at the word's exact end (word_labels_on_epsilon): the
// searcher reports a word as ending where its label is passed, so this
// makes word end frames exact (on the default graph a word's last HMM
// state's self-loop frames would count towards the next word).
inline GraphCompileOptions exact_word_end_graph_options() {
  GraphCompileOptions o;
  o.word_labels_on_epsilon = true;
  return o;
}

// The files and options that decide the shared resources: two streams with
// equal ResourceOptions (and unchanged files) share one copy.
struct ResourceOptions {
  std::string model_dir;          // acoustic model (pocketsphinx -hmm)
  std::string dictionary;         // pocketsphinx -dict
  std::string filler_dictionary;  // -fdict; "" = the model's noisedict
  GrammarKind grammar_kind = GrammarKind::kNgram;
  std::string grammar;            // the LM, JSGF, FSG or keyphrase file
  std::string jsgf_rule;          // JSGF rule to use ("" = first public)
  GraphCompileOptions graph = exact_word_end_graph_options();
  // N-gram models are pruned this way before the graph is compiled (off by
  // default: the whole model goes into the graph).
  LmPruneOptions lm_prune;
  // Compiled graphs are cached here by content hash (graph_cache.h); "" =
  // the default, $GPUSPEECH_CACHE_DIR, else $XDG_CACHE_HOME/gpuspeech, else
  // ~/.cache/gpuspeech. "-" disables the cache. Keyphrase graphs are
  // compiled every time (they take about a second). Where the graph comes
  // from, not what it is: not part of the sharing key.
  std::string cache_dir;
  // When the graph's LM was pruned (automatically for large LMs, or by
  // lm_prune), apply the full LM at word ends (common/search/lm_rescorer.h;
  // SearchOptions::lm_histories tokens per graph state). false: the pruned
  // LM alone.
  bool rescore_with_full_lm = true;

  // Throws std::invalid_argument for a missing path or a bad option.
  void validate() const;
  // A canonical text of everything above that changes the resources, and
  // each file's identity (device, inode, size, modification time; "absent"
  // for a file that cannot be stat'ed, which load() then reports), so that
  // a file replaced on disk is loaded again rather than served stale.
  std::string sharing_key() const;
};

class RecognitionResources {
 public:
  // Loads and checks everything; compiles the graph or takes it from the
  // cache. Throws ModelError / GraphInputError / std::runtime_error naming
  // the file at fault. `log` (optional) receives what was loaded, one line
  // each.
  static std::shared_ptr<const RecognitionResources> load(const ResourceOptions& options,
                                                          std::string* log = nullptr);

  const ResourceOptions& options() const { return options_; }
  const AcousticModel& model() const { return model_; }
  // The front end the model expects, and its output width.
  const FeatureOptions& feature_options() const { return features_; }
  int feature_dim() const { return feature_dim_; }
  // Checked for searching when loaded (Searcher::check_graph, with
  // rescores() as `rescoring`): streams make their searchers with
  // GraphCheck::kCheckedByOwner.
  const SearchGraph& graph() const { return graph_; }
  // Word-end rescoring: both LMs when the graph's LM was pruned and
  // rescoring was asked for, else both null.
  bool rescores() const { return full_lm_ != nullptr; }
  const std::shared_ptr<const NgramModel>& full_lm() const { return full_lm_; }
  const std::shared_ptr<const NgramModel>& pruned_lm() const { return pruned_lm_; }
  // A stream's own rescorer (its history table and memo are per stream);
  // null when rescores() is false.
  std::unique_ptr<LmRescorer> make_rescorer() const;
  // Per senone (at least the graph's and the model's count): 1 for silence
  // and noise senones, which tell a path in silence from one in a word.
  const std::vector<uint8_t>& filler_senones() const { return filler_senones_; }
  // Searcher::state_kinds of the graph for those senones (a searcher's
  // set_state_kinds), computed once: O(arcs), 0.2 s on the en-us graph.
  const std::shared_ptr<const std::vector<uint8_t>>& state_kinds() const { return state_kinds_; }
  // The dictionary the graph was compiled from, with the same filler
  // dictionary, for forced alignment: parsed on the first call (the graph
  // itself usually comes from the cache and does not need it), then
  // shared. `loaded` (optional) is set true on the call that parsed it.
  const Dictionary& alignment_dictionary(bool* loaded = nullptr) const;
  // What load() logged (a stream that shares the resources repeats it).
  const std::string& load_log() const { return load_log_; }

  // Copies of these resources made for one device (the graph in a CUDA
  // device's memory, ...): made by `make` on the first call for `key`,
  // then shared by every later caller, and kept as long as the resources.
  // `key` names the type and the device ("cuda-search-graph:0"); one key,
  // one type. Thread-safe; a second caller waits while the first makes it.
  // An exception from `make` stores nothing.
  template <class T>
  std::shared_ptr<const T> attachment(const std::string& key,
                                      const std::function<std::shared_ptr<const T>()>& make) const {
    std::lock_guard<std::mutex> lock(attachments_mutex_);
    auto it = attachments_.find(key);
    if (it != attachments_.end()) return std::static_pointer_cast<const T>(it->second);
    std::shared_ptr<const T> made = make();
    attachments_.emplace(key, made);
    return made;
  }

 private:
  RecognitionResources() = default;

  ResourceOptions options_;
  AcousticModel model_;
  FeatureOptions features_;
  int feature_dim_ = 0;
  SearchGraph graph_;
  std::shared_ptr<const NgramModel> full_lm_, pruned_lm_;
  std::vector<uint8_t> filler_senones_;
  std::shared_ptr<const std::vector<uint8_t>> state_kinds_;
  std::string load_log_;
  mutable std::once_flag dictionary_once_;
  mutable std::unique_ptr<Dictionary> dictionary_;
  // After graph_ and the model: attachments may point into them, and go first.
  mutable std::mutex attachments_mutex_;
  mutable std::map<std::string, std::shared_ptr<const void>> attachments_;
};

}  // namespace gpuspeech
