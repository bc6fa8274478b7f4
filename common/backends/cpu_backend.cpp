// The CPU backend: the reference every device backend is compared with, and
// the fallback when no GPU is present. Plain loops in float32 (like the
// devices), each operation exactly as backend.h defines it.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "common/backends/backend.h"
#include "common/backends/backend_registry.h"
#include "common/backends/argument_checks.h"
#include "common/backends/spectral_bands_composition.h"
#include "common/features/fft.h"
#include "common/features/lpc.h"

namespace gpuspeech {
namespace {

class CpuBuffer : public DeviceBuffer {
 public:
  CpuBuffer(const Backend* owner, size_t n) : DeviceBuffer(owner, n), data(n) {}
  std::vector<float> data;
};

class CpuBackend : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  std::string device_name() const override {
    return "host CPU (" + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
           " threads available, 1 used)";
  }

  BufferPtr alloc(size_t n) override { return std::make_unique<CpuBuffer>(this, n); }

  void upload(DeviceBuffer& dst, const float* src, size_t n, size_t off) override {
    check_range(dst, off, n, "upload");
    if (n) std::memcpy(mut(dst) + off, src, n * sizeof(float));
  }
  void download(const DeviceBuffer& src, float* dst, size_t n, size_t off) override {
    check_range(src, off, n, "download");
    if (n) std::memcpy(dst, get(src) + off, n * sizeof(float));
  }
  void synchronize() override {}

  void frame_signal(const DeviceBuffer& signal, const FramingSpec& s,
                    const DeviceBuffer& window, DeviceBuffer& frames,
                    DeviceBuffer* energy) override {
    const int64_t rows = s.rows();
    check_framing(signal, s, window, "frame_signal");
    check_range(frames, 0, rows * s.fft_size, "frame_signal frames");
    if (energy) check_range(*energy, 0, rows, "frame_signal energy");
    std::vector<float> x(s.frame_length);
    for (int64_t r = 0; r < rows; ++r)
      frame_row(get(signal), s, get(window), r, mut(frames) + r * s.fft_size,
                energy ? mut(*energy) + r : nullptr, x);
  }

  void power_spectrum(const DeviceBuffer& frames, int64_t rows, int fft_size,
                      bool magnitude, DeviceBuffer& spectrum) override {
    const int bins = fft_size / 2 + 1;
    check_range(frames, 0, rows * fft_size, "power_spectrum frames");
    check_range(spectrum, 0, rows * bins, "power_spectrum spectrum");
    const RealFft<float>& fft = plan(fft_size);
    std::vector<std::complex<float>> out(bins);
    for (int64_t r = 0; r < rows; ++r)
      power_row(fft, get(frames) + r * fft_size, bins, magnitude, out,
                mut(spectrum) + r * bins);
  }

  // Row by row through the same steps as frame_signal, power_spectrum,
  // gemm_nt (the same dot over every bin) and apply, so the numbers are
  // those of that composition bit for bit; only one frame and one spectrum
  // exist at a time. The support in `ranges` is not needed here.
  void spectral_bands(const DeviceBuffer& signal, const FramingSpec& s,
                      const DeviceBuffer& window, const BandsSpec& b,
                      const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                      DeviceBuffer& bands, DeviceBuffer* energy) override {
    check_spectral_bands_args("cpu backend", s, window, b, filterbank, ranges, bands, energy);
    check_framing(signal, s, window, "spectral_bands");
    if (b.projection != nullptr) {
      // The bands, then this backend's gemm_nt: bit for bit the numbers of
      // the two calls. A buffer per call, as this backend may serve
      // several threads.
      SpectralBandsScratch scratch;
      spectral_bands_then_projection(*this, scratch, signal, s, window, b, filterbank, ranges,
                                     bands, energy);
      return;
    }
    own(filterbank);
    own(ranges);
    own(bands);
    if (energy) own(*energy);
    const int64_t rows = s.rows();
    const int bins = s.fft_size / 2 + 1;
    const RealFft<float>& fft = plan(s.fft_size);
    std::vector<float> x(s.frame_length), frame(s.fft_size), spectrum(bins);
    std::vector<std::complex<float>> out(bins);
    const float* fb = get(filterbank);
    for (int64_t r = 0; r < rows; ++r) {
      frame_row(get(signal), s, get(window), r, frame.data(), energy ? mut(*energy) + r : nullptr,
                x);
      power_row(fft, frame.data(), bins, b.magnitude, out, spectrum.data());
      float* row = mut(bands) + r * b.num_bands;
      for (int j = 0; j < b.num_bands; ++j) {
        const float v = dot(spectrum.data(), fb + static_cast<size_t>(j) * bins, bins);
        row[j] = b.apply_op ? unary(b.op, b.op_param, v) : v;
      }
    }
  }

