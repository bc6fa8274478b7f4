// The goforward recording and grammar (pocketsphinx-testdata) on the en-us
// model (pocketsphinx-en-us): a small real-speech case for recognizer
// tests, decoded on the CPU.
#pragma once

#include <fstream>
#include <string>

#include "common/engine/recognizer.h"
#include "tests/test_backends.h"

namespace gpuspeech::testing {

inline bool goforward_available() {
  auto have = [](const std::string& p) { return std::ifstream(p).good(); };
  return have(audio_dir() + "/goforward.raw") && have(audio_dir() + "/goforward.gram") &&
         have(model_dir() + "/en-us/en-us/mdef");
}

// The en-us defaults with the goforward grammar, cpu scoring and search;
// `keep`: keep_features_for_alignment.
inline RecognizerConfig goforward_config(bool keep) {
  RecognizerConfig c = RecognizerConfig::en_us_defaults(model_dir() + "/en-us");
  c.grammar_kind = GrammarKind::kJsgf;
  c.grammar = audio_dir() + "/goforward.gram";
  c.scoring_backend = "cpu";
  c.search_backend = "cpu";
  c.keep_features_for_alignment = keep;
  return c;
}

}  // namespace gpuspeech::testing
