// Forced alignment (forced_aligner.h has the contract, docs/alignment.md the
// reasoning).
#include "common/search/forced_aligner.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/model/model_error.h"
#include "common/scoring/weighted_distances.h"
#include "common/search/phone_context.h"

namespace gpuspeech {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr double kLog2Pi = 1.8378770664093453;  // ln(2 pi)

}  // namespace

int64_t FrameAlignment::aligned_frames() const {
  int64_t n = 0;
  for (int32_t s : senones) n += s >= 0;
  return n;
}

// A word's (or a silence gap's) HMM: the emitting states of its phones in
// order, each with the transitions into it from the previous frame's states.
// State 0 is where the path enters; `exit` is the log-probability of leaving
// the last phone through its exit state from each state (-inf: cannot).
struct ForcedAligner::Hmm {
  struct Arc {
    int32_t from;
    double log_prob;
  };
  std::vector<int32_t> senone;
  std::vector<std::vector<Arc>> into;  // per state, self-loop included
  std::vector<double> exit;
  bool valid = false;  // false: a phone the model lacks, or no model path
};

// Senone log-likelihoods of the span's frames, each (frame, codebook)
// Gaussian set and (frame, senone) mixture evaluated at most once while it
// is kept. align() works through the words in order and lets go of a
// word's frames once the words after it no longer need them
// (forget_frames_before): kept for the whole utterance, the (frame,
// codebook) sets of a 40 s utterance came to some 45 MB a stream, the
// bulk of an adapting decoder's memory.
//
// A senone's likelihood is sum_k w_k N_k(x): the senones of one codebook
// share its Gaussians' densities and differ only in the weights. So per
// (frame, codebook) the densities are taken once as exp(ln N_k - m), m the
// largest ln N_k, and the weights w_k are the aligner's (made once): a
// senone is then m + ln(sum_k w_k e_k), a dot product, where the direct
// form spent an exp per Gaussian per (frame, senone). When that sum
// underflows (the senone's weight lies only on Gaussians far below the
// codebook's best at this frame) the direct form is used.
class ForcedAligner::Scorer {
 public:
  Scorer(const GaussianMixtures& gm, const GaussianConstants& gc, const float* feats)
      : gm_(gm), gc_(gc), feats_(feats), dim_(gm.feature_dim()),
        density_(gm.gaussians_per_codebook) {}

  // ln p(x_t | senone s).
  double senone(int64_t t, int32_t s) {
    const int64_t key = t * gm_.num_senones + s;
    auto it = senones_.find(key);
    if (it != senones_.end()) return it->second;
    const Densities& g = codebook(t, gm_.senone_codebook[s]);
    const double* lin = gc_.weight.data() + static_cast<size_t>(s) * gm_.num_streams() * density_;
    double total = 0.0;
    const int streams = gm_.num_streams();
    for (int st = 0; st < streams && total != kNegInf; ++st) {
      const size_t base = static_cast<size_t>(st) * density_;
      double sum = 0.0;
      for (int k = 0; k < density_; ++k) sum += lin[base + k] * g.scaled[base + k];
      // Below this the sum has lost precision to underflowed terms.
      constexpr double kSmallest = 1e-290;
      total += sum > kSmallest ? g.max[static_cast<size_t>(st)] + std::log(sum) : direct(s, st, g);
    }
    senones_.emplace(key, total);
    return total;
  }

  // Drops what was computed for frames before t. A frame asked for again
  // is computed again, to the same values.
  void forget_frames_before(int64_t t) {
    for (auto it = codebooks_.begin(); it != codebooks_.end();)
      it = it->first / gm_.num_codebooks < t ? codebooks_.erase(it) : std::next(it);
    for (auto it = senones_.begin(); it != senones_.end();)
      it = it->first / gm_.num_senones < t ? senones_.erase(it) : std::next(it);
  }

 private:
  // One (frame, codebook): ln N_k per stream and Gaussian, their largest
  // per stream, and exp(ln N_k - max).
  struct Densities {
    std::vector<double> log, max, scaled;
  };

