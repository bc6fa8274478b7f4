// gpuspeech-bench: throughput of batch feature extraction and of acoustic
// scoring per backend; fMLLR; many streams decoding at once
// (`gpuspeech-bench decode`, tools/bench_decode.cpp).
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
//
//   gpuspeech-bench scoring [--backend all|auto|cuda|opencl|cpu]
//       [--device-id N] [--frames 2000] [--cpu-frames 20] [--senones 5126]
//       [--codebooks 42] [--gaussians 128] [--streams 3] [--dim 39]
//       [--block 512] [--reps 10] [--warmup 2] [--seed 1]
//
// Acoustic scoring (GaussianScorer) of `frames` random feature frames with a
// random model of the given shape: `gaussians` per codebook (the mixture
// size), `codebooks` codebooks (0: one per senone, a continuous model), the
// `dim` feature components split into `streams` near-equal streams. The
// defaults are the shape of pocketsphinx's en-us PTM model. Timed, each as
// the median of `reps` runs after `warmup`: the whole scorer (host features
// in, [x², x, 1] expansion and upload, the GEMMs and senone_scores, scores
// left on the device), the GEMMs alone and senone_scores alone on the same
// shapes. Reported: frames/s, GEMM GFLOP/s, mixture terms/s (one term is
// one component of one senone at one frame: an add, a compare, an exp);
// the first block's scores are checked against the CPU backend's.
//
//   gpuspeech-bench fmllr [--backend all|auto|cuda|opencl|cpu]
//       [--device-id N] [--frames 20000] [--cpu-frames 2000] [--block 1024]
//       [--senones 5126] [--codebooks 42] [--gaussians 128] [--streams 3]
//       [--dim 39] [--reps 5] [--warmup 1] [--seed 1]
//
// Feature-space MLLR (common/fmllr/, docs/fmllr.md) on the scoring bench's
// random model of the en-us shape, with features drawn near its Gaussians
// and a random senone per frame as the alignment (a tenth of the frames
// unaligned). Timed: supervised_posteriors on the host (frames/s, once),
// estimate_fmllr on the host (ms per speaker, full and diagonal updates,
// once: neither depends on the backend), and per backend the median of
// `reps` runs of FmllrAccumulator::accumulate (frames/s, host features and
// posteriors in, statistics back on the host) and FmllrApplier::apply (host
// to host, and host to device). The statistics of the first 512 frames are
// checked against accumulate_fmllr_reference (double) and the applied
// frames against apply_fmllr_reference; a backend off by more than 1e-3
// (statistics, relative to each block's largest entry) or 1e-4 (frames)
// fails the run.
#include "tools/bench_decode.h"

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

#include "common/backends/backend_registry.h"
#include "common/features/feature_pipeline.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/scoring/gaussian_scoring.h"
#include "common/model/gaussian_mixtures.h"
#include "common/features/feature_options.h"

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
               "         [--warps K] [--reps 20] [--warmup 3] [--seed 1]\n"
               "       gpuspeech-bench scoring [--backend all|%s] [--device-id N]\n"
               "         [--frames 2000] [--cpu-frames 20] [--senones 5126] [--codebooks 42]\n"
               "         [--gaussians 128] [--streams 3] [--dim 39] [--block 512]\n"
               "         [--reps 10] [--warmup 2] [--seed 1]\n"
               "       gpuspeech-bench fmllr [--backend all|%s] [--device-id N]\n"
               "         [--frames 20000] [--cpu-frames 2000] [--block 1024] [--senones 5126]\n"
               "         [--codebooks 42] [--gaussians 128] [--streams 3] [--dim 39]\n"
               "         [--reps 5] [--warmup 1] [--seed 1]\n"
               "       gpuspeech-bench decode [--streams N] [--backend B] [--search S] [--live]\n"
               "         [--seconds S] [--block-ms MS] [--partial-ms MS] [model options] FILE...\n",
               error.c_str(), backend_choices(), backend_choices(), backend_choices());
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

