// gpuspeech-bench: throughput of batch feature extraction per backend.
//
//   gpuspeech-bench features [--backend all|auto|cuda|opencl|cpu]
//       [--device-id N] [--utts 512] [--cpu-utts 4] [--seconds 30]
//       [--rate 16000] [--kind mfcc] [--flavour sphinx] [--warps 1]
//       [--reps 20] [--warmup 3] [--seed 1]
//
// A batch of `utts` utterances of `seconds` each (speech-like synthetic
// audio, never silence) is uploaded once; then FeatureExtractor::
// compute_device runs over the device-resident batch, followed by a device
// synchronisation, `reps` times after `warmup` untimed runs. The median
// wall time gives frames/s. The CPU backend, single-threaded, gets a smaller
// batch (--cpu-utts) so that it finishes; frames/s is per frame either way.
//
// After timing, the first utterance's features are downloaded and compared
// with the CPU backend's on the same audio, so a fast wrong result cannot
// pass unnoticed. The last line per backend starts with "RESULT" for
// scripts.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/backend_registry.h"
#include "common/feature_pipeline.h"
#include "common/options.h"

namespace gpuspeech {
namespace {

struct BenchOptions {
  std::string backend = "all";
  int device_id = 0;
  int64_t utts = 512;
  int64_t cpu_utts = 4;
  double seconds = 30.0;
  float rate = 16000.0f;
  FeatureKind kind = FeatureKind::kMfcc;
  Flavour flavour = Flavour::kSphinx;
  int warps = 1;
  int reps = 20;
  int warmup = 3;
  uint32_t seed = 1;
};

[[noreturn]] void usage(const std::string& error) {
  std::fprintf(stderr,
               "gpuspeech-bench: %s\n"
               "usage: gpuspeech-bench features [--backend all|%s] [--device-id N]\n"
               "         [--utts 512] [--cpu-utts 4] [--seconds 30] [--rate 16000]\n"
               "         [--kind mfcc|fbank|plp|traps] [--flavour sphinx|htk|kaldi]\n"
               "         [--warps K] [--reps 20] [--warmup 3] [--seed 1]\n",
               error.c_str(), backend_choices());
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const char* v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > hi)
    usage(flag + " needs an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
          ", got '" + v + "'");
  return x;
}

double parse_double(const std::string& flag, const char* v, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= lo && x <= hi))
    usage(flag + " needs a number in " + std::to_string(lo) + ".." + std::to_string(hi) +
          ", got '" + v + "'");
  return x;
}

BenchOptions parse_args(int argc, char** argv) {
  if (argc < 2) usage("missing command (only 'features' exists)");
  if (std::string(argv[1]) != "features") usage(std::string("unknown command '") + argv[1] + "'");
  BenchOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* v = argv[++i];
    try {
      if (flag == "--backend") o.backend = v;
      else if (flag == "--device-id") o.device_id = static_cast<int>(parse_int(flag, v, 0, 1023));
      else if (flag == "--utts") o.utts = parse_int(flag, v, 1, 1 << 20);
      else if (flag == "--cpu-utts") o.cpu_utts = parse_int(flag, v, 1, 1 << 20);
      else if (flag == "--seconds") o.seconds = parse_double(flag, v, 0.05, 3600);
      else if (flag == "--rate") o.rate = static_cast<float>(parse_double(flag, v, 4000, 192000));
      else if (flag == "--kind") o.kind = parse_feature_kind(v);
      else if (flag == "--flavour") o.flavour = parse_flavour(v);
      else if (flag == "--warps") o.warps = static_cast<int>(parse_int(flag, v, 1, 64));
      else if (flag == "--reps") o.reps = static_cast<int>(parse_int(flag, v, 1, 100000));
      else if (flag == "--warmup") o.warmup = static_cast<int>(parse_int(flag, v, 0, 1000));
      else if (flag == "--seed") o.seed = static_cast<uint32_t>(parse_int(flag, v, 0, UINT32_MAX));
      else usage("unknown option " + flag);
    } catch (const std::invalid_argument& e) {
      usage(e.what());
    }
  }
  return o;
}

