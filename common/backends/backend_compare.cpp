#include "backend_compare.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "common/features/feature_pipeline.h"

namespace gpuspeech {

namespace {

std::vector<float> download_all(Backend& b, const DeviceBuffer& buf) {
  std::vector<float> out(buf.size());
  b.download(buf, out.data(), out.size());
  return out;
}

BufferPtr upload_new(Backend& b, const std::vector<float>& host) {
  BufferPtr buf = b.alloc(host.size());
  b.upload(*buf, host.data(), host.size());
  return buf;
}

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::kLogFloor: return "log_floor";
    case UnaryOp::kLogOffset: return "log_offset";
    case UnaryOp::kLogClamp: return "log_clamp";
    case UnaryOp::kPow: return "pow";
    case UnaryOp::kSqrt: return "sqrt";
  }
  return "?";
}

// A framing's parameters, as the comparisons of the operations that frame
// (frame_signal, spectral_bands) name them in their reports.
void describe_framing(std::ostream& what, const FramingSpec& spec) {
  what << "utts " << spec.num_utts << ", stride " << spec.utt_stride << ", valid "
       << spec.valid_length << ", frames/utt " << spec.frames_per_utt << ", first "
       << spec.first_frame_offset << ", shift " << spec.frame_shift << ", length "
       << spec.frame_length << ", fft " << spec.fft_size << ", preemph " << spec.preemphasis
       << (spec.preemphasis_per_frame ? " per frame" : " continuous")
       << (spec.remove_dc ? ", remove_dc" : "");
}

}  // namespace

std::string Comparison::report() const {
  std::ostringstream s;
  s.precision(9);
  s << what << ": " << test_backend << " vs " << ref_backend << " (seed " << seed
    << "; replay with GPUSPEECH_COMPARE_SEED=" << seed << "): ";
  if (count == 0) {
    s << "nothing compared";
    return s.str();
  }
  s << failures << " of " << count << " elements outside tolerance (rel " << tol.rel
    << ", abs " << tol.abs << ", floor " << tol.floor << "); max abs error "
    << max_abs << ", max rel error " << max_rel << ", reference scale "
    << ref_max_abs << "; worst at [" << worst << "]: " << worst_test << " vs "
    << worst_ref;
  return s.str();
}

Comparison compare_values(const float* test, const float* ref, size_t n,
                          const Tolerance& tol) {
  Comparison c;
  c.tol = tol;
  c.count = n;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(ref[i])) c.ref_max_abs = std::max(c.ref_max_abs, std::fabs(double(ref[i])));
  const double floor = tol.floor * c.ref_max_abs;
  double worst_excess = -1.0;  // error / allowed, largest seen
  for (size_t i = 0; i < n; ++i) {
    const double a = test[i], b = ref[i];
    double err, excess;
    if (!std::isfinite(a) || !std::isfinite(b)) {
      const bool same = (std::isnan(a) && std::isnan(b)) || a == b;
      err = same ? 0.0 : INFINITY;
      excess = same ? 0.0 : INFINITY;
    } else {
      err = std::fabs(a - b);
      const double scale = std::max(std::fabs(b), floor);
      const double allowed = tol.abs + tol.rel * scale;
      excess = allowed > 0 ? err / allowed : (err > 0 ? INFINITY : 0.0);
      // Elements with no scale at all (exact zeros under a purely absolute
      // tolerance) have no meaningful relative error.
      if (scale > 0) c.max_rel = std::max(c.max_rel, err / scale);
    }
    c.max_abs = std::max(c.max_abs, err);
    if (excess > 1.0) ++c.failures;
    if (excess > worst_excess) {
      worst_excess = excess;
      c.worst = i;
      c.worst_test = test[i];
      c.worst_ref = ref[i];
    }
  }
  return c;
}

uint32_t fresh_seed() {
  if (const char* env = std::getenv("GPUSPEECH_COMPARE_SEED"))
    if (*env) return static_cast<uint32_t>(std::strtoul(env, nullptr, 0));
  std::random_device rd;
  return rd();
}

BackendComparison::BackendComparison(Backend& test, Backend& ref, uint32_t seed)
    : test_(test), ref_(ref), seed_(seed), rng_(seed) {}

