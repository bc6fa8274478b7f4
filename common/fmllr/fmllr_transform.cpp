#include "common/fmllr/fmllr_transform.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpuspeech {

FmllrTransform FmllrTransform::identity(int dim) {
  if (dim < 0) throw std::invalid_argument("fMLLR transform: negative dimension");
  FmllrTransform t;
  t.dim = dim;
  t.w.assign(static_cast<size_t>(dim) * (dim + 1), 0.0);
  for (int i = 0; i < dim; ++i) t.at(i, i) = 1.0;
  return t;
}

bool FmllrTransform::is_identity() const {
  for (int i = 0; i < dim; ++i)
    for (int j = 0; j <= dim; ++j)
      if (at(i, j) != (i == j ? 1.0 : 0.0)) return false;
  return true;
}

bool FmllrTransform::all_finite() const {
  for (double v : w)
    if (!std::isfinite(v)) return false;
  return true;
}

double FmllrTransform::log_abs_det() const {
  const int n = dim;
  std::vector<double> a(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a[static_cast<size_t>(i) * n + j] = at(i, j);
  double logdet = 0.0;
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[static_cast<size_t>(r) * n + c]) > std::fabs(a[static_cast<size_t>(piv) * n + c])) piv = r;
    const double p = a[static_cast<size_t>(piv) * n + c];
    if (p == 0.0 || !std::isfinite(p)) return -std::numeric_limits<double>::infinity();
    if (piv != c)
      for (int j = 0; j < n; ++j) std::swap(a[static_cast<size_t>(piv) * n + j], a[static_cast<size_t>(c) * n + j]);
    logdet += std::log(std::fabs(p));
    for (int r = c + 1; r < n; ++r) {
      const double f = a[static_cast<size_t>(r) * n + c] / p;
      for (int j = c; j < n; ++j) a[static_cast<size_t>(r) * n + j] -= f * a[static_cast<size_t>(c) * n + j];
    }
  }
  return logdet;
}

void apply_fmllr_reference(const FmllrTransform& t, const float* in, int64_t frames, float* out) {
  const int d = t.dim;
  std::vector<double> y(static_cast<size_t>(d));
  for (int64_t f = 0; f < frames; ++f) {
    const float* x = in + f * d;
    for (int i = 0; i < d; ++i) {
      double acc = t.at(i, d);
      for (int j = 0; j < d; ++j) acc += t.at(i, j) * x[j];
      y[static_cast<size_t>(i)] = acc;
    }
    for (int i = 0; i < d; ++i) out[f * d + i] = static_cast<float>(y[static_cast<size_t>(i)]);
  }
}

FmllrApplier::FmllrApplier(Backend& backend, int dim, int64_t block_frames)
    : backend_(backend), dim_(dim), block_frames_(block_frames) {
  if (dim < 1) throw std::invalid_argument("fMLLR applier: dimension must be positive");
  if (block_frames < 1) throw std::invalid_argument("fMLLR applier: block_frames < 1");
  w_dev_ = backend_.alloc(static_cast<size_t>(dim) * (dim + 1));
  in_dev_ = backend_.alloc(static_cast<size_t>(block_frames_) * (dim + 1));
  out_dev_ = backend_.alloc(static_cast<size_t>(block_frames_) * dim);
  set_transform(FmllrTransform::identity(dim));
}

void FmllrApplier::set_transform(const FmllrTransform& t) {
  if (t.dim != dim_)
    throw std::invalid_argument("fMLLR transform of dimension " + std::to_string(t.dim) +
                                " for features of dimension " + std::to_string(dim_));
  if (t.w.size() != static_cast<size_t>(dim_) * (dim_ + 1) || !t.all_finite())
    throw std::invalid_argument("fMLLR transform has the wrong size or non-finite entries");
  std::vector<float> w(t.w.begin(), t.w.end());
  backend_.upload(*w_dev_, w.data(), w.size());
}

void FmllrApplier::upload_block(const float* in, int64_t n) {
  const int k = dim_ + 1;
  in_host_.resize(static_cast<size_t>(n * k));
  for (int64_t f = 0; f < n; ++f) {
    std::copy(in + f * dim_, in + (f + 1) * dim_, in_host_.data() + f * k);
    in_host_[static_cast<size_t>(f * k + dim_)] = 1.0f;
  }
  backend_.upload(*in_dev_, in_host_.data(), in_host_.size());
}

void FmllrApplier::apply(const float* in, int64_t frames, float* out) {
  for (int64_t first = 0; first < frames; first += block_frames_) {
    const int64_t n = std::min(block_frames_, frames - first);
    upload_block(in + first * dim_, n);
    backend_.gemm_nt(*in_dev_, n, dim_ + 1, *w_dev_, dim_, *out_dev_);
    backend_.download(*out_dev_, out + first * dim_, static_cast<size_t>(n * dim_));
  }
}

void FmllrApplier::apply(const float* in, int64_t frames, DeviceBuffer& out, size_t out_offset) {
  if (out.size() < out_offset + static_cast<size_t>(frames) * dim_)
    throw std::invalid_argument("fMLLR applier: output buffer too small");
  for (int64_t first = 0; first < frames; first += block_frames_) {
    const int64_t n = std::min(block_frames_, frames - first);
    upload_block(in + first * dim_, n);
    backend_.gemm_nt(*in_dev_, n, dim_ + 1, *w_dev_, dim_, out, 0,
                     out_offset + static_cast<size_t>(first * dim_));
  }
}

}  // namespace gpuspeech
