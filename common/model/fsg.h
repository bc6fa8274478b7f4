// Sphinx finite-state grammar files (pocketsphinx -fsg):
//
//   FSG_BEGIN [name]
//   NUM_STATES n            (or N n)
//   START_STATE s           (or S s)
//   FINAL_STATE f           (or F f)
//   TRANSITION from to prob [word]     (or T ...); no word: epsilon
//   ...
//   FSG_END
//
// Lines starting with '#' are comments, blank lines are skipped, anything
// before FSG_BEGIN and after FSG_END is ignored (as pocketsphinx does).
// Probabilities are linear and become natural-log arc weights. Checked, each
// failure a ModelError "FILE:LINE: reason": the declarations in order,
// states in range, probabilities numbers above 0, FSG_END present. A
// probability above 1 (pocketsphinx refuses one, but sphinx_jsgf2fsg writes
// JSGF weights that way) is accepted with a warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "word_graph.h"

namespace gpuspeech {

WordGraph read_fsg(const std::string& path, std::vector<std::string>* warnings = nullptr);
// `name` stands for the file in messages; warnings ("FILE:LINE: what") are
// appended to `warnings` if given.
WordGraph parse_fsg(std::string_view text, const std::string& name,
                    std::vector<std::string>* warnings = nullptr);

// The graph as an FSG file (probabilities exp(log_prob), "%g" precision).
std::string format_fsg(const WordGraph& graph);

}  // namespace gpuspeech
