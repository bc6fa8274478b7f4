// libFuzzer target: JSGF grammars on arbitrary text, parsed and every rule
// compiled. Every input must either work or throw ModelError "fuzz.gram...";
// a compiled graph must be valid and enumerable. No stack exhaustion, no
// runaway expansion.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/model/jsgf.h"
#include "common/model/model_error.h"
#include "common/model/word_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  JsgfGrammar g;
  try {
    g = parse_jsgf(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.gram");
  } catch (const ModelError& e) {
    if (std::string(e.what()).rfind("fuzz.gram", 0) != 0) __builtin_trap();
    return 0;
  }
  for (const JsgfRule& r : g.rules) {
    try {
      const WordGraph w = compile_jsgf(g, r.name);
      w.validate();  // std::logic_error here would escape: a bug
      (void)w.sentences(4, 200);
      if (!w.words.empty()) (void)w.best_log_prob({w.words[0], w.words.back()});
    } catch (const ModelError& e) {
      if (std::string(e.what()).rfind("fuzz.gram", 0) != 0) __builtin_trap();
    }
  }
  return 0;
}
