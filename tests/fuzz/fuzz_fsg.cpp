// libFuzzer target: the line formats of search definitions on arbitrary
// text: Sphinx FSG files and keyphrase lists. Every input must either parse
// or throw ModelError naming the file; a parsed FSG must be valid,
// enumerable and survive being written and read back.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/fsg.h"
#include "common/model/keyphrase_list.h"
#include "common/model/model_error.h"
#include "common/model/word_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    std::vector<std::string> warnings;
    const WordGraph g = parse_fsg(text, "fuzz.fsg", &warnings);
    g.validate();
    (void)g.sentences(4, 200);
    if (g.num_states <= 4096) {
      const WordGraph again = parse_fsg(format_fsg(g), "fuzz.again.fsg");
      if (again.arcs.size() != g.arcs.size() || again.num_states != g.num_states)
        __builtin_trap();
    }
  } catch (const ModelError& e) {
    if (std::string(e.what()).rfind("fuzz.", 0) != 0) __builtin_trap();
  }
  for (bool strict : {false, true}) {
    try {
      const KeyphraseList k = parse_keyphrase_list(text, "fuzz.kws", strict);
      for (const Keyphrase& p : k.phrases)
        if (p.words.empty() || (p.threshold && !(*p.threshold > 0))) __builtin_trap();
    } catch (const ModelError& e) {
      if (!strict || std::string(e.what()).rfind("fuzz.kws", 0) != 0) __builtin_trap();
    }
  }
  return 0;
}
