#include "common/features/linear_vtln.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "common/features/cepstral_transform.h"
#include "common/features/mel_filterbank.h"

namespace gpuspeech {

namespace {

// Solves X M = B for X (rows of B), M n x n, by Gauss-Jordan with partial
// pivoting on a copy: X = B M^-1. M here is D Phi, a scaled cosine basis,
// far from singular.
std::vector<double> right_divide(const std::vector<double>& b, int rows, std::vector<double> m, int n) {
  // Invert m in place into inv.
  std::vector<double> inv(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) inv[static_cast<size_t>(i) * n + i] = 1.0;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r)
      if (std::fabs(m[static_cast<size_t>(r) * n + col]) > std::fabs(m[static_cast<size_t>(pivot) * n + col]))
        pivot = r;
    const double p = m[static_cast<size_t>(pivot) * n + col];
    if (!(std::fabs(p) > 1e-12)) throw std::logic_error("linear VTLN: singular cepstral basis");
    if (pivot != col)
      for (int c = 0; c < n; ++c) {
        std::swap(m[static_cast<size_t>(pivot) * n + c], m[static_cast<size_t>(col) * n + c]);
        std::swap(inv[static_cast<size_t>(pivot) * n + c], inv[static_cast<size_t>(col) * n + c]);
      }
    for (int c = 0; c < n; ++c) {
      m[static_cast<size_t>(col) * n + c] /= p;
      inv[static_cast<size_t>(col) * n + c] /= p;
    }
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = m[static_cast<size_t>(r) * n + col];
      if (f == 0.0) continue;
      for (int c = 0; c < n; ++c) {
        m[static_cast<size_t>(r) * n + c] -= f * m[static_cast<size_t>(col) * n + c];
        inv[static_cast<size_t>(r) * n + c] -= f * inv[static_cast<size_t>(col) * n + c];
      }
    }
  }
  std::vector<double> x(static_cast<size_t>(rows) * n, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < n; ++k) {
      const double v = b[static_cast<size_t>(r) * n + k];
      if (v == 0.0) continue;
      for (int c = 0; c < n; ++c) x[static_cast<size_t>(r) * n + c] += v * inv[static_cast<size_t>(k) * n + c];
    }
  return x;
}

}  // namespace

int linear_vtln_blocks(const FeatureOptions& options) {
  if (options.delta.layout == DeltaOptions::Layout::kSphinxS2_4x) return 0;
  const int base = options.base_dim(), out = options.output_dim();
  if (base <= 0 || out % base != 0) return 0;
  return out / base;
}

std::vector<double> linear_vtln_matrix(const FeatureOptions& options, double warp) {
  if (options.kind != FeatureKind::kMfcc)
    throw std::invalid_argument(std::string("linear VTLN needs MFCC features, not ") + to_string(options.kind));
  const MelOptions& mel = options.mel;
  const double rate = options.frame.sample_rate;
  check_vtln(mel, rate, warp);
  const int n = mel.num_filters, nc = options.mfcc.num_ceps;
  if (warp == 1.0) {  // exactly, not through the basis and back
    std::vector<double> id(static_cast<size_t>(nc) * nc, 0.0);
    for (int k = 0; k < nc; ++k) id[static_cast<size_t>(k) * nc + k] = 1.0;
    return id;
  }
  const std::vector<float> df = cepstral_matrix(options.mfcc.transform, nc, n, options.mfcc.lifter);
  const std::vector<double> d(df.begin(), df.end());  // nc x n

  // The filters' centres sit evenly on the mel scale between low and high:
  // centre i at index i, edges at i - 1 and i + 1.
  const bool sphinx = mel.scale == MelScale::kSphinx;
  const auto to_mel = [&](double hz) { return sphinx ? mel_sphinx(hz) : mel_htk(hz); };
  const auto from_mel = [&](double m) { return sphinx ? mel_sphinx_inverse(m) : mel_htk_inverse(m); };
  const double high = resolve_high_freq(mel.high_freq, rate);
  const double mel_low = to_mel(mel.low_freq), mel_step = (to_mel(high) - mel_low) / (n + 1);

  // Phi at the unwarped positions (n x nc) and at the warped ones.
  const auto phi = [&](const std::vector<double>& x) {
    std::vector<double> p(static_cast<size_t>(n) * nc);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < nc; ++k) p[static_cast<size_t>(i) * nc + k] = std::cos(M_PI * k * (x[i] + 0.5) / n);
    return p;
  };
  std::vector<double> x0(n), xw(n);
  for (int i = 0; i < n; ++i) {
    x0[i] = i;
    const double centre = from_mel(mel_low + (i + 1) * mel_step);
    const double moved = vtln_warp_hz(centre, warp, mel.low_freq, high, rate / 2.0, mel.vtln);
    xw[i] = (to_mel(moved) - mel_low) / mel_step - 1.0;
  }
  const auto d_times = [&](const std::vector<double>& p) {  // D p: nc x nc
    std::vector<double> r(static_cast<size_t>(nc) * nc, 0.0);
    for (int a = 0; a < nc; ++a)
      for (int j = 0; j < n; ++j) {
        const double v = d[static_cast<size_t>(a) * n + j];
        for (int k = 0; k < nc; ++k) r[static_cast<size_t>(a) * nc + k] += v * p[static_cast<size_t>(j) * nc + k];
      }
    return r;
  };
  // C = (D Phi(xw)) (D Phi(x0))^-1
  std::vector<double> c = right_divide(d_times(phi(xw)), nc, d_times(phi(x0)), nc);
  if (options.mfcc.use_energy) {
    // The log energy does not move with the warp, and the cepstra do not
    // take it in.
    for (int k = 0; k < nc; ++k) {
      c[static_cast<size_t>(k)] = k == 0 ? 1.0 : 0.0;
      c[static_cast<size_t>(k) * nc] = k == 0 ? 1.0 : 0.0;
    }
  }
  return c;
}

}  // namespace gpuspeech