struct ScoringBenchOptions {
  std::string backend = "all";
  int device_id = 0;
  int64_t frames = 2000;
  int64_t cpu_frames = 20;
  int senones = 5126;
  int codebooks = 42;  // 0: one per senone
  int gaussians = 128;
  int streams = 3;
  int dim = 39;
  int64_t block = 512;
  int reps = 10;
  int warmup = 2;
  uint32_t seed = 1;
};

ScoringBenchOptions parse_scoring_args(int argc, char** argv) {
  ScoringBenchOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* v = argv[++i];
    if (flag == "--backend") o.backend = v;
    else if (flag == "--device-id") o.device_id = static_cast<int>(parse_int(flag, v, 0, 1023));
    else if (flag == "--frames") o.frames = parse_int(flag, v, 1, 1 << 24);
    else if (flag == "--cpu-frames") o.cpu_frames = parse_int(flag, v, 1, 1 << 24);
    else if (flag == "--senones") o.senones = static_cast<int>(parse_int(flag, v, 1, 1 << 20));
    else if (flag == "--codebooks") o.codebooks = static_cast<int>(parse_int(flag, v, 0, 1 << 20));
    else if (flag == "--gaussians") o.gaussians = static_cast<int>(parse_int(flag, v, 1, 1 << 16));
    else if (flag == "--streams") o.streams = static_cast<int>(parse_int(flag, v, 1, 64));
    else if (flag == "--dim") o.dim = static_cast<int>(parse_int(flag, v, 1, 4096));
    else if (flag == "--block") o.block = parse_int(flag, v, 1, 1 << 20);
    else if (flag == "--reps") o.reps = static_cast<int>(parse_int(flag, v, 1, 100000));
    else if (flag == "--warmup") o.warmup = static_cast<int>(parse_int(flag, v, 0, 1000));
    else if (flag == "--seed") o.seed = static_cast<uint32_t>(parse_int(flag, v, 0, UINT32_MAX));
    else usage("unknown option " + flag);
  }
  if (o.streams > o.dim) usage("--streams must not exceed --dim");
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