  void gemm_nt(const DeviceBuffer& a, int64_t rows, int k, const DeviceBuffer& b,
               int m, DeviceBuffer& c, size_t a_off, size_t c_off) override {
    check_range(a, a_off, rows * k, "gemm_nt A");
    check_range(b, 0, static_cast<size_t>(m) * k, "gemm_nt B");
    check_range(c, c_off, rows * m, "gemm_nt C");
    const float* A = get(a) + a_off;
    const float* B = get(b);
    float* C = mut(c) + c_off;
    for (int64_t r = 0; r < rows; ++r) {
      const float* ar = A + r * k;
      float* cr = C + r * m;
      for (int j = 0; j < m; ++j) cr[j] = dot(ar, B + static_cast<size_t>(j) * k, k);
    }
  }

  void apply(UnaryOp op, float param, DeviceBuffer& x, size_t n) override {
    check_range(x, 0, n, "apply");
    float* v = mut(x);
    for (size_t i = 0; i < n; ++i) v[i] = unary(op, param, v[i]);
  }

  void extended_outer_products(const DeviceBuffer& x, int64_t rows, int dim,
                               DeviceBuffer& out) override {
    if (rows < 0 || dim < 1 || dim > kMaxExtendedDim)
      throw BackendError("extended_outer_products: need rows >= 0 and 1 <= dim <= " +
                         std::to_string(kMaxExtendedDim) + " (got rows " + std::to_string(rows) +
                         ", dim " + std::to_string(dim) + ")");
    const int64_t pairs = static_cast<int64_t>(dim + 1) * (dim + 2) / 2;
    check_range(x, 0, rows * dim, "extended_outer_products x");
    check_range(out, 0, rows * pairs, "extended_outer_products out");
    const float* s = get(x);
    float* d = mut(out);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = s + r * dim;
      int64_t pair = 0;
      for (int p = 0; p <= dim; ++p) {
        const float xp = p < dim ? xr[p] : 1.0f;
        for (int q = p; q <= dim; ++q, ++pair) d[pair * rows + r] = xp * (q < dim ? xr[q] : 1.0f);
      }
    }
  }

  void log_into_column(const DeviceBuffer& src, int64_t rows, float param,
                       DeviceBuffer& dst, int dst_cols, int dst_col) override {
    if (dst_col < 0 || dst_col >= dst_cols) throw BackendError("log_into_column: bad column");
    check_range(src, 0, rows, "log_into_column src");
    check_range(dst, 0, rows * dst_cols, "log_into_column dst");
    const float* s = get(src);
    float* d = mut(dst);
    for (int64_t r = 0; r < rows; ++r)
      d[r * dst_cols + dst_col] = std::log(std::max(s[r], param));
  }

