// gpuspeech-transcribe: speech to text for audio files, one sclite "trn"
// line per file. The usage text below is the reference for its behaviour.
#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <chrono>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/engine/stream_count.h"
#include "common/engine/fiber_pool.h"
#include "common/engine/stream_maker.h"
#include "common/engine/thread_priority.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_writer.h"
#include "common/fmllr/channel_priors.h"
#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/fmllr_stats_io.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"
#include "common/search/lattice_options.h"
#include "common/fmllr/online_fmllr.h"
#include "common/model/acoustic_model.h"
#include "common/engine/recognizer.h"
#include "common/fmllr/speaker_clusters.h"
#include "common/fmllr/spk2utt.h"
#include "common/fmllr/vtln_choice.h"
#include "common/features/wav_reader.h"

#ifndef GPUSPEECH_VERSION
#define GPUSPEECH_VERSION "unknown"
#endif

namespace gpuspeech {

constexpr const char* kProgram = "gpuspeech-transcribe";

constexpr const char* kUsage = R"USAGE(Usage: gpuspeech-transcribe [OPTIONS] FILE...

Recognises speech in each FILE and prints one line per file in sclite's trn
format, "words (utterance-id)", the id being the file's base name without
its extension. A timing summary goes to standard error.

With an n-gram LM (the default), each file is decoded as measured best on
real and degraded audio: pass 1, a speaker transform (fMLLR; the speakers
found by clustering the files' cepstra, unless --spk2utt) estimated from
its words, and the final decoding of the transformed features with a
word-lattice pass. Lines come out in the files' order.
--one-pass decodes each file once (about 2.5 times faster). Grammars and
keyphrases decode once.

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
  --beam X              beam, as a probability ratio (default 1e-42)
  --wbeam X             word-end beam (default 7e-29)
  --maxactive N         most graph states kept per frame (default 10000)
  --lw X                language weight (default 7.5 with an n-gram LM, 6.5
                        with a grammar or keyphrases)
  --wip X               word insertion penalty (default 0.65)
  --silprob X           silence probability (default 0.005)
  --fillprob X          filler probability (default 1e-8)
  --lm-max-order N      compile the graph from the LM's n-grams up to order N
                        only (default: all)
  --lm-max-ngrams N     ... and at most N n-grams of order 2 and up, those that
                        matter most (relative entropy); default: all
  --topn N              Gaussians per codebook and frame in scoring (default 16;
                        pocketsphinx's -topn is 4; 0 = all, exact mixtures)
  --density-floor X     Gaussian densities more than X nats below the best
                        of their stream at a frame are floored there
                        (default 9.83, pocketsphinx's bound; 0 = exact)
  --no-rescore          when the graph was built from a pruned LM (large LMs
                        are pruned automatically), do not apply the full LM
                        at word ends (faster, less accurate)
  --lm-histories N      word-end rescoring: tokens with different LM
                        histories kept per graph state (default 3)
  --lattice-lw X        final results from a second pass: the best path
                        through the word lattice of the search's word ends,
                        with the full LM at language weight X (0: off;
                        needs word-end rescoring). Default 8.5 with an LM
                        rescored at word ends (the en-us one), else 0
  --lattice-wip X       the lattice pass's word insertion penalty (default
                        2e-5; the search's --wip inserts words there)
  --one-pass            decode each file once: no fMLLR two-pass, no
                        lattice pass (the fastest, and what the gpudecoder
                        element does; the default before 2026-12-01)
  --nbest N             also print up to N alternatives per file, as
                        "# nbest K cost confidence: words", on stdout

Speaker adaptation (feature-space MLLR, docs/transcribe.md):
  --fmllr MODE          none | two-pass (default with an n-gram LM, unless
                        --one-pass): decode each speaker's files,
                        align the words to the model's states, estimate one
                        fMLLR transform per speaker from those frames (speech
                        only), and decode the transformed features again
                        (with --fmllr-redecode, re-estimate from that decoding
                        first); the last pass is what is printed. A report
                        goes to stderr (given --fmllr, or -v) | apply:
                        decode once with the
                        transforms saved in --fmllr-dir by a two-pass run
  --spk2utt FILE        Kaldi spk2utt: "speaker utt1 utt2 ..." per line, the
                        utterance ids being the files' ids (base names); every
                        file must be listed exactly once (default: the
                        speakers found by clustering)
  --cluster-speakers    two-pass without --spk2utt (the default): group the
                        files into speakers by their cepstra (BIC clustering
                        of one Gaussian a file; -v lists the groups), each
                        named cluster-<its first file's id>
  --no-cluster-speakers each file its own speaker, named by its id
  --fmllr-dir DIR       two-pass: write each speaker's transform to
                        DIR/<speaker>.mat (Kaldi text matrix [A b], what
                        transform-feats reads; DIR is created), the
                        statistics it came from to DIR/<speaker>.stats
                        (gpudecoder's adapt-prior reads them), the
                        speakers to DIR/spk2utt and the model's signature
                        to DIR/model (what a channel prior library
                        holds; tools/make-channel-priors.sh); apply: read
                        them (the
                        speakers from DIR/spk2utt unless --spk2utt; a file
                        it does not list is its own speaker).
                        Bytes of the speaker id other than ASCII letters,
                        digits, '-', '_' and a '.' not leading are written
                        %XX, as the gpufmllr element names its files
  --fmllr-min-frames X  aligned speech frames a speaker needs for a
                        transform (default 300, 3 s); fewer: identity
  --fmllr-em-passes N   estimation passes on pass 1's alignment (default 1):
                        each later one recomputes the posteriors on the
                        features under the current transform (EM); a pass
                        that makes no update ends them, the last update is
                        used, and the report has a line per pass
  --fmllr-redecode N    after estimating, N times: decode under the transform,
                        align those words and estimate again from it (default
                        1; 0: the plain two-pass). Each costs a decoding pass
  --fmllr-update U      full (default: 39 x 40, all of [A b]) | block (A in
                        three diagonal blocks, static, delta and
                        acceleration, and b: 3 x 13 x 14 parameters) | diag
                        (diagonal A and offset b: 2 x 39 parameters, for
                        little data) | offset (b alone) | auto (per speaker, the richest type
                        with 2 aligned frames a parameter: offset, diag from
                        156 frames, full from 3120; the gpufmllr element's rule)
  --fmllr-vtln          for a speaker with under 1 500 frames (15 s) of
                        aligned speech, the first estimate is a VTLN warp
                        (0.80-1.20, done on the cepstra) with a diagonal
                        transform, chosen by the fMLLR objective along pass
                        1's alignment, each warp with posteriors on its own
                        features; the re-decode under it (--fmllr-redecode)
                        gives the alignment the full estimate learns from
                        (docs/transcribe.md)
  --fmllr-prior-frames X
                        a full or block update is drawn towards the diagonal estimate
                        of the same statistics as if by X frames of speech
                        that favour it (default 0: none); with more data
                        than X the data dominate (docs/fmllr.md)

Front end (pocketsphinx's defaults: both on; noise and silence removal
not for --mfc input, the CMN rule for both; and declipping):
  --no-remove-noise     no spectral noise subtraction (pocketsphinx
                        -remove_noise no)
  --noise-start first-sound|first-frame
                        where the noise estimate starts: past any digital
                        silence, at the first sound's energy (default: a
                        file's leading noise is taken for noise at once),
                        or at the first frame, at its energy / 20, as
                        pocketsphinx does
  --no-remove-silence   decode every frame instead of dropping those the
                        voice activity detector calls silence (pocketsphinx
                        -remove_silence no)
  --no-cmn-skip-negative-c0
                        take the CMN mean over every frame; by default
                        (--cmn-skip-negative-c0) frames with a negative c0
                        (digital silence) are left out, as Sphinx's CMN
                        does (docs/benchmarks.md)
  --no-declip           leave clipped peaks as they are; by default runs of
                        2 to 4 ms of equal samples at the signal's peak level
                        that recur at one level (a level pushed past full
                        scale) are redrawn from the samples around them
                        before the front end

Devices:
  --backend B           scoring backend: auto (default) | cuda | opencl | cpu
  --search S            search: auto (cuda when scoring on cuda, else cpu) |
                        cpu | cuda
  --device-id N         device index (default 0); -1: each stream on the device
                        with the fewest streams (several GPUs)
  --streams N           decode N files at once, each stream on its own thread,
                        all sharing one copy of the model, graph and LM
                        (default, at most one per file: with the cpu search
                        one per CPU core; with the cuda search as many as
                        the device's free memory holds at 64 MiB each, less
                        1 GiB, at most 256 a device; batched from 8).
                        Results are printed in the order of the FILEs and
                        are identical whatever N. With --fmllr a stream
                        decodes a speaker's files: N speakers at once,
                        output in the speakers' order, identical whatever N.
  --fibers T            run the streams as fibers on T threads instead of a
                        thread each (common/engine/fiber_pool.h): a stream
                        waiting for the batched cuda search gives its thread
                        to the others. Same output. 0: a thread a stream.
                        Default: one per CPU core when the batched cuda
                        search runs more streams than there are cores, else
                        0.
  --stream-nice N       run each stream's thread at nice value N (0-19,
                        default 0: the process's own). With hundreds of
                        streams on the batched cuda search, 5-19 lets the
                        batcher's own threads see finished rounds sooner
                        (+4-6 % at 256 streams, docs/benchmarks.md)
  --batched-search M    with the cuda search: on | off | auto (default: on
                        from 8 streams): every stream's search rounds run
                        together in shared device launches; same results
  --list-backends       show which backends this build has and can use

Other:
  --cache DIR           graph cache directory (default $GPUSPEECH_CACHE_DIR,
                        $XDG_CACHE_HOME/gpuspeech or ~/.cache/gpuspeech;
                        "-" compiles every time and caches nothing)
  --times               after each line, one "# word start end confidence"
                        line per word (frames of 10 ms at the model's rate,
                        counted in the audio, silence removed or not)
  -v, --verbose         what was loaded, the graph, backends, per-file times
  -h, --help            this text
  --version             the version

Exit status: 0 if every file was transcribed, 1 otherwise (a failing file is
reported on stderr and the others still run; a malformed --spk2utt file, or
one that does not list exactly the input files, stops before decoding), 2 on
bad usage.
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

void list_backends_and_exit() {
  for (const BackendInfo& b : list_backends())
    std::printf("%-7s %s%s\n", b.name.c_str(),
                !b.compiled ? "not built" : (b.usable ? "usable: " : "not usable: "),
                b.compiled ? b.detail.c_str() : "");
  std::exit(0);
}

// --- two-pass fMLLR -----------------------------------------------------------

enum class FmllrMode { kNone, kTwoPass, kApply };

// One speaker's files, as indices into the command line's list.
struct Speaker {
  std::string name;
  std::vector<size_t> files;
};

// Each file its own speaker (named by its utterance id), or the speakers of
// a spk2utt file, which must list every input file exactly once and no
// other utterance. Speakers come in the order of their first file on the
// command line. Throws with "FILE:LINE: reason".
// `saved`: the spk2utt is the one a two-pass run wrote beside its
// transforms (--fmllr apply without --spk2utt), and may list other files
// than these: a file it lists takes its speaker, any other is its own.
std::vector<Speaker> group_by_speaker(const std::vector<std::string>& files,
                                      const std::string& spk2utt_path, bool saving_transforms,
                                      bool saved = false) {
  // Utterance ids must be unique where they name something: the spk2utt
  // entries, or (without spk2utt) the transform files saved. Each file its
  // own speaker, nothing saved: two files may share a base name.
  std::map<std::string, size_t> file_of;
  const bool unique_ids = !spk2utt_path.empty() || saving_transforms;
  for (size_t i = 0; i < files.size() && unique_ids; ++i) {
    const std::string id = utterance_id(files[i]);
    const auto [it, added] = file_of.emplace(id, i);
    if (!added)
      throw std::runtime_error("two input files have the utterance id '" + id + "' (" +
                               files[it->second] + " and " + files[i] +
                               "): --fmllr needs each file's base name to be unique");
  }
  std::vector<Speaker> out;
  if (spk2utt_path.empty()) {
    for (size_t i = 0; i < files.size(); ++i) out.push_back({utterance_id(files[i]), {i}});
    return out;
  }
  const SpeakerMap map = read_spk2utt(spk2utt_path);
  for (size_t s = 0; s < map.speakers.size() && !saved; ++s)
    for (const std::string& utt : map.utterances[s])
      if (file_of.find(utt) == file_of.end())
        throw std::runtime_error(spk2utt_path + ":" + std::to_string(map.speaker_lines[s]) +
                                 ": utterance '" + utt + "' (speaker '" + map.speakers[s] +
                                 "') is not among the input files (ids are the files' base "
                                 "names without extension)");
  std::vector<int> slot(map.speakers.size(), -1);  // speaker -> index in out
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string id = utterance_id(files[i]);
    const int s = map.speaker_of(id);
    if (s < 0 && saved) {
      out.push_back({id, {i}});
      continue;
    }
    if (s < 0)
      throw std::runtime_error(spk2utt_path + ": no speaker lists utterance '" + id + "' (" +
                               files[i] + ")");
    if (slot[static_cast<size_t>(s)] < 0) {
      slot[static_cast<size_t>(s)] = static_cast<int>(out.size());
      out.push_back({map.speakers[static_cast<size_t>(s)], {}});
    }
    out[static_cast<size_t>(slot[static_cast<size_t>(s)])].files.push_back(i);
  }
  return out;
}

void make_directory(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error(dir + ": exists and is not a directory (--fmllr-dir)");
    return;
  }
  if (::mkdir(dir.c_str(), 0777) != 0)
    throw std::runtime_error(dir + ": cannot create the --fmllr-dir directory: " + std::strerror(errno));
}

// Where a two-pass run with --fmllr-dir writes down its speakers (spk2utt),
// for --fmllr apply without --spk2utt to take the same ones.
std::string speakers_file_path(const std::string& dir) { return dir + "/spk2utt"; }

// Writes DIR/model, the signature of the acoustic model's means
// (model_file_signature); returns why not ("" when written).
std::string write_model_file(const std::string& dir, const std::string& model_dir) {
  const std::string path = dir + "/model";
  std::string line;
  try {
    line = model_file_signature(model_dir + "/means") + "\n";
  } catch (const std::exception& e) {
    return path + ": not written: " + e.what();
  }
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return path + ": cannot write: " + std::strerror(errno);
  const bool ok = std::fputs(line.c_str(), f) >= 0;
  if (std::fclose(f) != 0 || !ok) return path + ": cannot write: " + std::strerror(errno);
  return "";
}

// Writes DIR/spk2utt; returns why not ("" when written). Ids with white
// space cannot be written as spk2utt; an older file is removed then, so
// that apply does not take stale speakers.
std::string write_speakers_file(const std::string& dir, const std::vector<Speaker>& speakers,
                                const std::vector<std::string>& files) {
  const std::string path = speakers_file_path(dir);
  auto plain = [](const std::string& id) {
    return !id.empty() && std::none_of(id.begin(), id.end(), [](unsigned char c) { return std::isspace(c); });
  };
  std::string text;
  for (const Speaker& spk : speakers) {
    std::string line = spk.name;
    bool ok = plain(spk.name);
    for (size_t i : spk.files) {
      const std::string id = utterance_id(files[i]);
      ok = ok && plain(id);
      line += " " + id;
    }
    if (!ok) {
      std::remove(path.c_str());
      return path + ": not written: a speaker or utterance id with white space or empty ('" + line +
             "'); --fmllr apply needs --spk2utt for these transforms";
    }
    text += line + "\n";
  }
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return path + ": cannot write: " + std::strerror(errno);
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (std::fclose(f) != 0 || !written) return path + ": cannot write: " + std::strerror(errno);
  return "";
}

// Model features of one file (frames x feature_dim()), and its length.
struct UtteranceFeatures {
  FeatureMatrix feats;
  double seconds = 0.0;
  // Audio frame of each row when silence removal dropped frames (empty:
  // row t is audio frame t), so that --times stay on the recording's clock.
  std::vector<int64_t> audio_frames;

  RecognitionResult on_audio_clock(RecognitionResult r) const {
    if (audio_frames.empty()) return r;
    const int64_t n = static_cast<int64_t>(audio_frames.size());
    auto map = [&](int32_t t) {
      return static_cast<int32_t>(t < n ? audio_frames[static_cast<size_t>(t)]
                                        : audio_frames.back() + (t - n + 1));
    };
    for (HypothesisWord& w : r.best.words) {
      w.start_frame = map(w.start_frame);
      w.end_frame = map(w.end_frame);
    }
    return r;
  }
};

// printf into a string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string out(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

// What both modes share: reading input, decoding, printing, totals.
struct Transcriber {
  Recognizer& rec;
  bool mfc_input = false;
  bool times = false;
  bool verbose = false;
  // The per-speaker fMLLR report lines on stderr: with an explicit --fmllr
  // or -v (the default two-pass keeps quiet).
  bool adaptation_reports = true;
  double audio_s = 0.0, wall_s = 0.0;
  int failed = 0;
  // Where its text goes: stdout and stderr when null; with several
  // streams, while the stream works on a file, buffers that are printed in
  // the files' order once the files before are (run_units_in_order,
  // SpeakerScheduler).
  std::string* out = nullptr;
  std::string* err = nullptr;

  void write_out(const std::string& text) const {
    if (out != nullptr) {
      *out += text;
    } else {
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    }
  }
  void write_err(const std::string& text) const {
    if (err != nullptr) *err += text;
    else std::fputs(text.c_str(), stderr);
  }
  // error() and a report line ("gpuspeech-transcribe: ..."), through the sinks.
  void error(const std::string& msg) const { write_err(format("%s: error: %s\n", kProgram, msg.c_str())); }
  void report(const std::string& line) const { write_err(format("%s: %s\n", kProgram, line.c_str())); }
  void adaptation_report(const std::string& line) const {
    if (adaptation_reports) report(line);
  }

  // `warn`: print the reader's warnings (false where the file is read
  // again later, which prints them then).
  AudioData audio(const std::string& path, bool warn = true) const {
    const int sample_rate = static_cast<int>(rec.feature_options().frame.sample_rate);
    AudioData a = read_audio_file(path, sample_rate);
    if (warn)
      for (const std::string& w : a.warnings) write_err(format("%s: warning: %s\n", kProgram, w.c_str()));
    if (a.sample_rate != sample_rate)
      throw std::runtime_error(path + ": sample rate " + std::to_string(a.sample_rate) +
                               " Hz, but the model expects " + std::to_string(sample_rate) +
                               " Hz (resample it first, e.g. with sox)");
    return a;
  }

  // A .mfc file's cepstra (--mfc), frames x base_dim().
  FeatureMatrix cepstra(const std::string& path) const {
    return read_sphinx_mfc(path, rec.feature_options().base_dim());
  }
  double cepstra_seconds(const FeatureMatrix& cep) const {
    return static_cast<double>(cep.rows) * rec.feature_options().frame.frame_shift_ms / 1000.0;
  }
  // The recogniser's complaints about a file's cepstra (a NaN), naming it.
  [[noreturn]] static void rethrow_for(const std::string& path, const std::invalid_argument& e) {
    throw std::runtime_error(path + ": " + e.what());
  }

  // The features the recogniser would decode: the front end on audio, or
  // the model's CMN and deltas on .mfc cepstra (what recognize_cepstra
  // decodes, from the same Recognizer::features_from_cepstra).
  UtteranceFeatures features(const std::string& path) const {
    UtteranceFeatures u;
    if (mfc_input) {
      const FeatureMatrix cep = cepstra(path);
      try {
        u.feats.data = rec.features_from_cepstra(cep.data.data(), cep.rows, cep.dim);
      } catch (const std::invalid_argument& e) {
        rethrow_for(path, e);
      }
      u.feats.dim = rec.feature_dim();
      u.feats.rows = static_cast<int64_t>(u.feats.data.size()) / u.feats.dim;
      u.seconds = cepstra_seconds(cep);
    } else {
      const AudioData a = audio(path);
      const std::vector<float> f = rec.compute_features(a.samples.data(), static_cast<int64_t>(a.samples.size()));
      u.feats.dim = rec.feature_dim();
      u.feats.rows = static_cast<int64_t>(f.size()) / u.feats.dim;
      u.feats.data = f;
      u.seconds = static_cast<double>(a.samples.size()) / a.sample_rate;
      if (rec.feature_options().noise.remove_silence)
        for (int64_t t = 0; t < u.feats.rows; ++t) u.audio_frames.push_back(rec.audio_frame(t));
    }
    return u;
  }

  RecognitionResult decode(const float* feats, int64_t rows) {
    rec.reset();
    rec.push_features(feats, rows);
    return rec.finish();
  }

  void print(const std::string& path, const RecognitionResult& r, double dur, double secs) const {
    std::string text = format("%s (%s)\n", r.text().c_str(), utterance_id(path).c_str());
    if (times)
      for (const HypothesisWord& w : r.best.words)
        text += format("# %s %d %d %.3f\n", w.text.c_str(), w.start_frame, w.end_frame, w.confidence);
    for (size_t k = 0; k < r.nbest.size(); ++k)
      text += format("# nbest %zu %.3f %.4f: %s\n", k + 1, r.nbest[k].cost, r.nbest[k].confidence,
                     r.nbest[k].text().c_str());
    write_out(text);
    if (verbose)
      write_err(format("%s: %.2f s audio, %lld frames, %.3f s, RTF %.4f%s\n", path.c_str(), dur,
                       static_cast<long long>(r.frames), secs, dur > 0 ? secs / dur : 0.0,
                       r.best.final_state ? "" : " (no final state reached)"));
  }
};

// One file decoded by the plain (no fMLLR) mode: its result, or why not.
struct FileOutcome {
  bool ok = false;
  std::string error;
  RecognitionResult result;
  double dur = 0.0, secs = 0.0;  // seconds of speech, and of recognition
};

FileOutcome transcribe_file(Transcriber& tr, const std::string& path) {
  using clock = std::chrono::steady_clock;
  FileOutcome o;
  try {
    if (tr.mfc_input) {
      const FeatureMatrix cep = tr.cepstra(path);
      const auto t0 = clock::now();
      try {
        o.result = tr.rec.recognize_cepstra(cep.data.data(), cep.rows, cep.dim);
      } catch (const std::invalid_argument& e) {
        Transcriber::rethrow_for(path, e);
      }
      o.secs = std::chrono::duration<double>(clock::now() - t0).count();
      o.dur = tr.cepstra_seconds(cep);
    } else {
      const AudioData audio = tr.audio(path);
      const auto t0 = clock::now();
      o.result = tr.rec.recognize(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
      o.secs = std::chrono::duration<double>(clock::now() - t0).count();
      o.dur = static_cast<double>(audio.samples.size()) / audio.sample_rate;
    }
    o.ok = true;
  } catch (const std::exception& e) {
    o.error = e.what();
  }
  return o;
}

// --stream-nice for the threads (or fibers' threads) that run streams:
// apply() on each; when the nice value cannot be set, the warning is
// printed once for all of them.
class StreamNice {
 public:
  explicit StreamNice(int nice) : nice_(nice) {}
  void apply() {
    if (nice_ > 0)
      if (const std::string why = set_thread_nice(nice_); !why.empty())
        std::call_once(warned_, [&] {
          std::fprintf(stderr, "%s: warning: --stream-nice %d: %s\n", kProgram, nice_, why.c_str());
        });
  }

 private:
  int nice_;
  std::once_flag warned_;
};

// Work units (files) over `streams`, one
// Transcriber each on its own thread (or fiber): units are handed out in
// order as streams come free, and a unit's text, held in its own buffers
// while other units run, is printed once every unit before it has been, so
// the output is that of one stream whatever the timing. With one stream the
// text goes out as it comes. `decode_unit(tr, i)` reports its errors
// through `tr`; what escapes it is given to `escaped(tr, i, what)`, so that
// nothing ends a stream's thread. `last_stream`: the stream of the last
// unit printed.
void run_units_in_order(std::vector<Transcriber>& streams, size_t units,
                        const std::function<void(Transcriber&, size_t)>& decode_unit,
                        const std::function<void(Transcriber&, size_t, const char*)>& escaped,
                        int stream_nice, int fibers, size_t* last_stream) {
  auto one_unit = [&](Transcriber& tr, size_t i) {
    try {
      decode_unit(tr, i);
    } catch (const std::exception& e) {
      escaped(tr, i, e.what());
    }
  };
  StreamNice nice(stream_nice);
  auto be_nice = [&nice] { nice.apply(); };
  if (streams.size() == 1 && fibers == 0) {
    be_nice();
    for (size_t i = 0; i < units; ++i) one_unit(streams[0], i);
    return;
  }
  struct Held {
    std::string out, err;
    size_t stream = 0;
    bool done = false;
  };
  std::vector<Held> held(units);
  std::atomic<size_t> next{0};
  std::mutex mutex;  // guards held, printed and *last_stream
  size_t printed = 0;
  auto work = [&](size_t k) {
    be_nice();
    Transcriber& tr = streams[k];
    for (size_t i = next++; i < units; i = next++) {
      std::string out, err;
      tr.out = &out;
      tr.err = &err;
      one_unit(tr, i);
      tr.out = tr.err = nullptr;
      std::lock_guard<std::mutex> lock(mutex);
      held[i] = {std::move(out), std::move(err), k, true};
      for (; printed < units && held[printed].done; ++printed) {
        std::fputs(held[printed].err.c_str(), stderr);
        std::fputs(held[printed].out.c_str(), stdout);
        std::fflush(stdout);
        *last_stream = held[printed].stream;
        held[printed] = Held{};  // printed: free its text
        held[printed].done = true;
      }
    }
  };
  if (fibers > 0) {
    std::vector<std::function<void()>> tasks;
    for (size_t k = 0; k < streams.size(); ++k) tasks.push_back([&work, k] { work(k); });
    run_fibers(std::move(tasks), fibers);
    return;
  }
  std::vector<std::thread> threads;
  for (size_t k = 1; k < streams.size(); ++k) threads.emplace_back(work, k);
  work(0);
  for (std::thread& t : threads) t.join();
}

// The plain mode: each file decoded by one stream and printed.
void transcribe_files(std::vector<Transcriber>& streams, const std::vector<std::string>& files,
                      size_t* last_stream, int stream_nice, int fibers) {
  run_units_in_order(
      streams, files.size(),
      [&files](Transcriber& tr, size_t i) {
        const FileOutcome o = transcribe_file(tr, files[i]);
        if (o.ok) {
          tr.audio_s += o.dur;
          tr.wall_s += o.secs;
          tr.print(files[i], o.result, o.dur, o.secs);
        } else {
          ++tr.failed;
          tr.error(o.error);
        }
      },
      [&files](Transcriber& tr, size_t i, const char* what) {
        ++tr.failed;
        tr.error(files[i] + ": " + what);
      },
      stream_nice, fibers, last_stream);
}

// One file of a speaker in the --fmllr modes, between the phases.
struct PendingFile {
  size_t file = 0;
  bool loaded = false;  // features read (two-pass: in pass 1; apply: in its one pass)
  UtteranceFeatures u;
  double secs = 0.0;  // wall time spent on it so far (reading, pass 1, re-estimation)
  // Pass 1's alignment (two-pass): frames [align_first, + senones.size()).
  int64_t align_first = 0;
  std::vector<int32_t> senones;
  // Two-pass, a file that is its speaker's only one and has too few
  // aligned frames for a transform: the identity is certain, and the final
  // pass would decode the same features to the same search, so its result
  // is taken in pass 1.
  bool has_result = false;
  RecognitionResult result;
};

// The files as speakers found by BIC clustering of their cepstra
// (speaker_clusters.h), c1..c(n-1): c0 follows the recording level, not
// the voice. The cepstra are computed on every stream at once. A file that
// cannot be read stays its own speaker (its decoding reports the error).
// Named "cluster-ID" after its first file.
std::vector<Speaker> cluster_files(std::vector<Transcriber>& streams,
                                   const std::vector<std::string>& files) {
  const int base = streams.front().rec.feature_options().base_dim();
  std::vector<GaussianSummary> sums(files.size(), GaussianSummary(base - 1));
  std::atomic<size_t> next{0};
  auto summarize = [&](size_t k) {
    const Transcriber& tr = streams[k];
    for (size_t i = next++; i < files.size(); i = next++) {
      GaussianSummary g(base - 1);
      try {
        if (tr.mfc_input) {
          const FeatureMatrix cep = tr.cepstra(files[i]);
          g.add(cep.data.data(), cep.rows, cep.dim, 1);
        } else {
          const AudioData a = tr.audio(files[i], false);  // its decoding warns
          std::vector<float> cep;
          tr.rec.compute_features(a.samples.data(), static_cast<int64_t>(a.samples.size()), &cep);
          g.add(cep.data(), static_cast<int64_t>(cep.size()) / base, base, 1);
        }
      } catch (const std::exception&) {
        g = GaussianSummary(base - 1);  // no frames: a cluster of its own
      }
      sums[i] = std::move(g);
    }
  };
  std::vector<std::thread> threads;
  for (size_t k = 1; k < streams.size() && k < files.size(); ++k) threads.emplace_back(summarize, k);
  summarize(0);
  for (std::thread& t : threads) t.join();
  const std::vector<int> of = cluster_speakers(sums);
  std::vector<Speaker> out;
  for (size_t i = 0; i < files.size(); ++i) {
    const size_t c = static_cast<size_t>(of[i]);
    if (c == out.size()) out.push_back({"cluster-" + utterance_id(files[i]), {}});
    out[c].files.push_back(i);
  }
  return out;
}

// What the --fmllr modes are asked to do.
struct AdaptationPlan {
  FmllrMode mode = FmllrMode::kTwoPass;
  FmllrOptions options;
  // Each estimation's update type is the richest that the speaker's
  // statistics support (fmllr_update_type_for_frames with the gpufmllr
  // element's frames_per_parameter), not options.update.
  bool update_by_data = false;
  int em_passes = 1;
  int redecodes = 1;
  // --fmllr-vtln: the first estimate a linear VTLN warp with a diagonal
  // transform (vtln_choice.h) instead of options.update, for a speaker with fewer
  // than vtln_below_frames frames of statistics after pass 1. With more, a
  // full first estimate aligns the re-decode better than a warp does: a
  // voice's six sentences (about 2 000 frames) through a telephone band
  // lost 13.1 -> 22.2 % with the warp first (docs/benchmarks.md, "VTLN on
  // the cepstra"); 1 500 is where the live decoder's young form ends
  // (AdaptiveRedecoderOptions::young_below_frames).
  double vtln_below_frames = 1500.0;
  // The warps of the model's front end, made once; null without the flag.
  std::shared_ptr<const LinearVtlnCandidates> vtln_candidates;
  std::string fmllr_dir;  // two-pass: where transforms go; apply: where they are read
};

// The --fmllr modes on every stream at once. Each speaker goes through
// phases:
//   two-pass: pass 1 (every file: decode, align the words, statistics) |
//     estimate (one transform from all the files' statistics) |
//     [re-decode (every file under the transform: decode, align,
//      statistics) | re-estimate] x --fmllr-redecode |
//     final (every file decoded under the transform, printed);
//   apply: read the saved transform | final.
// The files of a phase are decoded by whichever streams are free, so one
// speaker with many files keeps every stream busy; an estimate waits for
// all of its speaker's files and is one task. Speakers are taken up in
// order, at most two per stream at once (their features are held in
// memory between the phases). The statistics of a phase are summed in the
// files' order whatever order the streams finish them in, and each file's
// text is printed in the command line's order once the files before it
// are: the output is that of one stream whatever the timing.
class SpeakerScheduler {
 public:
  SpeakerScheduler(std::vector<Transcriber>& streams, const std::vector<std::string>& files,
                   const std::vector<Speaker>& speakers, const AdaptationPlan& plan)
      : streams_(streams), files_(files), plan_(plan),
        slots_(files.size()), jobs_(speakers.size()) {
    for (size_t s = 0; s < speakers.size(); ++s) jobs_[s].spk = &speakers[s];
    // Made before any decoding: a stream whose backend cannot hold them
    // (a device out of memory) stops the run here, not halfway.
    for (Transcriber& tr : streams) tools_.push_back(std::make_unique<StreamTools>(tr.rec));
  }

  // Runs every speaker to the end; `last_stream`: the stream that decoded
  // the last file printed.
  void run(int stream_nice, size_t* last_stream) {
    StreamNice nice(stream_nice);
    auto work = [&](size_t k) {
      nice.apply();
      work_on_stream(k);
    };
    std::vector<std::thread> threads;
    for (size_t k = 1; k < streams_.size(); ++k) threads.emplace_back(work, k);
    work(0);
    for (std::thread& t : threads) t.join();
    *last_stream = last_stream_;
  }

 private:
  enum class Phase { kWaiting, kLoadTransform, kPass1, kEstimate, kRedecode, kFinal, kDone };
  static bool parallel(Phase p) {
    return p == Phase::kPass1 || p == Phase::kRedecode || p == Phase::kFinal;
  }

  // One speaker's progress.
  struct Job {
    const Speaker* spk = nullptr;
    Phase phase = Phase::kWaiting;
    std::vector<PendingFile> files;  // by position in spk->files
    std::vector<char> in;            // position still decoded (its pass 1 did not fail)
    size_t handed = 0;               // positions of a parallel phase handed out
    size_t finished = 0, todo = 0;   // ... finished, and to finish
    bool serial_handed = false;      // the one task of a serial phase handed out
    // The statistics of the current decoding pass, summed in file order:
    // a file's wait in `waiting` until those before it are in.
    FmllrStats stats;
    std::vector<std::unique_ptr<FmllrStats>> waiting;
    std::vector<char> arrived;
    size_t summed = 0;
    FmllrTransform transform;
    bool estimated = false;  // the estimate after pass 1 made
    int round = 0;      // re-estimation rounds done (the re-decode in progress: round + 1)
    int used_pass = 0;  // 1-based EM pass whose estimate is in use; 0 = identity
    double shared_s = 0.0;  // estimation time, spread over the files
    int64_t aligned = 0, total_frames = 0, round_aligned = 0;
    int words_aligned = 0, words_failed = 0;
  };

  // A file's text until it is printed.
  struct Slot {
    std::string out, err;
    size_t stream = 0;
    bool done = false;
  };

  struct Task {
    size_t job = 0;
    Phase phase = Phase::kWaiting;
    size_t pos = 0;  // parallel phases: the file's position in its speaker
  };

  // What a stream keeps for its tasks.
  struct StreamTools {
    FmllrAccumulator acc;
    FmllrApplier applier;
    explicit StreamTools(Recognizer& rec)
        : acc(rec.acoustic_model().mixtures(), rec.scoring_backend()),
          applier(rec.scoring_backend(), rec.feature_dim()) {}
  };

  void work_on_stream(size_t k) {
    Transcriber& tr = streams_[k];
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      Task t;
      if (!take(&t)) {
        if (next_job_ == jobs_.size() && active_.empty()) break;
        ready_.wait(lock);
        continue;
      }
      lock.unlock();
      run_task(tr, k, *tools_[k], t);
      lock.lock();
      print_ready();
      ready_.notify_all();
    }
  }

  // Under the lock: the next task, from the speakers in progress in their
  // order, or from a speaker taken up now.
  bool take(Task* t) {
    for (;;) {
      for (size_t j : active_)
        if (take_from(j, t)) return true;
      if (next_job_ == jobs_.size() || active_.size() >= 2 * streams_.size()) return false;
      const size_t j = next_job_++;
      start_job(j);
      if (jobs_[j].phase == Phase::kDone) {
        print_ready();
        continue;
      }
      active_.push_back(j);
    }
  }

  bool take_from(size_t j, Task* t) {
    Job& job = jobs_[j];
    if (parallel(job.phase)) {
      while (job.handed < job.files.size() && !job.in[job.handed]) ++job.handed;
      if (job.handed == job.files.size()) return false;
      *t = {j, job.phase, job.handed++};
      return true;
    }
    if ((job.phase == Phase::kEstimate || job.phase == Phase::kLoadTransform) && !job.serial_handed) {
      job.serial_handed = true;
      *t = {j, job.phase, 0};
      return true;
    }
    return false;
  }

  void start_job(size_t j) {
    Job& job = jobs_[j];
    const size_t n = job.spk->files.size();
    job.files.resize(n);
    for (size_t p = 0; p < n; ++p) job.files[p].file = job.spk->files[p];
    job.in.assign(n, 1);
    const int dim = streams_.front().rec.feature_dim();
    job.transform = FmllrTransform::identity(dim);
    job.stats = FmllrStats(dim);
    if (n == 0) {
      job.phase = Phase::kDone;
      return;
    }
    enter(job, plan_.mode == FmllrMode::kApply ? Phase::kLoadTransform : Phase::kPass1);
  }

  // Under the lock: the speaker's next phase.
  void enter(Job& job, Phase phase) {
    job.phase = phase;
    job.handed = job.finished = 0;
    job.serial_handed = false;
    job.todo = 0;
    for (char c : job.in) job.todo += c != 0;
    if (phase == Phase::kPass1 || phase == Phase::kRedecode) {
      job.stats.reset(job.stats.dim);
      job.waiting.clear();
      job.waiting.resize(job.files.size());
      // Files out since pass 1 bring nothing.
      job.arrived.assign(job.in.begin(), job.in.end());
      for (char& a : job.arrived) a = !a;
      job.summed = 0;
      job.round_aligned = 0;
    }
    if (parallel(phase) && job.todo == 0) finish_job(job);
  }

  // Under the lock: a file's statistics of this pass (null: none, the file
  // failed), summed once all before it are.
  void arrive(Job& job, size_t pos, std::unique_ptr<FmllrStats> stats) {
    job.waiting[pos] = std::move(stats);
    job.arrived[pos] = 1;
    for (; job.summed < job.files.size() && job.arrived[job.summed]; ++job.summed)
      if (job.waiting[job.summed] != nullptr) {
        job.stats.add(*job.waiting[job.summed]);
        job.waiting[job.summed].reset();
      }
  }

  // Under the lock: a parallel task's file is finished; the phase ends with
  // its last file.
  void finished_one(Job& job) {
    if (++job.finished < job.todo) return;
    switch (job.phase) {
      case Phase::kPass1:
        std::none_of(job.in.begin(), job.in.end(), [](char c) { return c != 0; })
            ? finish_job(job)
            : enter(job, Phase::kEstimate);
        break;
      case Phase::kRedecode:
        enter(job, Phase::kEstimate);
        break;
      default:
        finish_job(job);
    }
  }

  void finish_job(Job& job) {
    job.phase = Phase::kDone;
    job.files.clear();
    job.files.shrink_to_fit();
    job.waiting.clear();
    for (size_t i : job.spk->files) slots_[i].done = true;
    active_.erase(std::remove(active_.begin(), active_.end(), static_cast<size_t>(&job - jobs_.data())),
                  active_.end());
  }

  // Under the lock: the speaker's files not yet printed fail with `what`
  // (told on the first of them).
  void fail_job(Transcriber& tr, Job& job, const std::string& what) {
    bool told = false;
    int count = 0;
    for (size_t p = 0; p < job.spk->files.size(); ++p) {
      Slot& s = slots_[job.spk->files[p]];
      if (s.done || (p < job.in.size() && !job.in[p])) continue;
      if (!told) s.err += format("%s: error: %s\n", kProgram, what.c_str());
      told = true;
      ++count;
    }
    tr.failed += count;
    finish_job(job);
  }

  // The file's text goes to its slot while the task runs.
  void write_to(Transcriber& tr, size_t file) {
    tr.out = &slots_[file].out;
    tr.err = &slots_[file].err;
  }
  // The speaker's reports go with its first file still decoded.
  void write_reports_to(Transcriber& tr, const Job& job) {
    for (size_t p = 0; p < job.in.size(); ++p)
      if (job.in[p]) return write_to(tr, job.spk->files[p]);
  }

  void run_task(Transcriber& tr, size_t k, StreamTools& tools, const Task& t) {
    Job& job = jobs_[t.job];
    try {
      switch (t.phase) {
        case Phase::kLoadTransform: load_transform(tr, job); break;
        case Phase::kPass1: pass1(tr, tools, job, t.pos); break;
        case Phase::kEstimate: estimate_phase(tr, tools, job); break;
        case Phase::kRedecode: redecode(tr, tools, job, t.pos); break;
        case Phase::kFinal: final_pass(tr, k, tools, job, t.pos); break;
        default: break;
      }
    } catch (const std::exception& e) {
      // What an estimate let through (the parallel phases catch their
      // files' errors themselves, and no other task of the speaker runs
      // beside a serial one): its speaker fails, the others go on.
      tr.out = tr.err = nullptr;
      std::lock_guard<std::mutex> lock(mutex_);
      fail_job(tr, job, "speaker " + job.spk->name + ": " + e.what());
    }
    tr.out = tr.err = nullptr;
  }

  // Decodes `y` (the file's features under the transform in use: its raw
  // features `x` in pass 1), aligns the words and accumulates the aligned
  // frames in tools.acc (reset first): posteriors on what was decoded,
  // statistics of the raw features (the EM step for the transform in use).
  FrameAlignment decode_and_accumulate(Transcriber& tr, StreamTools& tools, const std::string& path,
                                       const float* x, const float* y, int64_t rows,
                                       RecognitionResult* result) {
    Recognizer& rec = tr.rec;
    // These words serve as an alignment (and as pass 1's words for -v):
    // the lattice pass, when configured, is left to the final decoding.
    RecognitionResult r;
    {
      const LatticeResultOff off(rec);
      r = tr.decode(y, rows);
    }
    FrameAlignment al = rec.align(r.best.words);
    const int64_t n = static_cast<int64_t>(al.senones.size());
    if (al.first_frame < 0 || al.first_frame + n > rows)
      throw std::logic_error(path + ": alignment outside the utterance's frames");
    const size_t off = static_cast<size_t>(al.first_frame * rec.feature_dim());
    tools.acc.reset();
    tools.acc.accumulate(x + off, n,
                         supervised_posteriors(rec.acoustic_model().mixtures(), y + off, n, al.senones.data()));
    if (result != nullptr) *result = r;
    return al;
  }

  void pass1(Transcriber& tr, StreamTools& tools, Job& job, size_t pos) {
    PendingFile& d = job.files[pos];
    const std::string& path = files_[d.file];
    write_to(tr, d.file);
    std::unique_ptr<FmllrStats> stats;
    FrameAlignment al;
    try {
      const auto t0 = std::chrono::steady_clock::now();
      d.u = tr.features(path);
      d.loaded = true;
      const float* x = d.u.feats.data.data();
      RecognitionResult r;
      al = decode_and_accumulate(tr, tools, path, x, x, d.u.feats.rows, &r);
      if (job.files.size() == 1 && !(tools.acc.stats().beta >= plan_.options.min_frames)) {
        d.result = tr.rec.finish();  // the lattice pass, skipped above, on the search's records
        d.has_result = true;
      }
      stats = std::make_unique<FmllrStats>(tools.acc.stats());
      d.align_first = al.first_frame;
      d.senones = al.senones;
      d.secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (tr.verbose)
        tr.write_err(format("%s: pass 1: %s (%s)\n", path.c_str(), r.text().c_str(),
                            utterance_id(path).c_str()));
    } catch (const std::exception& e) {
      ++tr.failed;
      tr.error(e.what());
      d = PendingFile{};
      stats.reset();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (stats == nullptr) {
      job.in[pos] = 0;
      slots_[job.spk->files[pos]].done = true;
    } else {
      for (int32_t s : al.senones) job.aligned += s >= 0;
      job.total_frames += d.u.feats.rows;
      job.words_aligned += al.words_aligned;
      job.words_failed += al.words_failed;
    }
    arrive(job, pos, std::move(stats));
    finished_one(job);
  }

  void redecode(Transcriber& tr, StreamTools& tools, Job& job, size_t pos) {
    PendingFile& d = job.files[pos];
    write_to(tr, d.file);
    std::unique_ptr<FmllrStats> stats;
    int64_t aligned = 0;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      const int64_t rows = d.u.feats.rows;
      std::vector<float> y(static_cast<size_t>(rows * d.u.feats.dim));
      tools.applier.set_transform(job.transform);
      tools.applier.apply(d.u.feats.data.data(), rows, y.data());
      const FrameAlignment al =
          decode_and_accumulate(tr, tools, files_[d.file], d.u.feats.data.data(), y.data(), rows, nullptr);
      for (int32_t sen : al.senones) aligned += sen >= 0;
      stats = std::make_unique<FmllrStats>(tools.acc.stats());
    } catch (const std::exception& e) {
      // The file keeps its place in the final pass; only its statistics
      // are missing from this round.
      tr.error(files_[d.file] + ": re-estimation round " + std::to_string(job.round + 1) + ": " + e.what());
    }
    d.secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mutex_);
    job.round_aligned += aligned;
    arrive(job, pos, std::move(stats));
    finished_one(job);
  }

  // One estimation from `stats`, starting from `start` (nullptr: the
  // identity); the estimate goes to *estimated when it is an update.
  struct Pass {
    FmllrOutcome outcome = FmllrOutcome::kUpdated;
    FmllrUpdateType update = FmllrUpdateType::kFull;  // the type estimated
    std::string message;
    double beta = 0.0;
    double objective_before = 0.0, objective_after = 0.0;  // per frame, updated passes
    double log_det = 0.0;
  };
  Pass estimate(const Recognizer& rec, const FmllrStats& stats, const FmllrTransform* start,
                FmllrTransform* estimated) const {
    FmllrOptions o = plan_.options;
    if (plan_.update_by_data)
      o.update = fmllr_update_type_for_frames(stats.beta, rec.feature_dim(),
                                              OnlineFmllrOptions{}.frames_per_parameter);
    const FmllrEstimate est = estimate_fmllr(stats, o, start);
    Pass p;
    p.update = o.update;
    p.outcome = est.outcome;
    p.message = est.message;
    p.beta = stats.beta;
    if (est.outcome == FmllrOutcome::kUpdated && !est.objective.empty()) {
      p.objective_before = est.objective.front();
      p.objective_after = est.objective.back();
      p.log_det = est.transform.log_abs_det();
    }
    if (est.outcome == FmllrOutcome::kUpdated) *estimated = est.transform;
    return p;
  }
  static std::string objective_text(const Pass& p) {
    return format(", objective/frame %.3f -> %.3f (%+.3f), ln|det A| %.3f", p.objective_before,
                  p.objective_after, p.objective_after - p.objective_before, p.log_det);
  }

  // The serial phase after pass 1 or a re-decode: the estimate, its
  // reports, and which phase comes next.
  void estimate_phase(Transcriber& tr, StreamTools& tools, Job& job) {
    const auto t0 = std::chrono::steady_clock::now();
    write_reports_to(tr, job);
    const bool more = !job.estimated ? first_estimate(tr, tools, job) : reestimate(tr, job);
    job.estimated = true;
    if (!more && !plan_.fmllr_dir.empty()) {
      try {
        const std::string mat = fmllr_speaker_path(plan_.fmllr_dir, job.spk->name);
        write_fmllr_transform(mat, job.transform);
        // The statistics the transform came from, beside it: a prior for
        // gpudecoder (adapt-prior) or for another speaker on that channel.
        if (job.stats.beta > 0.0)
          write_fmllr_stats(mat.substr(0, mat.size() - 4) + ".stats", job.stats);
      } catch (const std::exception& e) {
        ++tr.failed;
        tr.error(e.what());
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mutex_);
    job.shared_s += secs;
    if (more) {
      enter(job, Phase::kRedecode);
    } else {
      enter(job, Phase::kFinal);
    }
  }

  // EM passes on pass 1's alignment: the first from the identity on pass
  // 1's posteriors; each later one on the same alignment, the posteriors
  // recomputed on the features under the current transform, the statistics
  // of the raw features, the estimate started from the current transform.
  // A pass that makes no update ends them (the next would see the same
  // statistics and start); the transform in use is the last update's
  // (identity if none). True when a re-decode follows.
  bool first_estimate(Transcriber& tr, StreamTools& tools, Job& job) {
    Recognizer& rec = tr.rec;
    const GaussianMixtures& gm = rec.acoustic_model().mixtures();
    const int em_passes = plan_.em_passes;
    if (plan_.vtln_candidates && job.stats.beta >= plan_.options.min_frames &&
        job.stats.beta < plan_.vtln_below_frames)
      return vtln_estimate(tr, job);
    std::vector<Pass> passes;
    FmllrStats stats = job.stats;
    for (int k = 1; k <= em_passes; ++k) {
      if (k > 1) {
        tools.applier.set_transform(job.transform);
        stats.reset(stats.dim);
        for (size_t p = 0; p < job.files.size(); ++p) {
          if (!job.in[p]) continue;
          const PendingFile& d = job.files[p];
          const int64_t n = static_cast<int64_t>(d.senones.size());
          const float* x = d.u.feats.data.data() + d.align_first * d.u.feats.dim;
          std::vector<float> y(static_cast<size_t>(n) * d.u.feats.dim);
          tools.applier.apply(x, n, y.data());
          tools.acc.reset();
          tools.acc.accumulate(x, n, supervised_posteriors(gm, y.data(), n, d.senones.data()));
          stats.add(tools.acc.stats());
        }
      }
      const FmllrTransform start = job.transform;
      passes.push_back(estimate(rec, stats, k > 1 ? &start : nullptr, &job.transform));
      if (passes.back().outcome != FmllrOutcome::kUpdated) break;
      job.used_pass = k;
    }

    // The summary line: what the speaker's files are decoded with.
    size_t decoded = 0;
    for (char c : job.in) decoded += c != 0;
    const Pass& shown = passes[static_cast<size_t>(job.used_pass > 0 ? job.used_pass - 1 : 0)];
    std::string report = format("fmllr speaker %s: %zu file(s), %lld of %lld frames aligned (%d words",
                                job.spk->name.c_str(), decoded, static_cast<long long>(job.aligned),
                                static_cast<long long>(job.total_frames), job.words_aligned);
    if (job.words_failed > 0) report += format(", %d not aligned", job.words_failed);
    report += format("), statistics weight %.1f, update type %s: %s", shown.beta,
                     to_string(shown.update), to_string(shown.outcome));
    if (job.used_pass > 0) {
      report += objective_text(shown);
      if (em_passes > 1) {
        report += format(", the transform of EM pass %d of %d", job.used_pass, em_passes);
        if (job.used_pass < static_cast<int>(passes.size()))
          report += format(" (pass %zu: %s, not used)", passes.size(), to_string(passes.back().outcome));
      }
    } else {
      report += ", identity kept";
    }
    if (!shown.message.empty()) report += " (" + shown.message + ")";
    tr.adaptation_report(report);
    // With several EM passes, what each one did: an update (its own
    // numbers), or the reason it was refused and which transform stayed;
    // passes never run because an earlier one made no update.
    if (em_passes > 1) {
      for (int k = 1; k <= em_passes; ++k) {
        std::string line = format("fmllr speaker %s: EM pass %d of %d: ", job.spk->name.c_str(), k, em_passes);
        if (k > static_cast<int>(passes.size())) {
          line += format("not run (pass %zu made no update)", passes.size());
        } else {
          const Pass& p = passes[static_cast<size_t>(k - 1)];
          line += format("statistics weight %.1f, update type %s: %s", p.beta, to_string(p.update),
                         to_string(p.outcome));
          if (p.outcome == FmllrOutcome::kUpdated)
            line += objective_text(p);
          else
            line += k > 1 ? format("; the transform of pass %d stays", k - 1) : "; identity kept";
          if (!p.message.empty()) line += " (" + p.message + ")";
        }
        tr.adaptation_report(line);
      }
    }
    return plan_.redecodes > 0 && job.used_pass > 0;
  }

  // --fmllr-vtln: the first estimate is the warp (with its diagonal
  // transform) that pass 1's alignment favours, each warp scored with its
  // own posteriors (choose_vtln_warp_on_alignment); true when a re-decode
  // follows. Below --fmllr-min-frames the plain first estimate keeps the
  // identity, as it would.
  bool vtln_estimate(Transcriber& tr, Job& job) {
    std::vector<AlignedFrames> speech;
    for (size_t p = 0; p < job.files.size(); ++p) {
      if (!job.in[p]) continue;
      const PendingFile& d = job.files[p];
      speech.push_back({d.u.feats.data.data() + d.align_first * d.u.feats.dim,
                        static_cast<int64_t>(d.senones.size()), d.senones.data()});
    }
    const VtlnChoice c =
        choose_vtln_warp_on_alignment(speech, tr.rec.acoustic_model().mixtures(), *plan_.vtln_candidates);
    job.transform = c.transform;
    job.used_pass = 1;
    size_t decoded = 0;
    for (char f : job.in) decoded += f != 0;
    tr.adaptation_report(format("fmllr speaker %s: %zu file(s), %lld of %lld frames aligned (%d words), "
                                "statistics weight %.1f, VTLN warp %.2f with a diagonal transform, "
                                "objective/frame %.3f (warp 1: %.3f)",
                                job.spk->name.c_str(), decoded, static_cast<long long>(job.aligned),
                                static_cast<long long>(job.total_frames), job.words_aligned, job.stats.beta,
                                c.warp, c.objective, c.unwarped_objective));
    return plan_.redecodes > 0;
  }

  // Re-estimation from an adapted decoding (Kaldi's decode_fmllr.sh does
  // one): the re-decode aligned the new words (better than pass 1's where
  // adaptation helped), and the estimate starts from the current
  // transform, with posteriors on the adapted features and statistics of
  // the raw ones. True when another round follows.
  bool reestimate(Transcriber& tr, Job& job) {
    ++job.round;
    const FmllrTransform start = job.transform;
    const Pass p = estimate(tr.rec, job.stats, &start, &job.transform);
    std::string line = format("fmllr speaker %s: re-estimation %d of %d (adapted decoding): %lld frames "
                              "aligned, statistics weight %.1f, update type %s: %s",
                              job.spk->name.c_str(), job.round, plan_.redecodes,
                              static_cast<long long>(job.round_aligned), p.beta, to_string(p.update),
                              to_string(p.outcome));
    line += p.outcome == FmllrOutcome::kUpdated ? objective_text(p) : "; the transform before it stays";
    if (!p.message.empty()) line += " (" + p.message + ")";
    tr.adaptation_report(line);
    return p.outcome == FmllrOutcome::kUpdated && job.round < plan_.redecodes;
  }

  // --fmllr apply: the transform saved in DIR/<speaker>.mat by an earlier
  // two-pass run; a missing or malformed one fails the speaker's files.
  void load_transform(Transcriber& tr, Job& job) {
    FmllrTransform transform;
    std::string why;
    try {
      transform = read_fmllr_transform(fmllr_speaker_path(plan_.fmllr_dir, job.spk->name), tr.rec.feature_dim());
    } catch (const std::exception& e) {
      why = e.what();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!why.empty()) {
      fail_job(tr, job, format("%s (speaker %s: %zu file(s) not transcribed)", why.c_str(),
                               job.spk->name.c_str(), job.spk->files.size()));
      return;
    }
    job.transform = transform;
    enter(job, Phase::kFinal);
  }

  // The last pass: the file decoded under the transform and printed (under
  // the identity, a result taken in pass 1 is printed as it is).
  void final_pass(Transcriber& tr, size_t k, StreamTools& tools, Job& job, size_t pos) {
    PendingFile& d = job.files[pos];
    const std::string& path = files_[d.file];
    write_to(tr, d.file);
    try {
      const auto t0 = std::chrono::steady_clock::now();
      if (!d.loaded) {
        d.u = tr.features(path);
        d.loaded = true;
      }
      std::vector<float>& x = d.u.feats.data;
      const bool identity = job.transform.is_identity();
      if (!identity) {
        tools.applier.set_transform(job.transform);
        tools.applier.apply(x.data(), d.u.feats.rows, x.data());
      }
      const RecognitionResult r = identity && d.has_result ? d.result : tr.decode(x.data(), d.u.feats.rows);
      const double share = job.shared_s / static_cast<double>(std::max<size_t>(1, job.todo));
      const double secs = d.secs + share + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      tr.audio_s += d.u.seconds;
      tr.wall_s += secs;
      tr.print(path, d.u.on_audio_clock(r), d.u.seconds, secs);
    } catch (const std::exception& e) {
      ++tr.failed;
      tr.error(e.what());
    }
    d = PendingFile{};  // printed: free its features
    std::lock_guard<std::mutex> lock(mutex_);
    slots_[job.spk->files[pos]].done = true;
    slots_[job.spk->files[pos]].stream = k;
    finished_one(job);
  }

  // Under the lock: the finished files after those printed, in order.
  void print_ready() {
    for (; printed_ < slots_.size() && slots_[printed_].done; ++printed_) {
      Slot& s = slots_[printed_];
      std::fputs(s.err.c_str(), stderr);
      std::fputs(s.out.c_str(), stdout);
      std::fflush(stdout);
      last_stream_ = s.stream;
      s.out.clear();
      s.out.shrink_to_fit();
      s.err.clear();
      s.err.shrink_to_fit();
    }
  }

  std::vector<Transcriber>& streams_;
  std::vector<std::unique_ptr<StreamTools>> tools_;  // by stream
  const std::vector<std::string>& files_;
  const AdaptationPlan& plan_;
  std::mutex mutex_;  // guards everything below, and the jobs' bookkeeping
  std::condition_variable ready_;
  std::vector<Slot> slots_;  // by file
  std::vector<Job> jobs_;    // by speaker
  std::vector<size_t> active_;  // speakers taken up and not done, in order
  size_t next_job_ = 0;         // the next speaker to take up
  size_t printed_ = 0;          // files printed
  size_t last_stream_ = 0;
};

int run(int argc, char** argv) {
  RecognizerConfig config = RecognizerConfig::en_us_defaults();
  // Used only where the lattice pass runs (by default with an n-gram LM).
  config.lattice_word_insertion_penalty = kDictationLatticeWip;
  // Files usually begin in the recording's noise: started at the first
  // sound, the noise estimate takes that noise for noise at once, where
  // pocketsphinx's start (a twentieth of the first frame) takes it for
  // speech for a second or two. 9 % fewer errors on the degraded sets'
  // sentences cut from long recordings, the same on files that begin with
  // the speech (docs/benchmarks.md, "The noise estimate started at the
  // first sound"). --noise-start first-frame gives pocketsphinx's start.
  config.noise_start_at_first_sound = true;
  bool grammar_given = false;
  bool verbose = false, times = false;
  bool mfc_input = false;  // --mfc: files hold cepstra, not audio
  std::string front_end_flag;  // the last audio front-end flag given (--no-remove-*, --no-declip)
  std::vector<std::string> files;
  auto set_grammar = [&](GrammarKind kind, const std::string& path) {
    if (grammar_given) usage_error("give at most one of --lm, --jsgf, --fsg, --kws");
    grammar_given = true;
    config.grammar_kind = kind;
    config.grammar = path;
  };
  bool wbeam_given = false;
  FmllrMode fmllr_mode = FmllrMode::kNone;
  bool fmllr_given = false;   // --fmllr
  bool lattice_given = false; // --lattice-lw
  bool one_pass = false;      // --one-pass
  FmllrOptions fmllr_options;
  bool fmllr_update_by_data = false;  // --fmllr-update auto
  int fmllr_redecodes = 1;            // --fmllr-redecode
  bool fmllr_vtln = false;            // --fmllr-vtln
  std::string spk2utt_path, fmllr_dir;
  int cluster_speakers_flag = -1;  // --cluster-speakers 1, --no-cluster-speakers 0, -1 the default
  int fmllr_em_passes = 1;
  bool fmllr_tuned = false;  // an --fmllr-* option given
  int streams_wanted = 0;    // --streams; 0 = the default
  int stream_nice = 0;       // --stream-nice
  int fibers = -1;           // --fibers; 0 = a thread per stream, -1 = the default
  std::string batched_mode = "auto";  // --batched-search
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
    } else if (a == "--no-remove-noise") {
      config.remove_noise = false;
      front_end_flag = a;
    } else if (a == "--noise-start") {
      try {
        config.noise_start_at_first_sound = parse_noise_start(value());
      } catch (const std::invalid_argument& e) {
        usage_error(a + ": " + e.what());
      }
      front_end_flag = a;
    } else if (a == "--no-remove-silence") {
      config.remove_silence = false;
      front_end_flag = a;
    } else if (a == "--no-declip") {
      config.declip = false;
      front_end_flag = a;
    } else if (a == "--cmn-skip-negative-c0") {
      config.cmn_skip_negative_c0 = true;
    } else if (a == "--no-cmn-skip-negative-c0") {
      config.cmn_skip_negative_c0 = false;
    } else if (a == "--no-rescore") {
      config.rescore_with_full_lm = false;
    } else if (a == "--lattice-wip") {
      const double x = parse_double(a, value());
      if (!(x > 0.0) || !std::isfinite(x)) usage_error("--lattice-wip must be a number > 0");
      config.lattice_word_insertion_penalty = static_cast<float>(x);
    } else if (a == "--lattice-lw") {
      const double x = parse_double(a, value());
      if (!(x >= 0.0) || !std::isfinite(x)) usage_error("--lattice-lw must be a number >= 0");
      config.search.lattice.language_weight = static_cast<float>(x);
      lattice_given = true;
    } else if (a == "--one-pass") {
      one_pass = true;
    } else if (a == "--lm-histories") {
      config.search.lm_histories = parse_int(a, value());
    } else if (a == "--topn") {
      config.top_n = parse_int(a, value());
    } else if (a == "--density-floor") {
      const double x = parse_double(a, value());
      if (!(x >= 0.0) || !std::isfinite(x)) usage_error("--density-floor must be a number >= 0");
      config.density_floor = static_cast<float>(x);
    } else if (a == "--backend") {
      config.scoring_backend = value();
    } else if (a == "--search") {
      config.search_backend = value();
    } else if (a == "--device-id") {
      config.device_id = parse_int(a, value());
    } else if (a == "--streams") {
      streams_wanted = parse_int(a, value());
      if (streams_wanted < 1) usage_error("--streams must be at least 1");
    } else if (a == "--fibers") {
      fibers = parse_int(a, value());
      if (fibers < 0 || fibers > 1024) usage_error("--fibers must be 0 to 1024");
    } else if (a == "--stream-nice") {
      stream_nice = parse_int(a, value());
      if (stream_nice < 0 || stream_nice > 19) usage_error("--stream-nice must be 0 to 19");
    } else if (a == "--batched-search") {
      batched_mode = value();
    } else if (a == "--cache") {
      config.cache_dir = value();
    } else if (a == "--mfc") {
      mfc_input = true;
    } else if (a == "--fmllr") {
      const std::string m = value();
      if (m == "none") fmllr_mode = FmllrMode::kNone;
      else if (m == "two-pass") fmllr_mode = FmllrMode::kTwoPass;
      else if (m == "apply") fmllr_mode = FmllrMode::kApply;
      else usage_error("--fmllr: expected none, two-pass or apply, got '" + m + "'");
      fmllr_given = true;
    } else if (a == "--spk2utt") {
      spk2utt_path = value();
    } else if (a == "--cluster-speakers") {
      cluster_speakers_flag = 1;
    } else if (a == "--no-cluster-speakers") {
      cluster_speakers_flag = 0;
    } else if (a == "--fmllr-dir") {
      fmllr_dir = value();
    } else if (a == "--fmllr-min-frames") {
      fmllr_options.min_frames = parse_double(a, value());
      if (!(fmllr_options.min_frames >= 0.0)) usage_error("--fmllr-min-frames must be >= 0");
      fmllr_tuned = true;
    } else if (a == "--fmllr-em-passes") {
      fmllr_em_passes = parse_int(a, value());
      if (fmllr_em_passes < 1) usage_error("--fmllr-em-passes must be at least 1");
      fmllr_tuned = true;
    } else if (a == "--fmllr-redecode") {
      fmllr_redecodes = parse_int(a, value());
      if (fmllr_redecodes < 0) usage_error("--fmllr-redecode must be >= 0");
      fmllr_tuned = true;
    } else if (a == "--fmllr-vtln") {
      fmllr_vtln = true;
      fmllr_tuned = true;
    } else if (a == "--fmllr-prior-frames") {
      fmllr_options.prior_frames = parse_double(a, value());
      // An infinite prior would make the estimate non-finite (refused only
      // after pass 1); the diagonal update is --fmllr-update diag.
      if (!(fmllr_options.prior_frames >= 0.0) || !std::isfinite(fmllr_options.prior_frames))
        usage_error("--fmllr-prior-frames must be a finite number >= 0 (for the diagonal transform itself: "
                    "--fmllr-update diag)");
      fmllr_tuned = true;
    } else if (a == "--fmllr-update") {
      const std::string u = value();
      fmllr_update_by_data = u == "auto";
      if (!fmllr_update_by_data && !parse_fmllr_update_type(u, &fmllr_options.update))
        usage_error("--fmllr-update: expected auto, full, block, diag or offset, got '" + u + "'");
      fmllr_tuned = true;
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
  // .mfc files hold cepstra made by another front end: nothing to switch.
  if (mfc_input && !front_end_flag.empty())
    usage_error(front_end_flag + " applies to audio input, not to --mfc cepstra");
  // A --beam narrower than the default word-end beam narrows that too (as
  // pocketsphinx, which allows any pair); given both, wbeam must fit.
  if (!wbeam_given && config.search.word_end_beam > config.search.beam)
    config.search.word_end_beam = config.search.beam;
  if (!config.jsgf_rule.empty() && config.grammar_kind != GrammarKind::kJsgf)
    usage_error("--rule applies to --jsgf only");
  // Dictation (an n-gram LM) decodes by default as measured best on real
  // and degraded audio (docs/benchmarks.md, "Two-pass fMLLR and the
  // lattice pass as transcribe's default"): two-pass fMLLR (full update),
  // each file its own speaker unless --spk2utt, and the word-lattice pass
  // at its own word cost in the final decoding. --one-pass decodes once.
  // Grammars and keyphrases decode once.
  const bool dictation = config.grammar_kind == GrammarKind::kNgram;
  if (one_pass && fmllr_mode == FmllrMode::kTwoPass)
    usage_error("--one-pass and --fmllr two-pass exclude each other");
  if (one_pass && config.search.lattice.enabled())
    usage_error("--one-pass and --lattice-lw X (X > 0) exclude each other");
  if (!fmllr_given && !one_pass && dictation) fmllr_mode = FmllrMode::kTwoPass;
  const bool default_lattice = !lattice_given && !one_pass && dictation;
  if (fmllr_mode == FmllrMode::kNone && (!spk2utt_path.empty() || !fmllr_dir.empty() || fmllr_tuned))
    usage_error(dictation ? "--spk2utt, --fmllr-dir and --fmllr-* options need --fmllr two-pass or apply, "
                            "not --one-pass or --fmllr none"
                          : "--spk2utt, --fmllr-dir and --fmllr-* options need --fmllr two-pass or apply");
  if (fmllr_mode == FmllrMode::kApply && fmllr_dir.empty())
    usage_error("--fmllr apply needs --fmllr-dir DIR (the transforms to apply)");
  if (fmllr_mode != FmllrMode::kNone && fibers > 0)
    usage_error(fmllr_given ? "--fibers applies to the plain mode's streams, not to --fmllr"
                            : "--fibers applies to one decoding a file: add --one-pass (with an "
                              "n-gram LM the default is two-pass fMLLR)");
  if (fmllr_options.prior_frames > 0.0 && !fmllr_update_by_data &&
      fmllr_options.update != FmllrUpdateType::kFull && fmllr_options.update != FmllrUpdateType::kBlock)
    usage_error("--fmllr-prior-frames applies to the full and block updates (--fmllr-update full, block or auto)");
  if (fmllr_mode == FmllrMode::kApply && fmllr_tuned)
    usage_error("--fmllr-min-frames, --fmllr-em-passes, --fmllr-redecode, --fmllr-update, --fmllr-vtln and --fmllr-prior-frames apply to --fmllr two-pass only");
  if (cluster_speakers_flag >= 0 && fmllr_mode != FmllrMode::kTwoPass)
    usage_error(std::string(cluster_speakers_flag ? "--cluster-speakers" : "--no-cluster-speakers") +
                " applies to --fmllr two-pass (the default with an n-gram LM)");
  if (cluster_speakers_flag == 1 && !spk2utt_path.empty())
    usage_error("--cluster-speakers and --spk2utt exclude each other: the speakers are given");
  // Two-pass without spk2utt finds the speakers by clustering unless told
  // not to (docs/benchmarks.md, "Speakers found by clustering").
  const bool cluster = fmllr_mode == FmllrMode::kTwoPass && spk2utt_path.empty() &&
                       cluster_speakers_flag != 0;
  // --fmllr apply without --spk2utt: the speakers the two-pass run that
  // wrote DIR used, when it wrote them down.
  bool saved_speakers = false;
  if (fmllr_mode == FmllrMode::kApply && spk2utt_path.empty()) {
    const std::string saved = speakers_file_path(fmllr_dir);
    struct stat st;
    if (::stat(saved.c_str(), &st) == 0) {
      spk2utt_path = saved;
      saved_speakers = true;
      if (verbose) std::fprintf(stderr, "%s: speakers from %s\n", kProgram, saved.c_str());
    }
  }

  // Speakers for --fmllr two-pass: checked before the model loads, so a bad
  // spk2utt costs nothing.
  std::vector<Speaker> speakers;
  if (fmllr_mode != FmllrMode::kNone) {
    try {
      speakers = group_by_speaker(files, spk2utt_path, !fmllr_dir.empty(), saved_speakers);
      if (!fmllr_dir.empty() && fmllr_mode == FmllrMode::kTwoPass) make_directory(fmllr_dir);
    } catch (const std::exception& e) {
      error(e.what());
      return 1;
    }
  }
  if (fmllr_mode == FmllrMode::kTwoPass) config.keep_features_for_alignment = true;
  try {
    config.batched_search = batched_search_for(batched_mode, streams_wanted);
  } catch (const std::invalid_argument& e) {
    usage_error(std::string("--batched-search ") + e.what());
  }

  using clock = std::chrono::steady_clock;
  const auto t_load = clock::now();
  std::string log;
  auto first = std::make_unique<Recognizer>(config, &log);
  if (verbose) std::fprintf(stderr, "%s", log.c_str());
  // The first stream is made again, on the same shared resources, when a
  // default depends on what loading found.
  bool remake = false;
  // The lattice pass by default wherever it can run: with an LM rescored at
  // word ends (a large LM, pruned for the graph, as the default en-us one).
  // A small LM compiled whole into the graph leaves the pass no full LM to
  // apply, so such a one decodes without it.
  if (default_lattice && first->resources()->rescores()) {
    config.search.lattice.language_weight = kDictationLatticeWeight;
    remake = true;
    if (verbose)
      std::fprintf(stderr, "%s: final results from the word lattice, language weight %.1f, word cost %g (the default)\n",
                   kProgram, static_cast<double>(kDictationLatticeWeight),
                   static_cast<double>(config.lattice_word_insertion_penalty));
  }

  // The streams: the first recogniser's resources shared by the others; by
  // default as many as keep the search busy (stream_count.h): a stream per
  // core on the CPU, on a CUDA device as many as its memory holds, up to
  // 256.
  // At most a stream a file: with --fmllr too, the files of a speaker's
  // phase are spread over the streams (SpeakerScheduler).
  size_t num_streams = 1;
  {
    const size_t units = files.size();
    num_streams = streams_wanted > 0 ? static_cast<size_t>(streams_wanted)
                                     : default_stream_count(*first, config, units);
    num_streams = std::max<size_t>(1, std::min(num_streams, units));
    // A default that turns the batched search on (--batched-search auto):
    // the first stream was made for one stream.
    const bool batched = batched_search_for(batched_mode, static_cast<int>(num_streams));
    if (streams_wanted == 0 && batched != config.batched_search) {
      config.batched_search = batched;
      remake = true;
    }
  }
  if (remake) {
    std::vector<std::unique_ptr<Recognizer>> again = make_streams(first->resources(), config, 1);
    first = std::move(again.front());
  }
  const double load_s = std::chrono::duration<double>(clock::now() - t_load).count();
  Recognizer& rec = *first;
  const bool all_cpu = std::string(rec.scoring_backend().name()) == "cpu" &&
                       std::string(rec.search_backend()) == "cpu";
  // Made concurrently (stream_maker.h): a device stream mostly waits.
  std::vector<std::unique_ptr<Recognizer>> extra =
      make_streams(rec.resources(), config, num_streams - 1);
  std::vector<Transcriber> trs;
  trs.push_back(Transcriber{rec, mfc_input, times, verbose});
  for (auto& r : extra) trs.push_back(Transcriber{*r, mfc_input, times, verbose});
  for (Transcriber& t : trs) t.adaptation_reports = fmllr_given || verbose;
  if (verbose && num_streams > 1) {
    std::fprintf(stderr, "%s: %zu streams sharing the model, graph and LM\n", kProgram, num_streams);
    // With --device-id -1 on a device, where the streams were placed.
    if (config.device_id < 0 && !all_cpu) {
      std::map<int, int> per_device;
      for (const Transcriber& t : trs) ++per_device[t.rec.config().device_id];
      std::fprintf(stderr, "%s: streams per device:", kProgram);
      for (const auto& [device, count] : per_device) std::fprintf(stderr, " %d: %d", device, count);
      std::fprintf(stderr, "\n");
    }
  }

  // Fibers by default where they were measured to pay: the batched cuda
  // search with more streams than cores (256 streams on 16 cores: +12-18 %
  // with the host's rescoring, about 1 % with the device's, the default
  // now; docs/benchmarks.md, "Streams as fibers on a few threads" and
  // "N-gram lookups by hash").
  if (fibers < 0) {
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const bool batched_cuda = std::string(rec.search_backend()) == "cuda" && config.batched_search;
    fibers = fmllr_mode == FmllrMode::kNone && batched_cuda && num_streams > static_cast<size_t>(cores)
                 ? std::min(cores, 1024)
                 : 0;
  }
  if (verbose && fibers > 0)
    std::fprintf(stderr, "%s: %zu streams as fibers on %d threads\n", kProgram, num_streams, fibers);

  const auto t_decode = clock::now();
  size_t last_stream = 0;  // the stream of the last file printed
  if (cluster) {
    speakers = cluster_files(trs, files);
    if (verbose)
      for (const Speaker& spk : speakers) {
        std::string line = std::string(kProgram) + ": speaker " + spk.name + ":";
        for (size_t i : spk.files) line += " " + utterance_id(files[i]);
        std::fprintf(stderr, "%s\n", line.c_str());
      }
  }
  if (fmllr_mode == FmllrMode::kTwoPass && !fmllr_dir.empty()) {
    if (const std::string why = write_speakers_file(fmllr_dir, speakers, files); !why.empty())
      std::fprintf(stderr, "%s: warning: %s\n", kProgram, why.c_str());
    // The statistics are the model's Gaussians' own: say which model, as a
    // channel prior library's `model` file does (channel_priors.h).
    if (const std::string why = write_model_file(fmllr_dir, config.model_dir); !why.empty())
      std::fprintf(stderr, "%s: warning: %s\n", kProgram, why.c_str());
  }
  if (fmllr_mode == FmllrMode::kNone) {
    transcribe_files(trs, files, &last_stream, stream_nice, fibers);
  } else {
    AdaptationPlan plan;
    if (fmllr_vtln) {
      // A front end linear VTLN cannot warp (not MFCC, s2_4x) is the
      // model's: say so before decoding, not at every speaker.
      try {
        plan.vtln_candidates = std::make_shared<const LinearVtlnCandidates>(
            trs.front().rec.feature_options(), trs.front().rec.feature_dim());
      } catch (const std::invalid_argument& e) {
        usage_error(std::string("--fmllr-vtln: ") + e.what());
      }
    }
    plan.mode = fmllr_mode;
    plan.options = fmllr_options;
    plan.update_by_data = fmllr_update_by_data;
    plan.em_passes = fmllr_em_passes;
    plan.redecodes = fmllr_redecodes;
    plan.fmllr_dir = fmllr_dir;
    SpeakerScheduler(trs, files, speakers, plan).run(stream_nice, &last_stream);
  }
  const double elapsed_s = std::chrono::duration<double>(clock::now() - t_decode).count();
  double audio_s = 0.0, busy_s = 0.0;
  int failed = 0;
  RecognizerTimings timings;
  for (const Transcriber& t : trs) {
    audio_s += t.audio_s;
    busy_s += t.wall_s;
    failed += t.failed;
    timings.features += t.rec.timings().features;
    timings.scoring += t.rec.timings().scoring;
    timings.search += t.rec.timings().search;
  }
  // One stream: the time spent recognising (as before: reading the files
  // not counted); several: the wall time of the whole run, which is what
  // concurrency shortens.
  const double wall_s = num_streams > 1 ? elapsed_s : busy_s;
  std::fprintf(stderr,
               "%s: %zu file(s), %.2f s audio, %.3f s wall (%.3f s loading), RTF %.4f "
               "(scoring %s, search %s, %zu stream%s)\n",
               kProgram, files.size(), audio_s, wall_s, load_s, audio_s > 0 ? wall_s / audio_s : 0.0,
               rec.scoring_backend().name(), rec.search_backend(), num_streams,
               num_streams == 1 ? "" : "s");
  if (verbose) {
    const RecognizerTimings& t = timings;
    const SearchStats& st = trs[last_stream].rec.search_stats();
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
    if (st.lattice_nodes > 0)
      std::fprintf(stderr,
                   "%s: last utterance: word lattice of %lld nodes (%lld on a path to an end), "
                   "best path in %.3f s\n",
                   kProgram, static_cast<long long>(st.lattice_nodes),
                   static_cast<long long>(st.lattice_nodes_used), st.lattice_seconds);
    if (st.chained_frames > 0)
      std::fprintf(stderr,
                   "%s: last utterance: %lld frames begun on the device right behind the frame "
                   "before\n",
                   kProgram, static_cast<long long>(st.chained_frames));
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