  // A stream's mixture the direct way: the largest weighted term, and the
  // others' exponentials relative to it.
  double direct(int32_t s, int st, const Densities& g) const {
    constexpr float kNoWeight = -std::numeric_limits<float>::infinity();
    const int streams = gm_.num_streams();
    const float* w = gm_.log_weights.data() + (static_cast<size_t>(s) * streams + st) * density_;
    const double* gs = g.log.data() + static_cast<size_t>(st) * density_;
    double best = kNegInf;
    for (int k = 0; k < density_; ++k)
      if (w[k] != kNoWeight) best = std::max(best, w[k] + gs[k]);
    if (best == kNegInf) return kNegInf;
    // Terms more than kNegligible below the best add under 1e-22 of it.
    constexpr double kNegligible = 50.0;
    double sum = 0.0;
    for (int k = 0; k < density_; ++k) {
      const double v = w[k] + gs[k] - best;  // -inf for a zero weight
      if (v > -kNegligible) sum += std::exp(v);
    }
    return best + std::log(sum);
  }

  // ln N(x_t; mu, var) of every Gaussian of codebook c: streams x density.
  const Densities& codebook(int64_t t, int c) {
    const int64_t key = t * gm_.num_codebooks + c;
    auto it = codebooks_.find(key);
    if (it != codebooks_.end()) return it->second;
    const float* x = feats_ + t * dim_;
    const int streams = gm_.num_streams();
    Densities out;
    out.log.resize(static_cast<size_t>(streams) * density_);
    out.max.assign(static_cast<size_t>(streams), kNegInf);
    out.scaled.resize(out.log.size());
    for (int st = 0; st < streams; ++st) {
      const int d = gm_.stream_dim(st);
      const std::vector<int>& comp = gm_.stream_components[st];
      const size_t first = static_cast<size_t>(c) * density_;  // Gaussian index in the stream
      const float* mu = gm_.means[st].data() + first * d;
      const double* iv = gc_.inv_var.data() + gc_.inv_var_offset[st] + first * d;
      const double* ln = gc_.log_norm.data() + gc_.log_norm_offset[st] + first;
      const size_t base = static_cast<size_t>(st) * density_;
      xs_.resize(static_cast<size_t>(d));
      for (int i = 0; i < d; ++i) xs_[static_cast<size_t>(i)] = x[comp[i]];
      q_.resize(static_cast<size_t>(density_));
      weighted_squared_distances(xs_.data(), mu, iv, d, density_, q_.data());
      for (int k = 0; k < density_; ++k) {
        const double v = ln[k] - 0.5 * q_[static_cast<size_t>(k)];
        out.log[base + k] = v;
        out.max[static_cast<size_t>(st)] = std::max(out.max[static_cast<size_t>(st)], v);
      }
      for (int k = 0; k < density_; ++k)
        out.scaled[base + k] = std::exp(out.log[base + k] - out.max[static_cast<size_t>(st)]);
    }
    return codebooks_.emplace(key, std::move(out)).first->second;
  }

  const GaussianMixtures& gm_;
  const GaussianConstants& gc_;
  const float* feats_;
  int dim_;
  int density_;
  std::unordered_map<int64_t, Densities> codebooks_;
  std::unordered_map<int64_t, double> senones_;
  std::vector<double> xs_, q_;  // a frame's stream, its distances (scratch)
};

