// gpuspeech-bench decode: many streams decoding at once in one process
// (issue 14's benchmark), as fast as they can (aggregate real-time factor)
// or each fed at real time (how far partial hypotheses lag their audio).
//
//   gpuspeech-bench decode [--streams N] [--backend B] [--search S]
//                          [--batched-search on|off|auto]
//       [--device-id N] [--hmm DIR] [--dict FILE] [--lm FILE | --jsgf FILE]
//       [--cache DIR] [--live] [--seconds S] [--block-ms 100]
//       [--partial-ms 200] [--spread-starts] [--repeat N] [--stream-nice N]
//       [--fibers T] [--words OUT] FILE...
//
// Every stream is a Recognizer on the shared resources (the first loads
// them), on its own thread. Batch (default): the FILEs, --repeat times
// over (a soak: thousands of utterances through long-lived streams, with
// tests/bench/soak.sh watching the memory), are handed out in order to
// whichever stream is free; reported: the decoding wall time, the
// audio, the aggregate real-time factor and times real time, the streams'
// summed busy time, the process's CPU use over the run and its peak
// resident memory. Live (--live): stream k decodes FILE k mod n, looped to
// --seconds of audio, pushed in blocks of --block-ms at the pace the
// audio would arrive (each block when its last sample would have been
// recorded, or at once if the stream is behind), with a partial result
// every --partial-ms of audio. With --spread-starts stream k begins its
// first pass frac(k x 0.618...) of the way into its file (the golden
// ratio's fraction spreads any number of streams evenly), so that the
// streams given one file do not all end their utterances in the same
// instant: without it the end-of-utterance work (an adapting stream's
// alignment, estimate and second decoding) of every such stream falls due
// at once, which a server's independent streams do not do. The lag of a block is the wall time from
// its arrival to the end of its decoding (and of the partial that follows
// it); reported: p50, p99 and the worst over all streams' blocks, and
// whether every stream kept up (its last block's lag under a second).
// Features are computed before the clock starts (the front end is not what
// this measures). With --device-id -1 the streams are placed over every
// CUDA device (device_placement.h), and each device's streams, audio and
// busy time are reported. --stream-nice N runs each stream's thread at
// nice value N (common/engine/thread_priority.h). --fibers T (batch mode)
// runs the streams as fibers on T threads (common/engine/fiber_pool.h)
// instead of a thread each; the per-stage thread CPU figures then also
// count the other fibers that ran on a stream's thread while it waited.
// --words OUT (batch mode) checks that decoding does not depend on the
// batch: every decoding of one audio file (the same file by its resolved
// path, whichever stream and repeat decoded it) must give the same words
// and word times as its first, and each file's words are written to OUT,
// a line each (`path<TAB>word(first-last) ...`, paths resolved, in the
// order first given), to compare with a run of one stream; a decoding that
// differs is an error.
// --lattice-lw X gives final results from the word-lattice pass at
// language weight X (docs/search.md), on every search backend; its cost is
// host time per utterance.
// --adapt decodes as the gpudecoder element does by default with an
// n-gram LM: each stream is one speaker (AdaptiveRedecoder,
// common/engine/adaptive_redecoder.h: per-stream fMLLR, each utterance
// decoded again under the transform that includes it), with the lattice
// pass at the element's weight and word cost unless --lattice-lw is given.
// A stream's results then depend on what it decoded before, so --words
// is refused with it. Its report adds the adaptation's host time by stage
// (AdaptationTimings: alignments, statistics, estimates, ...) and how many
// utterances were decoded again. --redecode-min-gain X: the second
// decoding only while an estimate gains at least X nats a frame
// (AdaptiveRedecoderOptions::min_redecode_gain; default the element's).
// --adapt-young-frames X: a stream's estimates take the young form
// (three diagonal blocks) while its statistics hold fewer than X frames
// (AdaptiveRedecoderOptions::young_below_frames, default the element's;
// 0: the full form from the first estimate, as before 2026-12-03), so a
// device run can weigh the young form's host time against its absence.
// --adapt-young-vtln: a young stream's first estimate is a VTLN warp
// (AdaptiveRedecoderOptions::young_vtln, gpudecoder adapt-young-vtln), its
// choice's host time counted in the estimates; the line reports how many
// estimates were warps.
// --live-features computes each file's features as the live chain's
// gpufeatures does by default in front of gpudecoder (the model's front
// end with live CMN from its -cmninit, noise subtraction, clipped peaks
// restored: live_chain_front_end below) with live CMN's trace, which
// --adapt passes on as gpudecoder does by default (utterance-cmn: each
// utterance normalised again, a stream's first utterance decoded again
// with its own mean). Without it the features are the model's batch
// front end (Recognizer::compute_features) and carry no trace.
// The RESULT line is for scripts.
#include "tools/bench_decode.h"

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/engine/stream_maker.h"
#include "common/engine/fiber_pool.h"
#include "common/engine/thread_priority.h"
#include "common/engine/recognizer.h"
#include "common/engine/utterance_decoder.h"
#ifdef GPUSPEECH_HAVE_CUDA
#include "common/search/cuda_round_batcher.h"
#endif
#include "common/features/stream_extractor.h"
#include "common/features/wav_reader.h"

