// Sphinx's binary language models, the "Trie Language Model" format that
// sphinxbase 5prealpha writes (sphinx_lm_convert -ofmt bin; Debian's
// en-us.lm.bin, en-us-phone.lm.bin, turtle.lm.bin, tidigits.lm.bin). The
// layout, little-endian throughout (docs/lm-formats.md has the details):
//
//   "Trie Language Model"        19 bytes, no terminator
//   order                        u8
//   count[order]                 u32 each: n-grams per order (with the
//                                suffix entries the trie needs)
//   if order > 1:
//     quantizer type             i32 (1 = 16-bit bins; 0 in later versions)
//     bin tables                 f32[65536] per table: for each middle order
//                                a probability and a back-off table, then
//                                the highest order's probability table
//   unigrams[count[0] + 1]       {f32 prob, f32 back-off, u32 first child}
//   if order > 1: the bit-packed levels (see docs), each padded to a byte
//                                and followed by 8 spare bytes
//   words                        i32 total bytes, then count[0]
//                                NUL-terminated strings, word id order
//
// Values are logarithms in base 1.0001 (Sphinx's logmath unit); they are
// converted to log10 on reading. Higher orders store 16-bit indices into the
// bin tables, so their values are quantized (exact at the bin centres).
//
// Every count is checked against the file size before anything is
// allocated, every index (word id, child index) against its bounds as it is
// read, and the decoded trie again by NgramModel::from_trie, so a truncated
// or corrupt file is a ModelError
// "FILE: offset N: reason" or "FILE: reason", never a crash. The older DMP
// format ("Darpa Trigram LM") is recognised and refused with a hint.
#pragma once

#include <string>
#include <string_view>

#include "ngram_model.h"

namespace gpuspeech {

// The logarithm base of the stored values (sphinx_lm_convert -logbase).
constexpr double kSphinxLmLogBase = 1.0001;

enum class LmBinaryKind { kNone, kTrie, kDmp };
LmBinaryKind lm_binary_kind(std::string_view bytes);
inline bool is_lm_trie_binary(std::string_view bytes) {
  return lm_binary_kind(bytes) == LmBinaryKind::kTrie;
}

NgramModel read_lm_trie(const std::string& path);
// `name` stands for the file in messages.
NgramModel parse_lm_trie(std::string_view bytes, const std::string& name);

}  // namespace gpuspeech