ForcedAligner::ForcedAligner(const AcousticModel& model, const Dictionary& dictionary,
                             ForcedAlignerOptions options)
    : model_(model), dict_(dictionary), options_(options) {
  const std::string& dir = model.directory();
  const GaussianMixtures& gm = model.mixtures();
  const ModelDefinition& mdef = model.mdef();
  const TransitionMatrices& tm = model.transitions();
  try {
    gm.validate();
  } catch (const std::invalid_argument& e) {
    throw ModelError(dir + ": " + e.what());
  }
  if (gm.num_senones < mdef.num_senones())
    throw ModelError(dir + "/mdef: " + std::to_string(mdef.num_senones()) +
                     " senones, but the mixtures have " + std::to_string(gm.num_senones));
  if (tm.num_emitting < 1 || tm.num_emitting != mdef.num_emitting_states() ||
      tm.log_probs.size() !=
          static_cast<size_t>(tm.num_tmats) * tm.num_emitting * (tm.num_emitting + 1))
    throw ModelError(dir + "/transition_matrices: " + std::to_string(tm.num_emitting) +
                     " emitting states, the mdef " + std::to_string(mdef.num_emitting_states()));
  feature_dim_ = gm.feature_dim();

  // Per-Gaussian constants: 1/var and -0.5 (d ln 2pi + sum ln var), in the
  // layout of the means (stream-major, then codebook, Gaussian, component).
  const int density = gm.gaussians_per_codebook;
  for (int st = 0; st < gm.num_streams(); ++st) {
    const int d = gm.stream_dim(st);
    const std::vector<float>& var = gm.variances[st];
    gauss_.inv_var_offset.push_back(gauss_.inv_var.size());
    gauss_.log_norm_offset.push_back(gauss_.log_norm.size());
    for (size_t g = 0; g < static_cast<size_t>(gm.num_codebooks) * density; ++g) {
      double sum_log = 0.0;
      for (int i = 0; i < d; ++i) {
        const double v = var[g * d + i];
        gauss_.inv_var.push_back(1.0 / v);
        sum_log += std::log(v);
      }
      gauss_.log_norm.push_back(-0.5 * (d * kLog2Pi + sum_log));
    }
  }

  gauss_.weight.resize(gm.log_weights.size());
  for (size_t k = 0; k < gm.log_weights.size(); ++k)
    gauss_.weight[k] = std::exp(static_cast<double>(gm.log_weights[k]));

  // Dictionary phones by name -> model base phones.
  dict_phone_base_.resize(dict_.phone_names().size(), -1);
  for (size_t p = 0; p < dict_.phone_names().size(); ++p)
    dict_phone_base_[p] = mdef.base_phone_id(dict_.phone_names()[p]);
}

ForcedAligner::Hmm ForcedAligner::word_hmm(const std::vector<int>& bases, int left_context,
                                           int right_context, bool loop) const {
  const ModelDefinition& mdef = model_.mdef();
  const TransitionMatrices& tm = model_.transitions();
  const int n = tm.num_emitting;
  const bool use_tp = options_.use_transition_probs;
  auto lp = [&](float v) { return use_tp ? static_cast<double>(v) : 0.0; };
  Hmm h;
  if (bases.empty()) return h;
  for (int b : bases)
    if (b < 0) return h;
  const size_t phones = bases.size();
  h.senone.resize(phones * n);
  h.into.resize(phones * n);
  h.exit.assign(phones * n, kNegInf);
  std::vector<double> prev_exit;  // exits of the previous phone, per its state
  for (size_t p = 0; p < phones; ++p) {
    const int left = p > 0 ? bases[p - 1] : left_context;
    const int right = p + 1 < phones ? bases[p + 1] : right_context;
    const int phone =
        context_dependent_phone(mdef, bases[p], left, right, position_in_word(p, phones));
    const int tmat = mdef.tmat_of(phone);
    if (tmat < 0 || tmat >= tm.num_tmats) return h;
    const int32_t s0 = static_cast<int32_t>(p * n);
    for (int j = 0; j < n; ++j) {
      h.senone[s0 + j] = mdef.senone(phone, j);
      if (h.senone[s0 + j] < 0 || h.senone[s0 + j] >= model_.mixtures().num_senones) return h;
      for (int i = 0; i <= j; ++i) {  // self-loop, forward steps and skips
        const float v = tm.log_prob(tmat, i, j);
        if (v != -std::numeric_limits<float>::infinity() && !std::isnan(v))
          h.into[s0 + j].push_back({s0 + i, lp(v)});
      }
    }
    // Entering this phone: from the previous phone's exits.
    for (size_t i = 0; i < prev_exit.size(); ++i)
      if (prev_exit[i] != kNegInf)
        h.into[s0].push_back({static_cast<int32_t>(s0 - n + i), prev_exit[i]});
    prev_exit.assign(n, kNegInf);
    for (int j = 0; j < n; ++j) {
      const float v = tm.log_prob(tmat, j, n);
      if (v != -std::numeric_limits<float>::infinity() && !std::isnan(v)) prev_exit[j] = lp(v);
    }
  }
  const int32_t last0 = static_cast<int32_t>((phones - 1) * n);
  for (int j = 0; j < n; ++j) h.exit[last0 + j] = prev_exit[j];
  if (loop)  // the last phone's exit re-enters the first phone
    for (int j = 0; j < n; ++j)
      if (prev_exit[j] != kNegInf) h.into[0].push_back({last0 + j, prev_exit[j]});
  h.valid = true;
  return h;
}

