// Checks that every word a grammar, keyphrase list or language model can
// produce has a pronunciation: the decoder cannot build a graph otherwise.
#pragma once

#include <string>
#include <vector>

#include "dictionary.h"
#include "keyphrase_list.h"
#include "ngram_model.h"
#include "word_graph.h"

namespace gpuspeech {

// Words of `words` the dictionary lacks, in the order given, each once.
std::vector<std::string> missing_words(const std::vector<std::string>& words,
                                       const Dictionary& dictionary);

// Throw ModelError "GRAMMAR_FILE: N word(s) not in the dictionary DICT: a, b, ..."
// (the list shortened after 20) if any word on the graph's arcs, or of the
// keyphrases, is missing.
void check_words(const WordGraph& grammar, const Dictionary& dictionary);
void check_words(const KeyphraseList& phrases, const Dictionary& dictionary);

// An n-gram model's vocabulary usually exceeds the dictionary (pocketsphinx
// silently leaves such words out of the search): the missing words, sentence
// markers and <unk> aside, for a warning.
std::vector<std::string> lm_words_missing_from(const NgramModel& lm, const Dictionary& dictionary);

}  // namespace gpuspeech