// A random model of the requested shape: the numbers only need to be of
// realistic scale (the bench checks device against CPU, not accuracy).
GaussianMixtures random_model(const ScoringBenchOptions& o) {
  std::mt19937 gen(o.seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  GaussianMixtures gm;
  gm.num_senones = o.senones;
  gm.num_codebooks = o.codebooks == 0 ? o.senones : o.codebooks;
  gm.gaussians_per_codebook = o.gaussians;
  int c = 0;
  for (int t = 0; t < o.streams; ++t) {
    const int dim = o.dim / o.streams + (t < o.dim % o.streams ? 1 : 0);
    gm.stream_components.emplace_back();
    for (int i = 0; i < dim; ++i) gm.stream_components.back().push_back(c++);
    const size_t n = static_cast<size_t>(gm.num_codebooks) * o.gaussians * dim;
    std::vector<float> mean(n), var(n);
    for (size_t i = 0; i < n; ++i) {
      mean[i] = 8.0f * normal(gen);
      var[i] = 5.0f + 45.0f * uni(gen);
    }
    gm.means.push_back(std::move(mean));
    gm.variances.push_back(std::move(var));
  }
  for (int s = 0; s < o.senones; ++s)
    gm.senone_codebook.push_back(o.codebooks == 0 ? s : static_cast<int>(gen() % o.codebooks));
  gm.log_weights.resize(static_cast<size_t>(o.senones) * o.streams * o.gaussians);
  for (float& w : gm.log_weights) w = std::log(1e-4f + uni(gen)) - std::log(0.5f * o.gaussians);
  return gm;
}

template <typename Work>
double median_seconds(Backend& b, int warmup, int reps, Work work) {
  for (int i = 0; i < warmup; ++i) work();
  b.synchronize();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    work();
    b.synchronize();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int bench_scoring(const ScoringBenchOptions& o) {
  std::vector<std::string> names;
  if (o.backend == "all") {
    for (const BackendInfo& b : list_backends()) {
      if (b.usable) names.push_back(b.name);
      else std::printf("backend %s: skipped (%s)\n", b.name.c_str(), b.detail.c_str());
    }
  } else {
    names.push_back(o.backend);
  }
  const GaussianMixtures gm = random_model(o);
  const MixtureCsr csr = build_mixture_csr(gm);
  const int64_t max_frames = std::max(o.frames, o.cpu_frames);
  std::vector<float> feats(static_cast<size_t>(max_frames) * o.dim);
  {
    std::mt19937 gen(o.seed + 1);
    std::normal_distribution<float> normal(0.0f, 10.0f);
    for (float& x : feats) x = normal(gen);
  }
  // The reference scores for the check: the CPU backend, first block.
  const int64_t check_frames =
      std::min<int64_t>({o.block, o.frames, o.cpu_frames, int64_t(16)});
  std::vector<float> want(static_cast<size_t>(check_frames) * o.senones);
  {
    BackendPtr cpu = make_cpu_backend();
    GaussianScorer ref(gm, *cpu);
    ref.score(feats.data(), check_frames, want.data());
  }
  int failures = 0;
  for (const std::string& name : names) {
    try {
      BackendPtr b = open_backend(name, o.device_id);
      const int64_t frames = std::string(b->name()) == "cpu" ? std::min(o.frames, o.cpu_frames)
                                                             : o.frames;
      ScorerOptions so;
      so.block_frames = std::min(o.block, frames);
      GaussianScorer scorer(gm, *b, so);
      BufferPtr out = b->alloc(static_cast<size_t>(frames) * o.senones);
      const double whole = median_seconds(*b, o.warmup, o.reps, [&] {
        scorer.score(feats.data(), frames, *out);
      });

      // The stages alone on the same shapes, block by block: random
      // operands (their values do not change the work).
      const int64_t block = scorer.block_frames();  // after the scorer's memory cap
      const int per_stream = gm.num_codebooks * gm.gaussians_per_codebook;
      std::mt19937 gen(o.seed + 2);
      std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
      std::vector<BufferPtr> coef, expanded;
      for (int t = 0; t < o.streams; ++t) {
        const int width = 2 * gm.stream_dim(t) + 1;
        std::vector<float> c(static_cast<size_t>(per_stream) * width), x(block * width);
        for (float& v : c) v = uni(gen);
        for (float& v : x) v = uni(gen);
        coef.push_back(b->alloc(c.size()));
        b->upload(*coef.back(), c.data(), c.size());
        expanded.push_back(b->alloc(x.size()));
        b->upload(*expanded.back(), x.data(), x.size());
      }
      BufferPtr dens = b->alloc(static_cast<size_t>(scorer.num_gaussians()) * block);
      const auto for_blocks = [&](auto stage) {
        for (int64_t f0 = 0; f0 < frames; f0 += block) stage(std::min(block, frames - f0), f0);
      };
      const double gemm = median_seconds(*b, o.warmup, o.reps, [&] {
        for_blocks([&](int64_t n, int64_t) {
          for (int t = 0; t < o.streams; ++t)
            b->gemm_nt(*coef[t], per_stream, 2 * gm.stream_dim(t) + 1, *expanded[t],
                       static_cast<int>(n), *dens, 0, static_cast<size_t>(t) * per_stream * n);
        });
      });
      std::vector<float> d(dens->size());
      for (float& v : d) v = -60.0f + 40.0f * uni(gen);
      b->upload(*dens, d.data(), d.size());
      BufferPtr off = b->alloc(csr.offsets.size()), gi = b->alloc(csr.gaussian.size()),
                lw = b->alloc(csr.logw.size());
      b->upload(*off, csr.offsets.data(), csr.offsets.size());
      b->upload(*gi, csr.gaussian.data(), csr.gaussian.size());
      b->upload(*lw, csr.logw.data(), csr.logw.size());
      const double lse = median_seconds(*b, o.warmup, o.reps, [&] {
        for_blocks([&](int64_t n, int64_t f0) {
          b->senone_scores(*dens, scorer.num_gaussians(), n, *off, *gi, *lw, o.senones,
                           o.streams, *out, static_cast<size_t>(f0) * o.senones);
        });
      });

      // Check: the whole scorer again, first frames against the CPU.
      scorer.score(feats.data(), frames, *out);
      std::vector<float> got(want.size());
      b->download(*out, got.data(), got.size());
      double max_diff = 0.0;
      for (size_t i = 0; i < got.size(); ++i)
        max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - want[i])));

      const double gemm_flops = static_cast<double>(scorer.gemm_flops_per_frame()) * frames;
      const double terms = static_cast<double>(scorer.num_components()) * frames;
      std::printf(
          "backend %s (%s): %d senones, %d codebooks x %d Gaussians, %d streams, dim %d, "
          "%lld frames in blocks of %lld\n"
          "  whole scorer: median %.3f ms, %.3e frames/s (%.0fx real time at 100 frames/s)\n"
          "  GEMMs alone:  median %.3f ms, %.2f GFLOP/s\n"
          "  senone_scores alone: median %.3f ms, %.3e mixture terms/s\n"
          "  first %lld frames vs cpu: max |diff| %.2e\n",
          b->name(), b->device_name().c_str(), o.senones, gm.num_codebooks, o.gaussians,
          o.streams, o.dim, static_cast<long long>(frames), static_cast<long long>(block),
          whole * 1e3, frames / whole, frames / whole / 100.0, gemm * 1e3,
          gemm_flops / gemm / 1e9, lse * 1e3, terms / lse, static_cast<long long>(check_frames),
          max_diff);
      std::printf("RESULT bench=scoring backend=%s senones=%d codebooks=%d gaussians=%d "
                  "streams=%d dim=%d frames=%lld block=%lld whole_ms=%.4f frames_per_s=%.4e "
                  "gemm_ms=%.4f gemm_gflops=%.3f lse_ms=%.4f lse_terms_per_s=%.4e "
                  "max_diff_vs_cpu=%.3e\n",
                  b->name(), o.senones, gm.num_codebooks, o.gaussians, o.streams, o.dim,
                  static_cast<long long>(frames), static_cast<long long>(block), whole * 1e3,
                  frames / whole, gemm * 1e3, gemm_flops / gemm / 1e9, lse * 1e3, terms / lse,
                  max_diff);
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "backend %s: %s\n", name.c_str(), e.what());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}