  void splice(const DeviceBuffer& src, int64_t num_utts, int64_t rows_per_utt,
              int cols, int left, int right, DeviceBuffer& dst) override {
    const int64_t rows = num_utts * rows_per_utt;
    const int width = (left + right + 1) * cols;
    check_range(src, 0, rows * cols, "splice src");
    check_range(dst, 0, rows * width, "splice dst");
    const float* s = get(src);
    float* d = mut(dst);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t u = r / rows_per_utt, t = r % rows_per_utt;
      for (int o = -left; o <= right; ++o) {
        const int64_t tt = std::min(std::max<int64_t>(t + o, 0), rows_per_utt - 1);
        std::memcpy(d + r * width + static_cast<int64_t>(o + left) * cols,
                    s + (u * rows_per_utt + tt) * cols, cols * sizeof(float));
      }
    }
  }

  void lpc_to_cepstrum(const DeviceBuffer& autocorr, int64_t rows, int order,
                       int num_ceps, DeviceBuffer& ceps) override {
    check_range(autocorr, 0, rows * (order + 1), "lpc_to_cepstrum autocorr");
    check_range(ceps, 0, rows * num_ceps, "lpc_to_cepstrum ceps");
    const float* r = get(autocorr);
    float* c = mut(ceps);
    for (int64_t i = 0; i < rows; ++i)
      lpc_to_cepstrum_row(r + i * (order + 1), order, num_ceps, c + i * num_ceps);
  }

  void senone_scores(const DeviceBuffer& densities, int num_gaussians, int64_t frames,
                     const DeviceBuffer& offsets, const DeviceBuffer& gaussian,
                     const DeviceBuffer& logw, int senones, int streams, DeviceBuffer& out,
                     size_t out_offset) override {
    if (num_gaussians < 1 || frames < 0 || senones < 0 || streams < 1)
      throw BackendError("cpu backend: senone_scores: bad shape (gaussians " +
                         std::to_string(num_gaussians) + ", frames " + std::to_string(frames) +
                         ", senones " + std::to_string(senones) + ", streams " +
                         std::to_string(streams) + ")");
    const size_t rows = static_cast<size_t>(senones) * streams;
    check_range(densities, 0, static_cast<size_t>(num_gaussians) * frames,
                "senone_scores densities");
    check_range(offsets, 0, rows + 1, "senone_scores offsets");
    check_range(out, out_offset, static_cast<size_t>(frames) * senones, "senone_scores out");
    const float* off = get(offsets);
    // The offsets (one per row, cheap) are checked: a bad one is a caller
    // bug worth a clear message. Gaussian indices (one per component, too
    // many to check on every call of a streaming decoder) are clamped into
    // range as the devices do.
    const auto index = [](float v, double limit, const char* what, size_t at) {
      if (!(v >= 0.0f) || v > limit || v != std::floor(v))
        throw BackendError(std::string("cpu backend: senone_scores: ") + what + "[" +
                           std::to_string(at) + "] = " + std::to_string(v) +
                           " is not a whole number in 0.." + std::to_string(limit));
      return static_cast<size_t>(v);
    };
    if (off[0] != 0.0f) index(off[0], 0, "offsets", 0);
    const size_t entries = index(off[rows], 16777216.0, "offsets", rows);
    check_range(gaussian, 0, entries, "senone_scores gaussian");
    check_range(logw, 0, entries, "senone_scores logw");
    const float* gi = get(gaussian);
    const float* w = get(logw);
    for (size_t r = 0; r < rows; ++r)
      if (index(off[r + 1], static_cast<double>(entries), "offsets", r + 1) <
          static_cast<size_t>(off[r]))
        throw BackendError("cpu backend: senone_scores: offsets decrease at row " +
                           std::to_string(r));

    const float* dens = get(densities);
    const float last_gaussian = static_cast<float>(num_gaussians - 1);
    float* o = mut(out) + out_offset;
    // Frames in chunks, the CSR walked once per chunk: each entry's
    // densities are a contiguous run of the chunk's frames, so both passes
    // run along frames, four at a time.
    constexpr int64_t kChunk = 64;
    float total[kChunk], top[kChunk], sum[kChunk];
    for (int64_t f0 = 0; f0 < frames; f0 += kChunk) {
      const int n = static_cast<int>(std::min(kChunk, frames - f0));
      for (int s = 0; s < senones; ++s) {
        std::fill(total, total + n, 0.0f);
        for (int t = 0; t < streams; ++t) {
          const size_t r = static_cast<size_t>(s) * streams + t;
          const size_t j0 = static_cast<size_t>(off[r]), j1 = static_cast<size_t>(off[r + 1]);
          const auto row_of = [&](size_t j) {
            // fmax turns NaN into 0; the clamp keeps the read in bounds.
            const float g = std::fmin(std::fmax(gi[j], 0.0f), last_gaussian);
            return dens + static_cast<size_t>(g) * frames + f0;
          };
          std::fill(top, top + n, -INFINITY);
          for (size_t j = j0; j < j1; ++j) max_terms(row_of(j), w[j], top, n);
          std::fill(sum, sum + n, 0.0f);
          for (size_t j = j0; j < j1; ++j) add_exp_terms(row_of(j), w[j], top, sum, n);
          for (int f = 0; f < n; ++f)
            total[f] += top[f] == -INFINITY ? -INFINITY : top[f] + std::log(sum[f]);
        }
        for (int f = 0; f < n; ++f) o[(f0 + f) * senones + s] = total[f];
      }
    }
  }

  void senone_scores_top_n(const DeviceBuffer& densities, int codebooks, int density,
                           int64_t frames, int top_n, const DeviceBuffer& codebook,
                           const DeviceBuffer& weights, int senones, int streams,
                           DeviceBuffer& out, size_t out_offset) override {
    if (codebooks < 1 || density < 1 || frames < 0 || senones < 0 || streams < 1 ||
        top_n < 1 || top_n > kMaxTopN)
      throw BackendError("cpu backend: senone_scores_top_n: bad shape (codebooks " +
                         std::to_string(codebooks) + ", density " + std::to_string(density) +
                         ", frames " + std::to_string(frames) + ", top_n " +
                         std::to_string(top_n) + " (1.." + std::to_string(kMaxTopN) +
                         "), senones " + std::to_string(senones) + ", streams " +
                         std::to_string(streams) + ")");
    const size_t groups = static_cast<size_t>(streams) * codebooks;
    check_range(densities, 0, groups * density * frames, "senone_scores_top_n densities");
    check_range(codebook, 0, senones, "senone_scores_top_n codebook");
    check_range(weights, 0, static_cast<size_t>(senones) * streams * density,
                "senone_scores_top_n weights");
    check_range(out, out_offset, static_cast<size_t>(frames) * senones,
                "senone_scores_top_n out");
    if (frames == 0 || senones == 0) return;
    const int n = std::min(top_n, density);
    const float* dens = get(densities);
    const float* cb = get(codebook);
    const float* w = get(weights);
    float* o = mut(out) + out_offset;
    const float last_codebook = static_cast<float>(codebooks - 1);

    // First every codebook's ranked list for all frames, its density rows
    // read in memory order (one contiguous run), kept as [group][rank][frame]
    // rows of `lanes` frames (rounded up to whole vectors): Gaussian index,
    // e_i, and d_1 per frame. Then each senone reads its codebook's lists,
    // four frames at a time, each lane doing the scalar sequence of the
    // definition.
    const size_t lanes = (static_cast<size_t>(frames) + 3) / 4 * 4;
    Ranked r;  // per call: the backend may be shared between threads
    r.e.resize(groups * n * lanes);
    r.idx.resize(groups * n * lanes);
    r.top.resize(groups * lanes);
    for (size_t g = 0; g < groups; ++g)
      rank_codebook(dens + g * density * frames, frames, density, n, lanes,
                    r.e.data() + g * n * lanes, r.idx.data() + g * n * lanes,
                    r.top.data() + g * lanes, r.count, r.nan);
    constexpr int64_t kChunk = 64;  // frames per senone pass (a multiple of 4)
    float total[kChunk], sum[kChunk];
    for (int64_t f0 = 0; f0 < frames; f0 += kChunk) {
      const int c = static_cast<int>(std::min<int64_t>(kChunk, frames - f0));
      const int vec = (c + 3) / 4 * 4;  // the extra lanes are computed and ignored
      for (int s = 0; s < senones; ++s) {
        const float cf = std::fmin(std::fmax(cb[s], 0.0f), last_codebook);  // NaN -> 0
        const size_t cs = static_cast<size_t>(cf);
        std::fill(total, total + vec, 0.0f);
        for (int t = 0; t < streams; ++t) {
          const size_t g = static_cast<size_t>(t) * codebooks + cs;
          const float* ws = w + (static_cast<size_t>(s) * streams + t) * density;
          const float* e = r.e.data() + g * n * lanes + f0;
          const int32_t* idx = r.idx.data() + g * n * lanes + f0;
          const float* d1 = r.top.data() + g * lanes + f0;
          weighted_sums(ws, e, idx, lanes, n, vec, sum);
          for (int f = 0; f < vec; ++f) {
            float term;
            if (d1[f] == -INFINITY)
              term = -INFINITY;
            else if (sum[f] < kTopNUnderflow)
              term = log_domain_sum(ws, dens + g * density * frames, frames, f0 + f,
                                    idx + f, lanes, n);
            else
              term = d1[f] + std::log(sum[f]);
            total[f] += term;
          }
        }
        for (int f = 0; f < c; ++f) o[(f0 + f) * senones + s] = total[f];
      }
    }
  }

  void floor_densities(DeviceBuffer& densities, int64_t frames, int rows_per_stream, int streams,
                       float floor) override {
    check_floor_densities_args("cpu backend", frames, rows_per_stream, streams, floor);
    check_range(densities, 0, static_cast<size_t>(streams) * rows_per_stream * frames,
                "floor_densities densities");
    if (frames == 0) return;
    std::vector<float> lo(static_cast<size_t>(frames));
    for (int t = 0; t < streams; ++t) {
      float* block = mut(densities) + static_cast<size_t>(t) * rows_per_stream * frames;
      std::fill(lo.begin(), lo.end(), -INFINITY);
      // The best density per frame, rows outer so that both passes read the
      // block in memory order. A NaN never compares greater.
      for (int r = 0; r < rows_per_stream; ++r) {
        const float* row = block + static_cast<size_t>(r) * frames;
        for (int64_t f = 0; f < frames; ++f)
          if (row[f] > lo[f]) lo[f] = row[f];
      }
      for (int64_t f = 0; f < frames; ++f) lo[f] -= floor;
      for (int r = 0; r < rows_per_stream; ++r) {
        float* row = block + static_cast<size_t>(r) * frames;
        for (int64_t f = 0; f < frames; ++f) {
          const float d = row[f];
          if (d < lo[f]) row[f] = lo[f] + kDensityFloorSlope * (d - lo[f]);
        }
      }
    }
  }

  // Scratch of senone_scores_top_n.
  struct Ranked {
    std::vector<float> e, top;
    std::vector<int32_t> idx;
    std::vector<int> count;
    std::vector<char> nan;
  };

  // One codebook's ranked lists: rows[k * frames + f] is Gaussian k's
  // density at frame f. idx/e[i * lanes + f] receive rank i's Gaussian and
  // e_i, top[f] d_1; all `lanes` (>= frames) columns are written (the extra
  // ones Gaussian 0 and d_1 -inf; their e are not used) so that the vector
  // reads after stay in bounds. A NaN density makes d_1 NaN, and with it
  // the stream's term.
  static void rank_codebook(const float* rows, int64_t frames, int density, int n, size_t lanes,
                            float* e, int32_t* idx, float* top, std::vector<int>& count,
                            std::vector<char>& nan) {
    float* val = e;  // densities while ranking, then e_i in place
    std::fill(val, val + n * lanes, -INFINITY);
    std::fill(idx, idx + n * lanes, 0);
    count.assign(static_cast<size_t>(frames), 0);
    nan.assign(static_cast<size_t>(frames), 0);
    for (int k = 0; k < density; ++k) {
      const float* row = rows + k * frames;
      for (int64_t f = 0; f < frames; ++f) {
        const float v = row[f];
        if (std::isnan(v)) {
          nan[f] = 1;
          continue;
        }
        int p = count[f];
        if (p == n) {
          if (!(v > val[(n - 1) * lanes + f])) continue;
          --p;  // the last entry drops out
        } else {
          ++count[f];
        }
        for (; p > 0 && val[(p - 1) * lanes + f] < v; --p) {
          val[p * lanes + f] = val[(p - 1) * lanes + f];
          idx[p * lanes + f] = idx[(p - 1) * lanes + f];
        }
        val[p * lanes + f] = v;
        idx[p * lanes + f] = k;
      }
    }
    for (size_t f = 0; f < lanes; ++f)
      top[f] = static_cast<int64_t>(f) < frames && nan[f] ? NAN : val[f];
    // e_i = exp(d_i - d_1), rank 0 last (it is the reference).
    for (int i = n - 1; i >= 0; --i) {
      float* vi = val + i * lanes;
      size_t f = 0;
#ifdef __SSE2__
      for (; f + 4 <= lanes; f += 4)
        _mm_storeu_ps(vi + f,
                      exp_nonpositive(_mm_sub_ps(_mm_loadu_ps(vi + f), _mm_loadu_ps(top + f))));
#endif
      for (; f < lanes; ++f) vi[f] = exp_nonpositive(vi[f] - top[f]);
    }
  }

  // sum[f] = w[idx_1] e_1 + ... + w[idx_n] e_n (rank order) for `vec` frames
  // (a multiple of 4); rank i of frame f at [i * stride + f].
  static void weighted_sums(const float* w, const float* e, const int32_t* idx, size_t stride,
                            int n, int vec, float* sum) {
    for (int f = 0; f < vec; f += 4) {
#ifdef __SSE2__
      __m128 acc = _mm_setzero_ps();
      for (int i = 0; i < n; ++i) {
        const int32_t* ix = idx + i * stride + f;
        const __m128 wv = _mm_setr_ps(w[ix[0]], w[ix[1]], w[ix[2]], w[ix[3]]);
        acc = _mm_add_ps(acc, _mm_mul_ps(wv, _mm_loadu_ps(e + i * stride + f)));
      }
      _mm_storeu_ps(sum + f, acc);
#else
      for (int l = 0; l < 4; ++l) {
        float acc = 0.0f;
        for (int i = 0; i < n; ++i) acc += w[idx[i * stride + f + l]] * e[i * stride + f + l];
        sum[f + l] = acc;
      }
#endif
    }
  }

  // The definition's log-domain branch for one frame (rare: S < 2^-60).
  // rows as in rank_codebook, the frame's ranked Gaussians at idx[i * stride].
  static float log_domain_sum(const float* w, const float* rows, int64_t frames, int64_t f,
                              const int32_t* idx, size_t stride, int n) {
    float v[kMaxTopN];
    float m = -INFINITY;
    for (int i = 0; i < n; ++i) {
      const int32_t k = idx[i * stride];
      v[i] = std::log(w[k]) + rows[k * frames + f];
      if (v[i] > m || std::isnan(v[i])) m = v[i];
    }
    if (m == -INFINITY) return -INFINITY;
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += exp_nonpositive(v[i] - m);
    return m + std::log(sum);
  }

  // The log-sum-exp's first pass over one entry: top[f] = max(top[f], w +
  // d[f]), a NaN term sticking (so that it reaches the result).
  static void max_terms(const float* d, float w, float* top, int n) {
    int f = 0;
#ifdef __SSE2__
    const __m128 wv = _mm_set1_ps(w);
    for (; f + 4 <= n; f += 4) {
      const __m128 v = _mm_add_ps(wv, _mm_loadu_ps(d + f));
      // maxps(v, top) returns top when either is NaN; a NaN v is or-ed in.
      const __m128 m = _mm_max_ps(v, _mm_loadu_ps(top + f));
      _mm_storeu_ps(top + f, _mm_or_ps(m, _mm_and_ps(_mm_cmpunord_ps(v, v), v)));
    }
#endif
    for (; f < n; ++f) {
      const float v = w + d[f];
      if (v > top[f] || std::isnan(v)) top[f] = v;
    }
  }

  // The second pass: sum[f] += exp(w + d[f] - top[f]).
  static void add_exp_terms(const float* d, float w, const float* top, float* sum, int n) {
    int f = 0;
#ifdef __SSE2__
    const __m128 wv = _mm_set1_ps(w);
    for (; f + 4 <= n; f += 4) {
      const __m128 x = _mm_sub_ps(_mm_add_ps(wv, _mm_loadu_ps(d + f)), _mm_loadu_ps(top + f));
      _mm_storeu_ps(sum + f, _mm_add_ps(_mm_loadu_ps(sum + f), exp_nonpositive(x)));
    }
#endif
    for (; f < n; ++f) sum[f] += exp_nonpositive(w + d[f] - top[f]);
  }

  // exp(x) for x <= 0, the log-sum-exp's terms, branch-free so that four
  // go at once: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two so that
  // n ln2 is exact), e^r by its Taylor series to r^7 (truncation below
  // 6e-9 relative), times 2^n built in the exponent bits. Within about one
  // ulp of the exact value, as expf on the devices. Below -87 the result is
  // e^-87 (1.6e-38) instead of less: the terms are added to a sum >= 1,
  // where neither is visible. NaN gives NaN; -inf gives e^-87; x > 0 (which
  // the two passes never produce) gives 1.
  static constexpr float kLog2e = 1.44269504088896341f;
  static constexpr float kLn2Hi = 0.693359375f;        // 355/512, exact
  static constexpr float kLn2Lo = -2.12194440054690583e-4f;  // ln2 - kLn2Hi
  static constexpr float kExpFloor = -87.0f;

  static float exp_nonpositive(float x) {
    if (std::isnan(x)) return x;
    x = kExpFloor > x ? kExpFloor : (x > 0.0f ? 0.0f : x);
    const float n = std::nearbyint(x * kLog2e);
    const float r = (x - n * kLn2Hi) - n * kLn2Lo;
    const float p = taylor_exp(r);
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return p * scale;
  }

  template <typename T, typename Mul, typename Add>
  static T horner_exp(T r, Mul mul, Add add, T (*splat)(float)) {
    T p = splat(1.0f / 5040.0f);
    p = add(mul(p, r), splat(1.0f / 720.0f));
    p = add(mul(p, r), splat(1.0f / 120.0f));
    p = add(mul(p, r), splat(1.0f / 24.0f));
    p = add(mul(p, r), splat(1.0f / 6.0f));
    p = add(mul(p, r), splat(0.5f));
    p = add(mul(p, r), splat(1.0f));
    return add(mul(p, r), splat(1.0f));
  }

  static float taylor_exp(float r) {
    return horner_exp<float>(
        r, [](float a, float b) { return a * b; }, [](float a, float b) { return a + b; },
        [](float c) { return c; });
  }