// Speech-like audio in 16-bit units: a voiced source (harmonics of a pitch
// that glides between 90 and 250 Hz) through a few moving formant-like
// resonances, syllable-rate amplitude modulation, and a noise floor. Each
// utterance has its own seed, so rows differ.
void synthesize(float* out, int64_t n, float rate, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  std::normal_distribution<float> noise(0.0f, 30.0f);
  const float f0_base = 90.0f + 160.0f * uni(gen);
  const float syll = 3.0f + 3.0f * uni(gen);  // syllables per second
  float formant[3] = {500.0f + 300.0f * uni(gen), 1500.0f + 500.0f * uni(gen),
                      2500.0f + 500.0f * uni(gen)};
  const double two_pi = 2.0 * M_PI;
  double phase = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double t = i / static_cast<double>(rate);
    const double f0 = f0_base * (1.0 + 0.2 * std::sin(two_pi * 0.7 * t));
    phase += two_pi * f0 / rate;
    if (phase > two_pi) phase -= two_pi;
    // Harmonics weighted by their distance to the formants; sin(h phase)
    // by the Chebyshev recurrence s_{h+1} = 2 cos(phase) s_h - s_{h-1}.
    const double c2 = 2.0 * std::cos(phase);
    double s_prev = 0.0, s_cur = std::sin(phase), v = 0.0;
    for (int h = 1; h <= 8; ++h) {
      const double fh = h * f0;
      double g = 0.0;
      for (float f : formant) {
        const double d = (fh - f) / 150.0;
        g += 1.0 / (1.0 + d * d);
      }
      v += g * s_cur / h;
      const double s_next = c2 * s_cur - s_prev;
      s_prev = s_cur;
      s_cur = s_next;
    }
    const double env = 0.5 + 0.5 * std::sin(two_pi * syll * t);
    out[i] = static_cast<float>(3000.0 * env * env * v) + noise(gen);
  }
}

std::vector<float> make_batch(int64_t utts, int64_t n, float rate, uint32_t seed) {
  std::vector<float> audio(static_cast<size_t>(utts * n));
  const unsigned threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      for (int64_t u = w; u < utts; u += threads)
        synthesize(audio.data() + u * n, n, rate, seed * 7919u + static_cast<uint32_t>(u));
    });
  for (auto& th : pool) th.join();
  return audio;
}

struct Result {
  std::string backend, device;
  int64_t utts = 0, frames = 0;
  double median_s = 0, min_s = 0, max_s = 0;
  double max_err_vs_cpu = 0;
};

