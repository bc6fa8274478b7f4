// The CPU backend: the reference every device backend is compared with, and
// the fallback when no GPU is present. Plain loops in float32 (like the
// devices), each operation exactly as backend.h defines it.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/backend.h"
#include "common/backend_registry.h"
#include "common/fft.h"
#include "common/lpc.h"

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
    if (s.frame_length > s.fft_size || s.frame_length < 1 || s.frame_shift < 1)
      throw BackendError("frame_signal: bad frame geometry");
    if (rows > 0 && s.utt_stride * (s.num_utts - 1) + s.valid_length >
                        static_cast<int64_t>(signal.size()))
      throw BackendError("frame_signal: signal buffer too small for the spec");
    check_range(window, 0, s.frame_length, "frame_signal window");
    check_range(frames, 0, rows * s.fft_size, "frame_signal frames");
    if (energy) check_range(*energy, 0, rows, "frame_signal energy");
    const float* sig = get(signal);
    const float* win = get(window);
    float* out = mut(frames);
    std::vector<float> x(s.frame_length);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t u = r / s.frames_per_utt, t = r % s.frames_per_utt;
      const float* seg = sig + u * s.utt_stride;
      const int64_t start = s.first_frame_offset + t * s.frame_shift;
      const auto sample = [&](int64_t p) {
        return (p >= 0 && p < s.valid_length) ? seg[p] : 0.0f;
      };
      float* y = out + r * s.fft_size;
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
        mut(*energy)[r] = e;
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
  }

  void power_spectrum(const DeviceBuffer& frames, int64_t rows, int fft_size,
                      bool magnitude, DeviceBuffer& spectrum) override {
    const int bins = fft_size / 2 + 1;
    check_range(frames, 0, rows * fft_size, "power_spectrum frames");
    check_range(spectrum, 0, rows * bins, "power_spectrum spectrum");
    const RealFft<float>& fft = plan(fft_size);
    std::vector<std::complex<float>> out(bins);
    const float* in = get(frames);
    float* spec = mut(spectrum);
    for (int64_t r = 0; r < rows; ++r) {
      fft.forward(in + r * fft_size, out.data());
      float* row = spec + r * bins;
      for (int k = 0; k < bins; ++k) {
        const float p = out[k].real() * out[k].real() + out[k].imag() * out[k].imag();
        row[k] = magnitude ? std::sqrt(p) : p;
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
    switch (op) {
      case UnaryOp::kLogFloor:
        for (size_t i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? std::log(v[i]) : param;
        break;
      case UnaryOp::kLogOffset:
        for (size_t i = 0; i < n; ++i) v[i] = std::log(v[i] + param);
        break;
      case UnaryOp::kLogClamp:
        for (size_t i = 0; i < n; ++i) v[i] = std::log(std::max(v[i], param));
        break;
      case UnaryOp::kPow:
        for (size_t i = 0; i < n; ++i) v[i] = v[i] >= 0.0f ? std::pow(v[i], param) : 0.0f;
        break;
      case UnaryOp::kSqrt:
        for (size_t i = 0; i < n; ++i) v[i] = std::sqrt(std::max(v[i], 0.0f));
        break;
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

 private:
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