double ForcedAligner::viterbi(const Hmm& hmm, Scorer& scorer, int64_t t0, int64_t t1,
                              std::vector<int32_t>& senones, double* acoustic) const {
  const int64_t frames = t1 - t0;
  const size_t states = hmm.senone.size();
  if (!hmm.valid || frames <= 0 || states == 0) return kNegInf;
  // to_exit[s]: the fewest frames after this one a path in state s still
  // needs before it can leave the HMM. A state that cannot leave within
  // the frames left lies on no complete path: it is never a predecessor of
  // one that can (that one's own need would be no more than its need plus
  // one), so skipping it changes neither the best path nor its score, and
  // spares the senone evaluations of the early states near the span's end
  // (the mirror of the states the path cannot reach yet).
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max() / 2;
  std::vector<int64_t> to_exit(states, kNever);
  for (size_t s = 0; s < states; ++s)
    if (hmm.exit[s] != kNegInf) to_exit[s] = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t s = 0; s < states; ++s)
      for (const Hmm::Arc& a : hmm.into[s]) {
        const size_t from = static_cast<size_t>(a.from);
        if (a.log_prob != kNegInf && to_exit[s] + 1 < to_exit[from]) {
          to_exit[from] = to_exit[s] + 1;
          changed = true;
        }
      }
  }
  std::vector<double> prev(states, kNegInf), cur(states);
  std::vector<int32_t> back(static_cast<size_t>(frames) * states, -1);
  if (to_exit[0] <= frames - 1) prev[0] = scorer.senone(t0, hmm.senone[0]);
  for (int64_t f = 1; f < frames; ++f) {
    int32_t* bp = back.data() + static_cast<size_t>(f) * states;
    const int64_t left = frames - 1 - f;  // frames after this one
    for (size_t s = 0; s < states; ++s) {
      if (to_exit[s] > left) {
        cur[s] = kNegInf;
        bp[s] = -1;
        continue;
      }
      double best = kNegInf;
      int32_t arg = -1;
      for (const Hmm::Arc& a : hmm.into[s]) {
        const double v = prev[a.from] + a.log_prob;
        if (v > best) {
          best = v;
          arg = a.from;
        }
      }
      // States the path cannot be in yet cost no senone evaluation.
      cur[s] = best == kNegInf ? kNegInf : best + scorer.senone(t0 + f, hmm.senone[s]);
      bp[s] = arg;
    }
    std::swap(prev, cur);
  }
  double best = kNegInf;
  int32_t arg = -1;
  for (size_t s = 0; s < states; ++s) {
    if (hmm.exit[s] == kNegInf || prev[s] == kNegInf) continue;
    const double v = prev[s] + hmm.exit[s];
    if (v > best) {
      best = v;
      arg = static_cast<int32_t>(s);
    }
  }
  if (arg < 0 || !std::isfinite(best)) return kNegInf;
  senones.resize(static_cast<size_t>(frames));
  double ac = 0.0;
  for (int64_t f = frames - 1; f >= 0; --f) {
    senones[f] = hmm.senone[arg];
    ac += scorer.senone(t0 + f, hmm.senone[arg]);
    if (f > 0) arg = back[static_cast<size_t>(f) * states + arg];
  }
  *acoustic = ac;
  return best;
}

