// gpuspeech-transcribe: speech to text for audio files, one sclite "trn"
// line per file. The usage text below is the reference for its behaviour.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/backend_registry.h"
#include "common/feature_pipeline.h"
#include "common/feature_writer.h"
#include "common/recognizer.h"
#include "common/wav_reader.h"

#ifndef GPUSPEECH_VERSION
#define GPUSPEECH_VERSION "unknown"
#endif

namespace gpuspeech {

constexpr const char* kProgram = "gpuspeech-transcribe";

constexpr const char* kUsage = R"USAGE(Usage: gpuspeech-transcribe [OPTIONS] FILE...

Recognises speech in each FILE and prints one line per file in sclite's trn
format, "words (utterance-id)", the id being the file's base name without
its extension. A timing summary goes to standard error.

FILE is a WAV file (any PCM or float format; mono, or channels averaged) or
headerless signed 16-bit little-endian PCM (anything without a RIFF header)
at the model's sample rate. With --mfc, FILE is a Sphinx feature file of
cepstra instead (what sphinx_fe writes, e.g. pocketsphinx-testdata's
tidigits/*.mfc; pocketsphinx_batch -adcin no -cepext .mfc): the model's
front end then starts from those cepstra, with its CMN and deltas.

Model (defaults: the installed pocketsphinx-en-us model, dictionary and
language model under /usr/share/pocketsphinx/model/en-us):
  --hmm DIR             acoustic model directory (mdef, means, ...)
  --dict FILE           pronunciation dictionary
  --fdict FILE          filler dictionary (default: the model's noisedict)
  --lm FILE             n-gram language model (ARPA or Sphinx .lm.bin)
  --jsgf FILE           JSGF grammar
  --rule NAME           the JSGF rule to use (default: the first public one)
  --fsg FILE            Sphinx FSG grammar
  --kws FILE            keyphrase list (one phrase per line, optional
                        /threshold/): prints the keyphrases spotted
  At most one of --lm, --jsgf, --fsg, --kws.
  --mfc                 the FILEs are Sphinx .mfc cepstra, not audio

Search (pocketsphinx's defaults, except a narrower --beam):
  --beam X              beam, as a probability ratio (default 1e-40)
  --wbeam X             word-end beam (default 7e-29)
  --maxactive N         most graph states kept per frame (default 30000)
  --lw X                language weight (default 6.5)
  --wip X               word insertion penalty (default 0.65)
  --silprob X           silence probability (default 0.005)
  --fillprob X          filler probability (default 1e-8)
  --lm-max-order N      compile the graph from the LM's n-grams up to order N
                        only (default: all)
  --lm-max-ngrams N     ... and at most N n-grams of order 2 and up, those that
                        matter most (relative entropy); default: all
  --topn N              Gaussians per codebook and frame in scoring (default 4,
                        as pocketsphinx; 0 = all, exact mixtures)
  --no-rescore          when the graph was built from a pruned LM (large LMs
                        are pruned automatically), do not apply the full LM
                        at word ends (faster, less accurate)
  --lm-histories N      word-end rescoring: tokens with different LM
                        histories kept per graph state (default 3)
  --nbest N             also print up to N alternatives per file, as
                        "# nbest K cost confidence: words", on stdout

Devices:
  --backend B           scoring backend: auto (default) | cuda | opencl | cpu
  --search S            search: auto (cuda when scoring on cuda, else cpu) |
                        cpu | cuda
  --device-id N         device index (default 0)
  --list-backends       show which backends this build has and can use

Other:
  --cache DIR           graph cache directory (default $GPUSPEECH_CACHE_DIR,
                        $XDG_CACHE_HOME/gpuspeech or ~/.cache/gpuspeech;
                        "-" compiles every time and caches nothing)
  --times               after each line, one "# word start end confidence"
                        line per word (frames of 10 ms at the model's rate)
  -v, --verbose         what was loaded, the graph, backends, per-file times
  -h, --help            this text
  --version             the version

Exit status: 0 if every file was transcribed, 1 otherwise (a failing file is
reported on stderr and the others still run), 2 on bad usage.
)USAGE";

// Messages are one line each, "gpuspeech-transcribe: error: ...", as the
// other tools write them.
void error(const std::string& msg) {
  std::fprintf(stderr, "%s: error: %s\n", kProgram, msg.c_str());
}

[[noreturn]] void usage_error(const std::string& msg) {
  error(msg + " (see --help)");
  std::exit(2);
}

double parse_double(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno != 0) usage_error(flag + ": not a number: '" + v + "'");
  return x;
}

int parse_int(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || x < INT32_MIN || x > INT32_MAX)
    usage_error(flag + ": not an integer: '" + v + "'");
  return static_cast<int>(x);
}

// A probability ratio (pocketsphinx's beams) as a natural-log cost width.
float beam_width(const std::string& flag, const std::string& v) {
  const double p = parse_double(flag, v);
  if (!(p > 0.0 && p < 1.0)) usage_error(flag + ": must be in (0, 1), got " + v);
  return static_cast<float>(-std::log(p));
}

std::string utterance_id(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

AudioData read_audio(const std::string& path, int sample_rate) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  if (looks_like_wav(bytes.data(), bytes.size())) return parse_wav(bytes.data(), bytes.size(), path);
  return parse_raw_s16le(bytes.data(), bytes.size(), sample_rate, path);
}

void list_backends_and_exit() {
  for (const BackendInfo& b : list_backends())
    std::printf("%-7s %s%s\n", b.name.c_str(),
                !b.compiled ? "not built" : (b.usable ? "usable: " : "not usable: "),
                b.compiled ? b.detail.c_str() : "");
  std::exit(0);
}

int run(int argc, char** argv) {
  RecognizerConfig config = RecognizerConfig::en_us_defaults();
  bool grammar_given = false;
  bool verbose = false, times = false;
  bool mfc_input = false;  // --mfc: files hold cepstra, not audio
  std::vector<std::string> files;
  auto set_grammar = [&](GrammarKind kind, const std::string& path) {
    if (grammar_given) usage_error("give at most one of --lm, --jsgf, --fsg, --kws");
    grammar_given = true;
    config.grammar_kind = kind;
    config.grammar = path;
  };
  bool wbeam_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("%s %s\n", kProgram, GPUSPEECH_VERSION);
      return 0;
    } else if (a == "--list-backends") {
      list_backends_and_exit();
    } else if (a == "--hmm") {
      config.model_dir = value();
    } else if (a == "--dict") {
      config.dictionary = value();
    } else if (a == "--fdict") {
      config.filler_dictionary = value();
    } else if (a == "--lm") {
      set_grammar(GrammarKind::kNgram, value());
    } else if (a == "--jsgf") {
      set_grammar(GrammarKind::kJsgf, value());
    } else if (a == "--rule") {
      config.jsgf_rule = value();
    } else if (a == "--fsg") {
      set_grammar(GrammarKind::kFsg, value());
    } else if (a == "--kws") {
      set_grammar(GrammarKind::kKeyphrases, value());
    } else if (a == "--beam") {
      config.search.beam = beam_width(a, value());
    } else if (a == "--wbeam") {
      config.search.word_end_beam = beam_width(a, value());
      wbeam_given = true;
    } else if (a == "--maxactive") {
      config.search.max_active = parse_int(a, value());
    } else if (a == "--lw") {
      config.graph.language_weight = static_cast<float>(parse_double(a, value()));
    } else if (a == "--wip") {
      config.graph.word_insertion_penalty = static_cast<float>(parse_double(a, value()));
    } else if (a == "--silprob") {
      config.graph.silence_prob = static_cast<float>(parse_double(a, value()));
    } else if (a == "--fillprob") {
      config.graph.filler_prob = static_cast<float>(parse_double(a, value()));
    } else if (a == "--lm-max-order") {
      config.lm_prune.max_order = parse_int(a, value());
    } else if (a == "--lm-max-ngrams") {
      config.lm_prune.max_ngrams = parse_int(a, value());
    } else if (a == "--nbest") {
      config.nbest = parse_int(a, value());
    } else if (a == "--no-rescore") {
      config.rescore_with_full_lm = false;
    } else if (a == "--lm-histories") {
      config.search.lm_histories = parse_int(a, value());
    } else if (a == "--topn") {
      config.top_n = parse_int(a, value());
    } else if (a == "--backend") {
      config.scoring_backend = value();
    } else if (a == "--search") {
      config.search_backend = value();
    } else if (a == "--device-id") {
      config.device_id = parse_int(a, value());
    } else if (a == "--cache") {
      config.cache_dir = value();
    } else if (a == "--mfc") {
      mfc_input = true;
    } else if (a == "--times") {
      times = true;
    } else if (a == "-v" || a == "--verbose") {
      verbose = true;
    } else if (a == "--") {
      for (++i; i < argc; ++i) files.push_back(argv[i]);
    } else if (!a.empty() && a[0] == '-') {
      usage_error("unknown option " + a);
    } else {
      files.push_back(a);
    }
  }
  if (files.empty()) usage_error("no input files");
  // A --beam narrower than the default word-end beam narrows that too (as
  // pocketsphinx, which allows any pair); given both, wbeam must fit.
  if (!wbeam_given && config.search.word_end_beam > config.search.beam)
    config.search.word_end_beam = config.search.beam;
  if (!config.jsgf_rule.empty() && config.grammar_kind != GrammarKind::kJsgf)
    usage_error("--rule applies to --jsgf only");

  using clock = std::chrono::steady_clock;
  const auto t_load = clock::now();
  std::string log;
  Recognizer rec(config, &log);
  const double load_s = std::chrono::duration<double>(clock::now() - t_load).count();
  if (verbose) std::fprintf(stderr, "%s", log.c_str());

  const int sample_rate = static_cast<int>(rec.feature_options().frame.sample_rate);
  double audio_s = 0.0, wall_s = 0.0;
  int failed = 0;
  for (const std::string& path : files) {
    try {
      RecognitionResult r;
      double dur = 0.0, secs = 0.0;  // seconds of speech, and of recognition
      if (mfc_input) {
        const int dim = rec.feature_options().base_dim();
        const FeatureMatrix cep = read_sphinx_mfc(path, dim);
        const auto t0 = clock::now();
        r = rec.recognize_cepstra(cep.data.data(), cep.rows, dim);
        secs = std::chrono::duration<double>(clock::now() - t0).count();
        dur = static_cast<double>(cep.rows) * rec.feature_options().frame.frame_shift_ms / 1000.0;
      } else {
        const AudioData audio = read_audio(path, sample_rate);
        for (const std::string& w : audio.warnings)
          std::fprintf(stderr, "%s: warning: %s\n", kProgram, w.c_str());
        if (audio.sample_rate != sample_rate)
          throw std::runtime_error(path + ": sample rate " + std::to_string(audio.sample_rate) +
                                   " Hz, but the model expects " + std::to_string(sample_rate) +
                                   " Hz (resample it first, e.g. with sox)");
        const auto t0 = clock::now();
        r = rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
        secs = std::chrono::duration<double>(clock::now() - t0).count();
        dur = static_cast<double>(audio.samples.size()) / sample_rate;
      }
      audio_s += dur;
      wall_s += secs;
      std::printf("%s (%s)\n", r.text().c_str(), utterance_id(path).c_str());
      if (times)
        for (const HypothesisWord& w : r.best.words)
          std::printf("# %s %d %d %.3f\n", w.text.c_str(), w.start_frame, w.end_frame, w.confidence);
      for (size_t k = 0; k < r.nbest.size(); ++k)
        std::printf("# nbest %zu %.3f %.4f: %s\n", k + 1, r.nbest[k].cost, r.nbest[k].confidence,
                    r.nbest[k].text().c_str());
      std::fflush(stdout);
      if (verbose)
        std::fprintf(stderr, "%s: %.2f s audio, %lld frames, %.3f s, RTF %.4f%s\n", path.c_str(), dur,
                     static_cast<long long>(r.frames), secs, dur > 0 ? secs / dur : 0.0,
                     r.best.final_state ? "" : " (no final state reached)");
    } catch (const std::exception& e) {
      ++failed;
      error(e.what());
    }
  }
  std::fprintf(stderr,
               "%s: %zu file(s), %.2f s audio, %.3f s wall (%.3f s loading), RTF %.4f "
               "(scoring %s, search %s)\n",
               kProgram, files.size(), audio_s, wall_s, load_s, audio_s > 0 ? wall_s / audio_s : 0.0,
               rec.scoring_backend().name(), rec.search_backend());
  if (verbose) {
    const RecognizerTimings& t = rec.timings();
    const SearchStats& st = rec.search_stats();
    std::fprintf(stderr,
                 "%s: features %.3f s, scoring %.3f s, search %.3f s; last utterance: %lld frames, "
                 "%.0f live tokens a frame (at most %lld), %.2f closure passes a frame, "
                 "%lld record collections\n",
                 kProgram, t.features, t.scoring, t.search, static_cast<long long>(st.frames),
                 st.frames > 0 ? static_cast<double>(st.tokens_expanded) / st.frames : 0.0,
                 static_cast<long long>(st.max_live_tokens),
                 st.frames > 0 ? static_cast<double>(st.epsilon_passes) / st.frames : 0.0,
                 static_cast<long long>(st.collections));
    if (st.word_end_events > 0)
      std::fprintf(stderr,
                   "%s: last utterance: %lld word-end events rescored with the full LM in %lld "
                   "rounds, %.3f s on the host\n",
                   kProgram, static_cast<long long>(st.word_end_events),
                   static_cast<long long>(st.rescore_rounds), st.rescore_seconds);
  }
  return failed > 0 ? 1 : 0;
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