std::vector<float> BackendComparison::uniform(size_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng_);
  return v;
}

std::vector<float> BackendComparison::random_audio(int64_t num_samples) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, 1.0);
  const double rate = 16000.0;  // nominal; only shapes the spectrum
  const double f0 = 90.0 + 160.0 * u(rng_);
  const double noise_level = 50.0 + 500.0 * u(rng_);
  const double envelope_hz = 2.0 + 4.0 * u(rng_);
  // Cheap recorders leave a DC offset; it makes DC removal matter.
  const double dc = 2000.0 * u(rng_) - 1000.0;
  double harmonic_amp[4], harmonic_phase[4];
  for (int h = 0; h < 4; ++h) {
    harmonic_amp[h] = (2000.0 + 6000.0 * u(rng_)) / (h + 1);
    harmonic_phase[h] = 6.283185307179586 * u(rng_);
  }
  std::vector<float> out(static_cast<size_t>(std::max<int64_t>(num_samples, 0)));
  double phase = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double t = i / rate;
    // Pitch drifts by +-20 %; the envelope never closes completely.
    const double f = f0 * (1.0 + 0.2 * std::sin(6.283185307179586 * 0.7 * t));
    phase += 6.283185307179586 * f / rate;
    const double env = 0.55 + 0.45 * std::sin(6.283185307179586 * envelope_hz * t);
    double v = dc + noise_level * noise(rng_);
    for (int h = 0; h < 4; ++h)
      v += env * harmonic_amp[h] * std::sin((h + 1) * phase + harmonic_phase[h]);
    out[i] = static_cast<float>(std::max(-32768.0, std::min(32767.0, std::round(v))));
  }
  return out;
}

Comparison BackendComparison::run(
    const std::string& what, const Tolerance& tol,
    const std::function<std::vector<float>(Backend&)>& work) {
  const std::vector<float> ref = work(ref_);
  const std::vector<float> got = work(test_);
  Comparison c;
  if (got.size() != ref.size()) {
    c.tol = tol;
    c.count = std::max(got.size(), ref.size());
    c.failures = c.count;
    c.max_abs = c.max_rel = INFINITY;
    c.what = what + " [output sizes differ: " + std::to_string(got.size()) + " vs " +
             std::to_string(ref.size()) + "]";
  } else {
    c = compare_values(got.data(), ref.data(), got.size(), tol);
    c.what = what;
  }
  c.seed = seed_;
  c.test_backend = std::string(test_.name()) + " (" + test_.device_name() + ")";
  c.ref_backend = ref_.name();
  return c;
}

Comparison BackendComparison::frame_signal(const FramingSpec& spec, bool with_energy,
                                           const Tolerance& tol) {
  return framing(spec, with_energy, false, tol);
}

Comparison BackendComparison::frame_energy(const FramingSpec& spec, const Tolerance& tol) {
  return framing(spec, true, true, tol);
}

Comparison BackendComparison::framing(const FramingSpec& spec, bool with_energy,
                                      bool compare_energy, const Tolerance& tol) {
  const int64_t rows = spec.rows();
  const int64_t signal_len =
      spec.num_utts > 0 ? (spec.num_utts - 1) * spec.utt_stride + spec.valid_length : 0;
  // A strong DC offset under the noise, so that DC removal (and where in
  // the chain it happens) changes the numbers well beyond rounding.
  const float dc = uniform(1, 5000.f, 15000.f)[0] * (uniform(1, 0.f, 1.f)[0] < 0.5f ? -1.f : 1.f);
  std::vector<float> signal = uniform(static_cast<size_t>(signal_len), -8000.f, 8000.f);
  for (float& v : signal) v += dc;
  const std::vector<float> window = uniform(static_cast<size_t>(spec.frame_length), 0.f, 1.f);
  const std::vector<float> frames_init =
      uniform(static_cast<size_t>(rows * spec.fft_size), -1.f, 1.f);
  const std::vector<float> energy_init = uniform(static_cast<size_t>(rows), -1.f, 1.f);
  std::ostringstream what;
  what << (compare_energy ? "frame_signal energy" : "frame_signal") << "(";
  describe_framing(what, spec);
  what << (with_energy && !compare_energy ? ", energy requested" : "") << ", DC " << dc << ")";
  // Frames and energies are compared separately: their scales differ by
  // orders of magnitude, and the tolerance floor follows the scale.
  return run(what.str(), tol, [&](Backend& b) {
    BufferPtr sig = upload_new(b, signal.empty() ? std::vector<float>{0.f} : signal);
    BufferPtr win = upload_new(b, window);
    BufferPtr frames = upload_new(b, frames_init);
    BufferPtr energy = with_energy ? upload_new(b, energy_init) : nullptr;
    b.frame_signal(*sig, spec, *win, *frames, energy.get());
    return compare_energy ? download_all(b, *energy) : download_all(b, *frames);
  });
}

