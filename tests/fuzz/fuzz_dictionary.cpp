// libFuzzer target: pronunciation dictionaries on arbitrary text, main and
// filler, strict and lenient, case-sensitive or not. Every input must either
// load or throw ModelError "fuzz.dic:LINE: ..."; what loads must be
// consistent (every id in range, every lookup finding its word) and survive
// phone validation. Anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/model/dictionary.h"
#include "common/model/model_error.h"

namespace {

void check(const gpuspeech::Dictionary& d) {
  using gpuspeech::Dictionary;
  for (int w = 0; w < d.num_words(); ++w) {
    if (d.pronunciations(w).empty()) __builtin_trap();
    if (d.word_id(d.word(w)) != w) __builtin_trap();
    for (int p : d.pronunciations(w)) {
      if (d.pronunciation(p).word != w) __builtin_trap();
      if (d.pronunciation(p).phones.empty()) __builtin_trap();
      for (int ph : d.pronunciation(p).phones)
        if (ph < 0 || ph >= static_cast<int>(d.phone_names().size())) __builtin_trap();
    }
  }
  try {
    d.validate_phones({"AH", "B", "SIL", "+NSN+"});
  } catch (const gpuspeech::ModelError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (int mode = 0; mode < 4; ++mode) {
    DictionaryOptions o;
    o.case_sensitive = mode & 1;
    o.skip_bad_entries = mode & 2;
    try {
      Dictionary d(o);
      d.add_text(text, "fuzz.dic", false);
      d.add_text(text, "fuzz.filler", true);  // duplicates: warnings
      d.add_sentence_markers("SIL");
      check(d);
    } catch (const ModelError& e) {
      if (std::string(e.what()).rfind("fuzz.", 0) != 0) __builtin_trap();
    }
  }
  return 0;
}
