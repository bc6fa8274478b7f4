// How a word's phones become the model's context-dependent phones, the one
// rule both the graph compiler (graph_compiler.cpp) and the forced aligner
// (forced_aligner.cpp) follow, so that an alignment uses the HMMs the
// decoder searched.
#pragma once

#include <cstddef>

#include "common/model/mdef.h"

namespace gpuspeech {

// Sphinx word position of phone i of an n-phone pronunciation.
inline WordPosition position_in_word(size_t i, size_t n) {
  if (n == 1) return WordPosition::kSingle;
  if (i == 0) return WordPosition::kBegin;
  if (i + 1 == n) return WordPosition::kEnd;
  return WordPosition::kInternal;
}

// The phone pocketsphinx uses for base phone `base` at word position `pos`
// between the base phones `left` and `right`, where a negative context
// stands for the utterance edge and becomes SIL: filler phones (silence,
// noises) are context-independent; the others go through
// ModelDefinition::nearest_phone_id's back-off.
inline int context_dependent_phone(const ModelDefinition& mdef, int base, int left, int right,
                                   WordPosition pos) {
  if (mdef.is_filler(base)) return base;
  const int sil = mdef.silence_phone();
  return mdef.nearest_phone_id(base, left < 0 ? sil : left, right < 0 ? sil : right, pos);
}

}  // namespace gpuspeech