Result run_backend(const std::string& name, const BenchOptions& o,
                   const std::vector<float>& audio, int64_t samples_per_utt) {
  Result res;
  BackendPtr backend = open_backend(name, o.device_id);
  res.backend = backend->name();
  res.device = backend->device_name();
  const int64_t utts = res.backend == "cpu" ? std::min(o.utts, o.cpu_utts) : o.utts;
  res.utts = utts;

  FeatureOptions opts = FeatureOptions::for_flavour(o.flavour, o.kind);
  opts.frame.sample_rate = o.rate;
  std::vector<float> warps;
  for (int k = 0; k < o.warps; ++k)
    // Kaldi's usual VTLN search range, 0.88 .. 1.12.
    warps.push_back(o.warps == 1 ? 1.0f : 0.88f + 0.24f * k / (o.warps - 1));
  FeatureExtractor ex(opts, *backend, warps);
  const FramingSpec spec = ex.framing_for(utts, samples_per_utt, samples_per_utt);
  res.frames = spec.rows();
  const int dim = ex.num_warps() * ex.base_dim();

  BufferPtr signal = backend->alloc(static_cast<size_t>(utts * samples_per_utt));
  backend->upload(*signal, audio.data(), static_cast<size_t>(utts * samples_per_utt));
  BufferPtr out = backend->alloc(static_cast<size_t>(res.frames) * dim);
  backend->synchronize();

  for (int i = 0; i < o.warmup; ++i) {
    ex.compute_device(*signal, spec, *out);
    backend->synchronize();
  }
  std::vector<double> times;
  for (int i = 0; i < o.reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ex.compute_device(*signal, spec, *out);
    backend->synchronize();
    const auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(times.begin(), times.end());
  res.median_s = times[times.size() / 2];
  res.min_s = times.front();
  res.max_s = times.back();

  // The first utterance against the CPU backend on the same samples.
  const int64_t rows0 = spec.frames_per_utt;
  std::vector<float> got(static_cast<size_t>(rows0) * dim);
  backend->download(*out, got.data(), got.size());
  BackendPtr cpu = make_cpu_backend();
  FeatureExtractor cpu_ex(opts, *cpu, warps);
  FeatureMatrix want = cpu_ex.compute(audio.data(), samples_per_utt);
  if (want.rows != rows0) throw std::runtime_error("frame count differs from the CPU backend");
  for (size_t i = 0; i < got.size(); ++i)
    res.max_err_vs_cpu =
        std::max(res.max_err_vs_cpu, static_cast<double>(std::fabs(got[i] - want.data[i])));
  return res;
}

int bench_features(const BenchOptions& o) {
  std::vector<std::string> names;
  if (o.backend == "all") {
    for (const BackendInfo& b : list_backends()) {
      if (b.usable) names.push_back(b.name);
      else std::printf("backend %s: skipped (%s)\n", b.name.c_str(), b.detail.c_str());
    }
  } else {
    names.push_back(o.backend);
  }
  const int64_t n = static_cast<int64_t>(std::llround(o.seconds * o.rate));
  const int64_t max_utts = std::max(o.utts, o.cpu_utts);
  std::printf("synthesising %lld utterances x %.2f s at %.0f Hz ...\n",
              static_cast<long long>(max_utts), o.seconds, o.rate);
  std::fflush(stdout);
  const std::vector<float> audio = make_batch(max_utts, n, o.rate, o.seed);
  int failures = 0;
  for (const std::string& name : names) {
    try {
      const Result r = run_backend(name, o, audio, n);
      const double fps = r.frames / r.median_s;
      std::printf("backend %s (%s): %s %s, %d warp(s), %lld utts x %.2f s = %lld frames\n"
                  "  median %.3f ms over %d runs (min %.3f, max %.3f), %.3e frames/s, "
                  "%.0fx real time; first utterance vs cpu: max |diff| %.2e\n",
                  r.backend.c_str(), r.device.c_str(), to_string(o.flavour), to_string(o.kind),
                  o.warps, static_cast<long long>(r.utts), o.seconds,
                  static_cast<long long>(r.frames), r.median_s * 1e3, o.reps, r.min_s * 1e3,
                  r.max_s * 1e3, fps, r.utts * o.seconds / r.median_s, r.max_err_vs_cpu);
      std::printf("RESULT backend=%s kind=%s flavour=%s warps=%d utts=%lld seconds=%.2f "
                  "frames=%lld median_ms=%.4f frames_per_s=%.4e max_diff_vs_cpu=%.3e\n",
                  r.backend.c_str(), to_string(o.kind), to_string(o.flavour), o.warps,
                  static_cast<long long>(r.utts), o.seconds, static_cast<long long>(r.frames),
                  r.median_s * 1e3, fps, r.max_err_vs_cpu);
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "backend %s: %s\n", name.c_str(), e.what());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace gpuspeech

int main(int argc, char** argv) {
  const gpuspeech::BenchOptions o = gpuspeech::parse_args(argc, argv);
  try {
    return gpuspeech::bench_features(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuspeech-bench: %s\n", e.what());
    return 1;
  }
}