Comparison BackendComparison::power_spectrum(int64_t rows, int fft_size, bool magnitude,
                                             const Tolerance& tol) {
  const std::vector<float> frames =
      uniform(static_cast<size_t>(rows * fft_size), -1000.f, 1000.f);
  const size_t bins = static_cast<size_t>(fft_size / 2 + 1);
  const std::vector<float> spec_init = uniform(static_cast<size_t>(rows) * bins, -1.f, 1.f);
  std::ostringstream what;
  what << "power_spectrum(rows " << rows << ", fft " << fft_size
       << (magnitude ? ", magnitude" : ", power") << ")";
  return run(what.str(), tol, [&](Backend& b) {
    BufferPtr in = upload_new(b, frames);
    BufferPtr out = upload_new(b, spec_init);
    b.power_spectrum(*in, rows, fft_size, magnitude, *out);
    std::vector<float> result = download_all(b, *out);
    // The input is const: a backend must not have used it as FFT scratch.
    std::vector<float> after = download_all(b, *in);
    if (after != frames) result.push_back(NAN);
    return result;
  });
}

Comparison BackendComparison::spectral_bands(const FramingSpec& spec, const BandsSpec& b,
                                             bool compare_energy, const Tolerance& tol) {
  const int64_t rows = spec.rows();
  const int64_t signal_len =
      spec.num_utts > 0 ? (spec.num_utts - 1) * spec.utt_stride + spec.valid_length : 0;
  const std::vector<float> signal = random_audio(std::max<int64_t>(signal_len, 1));
  const std::vector<float> window = uniform(static_cast<size_t>(spec.frame_length), 0.f, 1.f);
  const int bins = spec.fft_size / 2 + 1;
  std::vector<float> fb(static_cast<size_t>(b.num_bands) * bins, 0.0f);
  std::vector<float> ranges(2 * static_cast<size_t>(b.num_bands));
  // At least 3 bins, the last band starting 3 bins before the end too: a
  // lone bin in the noise floor (the Nyquist bin of a pre-emphasised
  // frame, say) carries more FFT rounding, relative to itself, than the
  // log-domain tolerance allows (seed 2274450216 drew first 256, count 1 at
  // 512 points: its log differed by 0.9 between OpenCL and the CPU).
  std::uniform_int_distribution<int> first_bin(0, bins - 3);
  std::uniform_int_distribution<int> width(3, 48);
  for (int j = 0; j < b.num_bands; ++j) {
    int first = 0, count = bins;  // row 0: every bin
    if (j > 0) {
      first = first_bin(rng_);
      count = std::min(width(rng_), bins - first);
    }
    const std::vector<float> w = uniform(static_cast<size_t>(count), 0.05f, 1.0f);
    std::copy(w.begin(), w.end(), fb.begin() + static_cast<size_t>(j) * bins + first);
    ranges[2 * j] = static_cast<float>(first);
    ranges[2 * j + 1] = static_cast<float>(count);
  }
  const bool project = b.projection_outputs > 0;
  const std::vector<float> projection =
      project ? uniform(static_cast<size_t>(b.projection_outputs) * b.projection_group, -1.f, 1.f)
              : std::vector<float>{};
  const int out_columns =
      project && b.projection_group > 0 ? b.num_bands / b.projection_group * b.projection_outputs
                                        : b.num_bands;
  const std::vector<float> bands_init =
      uniform(static_cast<size_t>(rows) * out_columns, -1.f, 1.f);
  const std::vector<float> energy_init = uniform(static_cast<size_t>(rows), -1.f, 1.f);
  std::ostringstream what;
  what << (compare_energy ? "spectral_bands energy" : "spectral_bands") << "(";
  describe_framing(what, spec);
  what << ", bands " << b.num_bands
       << (b.magnitude ? ", magnitude" : ", power");
  if (b.apply_op) what << ", op " << static_cast<int>(b.op) << " (" << b.op_param << ")";
  if (project)
    what << ", projected to " << b.projection_outputs << " per " << b.projection_group
         << " bands";
  what << ")";
  return run(what.str(), tol, [&](Backend& be) {
    BufferPtr sig = upload_new(be, signal);
    BufferPtr win = upload_new(be, window);
    BufferPtr filters = upload_new(be, fb);
    BufferPtr support = upload_new(be, ranges);
    BufferPtr bands = upload_new(be, bands_init);
    BufferPtr energy = compare_energy ? upload_new(be, energy_init) : nullptr;
    BufferPtr matrix = project ? upload_new(be, projection) : nullptr;
    BandsSpec spec_b = b;
    spec_b.projection = matrix.get();
    be.spectral_bands(*sig, spec, *win, spec_b, *filters, *support, *bands, energy.get());
    return compare_energy ? download_all(be, *energy) : download_all(be, *bands);
  });
}

