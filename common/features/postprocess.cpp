// Utterance-level post-processing on the host: CMN, CVN, min/max and deltas.
// Sums run in double so that long utterances (hours of frames) do not lose
// the mean to float rounding.
#include "common/features/postprocess.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuspeech {

void apply_batch_cmn(FeatureMatrix& feats, bool cvn, bool skip_negative_c0) {
  const int dim = feats.dim;
  if (feats.rows <= 0 || dim <= 0) return;
  std::vector<double> sum(dim, 0.0), sum_sq(dim, 0.0);
  int64_t counted = 0;
  for (int pass = 0; pass < 2 && counted == 0; ++pass) {
    // Pass 0 skips the rows with a negative c0 if asked; pass 1 (only when
    // every row was skipped) takes them all, as a mean of nothing is no mean.
    const bool skip = skip_negative_c0 && pass == 0;
    for (int64_t t = 0; t < feats.rows; ++t) {
      const float* x = feats.row(t);
      if (skip && x[0] < 0.0f) continue;
      for (int d = 0; d < dim; ++d) sum[d] += x[d];
      ++counted;
    }
  }
  const double n = static_cast<double>(feats.rows);
  std::vector<double> mean(dim);
  for (int d = 0; d < dim; ++d) mean[d] = sum[d] / static_cast<double>(counted);
  // Variance from the centred values (two passes), not E[x^2] - E[x]^2,
  // which cancels badly when the mean is large against the spread.
  std::vector<double> scale(dim, 1.0);
  if (cvn) {
    for (int64_t t = 0; t < feats.rows; ++t) {
      const float* x = feats.row(t);
      for (int d = 0; d < dim; ++d) {
        const double c = x[d] - mean[d];
        sum_sq[d] += c * c;
      }
    }
    for (int d = 0; d < dim; ++d) {
      const double var = sum_sq[d] / n;
      // A constant dimension carries no information; leave it at 0 rather
      // than dividing by zero.
      scale[d] = var > 0.0 ? 1.0 / std::sqrt(var) : 0.0;
    }
  }
  for (int64_t t = 0; t < feats.rows; ++t) {
    float* x = feats.row(t);
    for (int d = 0; d < dim; ++d)
      x[d] = static_cast<float>((x[d] - mean[d]) * scale[d]);
  }
}

void apply_min_max(FeatureMatrix& feats) {
  const int dim = feats.dim;
  if (feats.rows <= 0 || dim <= 0) return;
  std::vector<float> lo(feats.row(0), feats.row(0) + dim);
  std::vector<float> hi = lo;
  for (int64_t t = 1; t < feats.rows; ++t) {
    const float* x = feats.row(t);
    for (int d = 0; d < dim; ++d) {
      lo[d] = std::min(lo[d], x[d]);
      hi[d] = std::max(hi[d], x[d]);
    }
  }
  for (int64_t t = 0; t < feats.rows; ++t) {
    float* x = feats.row(t);
    for (int d = 0; d < dim; ++d) {
      const double range = static_cast<double>(hi[d]) - lo[d];
      x[d] = range > 0.0
                 ? static_cast<float>((static_cast<double>(x[d]) - lo[d]) / range)
                 : 0.0f;
    }
  }
}

// ---------------------------------------------------------------------------
// Live CMN.
//
// The running estimate is sum_ / count_. A non-empty `init` enters as a
// prior worth `window` frames (Sphinx's cmn_prior gives -cmninit the weight
// of its CMN_WIN frames); an empty one is replaced by the first frame, with
// weight 1. Every frame is normalised with the mean as it stands, then
// added. Whenever the weight reaches 2 * window, sum and weight are halved:
// the estimate then averages the last window..2*window frames with older
// ones discounted geometrically, so it follows a drifting channel while
// staying as smooth as Sphinx's (which rescales from 800 down to 500).
// Because the update is per frame, chunking the stream cannot change it.