namespace gpuspeech {

namespace {

using Clock = std::chrono::steady_clock;

struct DecodeBenchOptions {
  RecognizerConfig config = RecognizerConfig::en_us_defaults();
  int streams = 1;
  std::string batched_mode = "auto";  // --batched-search: auto = from kBatchedSearchAutoStreams
  bool live = false;
  double seconds = 30.0;
  int block_ms = 100;
  int partial_ms = 200;
  bool spread_starts = false;  // --spread-starts: stream k begins frac(k x golden ratio) into its file
  int repeat = 1;  // batch mode: the file list this many times over
  int stream_nice = 0;  // --stream-nice: each stream's thread's nice value
  int fibers = 0;       // --fibers T: the streams as fibers on T threads (batch mode); 0: a thread each
  std::string words_out;  // --words OUT: check every decoding of a file against its first; write them
  bool adapt = false;     // --adapt: the element's speaker adaptation and second pass
  bool live_features = false;  // --live-features: the live chain's front end, with its CMN trace
  AdaptiveRedecoderOptions adaptation;  // --redecode-min-gain, --adapt-young-frames
  std::vector<std::string> files;
};

[[noreturn]] void decode_usage(const std::string& error) {
  std::fprintf(stderr,
               "gpuspeech-bench decode: %s\n"
               "usage: gpuspeech-bench decode [--streams N] [--backend B] [--search S] "
               "[--device-id N] [--batched-search on|off|auto] [--maxactive N] [--topn N]\n"
               "       [--lattice-lw X] [--adapt [--redecode-min-gain X] [--adapt-young-frames X] [--adapt-young-vtln]]\n"
               "       [--live-features]\n"
               "       [--hmm DIR] [--dict FILE] [--lm FILE | --jsgf FILE] [--cache DIR]\n"
               "       [--live] [--seconds S] [--block-ms MS] [--partial-ms MS] [--spread-starts]\n"
               "       [--repeat N] [--stream-nice N] [--fibers T] [--words OUT] FILE...\n",
               error.c_str());
  std::exit(2);
}

int int_arg(const std::string& flag, const char* v, int lo, int hi) {
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > hi)
    decode_usage(flag + " needs an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
                 ", got '" + v + "'");
  return static_cast<int>(x);
}

// A number >= 0 (below 1e6) for `flag`, or the usage error.
double nonnegative_arg(const std::string& flag, const char* v) {
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= 0.0 && x < 1e6))
    decode_usage(flag + " needs a number >= 0, got '" + v + "'");
  return x;
}

DecodeBenchOptions parse_decode_args(int argc, char** argv) {
  DecodeBenchOptions o;
  bool lattice_given = false, redecode_given = false, young_given = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) decode_usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--streams") o.streams = int_arg(a, value(), 1, 4096);
    else if (a == "--batched-search") o.batched_mode = value();
    else if (a == "--backend") o.config.scoring_backend = value();
    else if (a == "--search") o.config.search_backend = value();
    else if (a == "--device-id") o.config.device_id = int_arg(a, value(), -1, 1 << 20);
    else if (a == "--maxactive") o.config.search.max_active = int_arg(a, value(), 1, 1 << 30);
    else if (a == "--topn") o.config.top_n = int_arg(a, value(), 0, Backend::kMaxTopN);
    else if (a == "--lattice-lw") {
      o.config.search.lattice.language_weight = static_cast<float>(nonnegative_arg(a, value()));
      lattice_given = true;
    }
    else if (a == "--adapt") o.adapt = true;
    else if (a == "--live-features") o.live_features = true;
    else if (a == "--redecode-min-gain") {
      o.adaptation.min_redecode_gain = nonnegative_arg(a, value());
      redecode_given = true;
    } else if (a == "--adapt-young-frames") {
      o.adaptation.young_below_frames = nonnegative_arg(a, value());
      young_given = true;
    } else if (a == "--adapt-young-vtln") {
      o.adaptation.young_vtln = true;
      young_given = true;
    }
    else if (a == "--hmm") o.config.model_dir = value();
    else if (a == "--dict") o.config.dictionary = value();
    else if (a == "--lm") {
      o.config.grammar_kind = GrammarKind::kNgram;
      o.config.grammar = value();
    } else if (a == "--jsgf") {
      o.config.grammar_kind = GrammarKind::kJsgf;
      o.config.grammar = value();
    } else if (a == "--cache") o.config.cache_dir = value();
    else if (a == "--live") o.live = true;
    else if (a == "--seconds") {
      const char* v = value();
      char* end = nullptr;
      o.seconds = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(o.seconds > 0.0 && o.seconds < 1e6))
        decode_usage("--seconds needs a positive number, got '" + std::string(v) + "'");
    } else if (a == "--block-ms") o.block_ms = int_arg(a, value(), 10, 10000);
    else if (a == "--partial-ms") o.partial_ms = int_arg(a, value(), 10, 100000);
    else if (a == "--spread-starts") o.spread_starts = true;
    else if (a == "--repeat") o.repeat = int_arg(a, value(), 1, 1000000);
    else if (a == "--stream-nice") o.stream_nice = int_arg(a, value(), 0, 19);
    else if (a == "--fibers") o.fibers = int_arg(a, value(), 1, 1024);
    else if (a == "--words") o.words_out = value();
    else if (!a.empty() && a[0] == '-') decode_usage("unknown option " + a);
    else o.files.push_back(a);
  }
  if (o.files.empty()) decode_usage("no input files");
  if (o.fibers > 0 && o.live) decode_usage("--fibers runs batch mode only (live streams pace themselves by sleeping)");
  if (!o.words_out.empty() && o.live) decode_usage("--words checks batch mode only");
  if (o.spread_starts && !o.live) decode_usage("--spread-starts applies to --live only");
  if (!o.words_out.empty() && o.adapt)
    decode_usage("--words and --adapt exclude each other (an adapting stream's words depend on what it decoded before)");
  if (redecode_given && !o.adapt) decode_usage("--redecode-min-gain applies to --adapt only");
  if (young_given && !o.adapt) decode_usage("--adapt-young-frames and --adapt-young-vtln apply to --adapt only");
  if (o.adapt) {
    if (o.config.grammar_kind != GrammarKind::kNgram) decode_usage("--adapt needs an n-gram LM (--lm)");
    o.config.keep_features_for_alignment = true;
    if (!lattice_given) {
      o.config.search.lattice.language_weight = kDictationLatticeWeight;
      o.config.lattice_word_insertion_penalty = kDictationLatticeWip;
    }
  }
  try {
    o.config.batched_search = batched_search_for(o.batched_mode, o.streams);
  } catch (const std::invalid_argument& e) {
    decode_usage(std::string("--batched-search ") + e.what());
  }
  return o;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