Comparison BackendComparison::gemm_nt(int64_t rows, int k, int m, size_t a_offset,
                                      size_t c_offset, const Tolerance& tol) {
  // Padding after the used ranges too, so writes past the end show up.
  const std::vector<float> a = uniform(a_offset + static_cast<size_t>(rows) * k + 7, -1.f, 1.f);
  const std::vector<float> bm = uniform(static_cast<size_t>(m) * k, -1.f, 1.f);
  const std::vector<float> c_init = uniform(c_offset + static_cast<size_t>(rows) * m + 5, -1.f, 1.f);
  std::ostringstream what;
  what << "gemm_nt(rows " << rows << ", k " << k << ", m " << m << ", a_offset " << a_offset
       << ", c_offset " << c_offset << ")";
  return run(what.str(), tol, [&](Backend& b) {
    BufferPtr ab = upload_new(b, a);
    BufferPtr bb = upload_new(b, bm);
    BufferPtr cb = upload_new(b, c_init);
    b.gemm_nt(*ab, rows, k, *bb, m, *cb, a_offset, c_offset);
    return download_all(b, *cb);
  });
}

Comparison BackendComparison::apply(UnaryOp op, float param, size_t n, float lo, float hi,
                                    const Tolerance& tol) {
  const std::vector<float> x = uniform(n, lo, hi);
  std::ostringstream what;
  what << "apply(" << unary_name(op) << ", param " << param << ", n " << n << ", inputs in ["
       << lo << ", " << hi << "))";
  return run(what.str(), tol, [&](Backend& b) {
    // One float more than n: it must stay untouched.
    std::vector<float> padded = x;
    padded.push_back(12345.0f);
    BufferPtr buf = upload_new(b, padded);
    b.apply(op, param, *buf, n);
    std::vector<float> out = download_all(b, *buf);
    const bool sentinel_kept = out.back() == 12345.0f;
    out.pop_back();
    if (!sentinel_kept) out.push_back(NAN);  // a size mismatch: fails
    return out;
  });
}

Comparison BackendComparison::log_into_column(int64_t rows, float param, int dst_cols,
                                              int dst_col, const Tolerance& tol) {
  // Values from below the clamp up to large energies.
  std::vector<float> src = uniform(static_cast<size_t>(rows), 0.f, 1.f);
  for (float& v : src) v = std::pow(10.0f, 12.0f * v - 4.0f);
  const std::vector<float> dst_init =
      uniform(static_cast<size_t>(rows) * dst_cols, -10.f, 10.f);
  std::ostringstream what;
  what << "log_into_column(rows " << rows << ", clamp " << param << ", column " << dst_col
       << " of " << dst_cols << ")";
  return run(what.str(), tol, [&](Backend& b) {
    BufferPtr s = upload_new(b, src);
    BufferPtr d = upload_new(b, dst_init);
    b.log_into_column(*s, rows, param, *d, dst_cols, dst_col);
    return download_all(b, *d);
  });
}