LiveCmn::LiveCmn(int dim, std::vector<float> init, int window, int init_frames,
                 bool skip_negative_c0)
    : dim_(dim),
      init_(std::move(init)),
      window_(window),
      init_frames_(init_frames),
      skip_negative_c0_(skip_negative_c0) {
  if (dim_ < 1)
    throw std::invalid_argument("live CMN: dimension must be >= 1, got " +
                                std::to_string(dim_));
  if (window_ < 1)
    throw std::invalid_argument("live CMN: window must be >= 1 frame, got " +
                                std::to_string(window_));
  if (init_frames_ < 1)
    throw std::invalid_argument("live CMN: the start's weight must be >= 1 frame, got " +
                                std::to_string(init_frames_));
  if (!init_.empty() && static_cast<int>(init_.size()) != dim_)
    throw std::invalid_argument(
        "live CMN: cmn_init has " + std::to_string(init_.size()) +
        " values but the features have " + std::to_string(dim_) +
        " dimensions");
  reset();
}

void LiveCmn::reset() {
  sum_.assign(dim_, 0.0);
  mean_.assign(dim_, 0.0f);
  count_ = 0.0;
  started_ = false;
  if (!init_.empty()) start_with(init_);
}

void LiveCmn::restart_from(const std::vector<float>& start) {
  if (static_cast<int>(start.size()) != dim_)
    throw std::invalid_argument("live CMN: a start of " + std::to_string(start.size()) +
                                " values for " + std::to_string(dim_) + " dimensions");
  reset();
  start_with(start);
}

void LiveCmn::start_with(const std::vector<float>& start) {
  for (int d = 0; d < dim_; ++d) {
    mean_[d] = start[d];
    sum_[d] = static_cast<double>(start[d]) * init_frames_;
  }
  count_ = init_frames_;
  started_ = true;
}

bool LiveCmn::process(float* frame, bool learn, float* mean_used) {
  if (!started_) {
    for (int d = 0; d < dim_; ++d) mean_[d] = frame[d];
    started_ = true;
  }
  if (mean_used) std::copy(mean_.begin(), mean_.end(), mean_used);
  if (skip_negative_c0_ && frame[0] < 0.0f) learn = false;
  if (!learn) {
    for (int d = 0; d < dim_; ++d) frame[d] -= mean_[d];
    return false;
  }
  for (int d = 0; d < dim_; ++d) {
    const float x = frame[d];
    frame[d] = x - mean_[d];
    sum_[d] += x;
  }
  count_ += 1.0;
  if (count_ >= 2.0 * window_) {
    for (int d = 0; d < dim_; ++d) sum_[d] *= 0.5;
    count_ *= 0.5;
  }
  for (int d = 0; d < dim_; ++d)
    mean_[d] = static_cast<float>(sum_[d] / count_);
  return true;
}

// ---------------------------------------------------------------------------
// Deltas.
//
// Both layouts are linear filters over the base features with the frame
// index clamped to the available rows, so the edges replicate the first and
// last frame. Accelerations are the delta filter applied twice *to the
// clamped base features* (not to clamped deltas): for Sphinx
//   d[t]  = c[t+2] - c[t-2],
//   dd[t] = d[t+1] - d[t-1] = (c[t+3] - c[t-1]) - (c[t+1] - c[t-3]),
// as sphinxbase's feat_1s_c_d_dd computes from its edge-padded cepstra; for
// regression (HTK/Kaldi, window N)
//   d[t] = sum_{n=1..N} n (c[t+n] - c[t-n]) / (2 sum_{n=1..N} n^2)
// and dd = the same filter convolved with itself (Kaldi's DeltaFeatures).
// Either way row t needs only rows t - context .. t + context.

namespace {

void check_delta(const DeltaOptions& opts) {
  if (opts.layout == DeltaOptions::Layout::kRegression) {
    if (opts.order < 1 || opts.order > 2)
      throw std::invalid_argument(
          "deltas: regression order must be 1 or 2, got " +
          std::to_string(opts.order));
    if (opts.window < 1)
      throw std::invalid_argument("deltas: window must be >= 1, got " +
                                  std::to_string(opts.window));
  }
}

int delta_orders(const DeltaOptions& opts) {
  switch (opts.layout) {
    case DeltaOptions::Layout::kNone: return 0;
    case DeltaOptions::Layout::kSphinx1sCDDd: return 2;
    case DeltaOptions::Layout::kRegression: return opts.order;
    case DeltaOptions::Layout::kSphinxS2_4x: return 0;  // own layout, see below
  }
  return 0;
}

std::vector<double> convolve(const std::vector<double>& x,
                             const std::vector<double>& y) {
  std::vector<double> out(x.size() + y.size() - 1, 0.0);
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = 0; j < y.size(); ++j) out[i + j] += x[i] * y[j];
  return out;
}

