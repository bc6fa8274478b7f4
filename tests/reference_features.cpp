// Straightforward double-precision PLP and TRAPS (see reference_features.h).
// Speed does not matter here; being obviously right does.
#include "tests/reference_features.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>

#include "common/features/mel_filterbank.h"
#include "common/features/window.h"

namespace gpuspeech {
namespace reference {

namespace {

constexpr double kPi = 3.14159265358979323846;

double bark(double hz) { return 6.0 * std::asinh(hz / 600.0); }
double bark_inverse(double z) { return 600.0 * std::sinh(z / 6.0); }

// Hermansky 1990, eq. 5a: w = 2 pi f,
// E = (w^2 + 56.8e6) w^4 / ((w^2 + 6.3e6)^2 (w^2 + 0.38e9)).
double equal_loudness(double hz) {
  const double w = 2.0 * kPi * hz;
  const double w2 = w * w;
  return (w2 + 56.8e6) * std::pow(w, 4) /
         (std::pow(w2 + 6.3e6, 2) * (w2 + 0.38e9));
}

// Hermansky 1990, eq. 3: the critical-band curve at Bark distance dz.
double masking_curve(double dz) {
  if (dz < -1.3) return 0.0;
  if (dz <= -0.5) return std::pow(10.0, 2.5 * (dz + 0.5));
  if (dz < 0.5) return 1.0;
  if (dz <= 2.5) return std::pow(10.0, -(dz - 0.5));
  return 0.0;
}

// The x in [low, high] with vtln_warp_hz(x) = f, by bisection.
double unwarp(double f, double warp, double low, double high, double nyquist,
              const VtlnOptions& vtln) {
  if (warp == 1.0 || f < low || f > high) return f;
  double a = low, b = high;
  for (int i = 0; i < 100; ++i) {
    const double m = 0.5 * (a + b);
    if (vtln_warp_hz(m, warp, low, high, nyquist, vtln) < f)
      a = m;
    else
      b = m;
  }
  return 0.5 * (a + b);
}

double log_with_floor(double x, const LogOptions& log) {
  switch (log.mode) {
    case LogFloorMode::kConstant: return x > 0.0 ? std::log(x) : log.floor_value;
    case LogFloorMode::kClamp: return std::log(std::max<double>(x, log.floor_value));
    case LogFloorMode::kOffset: return std::log(x + log.floor_value);
  }
  return 0.0;
}

}  // namespace

Matrix frames(const FeatureOptions& opts, const float* samples, int64_t n,
              int64_t num_frames, std::vector<double>* energy) {
  const FrameOptions& f = opts.frame;
  if (f.dither != 0.0f)
    throw std::invalid_argument("reference: dither must be off");
  const int len = f.frame_length_samples();
  const int shift = f.frame_shift_samples();
  const int fft = f.padded_fft_size();
  const std::vector<double> window = make_window(f.window, len);
  const double a = f.preemphasis;
  const auto x_at = [&](int64_t p) {
    return p >= 0 && p < n ? static_cast<double>(samples[p]) : 0.0;
  };
  Matrix out(num_frames, std::vector<double>(fft, 0.0));
  if (energy) energy->assign(num_frames, 0.0);
  for (int64_t t = 0; t < num_frames; ++t) {
    const int64_t start = t * shift;
    std::vector<double> x(len), y(len);
    for (int i = 0; i < len; ++i) x[i] = x_at(start + i);
    double mean = 0.0;
    if (f.remove_dc) {
      for (double v : x) mean += v;
      mean /= len;
    }
    if (energy) {
      double e = 0.0;
      for (double v : x) e += (v - mean) * (v - mean);
      (*energy)[t] = e;
    }
    if (f.preemphasis_mode == PreemphasisMode::kPerFrame) {
      for (double& v : x) v -= mean;
      y[0] = x[0] - a * x[0];
      for (int i = 1; i < len; ++i) y[i] = x[i] - a * x[i - 1];
    } else {
      // Pre-emphasis of the continuous signal; past its end the frame is
      // zero (the padding comes after pre-emphasis). DC removal, if asked,
      // then acts on the pre-emphasised frame, as the CPU backend does.
      for (int i = 0; i < len; ++i) {
        const int64_t p = start + i;
        y[i] = p < n ? x_at(p) - a * x_at(p - 1) : 0.0;
      }
      if (f.remove_dc) {
        double m = 0.0;
        for (double v : y) m += v;
        m /= len;
        for (double& v : y) v -= m;
      }
    }
    for (int i = 0; i < len; ++i) out[t][i] = y[i] * window[i];
  }
  return out;
}

Matrix spectrum(const FeatureOptions& opts, const Matrix& fr, bool magnitude) {
  const int fft = opts.frame.padded_fft_size();
  const int bins = fft / 2 + 1;
  // Twiddles indexed by (k * i) mod fft: exact angles, no accumulated drift.
  std::vector<double> cs(fft), sn(fft);
  for (int m = 0; m < fft; ++m) {
    cs[m] = std::cos(2.0 * kPi * m / fft);
    sn[m] = std::sin(2.0 * kPi * m / fft);
  }
  Matrix out(fr.size(), std::vector<double>(bins));
  for (size_t t = 0; t < fr.size(); ++t) {
    const std::vector<double>& x = fr[t];
    int last = fft;  // skip the zero padding
    while (last > 0 && x[last - 1] == 0.0) --last;
    for (int k = 0; k < bins; ++k) {
      double re = 0.0, im = 0.0;
      for (int i = 0; i < last; ++i) {
        const int m = static_cast<int>((static_cast<int64_t>(k) * i) % fft);
        re += x[i] * cs[m];
        im -= x[i] * sn[m];
      }
      const double p = re * re + im * im;
      out[t][k] = magnitude ? std::sqrt(p) : p;
    }
  }
  return out;
}

std::vector<double> lpc_cepstrum(const std::vector<double>& r, int num_ceps) {
  const int p = static_cast<int>(r.size()) - 1;
  std::vector<double> c(num_ceps, 0.0);
  if (!(r[0] > 0.0)) return c;
  // Normal equations sum_j a_j r|i-j| = -r_i, i, j = 1..p, solved by
  // Gaussian elimination with partial pivoting on [R | rhs].
  std::vector<std::vector<double>> m(p, std::vector<double>(p + 1));
  for (int i = 0; i < p; ++i) {
    for (int j = 0; j < p; ++j) m[i][j] = r[std::abs(i - j)];
    m[i][p] = -r[i + 1];
  }
  for (int col = 0; col < p; ++col) {
    int piv = col;
    for (int i = col + 1; i < p; ++i)
      if (std::fabs(m[i][col]) > std::fabs(m[piv][col])) piv = i;
    std::swap(m[col], m[piv]);
    if (m[col][col] == 0.0) return c;
    for (int i = col + 1; i < p; ++i) {
      const double f = m[i][col] / m[col][col];
      for (int j = col; j <= p; ++j) m[i][j] -= f * m[col][j];
    }
  }
  std::vector<double> a(p + 1, 0.0);  // a[0] = 1 implicit
  a[0] = 1.0;
  for (int i = p - 1; i >= 0; --i) {
    double s = m[i][p];
    for (int j = i + 1; j < p; ++j) s -= m[i][j] * a[j + 1];
    a[i + 1] = s / m[i][i];
  }
  double e = r[0];
  for (int i = 1; i <= p; ++i) e += a[i] * r[i];
  if (!(e > 0.0)) return c;
  // Cepstrum of e / |A|^2: c0 = ln e, c_n = -a_n - sum (k/n) c_k a_{n-k}.
  c[0] = std::log(e);
  for (int nn = 1; nn < num_ceps; ++nn) {
    double s = nn <= p ? -a[nn] : 0.0;
    for (int k = 1; k < nn; ++k)
      if (nn - k <= p) s -= static_cast<double>(k) / nn * c[k] * a[nn - k];
    c[nn] = s;
  }
  return c;
}

Matrix plp(const FeatureOptions& opts, const float* samples, int64_t n,
           int64_t num_frames, double warp) {
  const PlpOptions& plp = opts.plp;
  const double sr = opts.frame.sample_rate;
  const int fft = opts.frame.padded_fft_size();
  const int bins = fft / 2 + 1;
  const double nyquist = sr / 2.0;
  const double low = opts.mel.low_freq;
  const double high = resolve_high_freq(opts.mel.high_freq, sr);
  const int nb = plp.num_filters;

  std::vector<double> energy;
  const Matrix power =
      spectrum(opts, frames(opts, samples, n, num_frames, &energy), false);

  // Band j is centred at Bark z_j = B(low) + (j + 1) (B(high) - B(low)) /
  // (nb + 1); VTLN moves the curve to W(z_j), i.e. bin f is seen at W^-1(f).
  const double zl = bark(low), zh = bark(high);
  Matrix weight(nb, std::vector<double>(bins, 0.0));
  for (int k = 0; k < bins; ++k) {
    const double f = k * sr / fft;
    if (f < low || f > high) continue;
    const double zu = bark(unwarp(f, warp, low, high, nyquist, opts.mel.vtln));
    for (int j = 0; j < nb; ++j) {
      const double zc = zl + (j + 1) * (zh - zl) / (nb + 1);
      weight[j][k] = masking_curve(zu - zc);
    }
  }
  Matrix ceps(num_frames);
  for (int64_t t = 0; t < num_frames; ++t) {
    std::vector<double> band(nb, 0.0);
    for (int j = 0; j < nb; ++j) {
      const double zc = zl + (j + 1) * (zh - zl) / (nb + 1);
      double s = 0.0;
      for (int k = 0; k < bins; ++k) s += weight[j][k] * power[t][k];
      band[j] = std::pow(equal_loudness(bark_inverse(zc)) * s, plp.compress);
    }
    // The auditory spectrum at nb + 2 equally spaced points from the low to
    // the high edge, edges copied from their neighbours, mirrored to a full
    // circle of L = 2 (nb + 1) points and inverse-DFT'd.
    const int L = 2 * (nb + 1);
    std::vector<double> circle(L);
    for (int m = 0; m <= nb + 1; ++m)
      circle[m] = band[std::clamp(m - 1, 0, nb - 1)];
    for (int m = nb + 2; m < L; ++m) circle[m] = circle[L - m];
    std::vector<double> r(plp.order + 1);
    for (int k = 0; k <= plp.order; ++k) {
      double s = 0.0;
      for (int m = 0; m < L; ++m) s += circle[m] * std::cos(2.0 * kPi * k * m / L);
      r[k] = s / L;
    }
    std::vector<double> c = lpc_cepstrum(r, plp.num_ceps);
    for (int i = 0; i < plp.num_ceps; ++i)
      if (plp.lifter > 0) c[i] *= 1.0 + plp.lifter / 2.0 * std::sin(kPi * i / plp.lifter);
    if (plp.use_energy) {
      const double floor = std::max<double>(FLT_EPSILON, opts.mfcc.energy_floor);
      c[0] = std::log(std::max(energy[t], floor));
    }
    ceps[t] = c;
  }
  return ceps;
}

Matrix traps(const FeatureOptions& opts, const float* samples, int64_t n,
             int64_t num_frames, double warp) {
  const int fft = opts.frame.padded_fft_size();
  const int bins = fft / 2 + 1;
  const int nb = opts.mel.num_filters;
  const int ctx = opts.traps.context;
  const int nc = opts.traps.num_coeffs;
  const Matrix spec = spectrum(opts, frames(opts, samples, n, num_frames),
                               !opts.mel.use_power);
  const std::vector<float> fb =
      mel_filterbank(opts.mel, fft, opts.frame.sample_rate,
                     static_cast<float>(warp), opts.flavour != Flavour::kKaldi);
  Matrix logmel(num_frames, std::vector<double>(nb));
  for (int64_t t = 0; t < num_frames; ++t)
    for (int b = 0; b < nb; ++b) {
      double s = 0.0;
      for (int k = 0; k < bins; ++k) s += fb[static_cast<size_t>(b) * bins + k] * spec[t][k];
      logmel[t][b] = log_with_floor(s, opts.log);
    }

  // Hamming window over the 2C + 1 frames t - C .. t + C.
  std::vector<double> ham(2 * ctx + 1);
  for (int k = 0; k <= 2 * ctx; ++k)
    ham[k] = 0.54 - 0.46 * std::cos(2.0 * kPi * k / (2 * ctx));
  const int M = ctx + 1;
  Matrix out(num_frames, std::vector<double>(static_cast<size_t>(nb) * 2 * nc));
  for (int64_t t = 0; t < num_frames; ++t) {
    for (int b = 0; b < nb; ++b) {
      for (int h = 0; h < 2; ++h) {
        // Left half: frames t-C..t under ham[0..C]; right: t..t+C under
        // ham[C..2C]; frames outside the utterance repeat its edge frames.
        std::vector<double> x(M);
        for (int i = 0; i < M; ++i) {
          const int64_t s = std::clamp<int64_t>(t - ctx + h * ctx + i, 0, num_frames - 1);
          x[i] = logmel[s][b] * ham[h * ctx + i];
        }
        for (int c = 0; c < nc; ++c) {
          double s = 0.0;
          for (int i = 0; i < M; ++i) s += x[i] * std::cos(kPi * c * (i + 0.5) / M);
          s *= std::sqrt(2.0 / M);
          if (c == 0) s /= std::sqrt(2.0);
          out[t][static_cast<size_t>(b) * 2 * nc + h * nc + c] = s;
        }
      }
    }
  }
  return out;
}

Agreement compare(const Matrix& ref, const float* got, int stride, int col0) {
  Agreement a;
  if (ref.empty()) return a;
  const size_t dim = ref[0].size();
  std::vector<double> rms(dim, 0.0);
  for (const auto& row : ref)
    for (size_t d = 0; d < dim; ++d) rms[d] += row[d] * row[d];
  for (double& v : rms) v = std::sqrt(v / ref.size());
  for (size_t t = 0; t < ref.size(); ++t)
    for (size_t d = 0; d < dim; ++d) {
      const double want = ref[t][d];
      const double g = got[t * stride + col0 + d];
      const double scale = std::max(std::fabs(want), rms[d]);
      // A dimension that is zero throughout must be zero exactly.
      const double err = scale > 0.0 ? std::fabs(g - want) / scale
                                     : (g == want ? 0.0 : HUGE_VAL);
      if (!(err <= a.worst)) {  // also catches NaN
        a.worst = std::isnan(err) ? HUGE_VAL : err;
        a.frame = static_cast<int64_t>(t);
        a.dim = static_cast<int>(d);
        a.got = g;
        a.want = want;
      }
    }
  return a;
}

}  // namespace reference
}  // namespace gpuspeech