FrameAlignment ForcedAligner::align(const float* feats, int64_t first_frame, int64_t num_frames,
                                    const std::vector<HypothesisWord>& words) const {
  if (num_frames < 0)
    throw std::invalid_argument("forced aligner: negative frame count " +
                                std::to_string(num_frames));
  if (num_frames > 0 && feats == nullptr)
    throw std::invalid_argument("forced aligner: null features");
  const int64_t span_end = first_frame + num_frames;  // exclusive
  for (size_t i = 0; i < words.size(); ++i) {
    const HypothesisWord& w = words[i];
    const std::string name = "forced aligner: word " + std::to_string(i) + " '" + w.text + "' (frames " +
                             std::to_string(w.start_frame) + ".." +
                             std::to_string(w.end_frame) + ")";
    if (w.end_frame < w.start_frame) throw std::invalid_argument(name + " ends before it starts");
    if (w.start_frame < first_frame || w.end_frame >= span_end)
      throw std::invalid_argument(name + " lies outside the features' frames " +
                                  std::to_string(first_frame) + ".." +
                                  std::to_string(span_end - 1));
    if (i > 0 && w.start_frame <= words[i - 1].end_frame)
      throw std::invalid_argument(name + " does not start after the previous word's end (frame " +
                                  std::to_string(words[i - 1].end_frame) + ")");
  }

  FrameAlignment out;
  out.first_frame = first_frame;
  out.senones.assign(static_cast<size_t>(num_frames), -1);
  Scorer scorer(model_.mixtures(), gauss_, feats);

  // Base phones of a pronunciation (-1 entries for phones the model lacks).
  auto bases_of = [&](int pron) {
    std::vector<int> b;
    for (int p : dict_.pronunciation(pron).phones) b.push_back(dict_phone_base_[p]);
    return b;
  };
  const size_t nw = words.size();
  std::vector<int> ids(nw);
  std::vector<uint8_t> failed(nw, 0);
  for (size_t i = 0; i < nw; ++i) {
    ids[i] = dict_.word_id(words[i].text);
    if (ids[i] == Dictionary::kNoWord) failed[i] = 1;
  }
  // Each pronunciation's phones, and its first and last (the cross-word
  // contexts it gives its neighbours).
  std::vector<std::vector<std::vector<int>>> bases(nw);
  for (size_t i = 0; i < nw; ++i)
    if (!failed[i])
      for (int pron : dict_.pronunciations(ids[i])) bases[i].push_back(bases_of(pron));
  auto first_of = [&](size_t i, size_t b) { return bases[i][b].empty() ? -1 : bases[i][b].front(); };
  auto last_of = [&](size_t i, size_t b) { return bases[i][b].empty() ? -1 : bases[i][b].back(); };

  // One word's Viterbi fit with one pronunciation between two context
  // phones (-1: SIL), computed once per distinct (word, pronunciation,
  // left, right): alternates mostly share their first and last phones.
  struct Fit {
    double score = kNegInf;
    double acoustic = 0.0;
    std::vector<int32_t> senones;
  };
  std::map<std::tuple<size_t, size_t, int, int>, Fit> fits;
  auto fit = [&](size_t i, size_t b, int left, int right) -> const Fit& {
    auto [it, added] = fits.try_emplace(std::make_tuple(i, b, left, right));
    if (added) {
      const int64_t t0 = words[i].start_frame - first_frame, t1 = words[i].end_frame + 1 - first_frame;
      Fit& f = it->second;
      f.score = viterbi(word_hmm(bases[i][b], left, right, false), scorer, t0, t1, f.senones,
                        &f.acoustic);
    }
    return it->second;
  };

  // The pronunciations are chosen jointly over each run of touching words:
  // a word's last phone takes the next word's first phone as its right
  // context and that word's first phone this word's last as its left, so
  // the contexts must come from the pronunciations actually aligned (as on
  // the decoder's path, where each alternate is its own word). A Viterbi
  // over the run's pronunciation choices, its state the pronunciations of a
  // word and the next, maximises the sum of the words' scores. The run's
  // edges, and words that do not touch, see SIL. A word that fits under no
  // choice is counted failed and splits the run (its neighbours then see
  // SIL, as for a word missing from the dictionary).
  std::vector<size_t> chosen(nw, 0);
  // Returns the first word of [from, to) that cannot be aligned, or `to`
  // after choosing the pronunciations of them all.
  auto solve_run = [&](size_t from, size_t to) -> size_t {
    const size_t m = to - from;
    // v[k][b * nc + c]: best total of words from..from+k with word k's
    // pronunciation b and word k+1's c (nc = 1 for the last word);
    // back[k][...] word k-1's pronunciation on that best path.
    std::vector<std::vector<double>> v(m);
    std::vector<std::vector<int>> back(m);
    for (size_t k = 0; k < m; ++k) {
      const size_t i = from + k;
      const size_t nb = bases[i].size(), nc = k + 1 < m ? bases[i + 1].size() : 1;
      const size_t na = k > 0 ? bases[i - 1].size() : 1;
      v[k].assign(nb * nc, kNegInf);
      back[k].assign(nb * nc, -1);
      bool any = false;
      for (size_t b = 0; b < nb; ++b)
        for (size_t c = 0; c < nc; ++c) {
          const int right = k + 1 < m ? first_of(i + 1, c) : -1;
          double& best = v[k][b * nc + c];
          for (size_t a = 0; a < na; ++a) {
            const double before = k > 0 ? v[k - 1][a * nb + b] : 0.0;
            if (before == kNegInf) continue;
            const Fit& f = fit(i, b, k > 0 ? last_of(i - 1, a) : -1, right);
            if (f.score == kNegInf) continue;
            if (before + f.score > best) {  // ties: the earlier (base) pronunciation
              best = before + f.score;
              back[k][b * nc + c] = static_cast<int>(a);
            }
          }
          any = any || best != kNegInf;
        }
      if (!any) return i;
      // Word i's fits are all made: the next word's use its frames only
      // through the contexts, never its features.
      scorer.forget_frames_before(words[i].end_frame + 1 - first_frame);
    }
    // The best last pronunciation, then back along the run.
    size_t b = 0;
    for (size_t x = 1; x < bases[to - 1].size(); ++x)
      if (v[m - 1][x] > v[m - 1][b]) b = x;
    size_t c = 0;
    for (size_t k = m; k-- > 0;) {
      const size_t nc = k + 1 < m ? bases[from + k + 1].size() : 1;
      chosen[from + k] = b;
      const int a = back[k][b * nc + c];
      c = b;
      b = static_cast<size_t>(std::max(a, 0));
    }
    return to;
  };
  auto touches_next = [&](size_t i) {
    return i + 1 < nw && words[i + 1].start_frame == words[i].end_frame + 1;
  };
  for (size_t from = 0; from < nw;) {
    if (failed[from]) {
      ++from;
      continue;
    }
    size_t to = from + 1;
    while (to < nw && !failed[to] && touches_next(to - 1)) ++to;
    const size_t bad = solve_run(from, to);
    if (bad < to) {
      failed[bad] = 1;  // and solve the run again without it
      continue;
    }
    for (size_t i = from; i < to; ++i) {
      // Every fit on the chosen path was made inside solve_run(): found, not
      // computed again.
      const size_t b = chosen[i];
      const Fit& f = fit(i, b, i > from ? last_of(i - 1, chosen[i - 1]) : -1,
                         i + 1 < to ? first_of(i + 1, chosen[i + 1]) : -1);
      const int64_t t0 = words[i].start_frame - first_frame;
      std::copy(f.senones.begin(), f.senones.end(), out.senones.begin() + t0);
      out.log_likelihood += f.acoustic;
      ++out.words_aligned;
    }
    from = to;
  }
  for (uint8_t f : failed) out.words_failed += f;

  std::vector<int32_t> path;
  if (options_.align_gaps_to_silence && model_.mdef().silence_phone() >= 0) {
    const Hmm sil = word_hmm({model_.mdef().silence_phone()}, -1, -1, true);
    int64_t t = 0;
    for (size_t i = 0; i <= words.size(); ++i) {
      const int64_t gap_end = i < words.size() ? words[i].start_frame - first_frame : num_frames;
      if (gap_end > t) {
        scorer.forget_frames_before(t);
        double ac = 0.0;
        if (viterbi(sil, scorer, t, gap_end, path, &ac) != kNegInf) {
          std::copy(path.begin(), path.end(), out.senones.begin() + t);
          out.log_likelihood += ac;
        }
      }
      if (i < words.size()) t = words[i].end_frame + 1 - first_frame;
    }
  }
  return out;
}

}  // namespace gpuspeech