// Centred FIR taps per order: taps[o][j] weights c[t + j - taps[o].size()/2]
// in the order-(o + 1) derivative.
std::vector<std::vector<double>> delta_taps(const DeltaOptions& opts) {
  std::vector<std::vector<double>> taps;
  switch (opts.layout) {
    case DeltaOptions::Layout::kNone:
    case DeltaOptions::Layout::kSphinxS2_4x:
      break;
    case DeltaOptions::Layout::kSphinx1sCDDd: {
      const std::vector<double> d = {-1.0, 0.0, 0.0, 0.0, 1.0};  // c[t+2]-c[t-2]
      taps.push_back(d);
      taps.push_back(convolve(d, {-1.0, 0.0, 1.0}));  // d[t+1] - d[t-1]
      break;
    }
    case DeltaOptions::Layout::kRegression: {
      const int w = opts.window;
      double denom = 0.0;
      for (int n = 1; n <= w; ++n) denom += 2.0 * n * n;
      std::vector<double> d(2 * w + 1, 0.0);
      for (int n = 1; n <= w; ++n) {
        d[w + n] = n / denom;
        d[w - n] = -n / denom;
      }
      taps.push_back(d);
      if (opts.order == 2) taps.push_back(convolve(d, d));
      break;
    }
  }
  return taps;
}

}  // namespace

int delta_context(const DeltaOptions& opts) {
  switch (opts.layout) {
    case DeltaOptions::Layout::kNone: return 0;
    case DeltaOptions::Layout::kSphinx1sCDDd: return 3;
    case DeltaOptions::Layout::kRegression: return opts.order * opts.window;
    case DeltaOptions::Layout::kSphinxS2_4x: return 4;
  }
  return 0;
}

namespace {

// One s2_4x frame (sphinxbase's feat_s2_4x_cep2feat) from the 13 cepstra
// c[t-4] .. c[t+4] of a window whose rows outside it are clamped:
//   stream 0 (12): c1..c12 of c[t]
//   stream 1 (24): c1..c12 of c[t+2] - c[t-2], then of c[t+4] - c[t-4]
//   stream 2 (3):  c0[t], c0[t+2] - c0[t-2],
//                  (c0[t+3] - c0[t-1]) - (c0[t+1] - c0[t-3])
//   stream 3 (12): c1..c12 of the same second difference
// Differences are taken in float, in the same order as sphinx, so the
// features match its to the last bit.
void s2_4x_row(const FeatureMatrix& feats, int64_t t, float* o) {
  const auto at = [&](int64_t dt) {
    return feats.row(std::clamp<int64_t>(t + dt, 0, feats.rows - 1));
  };
  const float* c = at(0);
  const float *p1 = at(1), *p2 = at(2), *p3 = at(3), *p4 = at(4);
  const float *m1 = at(-1), *m2 = at(-2), *m3 = at(-3), *m4 = at(-4);
  for (int i = 1; i < 13; ++i) {
    o[i - 1] = c[i];                    // stream 0
    o[12 + i - 1] = p2[i] - m2[i];      // stream 1, short
    o[24 + i - 1] = p4[i] - m4[i];      // stream 1, long
    o[39 + i - 1] = (p3[i] - m1[i]) - (p1[i] - m3[i]);  // stream 3
  }
  o[36] = c[0];  // stream 2
  o[37] = p2[0] - m2[0];
  o[38] = (p3[0] - m1[0]) - (p1[0] - m3[0]);
}

int layout_dim(int dim, const DeltaOptions& opts) {
  if (opts.layout == DeltaOptions::Layout::kSphinxS2_4x) return 51;
  return dim * (1 + delta_orders(opts));
}

}  // namespace

