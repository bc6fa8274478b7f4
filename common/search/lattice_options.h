// The options of the word-lattice pass (word_lattice.h), apart so that
// SearchOptions can hold them without the pass's code.
#pragma once

#include <cstdint>

namespace gpuspeech {

// The word-lattice pass's language weight by default with an n-gram LM and
// speaker adaptation (gpuspeech-transcribe's two-pass fMLLR, gpudecoder's
// adapt): of 7.5 to 10.5, 8.5 was best on the degraded development set
// (docs/benchmarks.md, "A word-lattice pass").
constexpr float kDictationLatticeWeight = 8.5f;
// The lattice pass's own word insertion penalty (gpuspeech-transcribe's
// --lattice-wip default, and gpudecoder's with adapt).
// At the search's 0.65 the pass inserts words on real recordings: a
// lattice node keeps the least acoustic cost of the records that made it,
// so paths through more, shorter nodes collect more of that luck. 2e-5 was
// best of 0.65 to 2e-6 on the real LibriVox rows and, with two-pass fMLLR,
// on all three degraded sets (docs/benchmarks.md, "A prior for the full
// transform, and a word cost for the lattice pass").
constexpr float kDictationLatticeWip = 2e-5f;

struct LatticeOptions {
  // 0: no lattice pass (the Viterbi path is the result). Otherwise the
  // language weight of the pass, in the units of the graph's (-lw).
  float language_weight = 0.0f;
  // The graph compiler's per-word costs as probabilities
  // (GraphCompileOptions' word_insertion_penalty, silence_prob,
  // filler_prob; the recognizer copies its graph's).
  float word_insertion_penalty = 0.65f;
  float silence_prob = 0.005f;
  float filler_prob = 1e-8f;
  // Paths kept per boundary, best per LM history (word_lattice.h).
  int max_histories = 32;
  // Records an utterance may make before its lattice is given up (its
  // result is then the Viterbi path, and the records are collected as
  // without a lattice): the records of a lattice are kept whole.
  int64_t max_records = int64_t{1} << 23;

  bool enabled() const { return language_weight > 0.0f; }
  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

}  // namespace gpuspeech