Comparison BackendComparison::splice(int64_t num_utts, int64_t rows_per_utt, int cols,
                                     int left, int right) {
  const int64_t rows = num_utts * rows_per_utt;
  const std::vector<float> src = uniform(static_cast<size_t>(rows) * cols, -100.f, 100.f);
  const std::vector<float> dst_init =
      uniform(static_cast<size_t>(rows) * (left + right + 1) * cols, -1.f, 1.f);
  std::ostringstream what;
  what << "splice(utts " << num_utts << ", rows/utt " << rows_per_utt << ", cols " << cols
       << ", left " << left << ", right " << right << ")";
  // A copy: exact.
  return run(what.str(), Tolerance::absolute(0.0), [&](Backend& b) {
    BufferPtr s = upload_new(b, src);
    BufferPtr d = upload_new(b, dst_init);
    b.splice(*s, num_utts, rows_per_utt, cols, left, right, *d);
    return download_all(b, *d);
  });
}

Comparison BackendComparison::extended_outer_products(int64_t rows, int dim) {
  const std::vector<float> x = uniform(static_cast<size_t>(rows) * dim, -30.f, 30.f);
  const size_t n = static_cast<size_t>(rows) * (dim + 1) * (dim + 2) / 2;
  std::ostringstream what;
  what << "extended_outer_products(rows " << rows << ", dim " << dim << ")";
  return run(what.str(), Tolerance::absolute(0.0), [&](Backend& b) {
    BufferPtr s = upload_new(b, x);
    BufferPtr d = upload_new(b, std::vector<float>(n, std::nanf("")));
    b.extended_outer_products(*s, rows, dim, *d);
    std::vector<float> out = download_all(b, *d);
    const auto unwritten = std::count_if(out.begin(), out.end(), [](float v) { return std::isnan(v); });
    if (unwritten > 0)
      throw std::runtime_error(what.str() + " on " + b.name() + ": " + std::to_string(unwritten) +
                               " outputs left unwritten");
    return out;
  });
}

