// ARPA back-off language models (the text format SRILM, KenLM, the CMU
// toolkit and sphinx_lm_convert write):
//
//   (anything before \data\ is ignored)
//   \data\                        (the section of counts)
//   ngram 1=<count>
//   ngram 2=<count>   ... one line per order, orders 1, 2, 3 ... in turn
//
//   \1-grams:
//   <log10 prob> <word> [<log10 back-off>]
//   ...
//   \2-grams:
//   <log10 prob> <word1> <word2> [<log10 back-off>]
//   ...
//   \end\                         (the end of the model)
//
// Checked, each failure a ModelError "FILE:LINE: reason": the counts in
// \data\ against the entries of each section, sections in order, the number
// of fields of each entry, numbers that parse, every word of a higher-order
// n-gram listed among the unigrams, no n-gram listed twice, \end\ present
// (a missing one means a truncated file). A back-off weight on the highest
// order, or a positive unigram log probability (set to 0, as Sphinx does),
// are only warnings.
#pragma once

#include <string>
#include <string_view>

#include "ngram_model.h"

namespace gpuspeech {

NgramModel read_arpa_lm(const std::string& path);
// `name` stands for the file in messages.
NgramModel parse_arpa_lm(std::string_view text, const std::string& name);

// Writes `model` as ARPA text (every entry, derived ones included, which is
// what sphinx_lm_convert writes too), probabilities with `decimals` digits.
std::string format_arpa_lm(const NgramModel& model, int decimals = 6);

}  // namespace gpuspeech