void add_deltas_rows(const FeatureMatrix& feats, int64_t first, int64_t count,
                     const DeltaOptions& opts, float* out) {
  check_delta(opts);
  if (count < 0 || first < 0 || first + count > feats.rows)
    throw std::invalid_argument(
        "deltas: rows [" + std::to_string(first) + ", " +
        std::to_string(first + count) + ") outside a window of " +
        std::to_string(feats.rows) + " rows");
  const int dim = feats.dim;
  if (opts.layout == DeltaOptions::Layout::kSphinxS2_4x) {
    if (dim != 13)
      throw std::invalid_argument("deltas: s2_4x needs 13 cepstra a frame, got " +
                                  std::to_string(dim));
    for (int64_t i = 0; i < count; ++i) s2_4x_row(feats, first + i, out + i * 51);
    return;
  }
  const int orders = delta_orders(opts);
  const int out_dim = dim * (1 + orders);
  const auto taps = delta_taps(opts);
  std::vector<double> acc(dim);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = first + i;
    float* o = out + i * out_dim;
    std::copy(feats.row(t), feats.row(t) + dim, o);
    for (int ord = 0; ord < orders; ++ord) {
      const std::vector<double>& f = taps[ord];
      const int64_t half = static_cast<int64_t>(f.size() / 2);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (size_t j = 0; j < f.size(); ++j) {
        if (f[j] == 0.0) continue;
        const int64_t s = std::clamp<int64_t>(
            t + static_cast<int64_t>(j) - half, 0, feats.rows - 1);
        const float* x = feats.row(s);
        for (int d = 0; d < dim; ++d) acc[d] += f[j] * x[d];
      }
      float* od = o + dim * (1 + ord);
      for (int d = 0; d < dim; ++d) od[d] = static_cast<float>(acc[d]);
    }
  }
}

FeatureMatrix add_deltas(const FeatureMatrix& feats, const DeltaOptions& opts) {
  check_delta(opts);
  FeatureMatrix out;
  out.rows = feats.rows;
  if (opts.layout == DeltaOptions::Layout::kSphinxS2_4x && feats.dim != 13)
    throw std::invalid_argument("deltas: s2_4x needs 13 cepstra a frame, got " +
                                std::to_string(feats.dim));
  out.dim = layout_dim(feats.dim, opts);
  out.data.resize(static_cast<size_t>(out.rows) * out.dim);
  if (feats.rows > 0)
    add_deltas_rows(feats, 0, feats.rows, opts, out.data.data());
  return out;
}

void postprocess_utterance(const FeatureOptions& opts, FeatureMatrix& feats,
                           const std::vector<uint8_t>* learn) {
  const NormOptions& norm = opts.norm;
  switch (norm.cmn) {
    case NormOptions::Cmn::kNone:
      if (norm.cvn)
        throw std::invalid_argument("cvn needs batch CMN (norm.cmn = batch)");
      break;
    case NormOptions::Cmn::kBatch:
      apply_batch_cmn(feats, norm.cvn, opts.cmn_skips_negative_c0());
      break;
    case NormOptions::Cmn::kLive: {
      if (norm.cvn)
        throw std::invalid_argument("cvn needs batch CMN (norm.cmn = batch)");
      if (feats.rows == 0) break;
      LiveCmn cmn(feats.dim, norm.cmn_init, norm.live_window, norm.live_init_frames,
                  opts.cmn_skips_negative_c0());
      const bool gated = learn != nullptr && !learn->empty();
      if (gated && learn->size() != static_cast<size_t>(feats.rows))
        throw std::invalid_argument("live CMN: " + std::to_string(learn->size()) +
                                    " speech decisions for " + std::to_string(feats.rows) +
                                    " frames");
      for (int64_t t = 0; t < feats.rows; ++t)
        cmn.process(feats.row(t), !gated || (*learn)[static_cast<size_t>(t)] != 0);
      break;
    }
  }
  if (norm.min_max) apply_min_max(feats);
  if (opts.delta.layout != DeltaOptions::Layout::kNone)
    feats = add_deltas(feats, opts.delta);
}

}  // namespace gpuspeech
