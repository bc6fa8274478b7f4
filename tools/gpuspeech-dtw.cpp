// gpuspeech-dtw: isolated-word (command) recognition by template matching,
// one sclite "trn" line per file. The usage text below is the reference for
// its behaviour; docs/dtw.md explains the method.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/dtw/dtw.h"
#include "common/dtw/dtw_engine.h"
#include "common/dtw/dtw_features.h"
#include "common/dtw/feature_projection.h"
#include "common/dtw/projection_learner.h"
#include "common/dtw/projection_threshold.h"
#include "common/dtw/template_library.h"
#include "common/dtw/template_matcher.h"
#include "common/dtw/word_recognizer.h"
#include "common/seconds_since.h"

#ifndef GPUSPEECH_VERSION
#define GPUSPEECH_VERSION "unknown"
#endif

namespace gpuspeech {

constexpr const char* kProgram = "gpuspeech-dtw";
// --calibrate-projection learns a threshold for libraries of 1 ... this many
// template voices; a word with more templates takes the last (from eight
// voices on the thresholds change by hundredths, docs/dtw.md).
constexpr int kCalibratedLibrarySizes = 8;

constexpr const char* kUsage = R"USAGE(Usage: gpuspeech-dtw --templates SOURCE [OPTIONS] FILE...
       gpuspeech-dtw --bench N[,N...] [OPTIONS]

Recognises the one word (or command) spoken in each FILE by dynamic time
warping against recorded templates, and prints one line per file in sclite's
trn format, "label (utterance-id)", the id being the file's base name without
its extension. A rejected file (see --reject) or one no template can reach
prints an empty label: " (utterance-id)".

SOURCE is a directory of *.wav templates (label: the file's base name up to
the first underscore, so yes_1.wav and yes_anna.wav are both "yes") or a list
file of "PATH" or "LABEL PATH" lines. Template features are cached by content
(see --cache). FILE and the templates are WAV files (any PCM or float
format; channels averaged) or headerless 16-bit little-endian PCM, at
16000 Hz.

Features:
  --features K          plp (default; perceptual linear prediction cepstra) |
                        mfcc | fbank | spectrum (log power spectrum)
  --no-cmn              no per-utterance mean removal
  --no-trim             do not cut leading and trailing silence (endpointer)
  --endpoint-threshold X  speech is X dB above the noise floor (default 12)
  --remove-noise        Sphinx spectral noise subtraction (mfcc, fbank)
  --cvn                 also normalise each dimension's variance per utterance
  --deltas              append deltas and accelerations (mfcc, fbank, plp)
  --lifter L            sinusoidal cepstral lifter (mfcc default 12, plp 22;
                        0 = none)
  --plp-order N         order of plp's all-pole model (default 12)
  --warps W[,W...]      VTLN warp factors tried on each test utterance (mfcc,
                        fbank, plp); every template keeps its best warp, at the
                        cost of one DTW per warp. Default 0.85,0.92,1,1.08,1.15;
                        "1" = no warping

Matching:
  --pattern P           symmetric (default; Sakoe-Chiba, weights 1-2-1) |
                        itakura (slopes 1/2..2)
  --band N              Sakoe-Chiba band: at most N frames off the diagonal
                        (default: none)
  --distance D          euclidean (default) | cepstral (leaves out c0; mfcc, plp)
  --average A           template averaging: none (default) | add (each word's
                        DTW average of its recordings joins them) | only
                        (replaces them)
  --k N                 a word's score is the mean of its N nearest templates
                        (default 2; 1: nearest neighbour)
  --rescore N           re-rank the N best words (default 2; 0 or 1: off) by
                        their score + W x the power-P mean of the local
                        distances along their templates' paths, which weights
                        a badly matched part of the word more (docs/dtw.md)
  --rescore-power P     the exponent P (default 3, at least 1)
  --rescore-weight W    the weight W (default 0.5)
  --reject R            when the best score means "none of the words":
                        auto (scale x the upper quartile of the distances
                        between templates of the same word, see docs/dtw.md)
                        | mapped (default: the chosen word's score under a
                        map learnt from many other voices, against the
                        map's threshold; see --projection; with other
                        features than the installed maps', nothing is
                        rejected and a warning says so) | off | a distance X
  --projection P        with --reject mapped: a map file, or a directory of
                        *.projection maps, to take the map learnt on these
                        features from (it must have one); repeatable
                        (default: the maps installed with gpuspeech, for
                        the default features)
  --reject-scale S      the scale of --reject auto (default 0.8)
  --syllable-check on|off  with rejection: also reject a word whose syllable
                        count none of the chosen word's templates has
                        (default on; docs/dtw.md)
  --band-match on|off   a test that passed through a narrow channel (8 kHz
                        audio resampled: nothing above 4 kHz) is matched
                        against the templates' features cut at 4 kHz, its
                        own the same (default on; docs/dtw.md)

Devices:
  --backend B           auto | cuda | opencl | cpu (default cpu): where
                        features and DTW run
  --device-id N         device index (default 0)
  --threads N           threads of the cpu DTW engine (default: all cores)

Other:
  --cache DIR           template feature cache (default $GPUSPEECH_CACHE_DIR,
                        $XDG_CACHE_HOME/gpuspeech or ~/.cache/gpuspeech, under
                        dtw/; "-" = no cache)
  --bench N[,N...]      instead of recognising: time one utterance (at each of
                        the --warps, one engine call each) against N random
                        templates (40..120 frames of the feature's size) on
                        --backend and on the cpu engine, and check that the
                        distances agree; a table on stdout
  --bench-repeats R     timed runs per N (default 5; the median is shown)
  --dump-distances F    write every template's distance per file and test
                        warp to F (a header line of template ids with
                        their frames, ID:FRAMES, then "ID WARP FRAMES D..."
                        per file and warp), for analysis
  --learn-projection F  instead of recognising: learn a map of the features
                        (docs/dtw.md, "A projection learnt from other
                        voices") from --templates taken as a corpus of
                        words by many voices (tests/dtw/
                        make_projection_corpus.sh), with the feature
                        options given, and write it to F; no input files
  --calibrate-projection C  with --learn-projection: the map's rejection
                        thresholds from corpus C, whose voices the map did
                        not learn from (make_projection_corpus.sh OUT 2):
                        the score that keeps 95 % of its words in simulated
                        libraries of 12 words by 1, 2, ... 8 voices, one
                        threshold for each number of templates a word has
                        (docs/dtw.md)
  --learn-band-limited  with --learn-projection: learn on the features cut
                        as --band-match cuts them (its map for 8 kHz audio)
  -v, --verbose         per file: distance, runner-up and its distance, the
                        frames kept; the templates loaded
  -h, --help            this text
  --version             the version

Exit status: 0 if every file was recognised, 1 otherwise (a failing file is
reported on stderr and the others still run; a bad template library stops
everything), 2 on bad usage.
)USAGE";

void error(const std::string& msg) { std::fprintf(stderr, "%s: error: %s\n", kProgram, msg.c_str()); }

[[noreturn]] void usage_error(const std::string& msg) {
  error(msg + " (see --help)");
  std::exit(2);
}

double parse_double(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0 || !std::isfinite(x))
    usage_error(flag + ": not a number: '" + v + "'");
  return x;
}

int parse_int(const std::string& flag, const std::string& v, int lo) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < lo || x > 1000000000)
    usage_error(flag + ": expected an integer >= " + std::to_string(lo) + ", got '" + v + "'");
  return static_cast<int>(x);
}