// Peak resident set of this process, MiB (VmHWM).
double peak_rss_mib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::strtod(line.c_str() + 6, nullptr) / 1024.0;
  return 0.0;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

// A hypothesis as --words writes and compares it: each word with its first
// and last frame.
std::string words_line(const Hypothesis& h) {
  std::string line;
  for (const HypothesisWord& w : h.words) {
    if (!line.empty()) line += ' ';
    line += w.text + "(" + std::to_string(w.start_frame) + "-" + std::to_string(w.end_frame) + ")";
  }
  return line;
}

// --words: every decoding of an audio file against its first. Files are
// the same audio when their paths resolve to the same file (the bench's
// long runs list one recording under many links).
struct WordsCheck {
  std::vector<std::string> paths;  // resolved, first-given order
  std::vector<size_t> group;       // utterance -> index in paths
  std::vector<std::string> first;  // the words of each path's first decoding
  std::vector<bool> decoded;
  int64_t decodings = 0, differing = 0;

  explicit WordsCheck(const std::vector<std::string>& files) {
    std::unordered_map<std::string, size_t> index;
    for (const std::string& f : files) {
      std::error_code ec;
      std::string p = std::filesystem::weakly_canonical(f, ec).string();
      if (ec || p.empty()) p = f;
      const auto [it, added] = index.try_emplace(p, paths.size());
      if (added) paths.push_back(p);
      group.push_back(it->second);
    }
    first.resize(paths.size());
    decoded.resize(paths.size(), false);
  }
  // Caller holds the lock. Returns an error message for a decoding that
  // differs from its file's first (the first ten of them), else "".
  std::string add(size_t utt, const std::string& line) {
    const size_t g = group[utt];
    ++decodings;
    if (!decoded[g]) {
      decoded[g] = true;
      first[g] = line;
      return "";
    }
    if (line == first[g]) return "";
    if (++differing > 10) return "";  // the count says the rest
    return paths[g] + ": words differ from its first decoding: '" + line + "' against '" + first[g] + "'";
  }
  // Into `f`, opened before the run so that an unwritable OUT fails at
  // once rather than after minutes of decoding.
  void write(std::ofstream& f, const std::string& out) const {
    for (size_t g = 0; g < paths.size(); ++g) f << paths[g] << '\t' << first[g] << '\n';
    f.flush();
    if (!f) throw std::runtime_error(out + ": cannot write");
  }
};

struct Utterance {
  std::vector<float> feats;  // frames x dim
  int64_t frames = 0;
  double seconds = 0.0;
  CmnTrace trace;  // --live-features: live CMN's trace of feats (else empty)
};

// The front end gpufeatures configures from gpudecoder's model when no
// front-end property is set (gst/gstgpufeatures.cpp,
// adopt_downstream_front_end): the model's, with live CMN, noise
// subtraction, no silence removal (a stream keeps every frame) and
// declipping.
FeatureOptions live_chain_front_end(const FeatureOptions& model) {
  FeatureOptions o = model;
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.noise.remove_noise = true;
  o.noise.remove_silence = false;
  o.declip.enabled = true;
  return o;
}

