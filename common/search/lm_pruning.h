// Shrinking an n-gram model so that its search graph can be compiled in
// minutes: the first-pass LM of a large-vocabulary graph. The full model is
// then applied on the CPU at word ends (the rescorer subtracts this pruned
// model's score and adds the full one's), so the pruned model is returned,
// and cached next to the graph, as an ordinary NgramModel/ARPA file.
//
// What is kept:
//  - every unigram;
//  - n-grams of order <= max_order (0: all orders);
//  - of those of order >= 2, at most max_ngrams (0: all), the ones whose
//    removal would change the model most by Stolcke's relative-entropy
//    criterion, approximated per n-gram without the back-off change:
//        P(h) * P(w|h) * (ln P(w|h) - ln(BO(h) * P(w|h')))
//    with P(h) the chain of the model's own probabilities (P(<s>) = 1);
//  - and every prefix of a kept n-gram (its history needs its back-off).
// Back-off weights of every history are then recomputed so that each
// conditional distribution still sums to one:
//     BO'(h) = (1 - sum over kept (h,w) of P(w|h))
//            / (1 - sum over kept (h,w) of P'(w|h'))
// where P' is the pruned model of the lower orders.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model/ngram_model.h"

namespace gpuspeech {

struct LmPruneOptions {
  int max_order = 0;       // 0: keep every order
  int64_t max_ngrams = 0;  // of orders >= 2, in total; 0: no limit

  bool prunes() const { return max_order > 0 || max_ngrams > 0; }
  // Throws std::invalid_argument on negative values.
  void validate() const;
  std::string fingerprint() const;  // part of the graph cache key
};

struct LmPruneReport {
  std::vector<int64_t> kept;    // per order (index 0 = unigrams)
  std::vector<int64_t> before;  // per order
  double seconds = 0;
  std::string summary() const;  // one line
};

// The pruned model (the input itself, copied, when nothing is pruned).
// Its source() is the input's with " (pruned: ...)" appended.
NgramModel prune_ngram_model(const NgramModel& lm, const LmPruneOptions& options,
                             LmPruneReport* report = nullptr);

}  // namespace gpuspeech
