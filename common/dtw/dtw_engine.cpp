// The engine factory and the CPU engine.
#include "common/dtw/dtw_engine.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <thread>

#include "common/backends/backend.h"
#include "common/dtw/dtw.h"

namespace gpuspeech {
namespace {

class CpuDtwEngine : public DtwEngine {
 public:
  CpuDtwEngine(const DtwOptions& options, int threads) : options_(options) {
    options_.validate();
    threads_ = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  }
  const char* name() const override { return "cpu"; }
  std::string device_name() const override {
    return "host, " + std::to_string(threads_) + " thread(s)";
  }
  void set_templates(const PackedTemplates& templates) override {
    if (templates.count() < 1) throw std::invalid_argument("dtw: no templates");
    templates_ = templates;
  }
  std::vector<float> match(const float* utterance, int64_t frames) override {
    if (templates_.count() < 1) throw std::logic_error("dtw: match() before set_templates()");
    const int64_t count = templates_.count();
    std::vector<float> out(static_cast<size_t>(count));
    // Templates handed out one at a time: lengths differ, so a fixed split
    // would leave threads idle.
    std::atomic<int64_t> next{0};
    auto work = [&] {
      for (int64_t t; (t = next++) < count;)
        out[static_cast<size_t>(t)] = dtw_distance(
            utterance, frames, templates_.frames.data() + templates_.offsets[t] * templates_.dim,
            templates_.length(t), templates_.dim, options_);
    };
    const int n = static_cast<int>(std::min<int64_t>(threads_, count));
    if (n <= 1) {
      work();
      return out;
    }
    std::vector<std::thread> pool;
    for (int k = 0; k < n; ++k) pool.emplace_back(work);
    for (std::thread& th : pool) th.join();
    return out;
  }

 private:
  DtwOptions options_;
  int threads_ = 1;
  PackedTemplates templates_;
};

}  // namespace

const char* dtw_engine_choices() {
#if defined(GPUSPEECH_HAVE_CUDA) && defined(GPUSPEECH_HAVE_OPENCL)
  return "auto|cuda|opencl|cpu";
#elif defined(GPUSPEECH_HAVE_CUDA)
  return "auto|cuda|cpu";
#elif defined(GPUSPEECH_HAVE_OPENCL)
  return "auto|opencl|cpu";
#else
  return "auto|cpu";
#endif
}

std::unique_ptr<DtwEngine> make_cpu_dtw_engine(const DtwOptions& options, int threads) {
  return std::make_unique<CpuDtwEngine>(options, threads);
}

std::unique_ptr<DtwEngine> make_dtw_engine(const std::string& name, const DtwOptions& options,
                                           int device_id, int threads) {
  if (name == "cpu") return make_cpu_dtw_engine(options, threads);
  if (name == "cuda") {
#ifdef GPUSPEECH_HAVE_CUDA
    return make_cuda_dtw_engine(options, device_id);
#else
    throw BackendError("dtw: the cuda engine is not compiled into this build");
#endif
  }
  if (name == "opencl") {
#ifdef GPUSPEECH_HAVE_OPENCL
    return make_opencl_dtw_engine(options, device_id);
#else
    throw BackendError("dtw: the opencl engine is not compiled into this build");
#endif
  }
  if (name == "auto") {
#ifdef GPUSPEECH_HAVE_CUDA
    try {
      return make_cuda_dtw_engine(options, device_id);
    } catch (const BackendError&) {
    }
#endif
#ifdef GPUSPEECH_HAVE_OPENCL
    try {
      return make_opencl_dtw_engine(options, device_id, /*gpu_only=*/true);
    } catch (const BackendError&) {
    }
#endif
    return make_cpu_dtw_engine(options, threads);
  }
  throw std::invalid_argument("unknown dtw engine '" + name + "' (" + dtw_engine_choices() + ")");
}

}  // namespace gpuspeech