Utterance load_utterance(Recognizer& rec, const std::string& path, bool live_features) {
  const int rate = static_cast<int>(rec.feature_options().frame.sample_rate);
  AudioData a = read_audio_file(path, rate);
  if (a.sample_rate != rate)
    throw std::runtime_error(path + ": sample rate " + std::to_string(a.sample_rate) +
                             " Hz, the model's is " + std::to_string(rate));
  Utterance u;
  if (live_features) {
    // On the host: the front end is not what this bench times.
    BackendPtr cpu = make_cpu_backend();
    StreamingFeatureExtractor ex(live_chain_front_end(rec.feature_options()), *cpu);
    if (ex.output_dim() != rec.feature_dim())
      throw std::runtime_error(path + ": the live front end gives " + std::to_string(ex.output_dim()) +
                               " values a frame, the model wants " + std::to_string(rec.feature_dim()));
    ex.set_cmn_trace(true);
    FeatureMatrix m;
    ex.accept(a.samples.data(), a.samples.size(), m);
    ex.flush(m);
    ex.take_cmn_trace(u.trace);
    u.feats = std::move(m.data);
  } else {
    u.feats = rec.compute_features(a.samples.data(), static_cast<int64_t>(a.samples.size()));
  }
  u.frames = static_cast<int64_t>(u.feats.size()) / rec.feature_dim();
  u.seconds = static_cast<double>(a.samples.size()) / rate;
  if (u.frames == 0) throw std::runtime_error(path + ": too short for a single frame");
  return u;
}

// Batch mode: the parts of the search that SearchStats times, summed
// over utterances and streams.
struct SearchParts {
  double rescoring = 0.0, device_wait = 0.0, growth = 0.0, collect = 0.0;
  double rescoring_cpu = 0.0;
  int64_t frames_rerun = 0;  // frames that outgrew a buffer
  // Word-end rounds, and those whose events the host sorted (the batched
  // CUDA lanes hand most over in order).
  int64_t rescore_rounds = 0, rescore_rounds_sorted = 0;
  // The CUDA searchers' rounds, the frames searched, and how the frames
  // met their rounds (SearchStats).
  int64_t rounds = 0, prune_only_rounds = 0, frames = 0, chained = 0, chained_ended = 0;
  void add(const SearchStats& st) {
    rounds += st.rounds;
    prune_only_rounds += st.prune_only_rounds;
    frames += st.frames;
    chained += st.chained_frames;
    chained_ended += st.chained_frames_ended;
    rescore_rounds += st.rescore_rounds;
    rescore_rounds_sorted += st.rescore_rounds_sorted;
    rescoring += st.rescore_seconds;
    rescoring_cpu += st.rescore_cpu_seconds;
    device_wait += st.device_wait_seconds;
    growth += st.buffer_growth_seconds;
    collect += st.garbage_collection_seconds;
    frames_rerun += st.frames_rerun;
  }
};

#ifdef GPUSPEECH_HAVE_CUDA
// The lanes kernel's phases (GPUSPEECH_LANES_PROFILE=1): device time and
// items per phase, summed over launches, and their share of the whole.
void print_lanes_profile(const CudaRoundBatcher::Stats& b) {
  const uint64_t* p = b.lanes_profile;
  const uint64_t launches = p[cuda::kLaneProfileLaunches];
  if (launches == 0) return;
  static const char* const kNames[cuda::kLanePhases] = {
      "setup", "head", "emit-heavy", "emit-resolve", "relax", "relax-heavy", "relax-resolve",
      "collect", "rescore", "prune-histogram", "prune-cutoff", "prune-compact", "chain", "out"};
  double total_ns = 0;
  for (int k = 0; k < cuda::kLanePhases; ++k) total_ns += static_cast<double>(p[cuda::kLaneProfileNs + k]);
  // The cooperative kernel's clock is the device's (one per launch); the
  // cluster kernel's is each lane's own, summed over lanes: per lane-round.
  const bool per_lane = b.cluster > 0;
  const double lanes = static_cast<double>(p[cuda::kLaneProfileLanes]);
  const double per = per_lane ? std::max(lanes, 1.0) : static_cast<double>(launches);
  const char* unit = per_lane ? "a lane" : "a launch";
  std::printf("lanes kernel profile (%s): %llu launches, %.1f lanes a launch, %.2f closure passes "
              "%s, %.2f chained; %.3f s of %s time (%.0f us %s)\n",
              per_lane ? "cluster kernel, lane time" : "cooperative kernel, device time",
              static_cast<unsigned long long>(launches), lanes / static_cast<double>(launches),
              static_cast<double>(p[cuda::kLaneProfilePasses]) / per, unit,
              static_cast<double>(p[cuda::kLaneProfileChained]) / per, total_ns * 1e-9,
              per_lane ? "lane" : "kernel", total_ns * 1e-3 / per, unit);
  for (int k = 0; k < cuda::kLanePhases; ++k) {
    const double ns = static_cast<double>(p[cuda::kLaneProfileNs + k]);
    std::printf("  %-16s %5.1f %%  %8.1f us %s  %10.0f items %s\n", kNames[k],
                100.0 * ns / std::max(total_ns, 1.0), ns * 1e-3 / per, unit,
                static_cast<double>(p[cuda::kLaneProfileItems + k]) / per, unit);
  }
}
#endif

}  // namespace

