#include "common/search/lm_pruning.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "common/seconds_since.h"

namespace gpuspeech {

void LmPruneOptions::validate() const {
  if (max_order < 0) throw std::invalid_argument("LM pruning: max_order must be >= 0");
  if (max_ngrams < 0) throw std::invalid_argument("LM pruning: max_ngrams must be >= 0");
}

std::string LmPruneOptions::fingerprint() const {
  return "prune-order=" + std::to_string(max_order) + " prune-ngrams=" + std::to_string(max_ngrams);
}

std::string LmPruneReport::summary() const {
  std::ostringstream s;
  s << "LM pruned in " << seconds << " s:";
  for (size_t n = 0; n < before.size(); ++n)
    s << " " << (n + 1) << "-grams " << (n < kept.size() ? kept[n] : 0) << "/" << before[n];
  return s.str();
}

namespace {

// The n-grams of one order, natural word order, flattened.
struct OrderTable {
  int order = 0;
  std::vector<int> words;
  std::vector<float> prob, backoff;
  std::vector<uint8_t> keep;
  size_t size() const { return prob.size(); }
  const int* at(size_t i) const { return words.data() + i * order; }
};

std::string key_of(const int* w, int n) {
  return std::string(reinterpret_cast<const char*>(w), sizeof(int) * static_cast<size_t>(n));
}

constexpr double kLn10 = 2.302585092994046;

}  // namespace

NgramModel prune_ngram_model(const NgramModel& lm, const LmPruneOptions& options,
                             LmPruneReport* report) {
  options.validate();
  const auto t0 = std::chrono::steady_clock::now();
  const int N = lm.order();
  if (report) {
    report->before.clear();
    for (int n = 1; n <= N; ++n) report->before.push_back(static_cast<int64_t>(lm.num_ngrams(n)));
    report->kept = report->before;
  }
  if (!options.prunes() || N < 2) return lm;
  const int K = options.max_order > 0 ? std::min(options.max_order, N) : N;
  const int bos = lm.word_id("<s>");

  std::vector<OrderTable> t(K + 1);
  for (int n = 1; n <= K; ++n) {
    OrderTable& o = t[n];
    o.order = n;
    o.words.reserve(lm.num_ngrams(n) * n);
    lm.for_each_ngram(n, [&](const int* w, int, float p, float bo, bool) {
      o.words.insert(o.words.end(), w, w + n);
      o.prob.push_back(p);
      o.backoff.push_back(bo);
    });
    o.keep.assign(o.size(), 1);
  }

  // Importance of each n-gram of order >= 2; keep the max_ngrams best.
  if (options.max_ngrams > 0) {
    struct Candidate {
      float score;
      uint8_t order;
      uint32_t index;
    };
    std::vector<Candidate> cands;
    for (int n = 2; n <= K; ++n) {
      const OrderTable& o = t[n];
      for (size_t i = 0; i < o.size(); ++i) {
        const int* w = o.at(i);
        // log10 P(h): the history's own chain probability, P(<s>) = 1.
        double log_ph = 0;
        for (int j = 0; j < n - 1; ++j) {
          if (j == 0 && w[0] == bos) continue;
          log_ph += lm.score_log10(w, static_cast<size_t>(j), w[j]);
        }
        const double lower = lm.backoff_log10(w, static_cast<size_t>(n - 1)) +
                             lm.score_log10(w + 1, static_cast<size_t>(n - 2), w[n - 1]);
        const double p = o.prob[i];
        const double score = std::pow(10.0, log_ph + p) * (p - lower) * kLn10;
        cands.push_back({static_cast<float>(score), static_cast<uint8_t>(n), static_cast<uint32_t>(i)});
      }
    }
    if (static_cast<int64_t>(cands.size()) > options.max_ngrams) {
      std::nth_element(cands.begin(), cands.begin() + options.max_ngrams, cands.end(),
                       [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
      for (int n = 2; n <= K; ++n) std::fill(t[n].keep.begin(), t[n].keep.end(), 0);
      for (int64_t c = 0; c < options.max_ngrams; ++c) t[cands[c].order].keep[cands[c].index] = 1;
    }
    // Prefixes of kept n-grams stay, so that their histories keep a
    // back-off weight, and so do suffixes, which the back-off structure
    // needs (the model builder would otherwise re-insert them with
    // back-off-derived probabilities and no back-off weight).
    for (int n = K; n >= 3; --n) {
      std::unordered_map<std::string, uint32_t> index;
      const OrderTable& lo = t[n - 1];
      index.reserve(lo.size());
      for (size_t i = 0; i < lo.size(); ++i) index.emplace(key_of(lo.at(i), n - 1), static_cast<uint32_t>(i));
      for (size_t i = 0; i < t[n].size(); ++i) {
        if (!t[n].keep[i]) continue;
        for (int from : {0, 1}) {
          auto it = index.find(key_of(t[n].at(i) + from, n - 1));
          if (it != index.end()) t[n - 1].keep[it->second] = 1;
        }
      }
    }
  }

  // Lists of what is kept; back-offs recomputed order by order.
  std::vector<NgramList> lists(K);
  for (int n = 1; n <= K; ++n) {
    NgramList& l = lists[n - 1];
    l.order = n;
    const OrderTable& o = t[n];
    for (size_t i = 0; i < o.size(); ++i) {
      if (!o.keep[i]) continue;
      const int* w = o.at(i);
      l.words.insert(l.words.end(), w, w + n);
      l.log10_prob.push_back(o.prob[i]);
      l.log10_backoff.push_back(n < K ? o.backoff[i] : 0.0f);
    }
  }
  // Back-offs, contexts of order 1, 2, ... in turn. Each distribution keeps
  // the total mass it had (1 for a normalised model; toy models such as
  // turtle.lm.bin are not):
  //   T(h)   = S(h) + BO(h) * (T(h') - L(h))       (the source model)
  //   BO'(h) = (T(h) - S'(h)) / (T(h') - L'(h))    (the pruned one)
  // with S and L the sums of P(w|h) and P(w|h') over the listed extensions
  // (h,w), S' and L' the same over the kept ones, with P' of the pruned
  // lower orders (whose back-offs are final by then), and T(h') the same
  // in both models by induction.
  std::vector<std::string> vocab = lm.vocabulary();
  double total_unigram = 0;
  for (float p : lists[0].log10_prob) total_unigram += std::pow(10.0, p);
  std::unordered_map<std::string, double> lower_total;  // T of the contexts one order down
  for (int n = 1; n < K; ++n) {
    NgramModel lower;
    if (n >= 2) {
      std::vector<NgramList> part(lists.begin(), lists.begin() + n);
      lower = NgramModel::build(vocab, std::move(part), lm.source() + " (pruning)");
    }
    struct Sums {
      double s = 0, l = 0, s_kept = 0, l_kept = 0;
    };
    std::unordered_map<std::string, Sums> sums;
    const OrderTable& hi = t[n + 1];
    for (size_t i = 0; i < hi.size(); ++i) {
      const int* w = hi.at(i);
      const double p = std::pow(10.0, hi.prob[i]);
      Sums& su = sums[key_of(w, n)];
      su.s += p;
      su.l += std::pow(10.0, lm.score_log10(w + 1, static_cast<size_t>(n - 1), w[n]));
      if (hi.keep[i]) {
        su.s_kept += p;
        su.l_kept += n == 1 ? std::pow(10.0, lists[0].log10_prob[w[1]])
                            : std::pow(10.0, lower.score_log10(w + 1, static_cast<size_t>(n - 1), w[n]));
      }
    }
    std::unordered_map<std::string, double> totals;
    NgramList& ctx = lists[n - 1];
    for (size_t i = 0; i < ctx.size(); ++i) {
      const int* w = reinterpret_cast<const int*>(ctx.words.data()) + i * n;
      const std::string k = key_of(w, n);
      double t_lower = total_unigram;
      if (n > 1) {
        auto lt = lower_total.find(key_of(w + 1, n - 1));
        // A context's suffix is always a listed context one order down.
        if (lt != lower_total.end()) t_lower = lt->second;
      }
      const double bo = std::pow(10.0, ctx.log10_backoff[i]);
      const auto it = sums.find(k);
      const Sums su = it == sums.end() ? Sums{} : it->second;
      const double total = su.s + bo * (t_lower - su.l);
      totals.emplace(k, total);
      const double num = total - su.s_kept, den = t_lower - su.l_kept;
      // Rounding can leave (almost) no mass: keep the source's weight then.
      if (num > 1e-9 && den > 1e-9) ctx.log10_backoff[i] = static_cast<float>(std::log10(num / den));
    }
    lower_total.swap(totals);
  }
  if (report) {
    for (int n = 1; n <= N; ++n) report->kept[n - 1] = n <= K ? static_cast<int64_t>(lists[n - 1].size()) : 0;
  }
  NgramModel out = NgramModel::build(std::move(vocab), std::move(lists),
                                     lm.source() + " (pruned: " + options.fingerprint() + ")");
  if (report)
    report->seconds = seconds_since(t0);
  return out;
}

}  // namespace gpuspeech