#ifdef __SSE2__
  static __m128 exp_nonpositive(__m128 x) {
    // Clamped to [kExpFloor, 0]; maxps and minps return their second
    // operand (x) when either is NaN.
    x = _mm_max_ps(_mm_set1_ps(kExpFloor), _mm_min_ps(_mm_setzero_ps(), x));
    // cvtps2dq rounds to nearest even, as nearbyint does by default.
    const __m128i ni = _mm_cvtps_epi32(_mm_mul_ps(x, _mm_set1_ps(kLog2e)));
    const __m128 n = _mm_cvtepi32_ps(ni);
    const __m128 r = _mm_sub_ps(_mm_sub_ps(x, _mm_mul_ps(n, _mm_set1_ps(kLn2Hi))),
                                _mm_mul_ps(n, _mm_set1_ps(kLn2Lo)));
    const __m128 p = horner_exp<__m128>(
        r, [](__m128 a, __m128 b) { return _mm_mul_ps(a, b); },
        [](__m128 a, __m128 b) { return _mm_add_ps(a, b); },
        [](float c) { return _mm_set1_ps(c); });
    const __m128 scale =
        _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(ni, _mm_set1_epi32(127)), 23));
    return _mm_mul_ps(p, scale);
  }
#endif

  static float unary(UnaryOp op, float param, float v) {
    switch (op) {
      case UnaryOp::kLogFloor: return v > 0.0f ? std::log(v) : param;
      case UnaryOp::kLogOffset: return std::log(v + param);
      case UnaryOp::kLogClamp: return std::log(std::max(v, param));
      case UnaryOp::kPow: return v >= 0.0f ? std::pow(v, param) : 0.0f;
      case UnaryOp::kSqrt: return std::sqrt(std::max(v, 0.0f));
    }
    return v;
  }

  void check_framing(const DeviceBuffer& signal, const FramingSpec& s, const DeviceBuffer& window,
                     const char* what) const {
    if (s.frame_length > s.fft_size || s.frame_length < 1 || s.frame_shift < 1)
      throw BackendError(std::string(what) + ": bad frame geometry");
    own(signal);
    if (s.rows() > 0 && s.utt_stride * (s.num_utts - 1) + s.valid_length >
                            static_cast<int64_t>(signal.size()))
      throw BackendError(std::string(what) + ": signal buffer too small for the spec");
    check_range(window, 0, s.frame_length, "window");
  }

  // Row r of frame_signal (FramingSpec) into y (fft_size floats); x is
  // frame_length floats of scratch.
  static void frame_row(const float* sig, const FramingSpec& s, const float* win, int64_t r,
                        float* y, float* energy, std::vector<float>& x) {
    const int64_t u = r / s.frames_per_utt, t = r % s.frames_per_utt;
    const float* seg = sig + u * s.utt_stride;
    const int64_t start = s.first_frame_offset + t * s.frame_shift;
    const auto sample = [&](int64_t p) {
      return (p >= 0 && p < s.valid_length) ? seg[p] : 0.0f;
    };
    for (int i = 0; i < s.frame_length; ++i) x[i] = sample(start + i);
    float mean = 0.0f;
    if (s.remove_dc) {
      for (int i = 0; i < s.frame_length; ++i) mean += x[i];
      mean /= static_cast<float>(s.frame_length);
    }
    if (energy) {
      float e = 0.0f;
      for (int i = 0; i < s.frame_length; ++i) {
        const float v = x[i] - mean;
        e += v * v;
      }
      *energy = e;
    }
    const float a = s.preemphasis;
    if (s.preemphasis_per_frame) {
      for (int i = 0; i < s.frame_length; ++i) x[i] -= mean;
      for (int i = s.frame_length - 1; i > 0; --i) x[i] -= a * x[i - 1];
      x[0] -= a * x[0];
      for (int i = 0; i < s.frame_length; ++i) y[i] = x[i] * win[i];
    } else {
      for (int i = 0; i < s.frame_length; ++i) {
        const int64_t p = start + i;
        y[i] = p < s.valid_length ? x[i] - a * sample(p - 1) : 0.0f;
      }
      if (s.remove_dc) {
        float m = 0.0f;
        for (int i = 0; i < s.frame_length; ++i) m += y[i];
        m /= static_cast<float>(s.frame_length);
        for (int i = 0; i < s.frame_length; ++i) y[i] -= m;
      }
      for (int i = 0; i < s.frame_length; ++i) y[i] *= win[i];
    }
    std::fill(y + s.frame_length, y + s.fft_size, 0.0f);
  }

  // |X_k|^2 (or |X_k|) of one frame into row (bins floats).
  static void power_row(const RealFft<float>& fft, const float* frame, int bins, bool magnitude,
                        std::vector<std::complex<float>>& out, float* row) {
    fft.forward(frame, out.data());
    for (int k = 0; k < bins; ++k) {
      const float p = out[k].real() * out[k].real() + out[k].imag() * out[k].imag();
      row[k] = magnitude ? std::sqrt(p) : p;
    }
  }

  // Eight partial sums: a fixed summation order (deterministic), and one the
  // compiler can keep in vector registers.
  static float dot(const float* a, const float* b, int k) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0;
    for (; i + 8 <= k; i += 8)
      for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
    float s = 0.0f;
    for (; i < k; ++i) s += a[i] * b[i];
    return s + ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  }

  const float* get(const DeviceBuffer& b) const { return own(b).data.data(); }
  float* mut(DeviceBuffer& b) const {
    return const_cast<CpuBuffer&>(own(b)).data.data();
  }
  const CpuBuffer& own(const DeviceBuffer& b) const {
    if (b.owner() != this) throw BackendError("cpu backend: buffer belongs to another backend");
    return static_cast<const CpuBuffer&>(b);
  }
  void check_range(const DeviceBuffer& b, size_t off, size_t n, const char* what) const {
    own(b);
    if (off > b.size() || n > b.size() - off)
      throw BackendError(std::string("cpu backend: ") + what + ": " + std::to_string(n) +
                         " floats at offset " + std::to_string(off) +
                         " exceed a buffer of " + std::to_string(b.size()));
  }
  const RealFft<float>& plan(int n) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plans_.find(n);
    if (it == plans_.end()) it = plans_.emplace(n, std::make_unique<RealFft<float>>(n)).first;
    return *it->second;
  }

  std::mutex mu_;
  std::map<int, std::unique_ptr<RealFft<float>>> plans_;
};

}  // namespace

BackendPtr make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace gpuspeech