// The posteriors of frames [first, first + n) (first = 0 here: a prefix).
GaussianPosteriors post_slice(const GaussianPosteriors& p, int64_t first, int64_t n) {
  if (first != 0 || n > p.frames) throw std::logic_error("post_slice: prefixes only");
  GaussianPosteriors out;
  out.frames = n;
  out.streams = p.streams;
  out.offsets.assign(p.offsets.begin(), p.offsets.begin() + n * p.streams + 1);
  const int64_t end = out.offsets.back();
  out.gaussian.assign(p.gaussian.begin(), p.gaussian.begin() + end);
  out.posterior.assign(p.posterior.begin(), p.posterior.begin() + end);
  return out;
}

// --- fMLLR: statistics, estimation, application ------------------------------

struct FmllrBenchOptions {
  std::string backend = "all";
  int device_id = 0;
  int64_t frames = 20000;
  int64_t cpu_frames = 2000;
  int64_t block = 1024;
  int senones = 5126;
  int codebooks = 42;  // 0: one per senone
  int gaussians = 128;
  int streams = 3;
  int dim = 39;
  int reps = 5;
  int warmup = 1;
  uint32_t seed = 1;
};

FmllrBenchOptions parse_fmllr_args(int argc, char** argv) {
  FmllrBenchOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* v = argv[++i];
    if (flag == "--backend") o.backend = v;
    else if (flag == "--device-id") o.device_id = static_cast<int>(parse_int(flag, v, 0, 1023));
    else if (flag == "--frames") o.frames = parse_int(flag, v, 1, 1 << 24);
    else if (flag == "--cpu-frames") o.cpu_frames = parse_int(flag, v, 1, 1 << 24);
    else if (flag == "--block") o.block = parse_int(flag, v, 1, 1 << 20);
    else if (flag == "--senones") o.senones = static_cast<int>(parse_int(flag, v, 1, 1 << 20));
    else if (flag == "--codebooks") o.codebooks = static_cast<int>(parse_int(flag, v, 0, 1 << 20));
    else if (flag == "--gaussians") o.gaussians = static_cast<int>(parse_int(flag, v, 1, 1 << 16));
    else if (flag == "--streams") o.streams = static_cast<int>(parse_int(flag, v, 1, 64));
    else if (flag == "--dim") o.dim = static_cast<int>(parse_int(flag, v, 1, 512));
    else if (flag == "--reps") o.reps = static_cast<int>(parse_int(flag, v, 1, 100000));
    else if (flag == "--warmup") o.warmup = static_cast<int>(parse_int(flag, v, 0, 1000));
    else if (flag == "--seed") o.seed = static_cast<uint32_t>(parse_int(flag, v, 0, UINT32_MAX));
    else usage("unknown option " + flag);
  }
  if (o.streams > o.dim) usage("--streams must not exceed --dim");
  return o;
}

