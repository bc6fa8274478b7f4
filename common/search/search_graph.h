// The decoding graph as the runtime sees it: a weighted finite-state
// transducer (HCLG in Kaldi's terms) flattened into compressed sparse rows,
// loadable without OpenFst. The graph compiler (common/search/graph_compiler.h,
// the only OpenFst user) writes it; the searchers (token passing on the CPU
// and the devices) read it.
//
// Arcs leave states in CSR order. An arc's input label is 0 for an epsilon
// arc (it consumes no frame) or 1 + the senone scored when the arc is taken
// (it consumes one frame). Its output label is 0 or 1 + a word id. Its weight
// is a cost: minus the natural log of the transition and language-model
// probabilities on it (language-model weight and word insertion penalty
// already applied by the compiler). A state's final cost is +infinity unless
// the utterance may end there.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gpuspeech {

struct SearchGraph {
  int32_t start_state = 0;
  std::vector<int64_t> arc_begin;  // num_states + 1 offsets into the arc arrays
  std::vector<int32_t> arc_dest;
  std::vector<int32_t> arc_ilabel;  // 0 = epsilon, else 1 + senone
  std::vector<int32_t> arc_olabel;  // 0 = none, else 1 + word id
  std::vector<float> arc_cost;
  std::vector<float> final_cost;    // num_states; +inf if not final
  std::vector<std::string> words;   // word id -> spelling
  // Which filler words (silence, noise) are in `words`: decoders leave them
  // out of hypotheses.
  std::vector<uint8_t> word_is_filler;
  int32_t num_senones = 0;  // ilabels are <= num_senones
  std::string source_hash;  // content hash of what the graph was built from

  int32_t num_states() const { return static_cast<int32_t>(final_cost.size()); }
  int64_t num_arcs() const { return static_cast<int64_t>(arc_dest.size()); }
  static constexpr float kInfinity = std::numeric_limits<float>::infinity();

  // Throws std::invalid_argument naming the first inconsistency (offsets not
  // monotone, destination or label out of range, NaN cost, ...).
  void validate() const;
  // Compact little-endian binary file with a magic, a version and a
  // checksum; load() throws std::runtime_error "FILE: reason" on anything
  // malformed or truncated.
  void save(const std::string& path) const;
  static SearchGraph load(const std::string& path);
  static SearchGraph parse(const uint8_t* bytes, size_t size, const std::string& name);
};

}  // namespace gpuspeech