Comparison BackendComparison::lpc_to_cepstrum(int64_t rows, int order, int num_ceps,
                                              const Tolerance& tol) {
  std::vector<float> r(static_cast<size_t>(rows) * (order + 1));
  std::normal_distribution<double> noise(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const int len = 4 * (order + 1);
  std::vector<double> x(len);
  for (int64_t row = 0; row < rows; ++row) {
    // A random all-pole-ish signal: noise through a random one-pole filter,
    // so rows differ in spectral tilt as compressed speech spectra do.
    const double pole = 1.6 * u(rng_) - 0.8;
    double prev = 0.0;
    for (double& v : x) v = prev = noise(rng_) + pole * prev;
    for (int k = 0; k <= order; ++k) {
      double s = 0.0;
      for (int n = 0; n + k < len; ++n) s += x[n] * x[n + k];
      r[static_cast<size_t>(row) * (order + 1) + k] = static_cast<float>(s);
    }
  }
  // Degenerate rows: the definition says they give zeros.
  if (rows >= 3) {
    r[static_cast<size_t>(1) * (order + 1)] = -1.0f;
    std::fill(r.begin() + 2 * (order + 1), r.begin() + 3 * (order + 1), 0.0f);
  }
  const std::vector<float> out_init =
      uniform(static_cast<size_t>(rows) * num_ceps, -1.f, 1.f);
  std::ostringstream what;
  what << "lpc_to_cepstrum(rows " << rows << ", order " << order << ", ceps " << num_ceps
       << ")";
  return run(what.str(), tol, [&](Backend& b) {
    BufferPtr in = upload_new(b, r);
    BufferPtr out = upload_new(b, out_init);
    b.lpc_to_cepstrum(*in, rows, order, num_ceps, *out);
    return download_all(b, *out);
  });
}

Comparison BackendComparison::senone_scores(int64_t frames, int num_gaussians, int senones,
                                            int streams, int max_row_len, size_t out_offset,
                                            const Tolerance& tol) {
  // Log densities of the scale real models give (tens to hundreds of nats
  // below zero), with a few -inf.
  std::vector<float> dens = uniform(static_cast<size_t>(num_gaussians) * frames, -250.f, -20.f);
  for (float& d : dens)
    if (uniform(1, 0.f, 1.f)[0] < 0.01f) d = -INFINITY;
  const int64_t rows = static_cast<int64_t>(senones) * streams;
  std::uniform_int_distribution<int> row_len(0, max_row_len);
  std::uniform_int_distribution<int> pick(0, num_gaussians - 1);
  std::vector<float> offsets{0.0f}, gaussian, logw;
  for (int64_t r = 0; r < rows; ++r) {
    // One row in twenty is empty; the rest have at least one component.
    const int n = uniform(1, 0.f, 1.f)[0] < 0.05f ? 0 : std::max(1, row_len(rng_));
    for (int j = 0; j < n; ++j) {
      gaussian.push_back(static_cast<float>(pick(rng_)));
      const float w = uniform(1, -12.f, 0.f)[0];
      logw.push_back(uniform(1, 0.f, 1.f)[0] < 0.1f ? -INFINITY : w);
    }
    offsets.push_back(static_cast<float>(gaussian.size()));
  }
  if (gaussian.empty()) {  // buffers cannot be empty; the padding is unused
    gaussian.push_back(0.0f);
    logw.push_back(0.0f);
  }
  const std::vector<float> out_init =
      uniform(out_offset + static_cast<size_t>(frames) * senones + 3, -1.f, 1.f);
  std::ostringstream what;
  what << "senone_scores(frames " << frames << ", gaussians " << num_gaussians << ", senones "
       << senones << ", streams " << streams << ", components " << gaussian.size()
       << ", out_offset " << out_offset << ")";
  return run(what.str(), tol, [&](Backend& b) {
    BufferPtr d = upload_new(b, dens.empty() ? std::vector<float>{0.f} : dens);
    BufferPtr o = upload_new(b, offsets);
    BufferPtr g = upload_new(b, gaussian);
    BufferPtr w = upload_new(b, logw);
    BufferPtr out = upload_new(b, out_init);
    b.senone_scores(*d, num_gaussians, frames, *o, *g, *w, senones, streams, *out, out_offset);
    return download_all(b, *out);
  });
}

namespace {

std::string describe_features(const FeatureOptions& opts, const std::vector<float>& warps) {
  std::ostringstream s;
  s << to_string(opts.kind) << "/" << to_string(opts.flavour);
  if (!warps.empty()) {
    s << " warps {";
    for (size_t i = 0; i < warps.size(); ++i) s << (i ? ", " : "") << warps[i];
    s << "}";
  }
  return s.str();
}

}  // namespace

Comparison BackendComparison::features(const FeatureOptions& opts,
                                       const std::vector<float>& warps,
                                       int64_t num_samples, const Tolerance& tol) {
  const std::vector<float> audio = random_audio(num_samples);
  std::ostringstream what;
  what << "FeatureExtractor(" << describe_features(opts, warps) << ").compute(" << num_samples
       << " samples)";
  return run(what.str(), tol, [&](Backend& b) {
    FeatureExtractor fx(opts, b, warps);
    FeatureMatrix m = fx.compute(audio.data(), static_cast<int64_t>(audio.size()));
    return m.data;
  });
}

Comparison BackendComparison::features_batch(const FeatureOptions& opts,
                                             const std::vector<float>& warps,
                                             int64_t num_utts, int64_t num_samples,
                                             int64_t gap, const Tolerance& tol) {
  const int64_t stride = num_samples + gap;
  const std::vector<float> audio = random_audio(num_utts * stride);
  std::ostringstream what;
  what << "FeatureExtractor(" << describe_features(opts, warps) << ").compute_device("
       << num_utts << " utterances of " << num_samples << " samples, stride " << stride << ")";
  return run(what.str(), tol, [&](Backend& b) {
    FeatureExtractor fx(opts, b, warps);
    const FramingSpec spec = fx.framing_for(num_utts, num_samples, stride);
    BufferPtr signal = upload_new(b, audio);
    BufferPtr out = b.alloc(static_cast<size_t>(spec.rows()) * fx.num_warps() * fx.base_dim());
    fx.compute_device(*signal, spec, *out);
    return download_all(b, *out);
  });
}

}  // namespace gpuspeech