int bench_decode(int argc, char** argv) {
  const DecodeBenchOptions o = parse_decode_args(argc, argv);
  std::ofstream words_file;  // --words OUT
  if (!o.words_out.empty()) {
    words_file.open(o.words_out);
    if (!words_file) throw std::runtime_error(o.words_out + ": cannot write");
  }
  // Device memory (CUDA only; -1 elsewhere): before the first stream, after
  // it (it loads the shared resources), after the others, after decoding
  // (buffers that grow with use). The first reading makes the context.
  // With --device-id -1 the streams are spread over every CUDA device, and
  // the readings are summed over them.
  const bool on_cuda = o.config.scoring_backend == "cuda" || o.config.search_backend == "cuda";
  std::vector<int> mem_devices;
  if (on_cuda && o.config.device_id >= 0) mem_devices.push_back(o.config.device_id);
  if (on_cuda && o.config.device_id < 0)
    for (int d = 0; d < backend_device_count("cuda"); ++d) mem_devices.push_back(d);
  auto device_used = [&]() -> int64_t {
    if (mem_devices.empty()) return -1;
    int64_t sum = 0;
    for (int d : mem_devices) {
      const int64_t used = backend_device_memory("cuda", d).used();
      if (used < 0) return -1;
      sum += used;
    }
    return sum;
  };
  const int64_t mem_before = device_used();
  const auto t_load = Clock::now();
  std::string log;
  std::vector<std::unique_ptr<Recognizer>> streams;
  streams.push_back(std::make_unique<Recognizer>(o.config, &log));
  const int64_t mem_first = device_used();
  const double load_s = std::chrono::duration<double>(Clock::now() - t_load).count();
  const auto t_streams = Clock::now();
  for (auto& s : make_streams(streams[0]->resources(), o.config,
                              static_cast<size_t>(o.streams - 1)))
    streams.push_back(std::move(s));
  const double streams_s = std::chrono::duration<double>(Clock::now() - t_streams).count();
  const int64_t mem_streams = device_used();
  // Each stream's utterances, through its speaker adaptation with --adapt
  // (made before the clock).
  std::vector<std::unique_ptr<UtteranceDecoder>> decoders;
  for (const auto& s : streams) decoders.push_back(std::make_unique<UtteranceDecoder>(*s, o.adapt, o.adaptation));
  // Frames [from, from + n) of `u`, with their CMN trace if it has one.
  auto push = [&](int k, const Utterance& u, int64_t from, int64_t n) {
    const int64_t dim = static_cast<int64_t>(u.feats.size()) / u.frames;
    const bool traced = u.trace.rows() == u.frames;
    decoders[static_cast<size_t>(k)]->push_features(
        u.feats.data() + from * dim, n, traced ? u.trace.offsets.data() + from * dim : nullptr,
        traced ? u.trace.learned.data() + from : nullptr);
  };
  auto finish = [&](int k) { return decoders[static_cast<size_t>(k)]->finish(); };
  auto reset = [&](int k) { decoders[static_cast<size_t>(k)]->reset(); };
  Recognizer& first = *streams[0];
  std::vector<Utterance> utts;
  for (const std::string& f : o.files) utts.push_back(load_utterance(first, f, o.live_features));
  const double frame_s = first.feature_options().frame.frame_shift_ms / 1000.0;
  std::printf("decode: %d stream%s, scoring %s, search %s%s%s; loading %.2f s, %d more stream%s %.2f s\n",
              o.streams, o.streams == 1 ? "" : "s", first.scoring_backend().name(),
              first.search_backend(), o.adapt ? ", adapting (each stream one speaker)" : "",
              o.live_features ? ", live-chain features with their CMN trace" : "", load_s,
              o.streams - 1, o.streams == 2 ? "" : "s", streams_s);

  std::mutex mutex;  // guards errors, lags, busy, audio, parts, words
  std::vector<std::string> errors;
  std::vector<double> lags;
  std::vector<double> last_lags(static_cast<size_t>(o.streams), 0.0);
  double busy = 0.0, audio = 0.0;
  SearchParts parts;  // summed over utterances and streams
  // Per stream (each written by its own thread only): audio decoded and
  // busy time, summed per device after the run.
  std::vector<double> stream_audio(static_cast<size_t>(o.streams), 0.0);
  std::vector<double> stream_busy(static_cast<size_t>(o.streams), 0.0);
  std::atomic<size_t> next{0};
  std::unique_ptr<WordsCheck> words;  // --words; guarded by mutex
  if (!o.words_out.empty()) words = std::make_unique<WordsCheck>(o.files);
  const double cpu0 = cpu_seconds();
  const auto t0 = Clock::now();

  auto batch_stream = [&](int k) {
    Recognizer& rec = *streams[k];
    double my_busy = 0.0, my_audio = 0.0;
    const size_t total = utts.size() * static_cast<size_t>(o.repeat);
    for (size_t n = next++; n < total; n = next++) {
      const size_t i = n % utts.size();
      const auto s0 = Clock::now();
      reset(k);
      push(k, utts[i], 0, utts[i].frames);
      const RecognitionResult result = finish(k);
      my_busy += std::chrono::duration<double>(Clock::now() - s0).count();
      my_audio += utts[i].seconds;
      const std::string line = words ? words_line(result.best) : std::string();
      // Reset with each utterance; one short lock an utterance, against
      // the utterance's whole decode.
      std::lock_guard<std::mutex> lock(mutex);
      parts.add(rec.search_stats());
      if (words)
        if (std::string why = words->add(i, line); !why.empty())
          errors.push_back("stream " + std::to_string(k) + ": " + why);
    }
    stream_audio[static_cast<size_t>(k)] = my_audio;
    stream_busy[static_cast<size_t>(k)] = my_busy;
    std::lock_guard<std::mutex> lock(mutex);
    busy += my_busy;
    audio += my_audio;
  };
  auto live_stream = [&](int k) {
    Recognizer& rec = *streams[k];
    const Utterance& u = utts[static_cast<size_t>(k) % utts.size()];
    const int64_t block = std::max<int64_t>(1, static_cast<int64_t>(o.block_ms / 1000.0 / frame_s + 0.5));
    const int64_t partial_every = std::max<int64_t>(1, static_cast<int64_t>(o.partial_ms / 1000.0 / frame_s + 0.5));
    const int64_t total = static_cast<int64_t>(o.seconds / frame_s);
    std::vector<double> my_lags;
    double my_busy = 0.0;
    reset(k);
    int64_t pushed = 0, in_utt = 0, since_partial = 0;
    if (o.spread_starts) {
      constexpr double kGoldenFraction = 0.6180339887498949;
      const double phase = std::fmod(k * kGoldenFraction, 1.0);
      in_utt = std::min(u.frames - 1, static_cast<int64_t>(phase * static_cast<double>(u.frames)));
    }
    while (pushed < total) {
      if (in_utt == u.frames) {  // the file ends: its result, then again
        finish(k);
        {
          // Each utterance's, before the reset that clears them (one short
          // lock an utterance, as in batch mode).
          std::lock_guard<std::mutex> lock(mutex);
          parts.add(rec.search_stats());
        }
        reset(k);
        in_utt = 0;
      }
      const int64_t n = std::min({block, u.frames - in_utt, total - pushed});
      const auto arrival = t0 + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>((pushed + n) * frame_s));
      std::this_thread::sleep_until(arrival);
      const auto s0 = Clock::now();
      push(k, u, in_utt, n);
      since_partial += n;
      if (since_partial >= partial_every) {
        rec.partial();
        since_partial = 0;
      }
      const auto done = Clock::now();
      my_busy += std::chrono::duration<double>(done - s0).count();
      my_lags.push_back(std::chrono::duration<double>(done - arrival).count());
      pushed += n;
      in_utt += n;
    }
    finish(k);
    stream_audio[static_cast<size_t>(k)] = static_cast<double>(pushed) * frame_s;
    stream_busy[static_cast<size_t>(k)] = my_busy;
    std::lock_guard<std::mutex> lock(mutex);
    parts.add(rec.search_stats());
    lags.insert(lags.end(), my_lags.begin(), my_lags.end());
    last_lags[static_cast<size_t>(k)] = my_lags.empty() ? 0.0 : my_lags.back();
    busy += my_busy;
    audio += static_cast<double>(pushed) * frame_s;
  };
  const auto stream = [&](int k) {
    try {
      if (o.stream_nice > 0)
        if (const std::string why = set_thread_nice(o.stream_nice); !why.empty())
          throw std::runtime_error("--stream-nice: " + why);
      if (o.live) live_stream(k);
      else batch_stream(k);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(mutex);
      errors.push_back("stream " + std::to_string(k) + ": " + e.what());
    }
  };
  if (o.fibers > 0) {
    std::vector<std::function<void()>> tasks;
    for (int k = 0; k < o.streams; ++k) tasks.push_back([&stream, k] { stream(k); });
    run_fibers(std::move(tasks), o.fibers);  // (each task catches its own)
  } else {
    std::vector<std::thread> threads;
    for (int k = 0; k < o.streams; ++k) threads.emplace_back(stream, k);
    for (std::thread& t : threads) t.join();
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;
  if (words) {
    try {
      words->write(words_file, o.words_out);
    } catch (const std::exception& e) {
      errors.push_back(e.what());
    }
    std::printf("words: %lld decodings of %zu distinct files, %lld differing from their file's first; "
                "each file's words in %s\n",
                static_cast<long long>(words->decodings), words->paths.size(),
                static_cast<long long>(words->differing), o.words_out.c_str());
  }
  for (const std::string& e : errors) std::fprintf(stderr, "gpuspeech-bench decode: %s\n", e.c_str());
  const double rtf = audio > 0 ? wall / audio : 0.0;
  std::printf("decode: %.2f s of audio in %.3f s: RTF %.5f, %.1fx real time; streams busy %.3f s "
              "in all; CPU %.0f %% of one core; peak RSS %.0f MiB\n",
              audio, wall, rtf, rtf > 0 ? 1.0 / rtf : 0.0, busy, wall > 0 ? 100.0 * cpu / wall : 0.0,
              peak_rss_mib());
  // Where the streams' threads spent their time (RecognizerTimings, since
  // each stream was made: the features, scoring (with its wait for the
  // device) and search, summed over the streams), against their busy time.
  RecognizerTimings sum;
  {
    for (const auto& rec : streams) {
      sum.features += rec->timings().features;
      sum.scoring += rec->timings().scoring;
      sum.search += rec->timings().search;
      sum.scoring_cpu += rec->timings().scoring_cpu;
      sum.search_cpu += rec->timings().search_cpu;
    }
    std::printf("stages summed over the streams: features %.3f s, scoring %.3f s, search %.3f s "
                "(waiting for the device %.3f s, word-end rescoring %.3f s, growing buffers "
                "%.3f s, collecting garbage %.3f s; %lld frames run again)\n",
                sum.features, sum.scoring, sum.search, parts.device_wait, parts.rescoring,
                parts.growth, parts.collect, static_cast<long long>(parts.frames_rerun));
    // The same stages in CPU time of the streams' threads; the rest of the
    // process's CPU is the other threads' (the batcher's launchers, the
    // CUDA runtime's, the feed), and the streams' own outside the stages.
    std::printf("host CPU, core-seconds: process %.3f; the streams' threads in scoring %.3f, in search "
                "%.3f (word-end rescoring %.3f); the rest %.3f\n",
                cpu, sum.scoring_cpu, sum.search_cpu, parts.rescoring_cpu,
                cpu - sum.scoring_cpu - sum.search_cpu);
    if (o.adapt) {
      // The adaptation's own host work (AdaptiveRedecoder's timings, the
      // streams' threads' CPU; with --fibers they count other fibers too).
      AdaptationTimings at;
      for (const auto& d : decoders) at.add(d->adapter()->timings());
      std::printf("adaptation, core-seconds: first result %.3f, alignments %.3f, statistics %.3f, "
                  "estimates %.3f, second decodings %.3f (in scoring and search above), final "
                  "results %.3f; utterances %lld, decoded again %lld (min gain %g); young form "
                  "below %g frames; VTLN warps %lld%s\n",
                  at.first_result, at.align, at.statistics, at.estimate, at.redecode,
                  at.final_result, static_cast<long long>(at.utterances),
                  static_cast<long long>(at.redecoded), o.adaptation.min_redecode_gain,
                  o.adaptation.young_below_frames, static_cast<long long>(at.warped),
                  o.adaptation.young_vtln ? "" : " (off)");
    }
    if (parts.rounds > 0)
      std::printf("search rounds: %lld for %lld frames searched (%lld only pruning a frame); "
                  "frames begun chained behind the previous one %lld, ended in the same "
                  "launch %lld\n",
                  static_cast<long long>(parts.rounds), static_cast<long long>(parts.frames),
                  static_cast<long long>(parts.prune_only_rounds),
                  static_cast<long long>(parts.chained),
                  static_cast<long long>(parts.chained_ended));
    if (parts.rescore_rounds > 0)
      std::printf("word-end rounds: %lld, %lld of them sorted on the host (the others' events "
                  "came in order)\n",
                  static_cast<long long>(parts.rescore_rounds),
                  static_cast<long long>(parts.rescore_rounds_sorted));
  }
  // Per device (the device each stream was placed on, or the one named):
  // streams, audio and busy time, for the balance of --device-id -1.
  int num_devices = 0;
  for (const auto& rec : streams) num_devices = std::max(num_devices, rec->config().device_id + 1);
  std::vector<int> dev_streams(static_cast<size_t>(num_devices), 0);
  std::vector<double> dev_audio(static_cast<size_t>(num_devices), 0.0);
  std::vector<double> dev_busy(static_cast<size_t>(num_devices), 0.0);
  for (size_t k = 0; k < streams.size(); ++k) {
    const auto d = static_cast<size_t>(std::max(0, streams[k]->config().device_id));
    ++dev_streams[d];
    dev_audio[d] += stream_audio[k];
    dev_busy[d] += stream_busy[k];
  }
  std::string per_device_streams, per_device_audio;
  const bool all_cpu = std::string(first.scoring_backend().name()) == "cpu" &&
                       std::string(first.search_backend()) == "cpu";
  for (size_t d = 0; d < dev_streams.size() && !all_cpu; ++d) {
    if (dev_streams[d] == 0) continue;
    std::printf("device %zu: %d stream%s, %.2f s of audio, busy %.3f s\n", d, dev_streams[d],
                dev_streams[d] == 1 ? "" : "s", dev_audio[d], dev_busy[d]);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%zu:%d", per_device_streams.empty() ? "" : ",", d, dev_streams[d]);
    per_device_streams += buf;
    std::snprintf(buf, sizeof buf, "%s%zu:%.2f", per_device_audio.empty() ? "" : ",", d, dev_audio[d]);
    per_device_audio += buf;
  }
#ifdef GPUSPEECH_HAVE_CUDA
  {  // the batched search (GPUSPEECH_CUDA_BATCH=1): its launches
    const CudaRoundBatcher::Stats b = CudaRoundBatcher::totals();
    if (b.launches > 0) {
      char kernel[192];
      if (b.cluster > 0) {
        const int n = std::snprintf(kernel, sizeof kernel,
                                    "a cluster of %d blocks a round, %d clusters resident at most",
                                    b.cluster, b.resident);
        if (b.loaded_cluster > 0 && n > 0 && static_cast<size_t>(n) < sizeof kernel)
          std::snprintf(kernel + n, sizeof kernel - static_cast<size_t>(n),
                        "; %d blocks in %llu launches made with the device loaded", b.loaded_cluster,
                        static_cast<unsigned long long>(b.loaded_launches));
      } else
        std::snprintf(kernel, sizeof kernel, "%d blocks, cooperative", b.blocks);
      std::printf("batched search: %llu rounds in %llu launches (%.1f a launch, at most %u; %s); "
                  "launcher busy %.3f s, waiting %.3f s; streams in the batcher %.3f s\n",
                  static_cast<unsigned long long>(b.rounds),
                  static_cast<unsigned long long>(b.launches),
                  static_cast<double>(b.rounds) / static_cast<double>(b.launches), b.widest,
                  kernel, b.busy_s, b.waiting_s, b.in_run_s);
      std::printf("streams in the batcher, by where their rounds were: until launched %.3f s, "
                  "launched until their flag was seen %.3f s, flagged until running %.3f s\n",
                  b.until_launched_s, b.until_flagged_s, b.until_running_s);
      static const char* const kBins[] = {"1", "2-7", "8-31", "32-127", "128+"};
      std::printf("batched search launches by rounds in them:");
      for (int k = 0; k < CudaRoundBatcher::Stats::kWidthBins; ++k)
        if (b.launches_by_width[k] > 0)
          std::printf(" %s: %llu at %.0f us", kBins[k],
                      static_cast<unsigned long long>(b.launches_by_width[k]),
                      1e6 * b.busy_by_width_s[k] / static_cast<double>(b.launches_by_width[k]));
      std::printf("\n");
      print_lanes_profile(b);
    }
  }
#endif
  const int64_t mem_after = device_used();
  constexpr double kMiB = 1024.0 * 1024.0;
  double first_mib = -1, added_mib = -1, added_used_mib = -1;
  if (mem_before >= 0 && mem_first >= 0 && mem_streams >= 0 && mem_after >= 0) {
    first_mib = static_cast<double>(mem_first - mem_before) / kMiB;
    std::printf("device memory: %.0f MiB for the first stream and the shared resources",
                first_mib);
    if (o.streams > 1) {
      added_mib = static_cast<double>(mem_streams - mem_first) / kMiB / (o.streams - 1);
      // A stream's buffers grow with what it decodes: one that got no
      // file grew none, so give at least as many files as streams.
      added_used_mib = static_cast<double>(mem_after - mem_first) / kMiB / (o.streams - 1);
      std::printf("; %.1f MiB each added stream when made, %.1f MiB after decoding", added_mib,
                  added_used_mib);
    }
    std::printf("; %.0f MiB in all after decoding\n", static_cast<double>(mem_after - mem_before) / kMiB);
  }
  double p50 = 0, p99 = 0, worst = 0;
  bool kept_up = true;
  if (o.live) {
    p50 = percentile(lags, 0.50);
    p99 = percentile(lags, 0.99);
    worst = percentile(lags, 1.0);
    for (double l : last_lags) kept_up = kept_up && l < 1.0;
    std::printf("live: %zu blocks of %d ms, partial every %d ms: lag p50 %.1f ms, p99 %.1f ms, "
                "worst %.1f ms; every stream kept up: %s%s\n",
                lags.size(), o.block_ms, o.partial_ms, p50 * 1e3, p99 * 1e3, worst * 1e3,
                kept_up ? "yes" : "no", o.spread_starts ? " (starts spread over the files)" : "");
  }
  std::printf("RESULT bench=decode streams=%d scoring=%s search=%s live=%d audio_s=%.3f wall_s=%.4f "
              "rtf=%.6f xrt=%.2f cpu_pct=%.1f peak_rss_mib=%.1f lag_p50_ms=%.2f lag_p99_ms=%.2f "
              "lag_max_ms=%.2f kept_up=%d errors=%zu first_stream_mib=%.1f added_stream_mib=%.1f "
              "added_stream_used_mib=%.1f device_streams=%s device_audio_s=%s scoring_s=%.3f "
              "search_s=%.3f device_wait_s=%.3f rescoring_s=%.3f growth_s=%.3f collect_s=%.3f\n",
              o.streams, first.scoring_backend().name(), first.search_backend(), o.live ? 1 : 0,
              audio, wall, rtf, rtf > 0 ? 1.0 / rtf : 0.0, wall > 0 ? 100.0 * cpu / wall : 0.0,
              peak_rss_mib(), p50 * 1e3, p99 * 1e3, worst * 1e3, kept_up ? 1 : 0, errors.size(),
              first_mib, added_mib, added_used_mib,
              per_device_streams.empty() ? "-" : per_device_streams.c_str(),
              per_device_audio.empty() ? "-" : per_device_audio.c_str(), sum.scoring, sum.search,
              parts.device_wait, parts.rescoring, parts.growth, parts.collect);
  return errors.empty() ? 0 : 1;
}

}  // namespace gpuspeech