std::string utterance_id(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

struct Args {
  std::string templates;
  std::vector<std::string> files;
  DtwFeatureKind kind = WordRecognizerOptions::defaults().library.features.kind;
  bool cmn = true;
  bool trim = true;
  float endpoint_threshold = EndpointOptions().threshold_db;
  bool remove_noise = false;
  bool cvn = false;
  bool deltas = false;
  DtwOptions dtw = WordRecognizerOptions::defaults().dtw;
  DtwDecisionOptions decision = WordRecognizerOptions::defaults().decision;
  std::vector<float> warps;  // empty = the default of the feature kind
  std::string backend = "cpu";
  int device_id = 0;
  int threads = 0;
  std::string cache;
  std::vector<int> bench;
  int bench_repeats = 5;
  bool verbose = false;
  std::string dump;
  std::string learn_projection;
  bool learn_band_limited = false;
  std::string calibrate_projection;
  std::vector<std::string> projections;
  int lifter = -1;  // -1 = the default of the feature kind
  int plp_order = 0;  // 0 = the default
  TemplateAveraging averaging = WordRecognizerOptions::defaults().averaging;
  bool band_match = WordRecognizerOptions::defaults().band_match;
};

Args parse_args(int argc, char** argv) {
  Args a;
  auto value = [&](int& i, const std::string& flag) -> std::string {
    if (i + 1 >= argc) usage_error(flag + " needs a value");
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    try {
      if (f == "-h" || f == "--help") {
        std::fputs(kUsage, stdout);
        std::exit(0);
      } else if (f == "--version") {
        std::printf("%s %s\n", kProgram, GPUSPEECH_VERSION);
        std::exit(0);
      } else if (f == "--templates") {
        a.templates = value(i, f);
      } else if (f == "--features") {
        a.kind = parse_dtw_feature_kind(value(i, f));
      } else if (f == "--no-cmn") {
        a.cmn = false;
      } else if (f == "--no-trim") {
        a.trim = false;
      } else if (f == "--endpoint-threshold") {
        a.endpoint_threshold = static_cast<float>(parse_double(f, value(i, f)));
        if (!(a.endpoint_threshold > 0.0f)) usage_error("--endpoint-threshold: must be > 0");
      } else if (f == "--cvn") {
        a.cvn = true;
      } else if (f == "--deltas") {
        a.deltas = true;
      } else if (f == "--remove-noise") {
        a.remove_noise = true;
      } else if (f == "--pattern") {
        a.dtw.pattern = parse_step_pattern(value(i, f));
      } else if (f == "--band") {
        a.dtw.band = parse_int(f, value(i, f), 0);
      } else if (f == "--distance") {
        a.dtw.distance = parse_local_distance(value(i, f));
      } else if (f == "--plp-order") {
        a.plp_order = parse_int(f, value(i, f), 1);
      } else if (f == "--lifter") {
        a.lifter = parse_int(f, value(i, f), 0);
      } else if (f == "--average") {
        a.averaging = parse_template_averaging(value(i, f));
      } else if (f == "--k") {
        a.decision.k_nearest = parse_int(f, value(i, f), 1);
      } else if (f == "--rescore") {
        a.decision.rescore_words = parse_int(f, value(i, f), 0);
      } else if (f == "--rescore-power") {
        a.decision.rescore_power = static_cast<float>(parse_double(f, value(i, f)));
        if (!(a.decision.rescore_power >= 1.0f && a.decision.rescore_power <= 16.0f))
          usage_error("--rescore-power: must be in [1, 16]");
      } else if (f == "--rescore-weight") {
        a.decision.rescore_weight = static_cast<float>(parse_double(f, value(i, f)));
        if (!(a.decision.rescore_weight >= 0.0f)) usage_error("--rescore-weight: must be >= 0");
      } else if (f == "--reject") {
        const std::string v = value(i, f);
        if (v == "auto") {
          a.decision.reject = DtwDecisionOptions::Reject::kFromTemplates;
        } else if (v == "mapped") {
          a.decision.reject = DtwDecisionOptions::Reject::kMapped;
        } else if (v == "off") {
          a.decision.reject = DtwDecisionOptions::Reject::kOff;
        } else {
          a.decision.reject = DtwDecisionOptions::Reject::kFixed;
          a.decision.reject_distance = static_cast<float>(parse_double(f, v));
          if (!(a.decision.reject_distance > 0.0f))
          usage_error("--reject: must be auto, mapped, off or a distance > 0");
        }
      } else if (f == "--syllable-check") {
        const std::string v = value(i, f);
        if (v != "on" && v != "off") usage_error("--syllable-check: must be on or off");
        a.decision.syllable_check = v == "on";
      } else if (f == "--band-match") {
        const std::string v = value(i, f);
        if (v != "on" && v != "off") usage_error("--band-match: must be on or off");
        a.band_match = v == "on";
      } else if (f == "--reject-scale") {
        a.decision.reject_scale = static_cast<float>(parse_double(f, value(i, f)));
        if (!(a.decision.reject_scale > 0.0f)) usage_error("--reject-scale: must be > 0");
      } else if (f == "--warps") {
        a.warps = parse_warp_list(value(i, f));
      } else if (f == "--backend") {
        a.backend = value(i, f);
      } else if (f == "--device-id") {
        a.device_id = parse_int(f, value(i, f), 0);
      } else if (f == "--threads") {
        a.threads = parse_int(f, value(i, f), 1);
      } else if (f == "--cache") {
        a.cache = value(i, f);
      } else if (f == "--bench") {
        std::stringstream ss(value(i, f));
        std::string item;
        while (std::getline(ss, item, ',')) a.bench.push_back(parse_int("--bench", item, 1));
        if (a.bench.empty()) usage_error("--bench needs at least one count");
      } else if (f == "--bench-repeats") {
        a.bench_repeats = parse_int(f, value(i, f), 1);
      } else if (f == "--learn-projection") {
        a.learn_projection = value(i, f);
      } else if (f == "--learn-band-limited") {
        a.learn_band_limited = true;
      } else if (f == "--calibrate-projection") {
        a.calibrate_projection = value(i, f);
      } else if (f == "--projection") {
        a.projections.push_back(value(i, f));
      } else if (f == "--dump-distances") {
        a.dump = value(i, f);
      } else if (f == "-v" || f == "--verbose") {
        a.verbose = true;
      } else if (!f.empty() && f[0] == '-' && f != "-") {
        usage_error("unknown option " + f);
      } else {
        a.files.push_back(f);
      }
    } catch (const std::invalid_argument& e) {
      usage_error(f + ": " + e.what());
    }
  }
  if (a.bench.empty()) {
    if (a.templates.empty()) usage_error("--templates is required");
    if (a.files.empty() && a.learn_projection.empty()) usage_error("no input files");
    if (!a.files.empty() && !a.learn_projection.empty()) usage_error("--learn-projection takes no input files");
    if (a.learn_projection.empty() && (a.learn_band_limited || !a.calibrate_projection.empty()))
      usage_error("--calibrate-projection and --learn-band-limited go with --learn-projection");
    if (!a.projections.empty() && a.decision.reject != DtwDecisionOptions::Reject::kMapped)
      usage_error("--projection goes with --reject mapped");
  }
  if (a.remove_noise && a.kind != DtwFeatureKind::kMfcc && a.kind != DtwFeatureKind::kFbank)
    usage_error("--remove-noise works on mfcc and fbank only");
  if (a.deltas && a.kind == DtwFeatureKind::kSpectrum) usage_error("--deltas works on plp, mfcc and fbank only");
  if (a.kind == DtwFeatureKind::kSpectrum && !a.warps.empty() && !(a.warps.size() == 1 && a.warps[0] == 1.0f))
    usage_error("--warps needs plp, mfcc or fbank features (the spectrum has no filterbank to warp)");
  if (a.lifter >= 0 && a.kind != DtwFeatureKind::kMfcc && a.kind != DtwFeatureKind::kPlp)
    usage_error("--lifter works on mfcc and plp only");
  if (a.plp_order > 0 && a.kind != DtwFeatureKind::kPlp) usage_error("--plp-order works on plp only");
  if (a.cvn && !a.cmn) usage_error("--cvn needs the mean removal that --no-cmn turns off");
  if (a.dtw.distance == LocalDistance::kCepstral && a.kind != DtwFeatureKind::kMfcc &&
      a.kind != DtwFeatureKind::kPlp)
    usage_error("--distance cepstral needs cepstra, --features mfcc or plp (it leaves out c0)");
  return a;
}

DtwFeatureConfig feature_config(const Args& a) {
  DtwFeatureConfig c = DtwFeatureConfig::for_kind(a.kind);
  if (!a.cmn) c.features.norm.cmn = NormOptions::Cmn::kNone;
  c.trim_silence = a.trim;
  c.endpoint.threshold_db = a.endpoint_threshold;
  c.features.noise.remove_noise = a.remove_noise;
  c.features.norm.cvn = a.cvn && a.cmn;
  if (a.deltas) c.features.delta.layout = DeltaOptions::Layout::kRegression;
  if (a.lifter >= 0) c.features.mfcc.lifter = a.lifter;
  if (a.lifter >= 0) c.features.plp.lifter = a.lifter;
  if (a.plp_order > 0) c.features.plp.order = a.plp_order;
  // Spectrum has no filterbank to warp: it stays at warp 1 whatever the default.
  if (!a.warps.empty()) c.test_warps = a.warps;
  return c;
}

// Median seconds of `repeats` runs of what WordRecognizer does per
// utterance: one match() per test warp (`warped`), the best warp per template.
double time_match(DtwEngine& e, const std::vector<FeatureMatrix>& warped, int repeats, std::vector<float>* out) {
  auto once = [&] {
    std::vector<std::vector<float>> per_warp;
    for (const FeatureMatrix& u : warped) per_warp.push_back(e.match(u.data.data(), u.rows));
    return best_over_warps(per_warp);
  };
  *out = once();  // warm-up (program build, first touch)
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    *out = once();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int run_bench(const Args& a) {
  const DtwFeatureConfig fc = feature_config(a);
  const int dim = fc.dim();
  std::mt19937 gen(1234);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::uniform_int_distribution<int> len(40, 120);
  auto random_matrix = [&](int64_t rows) {
    FeatureMatrix m;
    m.rows = rows;
    m.dim = dim;
    m.data.resize(static_cast<size_t>(rows * dim));
    for (float& v : m.data) v = nd(gen);
    return m;
  };
  // One random matrix per test warp, as the recogniser matches them.
  std::vector<FeatureMatrix> utt;
  for (size_t w = 0; w < fc.test_warps.size(); ++w) utt.push_back(random_matrix(80));
  std::unique_ptr<DtwEngine> engine = make_dtw_engine(a.backend, a.dtw, a.device_id, a.threads);
  std::unique_ptr<DtwEngine> cpu = make_cpu_dtw_engine(a.dtw, a.threads);
  std::printf("# dtw bench: utterance of %lld frames x %d (%s) at %zu test warp(s), templates of 40..120 "
              "frames, %s pattern, band %d\n# engine %s: %s; reference cpu: %s\n",
              static_cast<long long>(utt[0].rows), dim, to_string(a.kind), utt.size(), to_string(a.dtw.pattern),
              a.dtw.band, engine->name(), engine->device_name().c_str(), cpu->device_name().c_str());
  std::printf("%10s %14s %14s %14s %10s %12s\n", "templates", "engine_ms", "cpu_ms",
              "engine_tpl/s", "speedup", "max_rel_diff");
  for (int n : a.bench) {
    PackedTemplates t;
    for (int k = 0; k < n; ++k) t.add(random_matrix(len(gen)));
    engine->set_templates(t);
    cpu->set_templates(t);
    std::vector<float> de, dc;
    const double te = time_match(*engine, utt, a.bench_repeats, &de);
    const double tc = time_match(*cpu, utt, a.bench_repeats, &dc);
    double worst = 0.0;
    for (size_t k = 0; k < dc.size(); ++k) {
      if (std::isinf(dc[k]) != std::isinf(de[k])) worst = INFINITY;
      else if (!std::isinf(dc[k])) worst = std::max(worst, std::fabs(double(de[k]) - dc[k]) / std::max(1e-30, std::fabs(double(dc[k]))));
    }
    std::printf("%10d %14.3f %14.3f %14.0f %10.2f %12.2e\n", n, te * 1e3, tc * 1e3, n / te, tc / te,
                worst);
    if (!(worst <= 1e-4)) {
      error("the " + std::string(engine->name()) + " engine's distances differ from the cpu's by " +
            std::to_string(worst) + " (relative) at " + std::to_string(n) + " templates");
      return 1;
    }
  }
  return 0;
}

// --learn-projection: the corpus's features as the recogniser would make
// its templates (same options, same cache), the map learnt with the
// learner's defaults, written with what it was learnt from.
int run_learn_projection(const Args& a) {
  BackendPtr backend = open_backend(a.backend == "auto" ? "auto" : a.backend, a.device_id);
  TemplateLibraryOptions lo;
  lo.features = feature_config(a);
  lo.cache_dir = a.cache;
  if (a.learn_band_limited) lo = band_limited_library(lo, WordRecognizerOptions::defaults().band_limit);
  const auto t0 = std::chrono::steady_clock::now();
  TemplateLibrary corpus;
  try {
    corpus = TemplateLibrary::load(a.templates, lo, *backend);
  } catch (const std::exception& e) {
    error(std::string("corpus: ") + e.what());
    return 1;
  }
  const ProjectionLearnerOptions po;
  ProjectionLearnerReport rep;
  DtwProjection p;
  try {
    p = learn_dtw_projection(corpus, a.dtw, po, &rep);
    p.features = lo.features.frame_signature();
  } catch (const std::exception& e) {
    error(std::string("corpus: ") + e.what());
    return 1;
  }
  ProjectionThresholdOptions to;
  to.k_nearest = a.decision.k_nearest;
  std::vector<ProjectionThresholdReport> treps;
  if (!a.calibrate_projection.empty()) {
    try {
      const TemplateLibrary held_out = TemplateLibrary::load(a.calibrate_projection, lo, *backend);
      // Its recordings as tests, at the recogniser's test warps.
      DtwFeatureComputer features(lo.features, *backend);
      std::vector<std::vector<FeatureMatrix>> warped;
      for (const DtwTemplate& t : held_out.templates()) {
        const AudioData audio = read_dtw_audio(t.path, lo.features.features.frame.sample_rate);
        warped.push_back(features.compute_warped(audio.samples.data(), static_cast<int64_t>(audio.samples.size())));
      }
      p.thresholds = calibrate_projection_thresholds(held_out, p, a.dtw, to, kCalibratedLibrarySizes, &warped, &treps);
    } catch (const std::exception& e) {
      error(std::string("calibration corpus: ") + e.what());
      return 1;
    }
    for (size_t n = 0; n < p.thresholds.size(); ++n)
      std::fprintf(stderr, "%s: %zu template voice(s): threshold %.4f keeps %.0f %% of %lld simulated tests (median score %.4f)\n",
                   kProgram, n + 1, p.thresholds[n], 100.0 * to.keep, static_cast<long long>(treps[n].scores),
                   treps[n].median);
  }
  std::ostringstream ratios;
  for (double r : rep.kept_ratios) ratios << " " << r;
  std::fprintf(stderr, "%s: %zu recordings, %lld same-word and %lld other-word alignments; kept directions' "
               "between/within ratios:%s (%.1f s)\n", kProgram, corpus.size(),
               static_cast<long long>(rep.within_pairs), static_cast<long long>(rep.between_pairs),
               ratios.str().c_str(), seconds_since(t0));
  std::ostringstream comment;
  comment << "learnt by " << kProgram << " " << GPUSPEECH_VERSION << " from " << corpus.size()
          << " recordings in " << a.templates << "\nfeatures " << lo.features.fingerprint() << "\ndtw "
          << a.dtw.fingerprint() << "\nlearner splice " << po.splice << " output-dim " << po.output_dim
          << " regularisation " << po.within_regularisation << " pairs " << po.pairs_per_template << " seed "
          << po.seed;
  if (p.has_threshold())
    comment << "\nthresholds from " << a.calibrate_projection << ": each keeps " << to.keep << " of the tests in "
            << to.libraries << " libraries of " << to.words << " words by 1, 2, ... " << kCalibratedLibrarySizes
            << " template voices, k " << to.k_nearest << ", seed " << to.seed;
  else
    comment << "\nno threshold (no --calibrate-projection): this map cannot reject";
  std::ofstream out(a.learn_projection, std::ios::binary);
  out << format_dtw_projection(p, comment.str());
  out.close();
  if (!out) {
    error("--learn-projection: cannot write " + a.learn_projection);
    return 1;
  }
  return 0;
}

// -v with --reject mapped: the chosen word's score under the map, which the
// map's threshold judges ("" without one).
std::string mapped_note(const WordRecognizer& rec) {
  if (rec.options().decision.reject != DtwDecisionOptions::Reject::kMapped || !(rec.last_mapped_score() > 0.0f))
    return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, ", mapped %.4f", rec.last_mapped_score());
  return buf;
}

int run(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  if (!a.bench.empty()) return run_bench(a);
  if (!a.learn_projection.empty()) return run_learn_projection(a);

  BackendPtr backend = open_backend(a.backend == "auto" ? "auto" : a.backend, a.device_id);
  const auto t_load = std::chrono::steady_clock::now();
  WordRecognizerOptions ro = WordRecognizerOptions::defaults();
  ro.library.features = feature_config(a);
  ro.library.cache_dir = a.cache;
  ro.dtw = a.dtw;
  ro.decision = a.decision;
  ro.averaging = a.averaging;
  ro.band_match = a.band_match;
  ro.projections = a.projections;
  ro.engine = a.backend;
  ro.device_id = a.device_id;
  ro.threads = a.threads;
  std::vector<std::string> log;
  std::unique_ptr<WordRecognizer> rec;
  try {
    rec = std::make_unique<WordRecognizer>(a.templates, ro, *backend, a.verbose ? &log : nullptr);
  } catch (const TemplateError& e) {
    error(std::string("templates: ") + e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    error(std::string("templates: ") + e.what());
    return 1;
  } catch (const std::runtime_error& e) {  // a projection map (--reject mapped)
    error(e.what());
    return 1;
  }
  const TemplateLibrary& lib = rec->library();
  if (!rec->rejection_note().empty()) std::fprintf(stderr, "%s: warning: %s\n", kProgram, rec->rejection_note().c_str());
  for (const std::string& l : log) std::fprintf(stderr, "%s: %s\n", kProgram, l.c_str());
  if (a.verbose)
    std::fprintf(stderr,
                 "%s: %zu templates (%lld from the cache) in %.3f s; features on %s, DTW on %s (%s); "
                 "%zu test warp(s), k %d, rejection threshold %.4f\n",
                 kProgram, lib.size(), static_cast<long long>(lib.cache_hits()), seconds_since(t_load),
                 backend->name(), rec->engine().name(), rec->engine().device_name().c_str(),
                 ro.library.features.test_warps.size(), ro.decision.k_nearest, rec->reject_threshold());

  const float rate = ro.library.features.features.frame.sample_rate;
  FILE* dump = nullptr;
  if (!a.dump.empty()) {
    dump = std::fopen(a.dump.c_str(), "w");
    if (!dump) {
      error("--dump-distances: cannot write " + a.dump);
      return 1;
    }
    std::fprintf(dump, "templates");
    for (size_t t = 0; t < rec->library().size(); ++t) std::fprintf(dump, " %s:%lld", utterance_id(rec->library()[t].path).c_str(),
                   static_cast<long long>(rec->library()[t].features.rows));
    std::fprintf(dump, "\n");
  }
  int failed = 0, rejected = 0;
  double t_match = 0.0;
  for (const std::string& path : a.files) {
    try {
      const AudioData audio = read_dtw_audio(path, rate);
      for (const std::string& w : audio.warnings) std::fprintf(stderr, "%s: warning: %s\n", kProgram, w.c_str());
      const auto t0 = std::chrono::steady_clock::now();
      const WordRecognizer::Result r =
          rec->recognise(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
      t_match += seconds_since(t0);
      if (!r.speech_found)
        std::fprintf(stderr, "%s: warning: %s: no speech found; matching the whole file\n", kProgram,
                     path.c_str());
      if (r.frames < 1) throw std::runtime_error(path + ": too short for one frame of features");
      const MatchDecision& m = r.decision;
      if (dump) {
        const std::vector<float>& warps = ro.library.features.test_warps;
        for (size_t w = 0; w < rec->last_distances().size(); ++w) {
          std::fprintf(dump, "%s %g %lld", utterance_id(path).c_str(), w < warps.size() ? warps[w] : 1.0f,
                       static_cast<long long>(r.frames));
          for (float d : rec->last_distances()[w]) std::fprintf(dump, " %.6g", d);
          std::fprintf(dump, "\n");
        }
      }
      if (m.rejected) ++rejected;
      std::printf("%s (%s)\n", m.rejected ? "" : m.label.c_str(), utterance_id(path).c_str());
      std::fflush(stdout);
      if (a.verbose)
        std::fprintf(stderr, "%s: %s: best %s %.4f (%s), runner-up %s %.4f%s%s%s; %lld frames (samples %lld..%lld)\n",
                     kProgram, utterance_id(path).c_str(), m.label.empty() ? "-" : m.label.c_str(),
                     m.distance,
                     m.template_index >= 0 ? lib[static_cast<size_t>(m.template_index)].path.c_str() : "-",
                     m.runner_up.empty() ? "-" : m.runner_up.c_str(), m.runner_up_distance,
                     r.syllables_rejected ? ", rejected (syllables)" : m.rejected ? ", rejected" : "",
                     r.band_limited ? ", band-limited" : "", mapped_note(*rec).c_str(), static_cast<long long>(r.frames),
                     static_cast<long long>(r.kept.begin), static_cast<long long>(r.kept.end));
    } catch (const std::exception& e) {
      error(e.what());
      ++failed;
    }
  }
  if (dump) std::fclose(dump);
  if (!rec->band_match_error().empty())
    std::fprintf(stderr, "%s: warning: band-limited files were matched as wide-band ones: %s\n", kProgram,
                 rec->band_match_error().c_str());
  std::fprintf(stderr, "%s: %zu file(s), %d rejected, %d failed; features and DTW %.3f s against %zu templates\n", kProgram,
               a.files.size(), rejected, failed, t_match, lib.size());
  return failed ? 1 : 0;
}

}  // namespace gpuspeech

int main(int argc, char** argv) {
  try {
    return gpuspeech::run(argc, argv);
  } catch (const std::exception& e) {
    gpuspeech::error(e.what());
  } catch (...) {
    gpuspeech::error("unexpected failure");
  }
  return 1;
}