// Largest |a - b| over the largest |b|, per G_i / k_i block, and for beta.
double max_relative_stats_diff(const FmllrStats& a, const FmllrStats& b) {
  const int n = b.dim + 1;
  double worst = std::fabs(a.beta - b.beta) / std::max(1e-30, std::fabs(b.beta));
  for (int i = 0; i < b.dim; ++i) {
    double scale = 0.0, diff = 0.0;
    for (int j = 0; j < n * n; ++j) {
      scale = std::max(scale, std::fabs(b.g_matrix(i)[j]));
      diff = std::max(diff, std::fabs(a.g_matrix(i)[j] - b.g_matrix(i)[j]));
    }
    worst = std::max(worst, diff / std::max(1e-30, scale));
    scale = diff = 0.0;
    for (int j = 0; j < n; ++j) {
      scale = std::max(scale, std::fabs(b.k_row(i)[j]));
      diff = std::max(diff, std::fabs(a.k_row(i)[j] - b.k_row(i)[j]));
    }
    worst = std::max(worst, diff / std::max(1e-30, scale));
  }
  return worst;
}

int bench_fmllr(const FmllrBenchOptions& o) {
  std::vector<std::string> names;
  if (o.backend == "all") {
    for (const BackendInfo& b : list_backends()) {
      if (b.usable) names.push_back(b.name);
      else std::printf("backend %s: skipped (%s)\n", b.name.c_str(), b.detail.c_str());
    }
  } else {
    names.push_back(o.backend);
  }
  // The scoring bench's random model of the en-us PTM shape; features near
  // its means (a random Gaussian of a random senone, plus noise) and one
  // random senone per frame as the "alignment": the posteriors then spread
  // over a few components, as on real speech.
  ScoringBenchOptions shape;
  shape.senones = o.senones;
  shape.codebooks = o.codebooks;
  shape.gaussians = o.gaussians;
  shape.streams = o.streams;
  shape.dim = o.dim;
  shape.seed = o.seed;
  const GaussianMixtures gm = random_model(shape);
  const int d = gm.feature_dim();
  const int64_t max_frames = std::max(o.frames, o.cpu_frames);
  std::vector<float> feats(static_cast<size_t>(max_frames) * d);
  std::vector<int32_t> senones(static_cast<size_t>(max_frames));
  {
    std::mt19937 gen(o.seed + 3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t f = 0; f < max_frames; ++f) {
      const int s = static_cast<int>(gen() % static_cast<uint32_t>(gm.num_senones));
      senones[static_cast<size_t>(f)] = (f % 10 == 9) ? -1 : s;  // a tenth unaligned, like silence
      const int k = static_cast<int>(gen() % static_cast<uint32_t>(gm.gaussians_per_codebook));
      for (int t = 0; t < gm.num_streams(); ++t) {
        const int sd = gm.stream_dim(t);
        const size_t row = (static_cast<size_t>(gm.senone_codebook[static_cast<size_t>(s)]) *
                                gm.gaussians_per_codebook + k) * sd;
        for (int j = 0; j < sd; ++j) {
          const int c = gm.stream_components[static_cast<size_t>(t)][static_cast<size_t>(j)];
          feats[static_cast<size_t>(f * d + c)] =
              gm.means[static_cast<size_t>(t)][row + j] +
              std::sqrt(gm.variances[static_cast<size_t>(t)][row + j]) * normal(gen);
        }
      }
    }
  }
  // Host stages, timed once (they do not depend on the backend).
  const int64_t host_frames = std::min<int64_t>(max_frames, 4000);
  GaussianPosteriors host_post;
  const auto t_post = std::chrono::steady_clock::now();
  host_post = supervised_posteriors(gm, feats.data(), host_frames, senones.data());
  const double post_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_post).count();
  std::printf("supervised_posteriors (host): %lld frames in %.3f ms, %.3e frames/s, "
              "%.2f Gaussians per frame and stream\n",
              static_cast<long long>(host_frames), post_s * 1e3, host_frames / post_s,
              static_cast<double>(host_post.gaussian.size()) / host_frames / gm.num_streams());
  const GaussianPosteriors post = supervised_posteriors(gm, feats.data(), max_frames, senones.data());
  // The reference statistics on the first frames, for the checks.
  const int64_t check_frames = std::min<int64_t>({512, o.frames, o.cpu_frames});
  GaussianPosteriors check_post =
      supervised_posteriors(gm, feats.data(), check_frames, senones.data());
  const FmllrStats ref_stats =
      accumulate_fmllr_reference(gm, feats.data(), check_frames, check_post);

  // Estimation (host, double): statistics of `frames` frames on the CPU.
  {
    BackendPtr cpu = make_cpu_backend();
    FmllrAccumulator acc(gm, *cpu, o.block);
    acc.accumulate(feats.data(), std::min(max_frames, o.cpu_frames), post_slice(post, 0, std::min(max_frames, o.cpu_frames)));
    for (FmllrUpdateType type : {FmllrUpdateType::kFull, FmllrUpdateType::kDiag}) {
      FmllrOptions fo;
      fo.update = type;
      fo.min_frames = 0.0;
      FmllrEstimate est;
      std::vector<double> times;
      for (int r = 0; r < std::max(3, o.reps); ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        est = estimate_fmllr(acc.stats(), fo);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(times.begin(), times.end());
      std::printf("estimate_fmllr (host, %s, %d iterations): median %.3f ms per speaker, %s, "
                  "objective/frame %.3f -> %.3f\n",
                  to_string(type), type == FmllrUpdateType::kFull ? fo.iterations : 1,
                  times[times.size() / 2] * 1e3, to_string(est.outcome),
                  est.objective.empty() ? 0.0 : est.objective.front(),
                  est.objective.empty() ? 0.0 : est.objective.back());
      std::printf("RESULT bench=fmllr_estimate update=%s dim=%d median_ms=%.4f\n", to_string(type),
                  d, times[times.size() / 2] * 1e3);
    }
  }

  // A transform near the identity to apply.
  FmllrTransform transform = FmllrTransform::identity(d);
  {
    std::mt19937 gen(o.seed + 4);
    std::uniform_real_distribution<double> u(-0.05, 0.05);
    for (double& w : transform.w) w += u(gen);
  }
  int failures = 0;
  for (const std::string& name : names) {
    try {
      BackendPtr b = open_backend(name, o.device_id);
      const int64_t frames = std::string(b->name()) == "cpu" ? std::min(o.frames, o.cpu_frames)
                                                             : o.frames;
      const GaussianPosteriors p = post_slice(post, 0, frames);
      FmllrAccumulator acc(gm, *b, o.block);
      const double acc_s = median_seconds(*b, o.warmup, o.reps, [&] {
        acc.reset();
        acc.accumulate(feats.data(), frames, p);
      });
      acc.reset();
      acc.accumulate(feats.data(), check_frames, check_post);
      const double stats_diff = max_relative_stats_diff(acc.stats(), ref_stats);

      FmllrApplier app(*b, d, o.block);
      app.set_transform(transform);
      std::vector<float> out(static_cast<size_t>(frames) * d);
      const double apply_s = median_seconds(*b, o.warmup, o.reps, [&] {
        app.apply(feats.data(), frames, out.data());
      });
      BufferPtr dev_out = b->alloc(static_cast<size_t>(frames) * d);
      const double apply_dev_s = median_seconds(*b, o.warmup, o.reps, [&] {
        app.apply(feats.data(), frames, *dev_out);
      });
      std::vector<float> want(static_cast<size_t>(check_frames) * d);
      apply_fmllr_reference(transform, feats.data(), check_frames, want.data());
      double apply_diff = 0.0;
      for (size_t i = 0; i < want.size(); ++i)
        apply_diff = std::max(apply_diff, static_cast<double>(std::fabs(out[i] - want[i])) /
                                              std::max(1.0f, std::fabs(want[i])));

      const double gemm_flops = 2.0 * (2 * d + 1) * ((d + 1) * (d + 2) / 2) * frames;
      std::printf(
          "backend %s (%s): dim %d, %d streams, %lld frames in blocks of %lld\n"
          "  FmllrAccumulator: median %.3f ms, %.3e frames/s (%.2f GFLOP/s in the GEMM's terms); "
          "statistics vs double reference: max rel. diff %.2e\n"
          "  FmllrApplier: host to host median %.3f ms, %.3e frames/s; to the device %.3f ms, "
          "%.3e frames/s; vs double reference: max rel. diff %.2e\n",
          b->name(), b->device_name().c_str(), d, gm.num_streams(), static_cast<long long>(frames),
          static_cast<long long>(o.block), acc_s * 1e3, frames / acc_s, gemm_flops / acc_s / 1e9,
          stats_diff, apply_s * 1e3, frames / apply_s, apply_dev_s * 1e3, frames / apply_dev_s,
          apply_diff);
      std::printf("RESULT bench=fmllr backend=%s dim=%d frames=%lld block=%lld accumulate_ms=%.4f "
                  "accumulate_frames_per_s=%.4e apply_ms=%.4f apply_frames_per_s=%.4e "
                  "apply_device_ms=%.4f apply_device_frames_per_s=%.4e stats_rel_diff=%.3e "
                  "apply_rel_diff=%.3e\n",
                  b->name(), d, static_cast<long long>(frames), static_cast<long long>(o.block),
                  acc_s * 1e3, frames / acc_s, apply_s * 1e3, frames / apply_s, apply_dev_s * 1e3,
                  frames / apply_dev_s, stats_diff, apply_diff);
      std::fflush(stdout);
      if (!(stats_diff < 1e-3) || !(apply_diff < 1e-4)) {
        std::fprintf(stderr, "backend %s: results differ from the reference\n", name.c_str());
        ++failures;
      }
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
  if (argc < 2) gpuspeech::usage("missing command ('features', 'scoring', 'fmllr' or 'decode')");
  const std::string command = argv[1];
  try {
    if (command == "features") return gpuspeech::bench_features(gpuspeech::parse_args(argc, argv));
    if (command == "scoring")
      return gpuspeech::bench_scoring(gpuspeech::parse_scoring_args(argc, argv));
    if (command == "fmllr") return gpuspeech::bench_fmllr(gpuspeech::parse_fmllr_args(argc, argv));
    if (command == "decode") return gpuspeech::bench_decode(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuspeech-bench: %s\n", e.what());
    return 1;
  }
  gpuspeech::usage("unknown command '" + command + "'");
}
