// gpuspeech-features: speech features from audio files on the command line,
// on any backend. The usage text below is the reference for its behaviour.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/backends/backend_registry.h"
#include "common/features/feat_params.h"
#include "common/features/feature_pipeline.h"
#include "common/features/feature_writer.h"
#include "common/features/feature_options.h"
#include "common/features/postprocess.h"
#include "common/features/wav_reader.h"

#ifndef GPUSPEECH_VERSION
#define GPUSPEECH_VERSION "unknown"
#endif

namespace gpuspeech {
namespace {

constexpr const char* kProgram = "gpuspeech-features";

constexpr const char* kUsage = R"(Usage: gpuspeech-features [OPTIONS] -i IN -o OUT
       gpuspeech-features [OPTIONS] -c LIST
       gpuspeech-features --list-backends | --help | --version

Computes speech features (MFCC, log-mel filterbank, PLP, TRAPS) from audio
files and writes one feature file per input.

Input and output:
  -i IN                 audio file: WAV (detected by its RIFF header; PCM 8/16/
                        24/32-bit or float 32/64, any channel count) or, with
                        --raw, headerless signed 16-bit little-endian PCM
  -o OUT                feature file to write
  -c LIST               a list of jobs, one "IN OUT" pair per line (blank lines
                        and lines starting with # are skipped; paths cannot
                        contain spaces); a failing file is reported and the
                        others still run
  --raw                 input is headerless S16LE (default: WAV)
  --rate HZ             sample rate of --raw input (default: the configured
                        --sample-rate)
  --channels N          channels interleaved in --raw input (default 1)
  --channel N           use channel N (1-based) only; default 0 averages all
                        channels into one (like sphinx_fe -whichchan)
  --allow-truncated     read a WAV whose data chunk is cut short by the end of
                        the file (with a warning) instead of rejecting it
  --format FMT          sphinx (default: int32 count + float32, little-endian,
                        as sphinx_fe writes), htk (big-endian, parmKind from
                        the configuration, C0/energy last as HTK expects) or
                        text (one frame per line)

Configuration (applied in this order: flavour/kind defaults, then
--feat-params, then every other flag in command-line order):
  --flavour F           sphinx (default) | htk | kaldi: the toolkit whose
                        defaults and conventions to follow
  --kind K              mfcc (default) | fbank | plp | traps
  --feat-params FILE    a Sphinx acoustic model's feat.params (flavour sphinx
                        only); it may ask for deltas and CMN (-feat, -cmn): add
                        --deltas none --cmn none to get sphinx_fe's output
  --sample-rate HZ      the rate the configuration expects; audio at another
                        rate is an error (resample with sox first)
  --frame-length-ms MS  analysis window length
  --frame-shift-ms MS   frame period
  --fft-size N          FFT size (a power of two; 0 = next one above the frame)
  --preemphasis A       pre-emphasis coefficient (0 = off)
  --preemphasis-mode M  continuous (Sphinx) | per-frame (HTK, Kaldi)
  --window W            hamming | hanning | povey | rectangular | blackman
  --remove-dc[=BOOL]    subtract each frame's mean
  --snip-edges[=BOOL]   only whole frames (else zero-pad the last one)
  --dither SD           Gaussian dither, std-dev in 16-bit sample units (0 = off)
  --dither-seed N       seed for the dither
  --num-filters N       mel filters (PLP: critical bands)
  --low-freq HZ         lowest filter edge
  --high-freq HZ        highest filter edge (<= 0: offset from Nyquist)
  --mel-scale S         sphinx | htk
  --spectrum S          power | magnitude (filterbank input)
  --log-floor-mode M    constant | clamp | offset
  --log-floor X         the floor value for that mode
  --num-ceps N          cepstral coefficients (MFCC or PLP)
  --transform T         dct (Sphinx) | legacy (Sphinx) | htk | kaldi
  --lifter L            cepstral lifter (0 = none)
  --use-energy[=BOOL]   log energy instead of C0 (MFCC or PLP)
  --energy-floor X      floor of the energy (> 0: log energy >= ln X)
  --plp-order N         LPC order
  --plp-compress X      intensity-loudness exponent (0.33 = cube root)
  --traps-context N     frames on each side of a TRAPS trajectory
  --traps-coeffs N      DCT coefficients per TRAPS half
  --deltas D            none | 1s_c_d_dd (Sphinx 39-dim) | regression
  --delta-order N       regression: 1 = deltas, 2 = + accelerations
  --delta-window N      regression window half-width
  --cmn C               none | batch (per utterance) | live (running mean)
  --cvn[=BOOL]          variance normalisation (needs --cmn batch)
  --cmn-init A,B,...    live CMN's starting mean, one value per coefficient
  --cmn-window N        frames after which live CMN starts forgetting
  --cmn-init-frames N   frames --cmn-init counts as in live CMN (default 100)
  --cmn-from-speech[=BOOL]
                        live CMN learns only from frames the VAD calls speech
                        (default true)
  --cmn-skip-negative-c0[=BOOL]
                        CMN leaves frames with a negative c0 (digital silence)
                        out of its mean, as Sphinx's CMN does; Sphinx MFCC
                        only (default false)
  --min-max[=BOOL]      scale each dimension to [0, 1] over the utterance
  --remove-noise[=BOOL] Sphinx spectral noise subtraction (sphinx_fe's default
                        is yes; here it is off unless asked for)
  --remove-silence[=BOOL]
                        drop the frames Sphinx's VAD calls silence (idem)
  --noise-start first-frame|first-sound
                        where the noise estimate starts: at the first frame,
                        at its energy / 20, as sphinx_fe does (default), or
                        past any digital silence, at the first sound's energy
  --declip[=BOOL]       restore clipped peaks before framing (runs of 2 to 4 ms
                        of equal samples at the peak level, recurring at one
                        level; what gpuspeech-transcribe does by default;
                        default false)
  --vad-threshold X     VAD: min. ln(power / noise) of speech (default 2)
  --vad-prespeech N     VAD: frames kept before speech starts
  --vad-postspeech N    VAD: non-speech frames that end speech
  --vad-startspeech N   VAD: speech frames that start speech
  --vtln-warp F         piecewise-linear VTLN warp factor (1 = none)
  --vtln-low HZ         lower knee of the warp
  --vtln-high HZ        upper knee of the warp (<= 0: offset from Nyquist)
  --warps F,F,...       compute several warps from one FFT; OUT gets one file
                        per warp with ".wF" before its extension, as typed:
                        --warps 0.95,1.05 -o a.mfc writes a.w0.95.mfc and
                        a.w1.05.mfc (cannot be combined with --vtln-warp)
  BOOL is yes|no|true|false|1|0; --no-NAME is --NAME=no.

Backend:
  --backend B           auto (default) | cuda | opencl | cpu; auto takes a CUDA
                        device, else an OpenCL GPU, else the CPU. A named
                        backend that is unavailable is an error.
  --device-id N         device index for cuda/opencl (default 0)
  --list-backends       show which backends this build has and can use

Other:
  -v, --verbose         say which backend was chosen and why, the
                        configuration, and each file's frame count
  -h, --help            this text
  --version             the version

Exit status: 0 on success, 1 if any file failed or the backend could not be
opened, 2 for a bad command line or configuration. Every error is one line on
stderr starting with "gpuspeech-features: error:".
)";

// A command-line mistake (exit status 2).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ------------------------------------------------------------------ values

double parse_number(const std::string& flag, const std::string& v) {
  const char* s = v.c_str();
  char* end = nullptr;
  errno = 0;
  const double d = std::strtod(s, &end);
  if (v.empty() || end != s + v.size() || errno == ERANGE || !std::isfinite(d))
    throw UsageError(flag + ": '" + v + "' is not a number");
  return d;
}

float parse_float(const std::string& flag, const std::string& v) {
  const double d = parse_number(flag, v);
  if (std::fabs(d) > 3.0e38) throw UsageError(flag + ": '" + v + "' is out of range");
  return static_cast<float>(d);
}

int parse_int(const std::string& flag, const std::string& v) {
  const char* s = v.c_str();
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(s, &end, 10);
  if (v.empty() || end != s + v.size() || errno == ERANGE || n < -2147483647L ||
      n > 2147483647L)
    throw UsageError(flag + ": '" + v + "' is not an integer");
  return static_cast<int>(n);
}

bool parse_bool(const std::string& flag, const std::string& v) {
  if (v == "yes" || v == "true" || v == "1") return true;
  if (v == "no" || v == "false" || v == "0") return false;
  throw UsageError(flag + ": '" + v + "' is not yes or no");
}

std::vector<std::string> split_commas(const std::string& v) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    out.push_back(v.substr(start, comma == std::string::npos ? std::string::npos
                                                             : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// Wraps the std::invalid_argument of the options.h parsers as a usage error.
template <typename F>
auto named(const std::string& flag, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::invalid_argument& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

// ------------------------------------------------------------ option table

// Sets one FeatureOptions field from a flag's value.
using Setter = std::function<void(FeatureOptions&, const std::string& flag,
                                  const std::string& value)>;

struct FeatureFlag {
  bool is_bool;  // takes no separate value (--x, --no-x, --x=BOOL)
  Setter set;
};

const std::map<std::string, FeatureFlag>& feature_flags() {
  using O = FeatureOptions;
  using S = const std::string&;
  static const std::map<std::string, FeatureFlag> flags = {
      {"--sample-rate", {false, [](O& o, S f, S v) { o.frame.sample_rate = parse_float(f, v); }}},
      {"--frame-length-ms",
       {false, [](O& o, S f, S v) { o.frame.frame_length_ms = parse_float(f, v); }}},
      {"--frame-shift-ms",
       {false, [](O& o, S f, S v) { o.frame.frame_shift_ms = parse_float(f, v); }}},
      {"--fft-size", {false, [](O& o, S f, S v) { o.frame.fft_size = parse_int(f, v); }}},
      {"--preemphasis", {false, [](O& o, S f, S v) { o.frame.preemphasis = parse_float(f, v); }}},
      {"--preemphasis-mode",
       {false,
        [](O& o, S f, S v) {
          if (v == "continuous") {
            o.frame.preemphasis_mode = PreemphasisMode::kContinuous;
          } else if (v == "per-frame") {
            o.frame.preemphasis_mode = PreemphasisMode::kPerFrame;
          } else {
            throw UsageError(f + ": '" + v + "' is not continuous or per-frame");
          }
        }}},
      {"--window",
       {false, [](O& o, S f, S v) { o.frame.window = named(f, [&] { return parse_window(v); }); }}},
      {"--remove-dc", {true, [](O& o, S f, S v) { o.frame.remove_dc = parse_bool(f, v); }}},
      {"--snip-edges", {true, [](O& o, S f, S v) { o.frame.snip_edges = parse_bool(f, v); }}},
      {"--dither", {false, [](O& o, S f, S v) { o.frame.dither = parse_float(f, v); }}},
      {"--dither-seed",
       {false,
        [](O& o, S f, S v) {
          const int seed = parse_int(f, v);
          if (seed < 0) throw UsageError(f + " must be >= 0");
          o.frame.dither_seed = static_cast<uint32_t>(seed);
        }}},
      {"--num-filters",
       {false,
        [](O& o, S f, S v) {
          (o.kind == FeatureKind::kPlp ? o.plp.num_filters : o.mel.num_filters) =
              parse_int(f, v);
        }}},
      {"--low-freq", {false, [](O& o, S f, S v) { o.mel.low_freq = parse_float(f, v); }}},
      {"--high-freq", {false, [](O& o, S f, S v) { o.mel.high_freq = parse_float(f, v); }}},
      {"--mel-scale",
       {false,
        [](O& o, S f, S v) {
          if (v == "sphinx") {
            o.mel.scale = MelScale::kSphinx;
          } else if (v == "htk") {
            o.mel.scale = MelScale::kHtk;
          } else {
            throw UsageError(f + ": '" + v + "' is not sphinx or htk");
          }
        }}},
      {"--spectrum",
       {false,
        [](O& o, S f, S v) {
          if (v == "power") {
            o.mel.use_power = true;
          } else if (v == "magnitude") {
            o.mel.use_power = false;
          } else {
            throw UsageError(f + ": '" + v + "' is not power or magnitude");
          }
        }}},
      {"--log-floor-mode",
       {false,
        [](O& o, S f, S v) {
          if (v == "constant") {
            o.log.mode = LogFloorMode::kConstant;
          } else if (v == "clamp") {
            o.log.mode = LogFloorMode::kClamp;
          } else if (v == "offset") {
            o.log.mode = LogFloorMode::kOffset;
          } else {
            throw UsageError(f + ": '" + v + "' is not constant, clamp or offset");
          }
        }}},
      {"--log-floor", {false, [](O& o, S f, S v) { o.log.floor_value = parse_float(f, v); }}},
      {"--num-ceps",
       {false,
        [](O& o, S f, S v) {
          (o.kind == FeatureKind::kPlp ? o.plp.num_ceps : o.mfcc.num_ceps) = parse_int(f, v);
        }}},
      {"--transform",
       {false,
        [](O& o, S f, S v) {
          if (v == "dct") {
            o.mfcc.transform = CepstralTransform::kSphinxDct;
          } else if (v == "legacy") {
            o.mfcc.transform = CepstralTransform::kSphinxLegacy;
          } else if (v == "htk") {
            o.mfcc.transform = CepstralTransform::kHtkDct;
          } else if (v == "kaldi") {
            o.mfcc.transform = CepstralTransform::kKaldiDct;
          } else {
            throw UsageError(f + ": '" + v + "' is not dct, legacy, htk or kaldi");
          }
        }}},
      {"--lifter",
       {false,
        [](O& o, S f, S v) {
          (o.kind == FeatureKind::kPlp ? o.plp.lifter : o.mfcc.lifter) = parse_int(f, v);
        }}},
      {"--use-energy",
       {true,
        [](O& o, S f, S v) {
          (o.kind == FeatureKind::kPlp ? o.plp.use_energy : o.mfcc.use_energy) =
              parse_bool(f, v);
        }}},
      {"--energy-floor", {false, [](O& o, S f, S v) { o.mfcc.energy_floor = parse_float(f, v); }}},
      {"--plp-order", {false, [](O& o, S f, S v) { o.plp.order = parse_int(f, v); }}},
      {"--plp-compress", {false, [](O& o, S f, S v) { o.plp.compress = parse_float(f, v); }}},
      {"--traps-context", {false, [](O& o, S f, S v) { o.traps.context = parse_int(f, v); }}},
      {"--traps-coeffs", {false, [](O& o, S f, S v) { o.traps.num_coeffs = parse_int(f, v); }}},
      {"--deltas",
       {false,
        [](O& o, S f, S v) {
          if (v == "none") {
            o.delta.layout = DeltaOptions::Layout::kNone;
          } else if (v == "1s_c_d_dd") {
            o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
          } else if (v == "regression") {
            o.delta.layout = DeltaOptions::Layout::kRegression;
          } else {
            throw UsageError(f + ": '" + v + "' is not none, 1s_c_d_dd or regression");
          }
        }}},
      {"--delta-order", {false, [](O& o, S f, S v) { o.delta.order = parse_int(f, v); }}},
      {"--delta-window", {false, [](O& o, S f, S v) { o.delta.window = parse_int(f, v); }}},
      {"--cmn",
       {false,
        [](O& o, S f, S v) {
          if (v == "none") {
            o.norm.cmn = NormOptions::Cmn::kNone;
          } else if (v == "batch") {
            o.norm.cmn = NormOptions::Cmn::kBatch;
          } else if (v == "live") {
            o.norm.cmn = NormOptions::Cmn::kLive;
          } else {
            throw UsageError(f + ": '" + v + "' is not none, batch or live");
          }
        }}},
      {"--cvn", {true, [](O& o, S f, S v) { o.norm.cvn = parse_bool(f, v); }}},
      {"--cmn-init",
       {false,
        [](O& o, S f, S v) {
          o.norm.cmn_init.clear();
          for (const std::string& x : split_commas(v)) o.norm.cmn_init.push_back(parse_float(f, x));
        }}},
      {"--cmn-window", {false, [](O& o, S f, S v) { o.norm.live_window = parse_int(f, v); }}},
      {"--cmn-init-frames", {false, [](O& o, S f, S v) { o.norm.live_init_frames = parse_int(f, v); }}},
      {"--cmn-from-speech", {true, [](O& o, S f, S v) { o.norm.live_from_speech = parse_bool(f, v); }}},
      {"--cmn-skip-negative-c0", {true, [](O& o, S f, S v) { o.norm.skip_negative_c0 = parse_bool(f, v); }}},
      {"--min-max", {true, [](O& o, S f, S v) { o.norm.min_max = parse_bool(f, v); }}},
      {"--remove-noise", {true, [](O& o, S f, S v) { o.noise.remove_noise = parse_bool(f, v); }}},
      {"--remove-silence",
       {true, [](O& o, S f, S v) { o.noise.remove_silence = parse_bool(f, v); }}},
      {"--noise-start",
       {false, [](O& o, S f, S v) { o.noise.start_at_first_sound = named(f, [&] { return parse_noise_start(v); }); }}},
      {"--declip", {true, [](O& o, S f, S v) { o.declip.enabled = parse_bool(f, v); }}},
      {"--vad-threshold",
       {false, [](O& o, S f, S v) { o.noise.vad_threshold = parse_float(f, v); }}},
      {"--vad-prespeech", {false, [](O& o, S f, S v) { o.noise.vad_prespeech = parse_int(f, v); }}},
      {"--vad-postspeech",
       {false, [](O& o, S f, S v) { o.noise.vad_postspeech = parse_int(f, v); }}},
      {"--vad-startspeech",
       {false, [](O& o, S f, S v) { o.noise.vad_startspeech = parse_int(f, v); }}},
      {"--vtln-warp", {false, [](O& o, S f, S v) { o.mel.vtln.warp = parse_float(f, v); }}},
      {"--vtln-low", {false, [](O& o, S f, S v) { o.mel.vtln.low_cutoff = parse_float(f, v); }}},
      {"--vtln-high", {false, [](O& o, S f, S v) { o.mel.vtln.high_cutoff = parse_float(f, v); }}},
  };
  return flags;
}

// ---------------------------------------------------------- command line

struct CommandLine {
  std::string input, output, list;
  bool raw = false;
  std::optional<int> rate;
  int raw_channels = 1;
  int channel = 0;
  bool allow_truncated = false;
  FeatureFileFormat format = FeatureFileFormat::kSphinx;
  std::string flavour = "sphinx";
  bool flavour_given = false;
  std::string kind = "mfcc";
  std::string feat_params;
  // Feature flags in command-line order: (flag, value).
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<std::string> warps;  // as typed
  bool vtln_warp_given = false;
  std::string backend = "auto";
  int device_id = 0;
  bool verbose = false;
  bool list_backends = false;
  bool help = false;
  bool version = false;
};

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine cl;
  const auto& flags = feature_flags();
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> inline_value;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        inline_value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      }
    }
    // The value of a flag that takes one: --flag=V or the next argument.
    auto value = [&]() -> std::string {
      if (inline_value) return *inline_value;
      if (i + 1 >= argc) throw UsageError(arg + " needs a value");
      return argv[++i];
    };
    auto no_value = [&]() {
      if (inline_value) throw UsageError(arg + " takes no value");
    };

    if (arg == "-h" || arg == "--help") {
      no_value();
      cl.help = true;
    } else if (arg == "--version") {
      no_value();
      cl.version = true;
    } else if (arg == "-v" || arg == "--verbose") {
      no_value();
      cl.verbose = true;
    } else if (arg == "--list-backends") {
      no_value();
      cl.list_backends = true;
    } else if (arg == "-i") {
      cl.input = value();
    } else if (arg == "-o") {
      cl.output = value();
    } else if (arg == "-c") {
      cl.list = value();
    } else if (arg == "--raw") {
      no_value();
      cl.raw = true;
    } else if (arg == "--rate") {
      cl.rate = parse_int(arg, value());
    } else if (arg == "--channels") {
      cl.raw_channels = parse_int(arg, value());
    } else if (arg == "--channel") {
      cl.channel = parse_int(arg, value());
      if (cl.channel < 0) throw UsageError("--channel must be >= 0");
    } else if (arg == "--allow-truncated") {
      cl.allow_truncated = inline_value ? parse_bool(arg, *inline_value) : true;
    } else if (arg == "--format") {
      const std::string v = value();
      cl.format = named(arg, [&] { return parse_feature_file_format(v); });
    } else if (arg == "--flavour" || arg == "--flavor") {
      cl.flavour = value();
      cl.flavour_given = true;
      named(arg, [&] { return parse_flavour(cl.flavour); });
    } else if (arg == "--kind") {
      cl.kind = value();
      named(arg, [&] { return parse_feature_kind(cl.kind); });
    } else if (arg == "--feat-params") {
      cl.feat_params = value();
    } else if (arg == "--warps") {
      cl.warps = split_commas(value());
      for (const std::string& w : cl.warps) parse_float(arg, w);
    } else if (arg == "--backend") {
      cl.backend = value();
    } else if (arg == "--device-id") {
      cl.device_id = parse_int(arg, value());
    } else if (flags.count(arg)) {
      if (arg == "--vtln-warp") cl.vtln_warp_given = true;
      const FeatureFlag& f = flags.at(arg);
      if (f.is_bool) {
        cl.settings.emplace_back(arg, inline_value ? *inline_value : "yes");
      } else {
        cl.settings.emplace_back(arg, value());
      }
    } else if (arg.rfind("--no-", 0) == 0 && !inline_value &&
               flags.count("--" + arg.substr(5)) && flags.at("--" + arg.substr(5)).is_bool) {
      cl.settings.emplace_back("--" + arg.substr(5), "no");
    } else if (arg.rfind("--no-", 0) == 0 && arg == "--no-allow-truncated") {
      cl.allow_truncated = false;
    } else if (!arg.empty() && arg[0] == '-') {
      throw UsageError("unknown option " + arg + " (see --help)");
    } else {
      throw UsageError("unexpected argument '" + arg + "' (use -i IN -o OUT or -c LIST)");
    }
  }
  return cl;
}

// The configuration: flavour and kind defaults, feat.params, then flags.
FeatureOptions build_options(const CommandLine& cl, bool verbose) {
  const Flavour flavour = parse_flavour(cl.flavour);
  const FeatureKind kind = parse_feature_kind(cl.kind);
  FeatureOptions opts;
  if (!cl.feat_params.empty()) {
    if (flavour != Flavour::kSphinx)
      throw UsageError("--feat-params describes a Sphinx front end; it cannot be combined "
                       "with --flavour " + cl.flavour);
    FeatParams fp = parse_feat_params_file(cl.feat_params, kind);
    for (const std::string& w : fp.warnings)
      std::fprintf(stderr, "%s: warning: %s\n", kProgram, w.c_str());
    opts = fp.options;
  } else {
    opts = FeatureOptions::for_flavour(flavour, kind);
  }
  const auto& flags = feature_flags();
  for (const auto& [flag, value] : cl.settings) flags.at(flag).set(opts, flag, value);
  if (!cl.warps.empty() && cl.vtln_warp_given)
    throw UsageError("--warps and --vtln-warp cannot be combined");
  try {
    opts.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("invalid configuration: ") + e.what());
  }
  if (verbose) {
    std::fprintf(stderr,
                 "%s: %s %s, %d Hz, frames of %d samples every %d, FFT %d, %d filters, "
                 "%d values per frame\n",
                 kProgram, to_string(opts.flavour), to_string(opts.kind),
                 static_cast<int>(opts.frame.sample_rate), opts.frame.frame_length_samples(),
                 opts.frame.frame_shift_samples(), opts.frame.padded_fft_size(),
                 opts.kind == FeatureKind::kPlp ? opts.plp.num_filters : opts.mel.num_filters,
                 opts.output_dim());
  }
  return opts;
}

struct Job {
  std::string input, output;
};

std::vector<Job> read_job_list(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open the list");
  std::vector<Job> jobs;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::istringstream words(line);
    std::string a, b, extra;
    if (!(words >> a) || a[0] == '#') continue;
    if (!(words >> b) || (words >> extra))
      throw std::runtime_error(path + ":" + std::to_string(number) +
                               ": expected two paths, \"IN OUT\"");
    jobs.push_back({a, b});
  }
  if (in.bad()) throw std::runtime_error(path + ": read error");
  if (jobs.empty()) throw std::runtime_error(path + ": the list has no jobs");
  return jobs;
}

// OUT with ".w<warp>" inserted before the extension of its file name.
std::string warp_output_path(const std::string& out, const std::string& warp) {
  const size_t slash = out.find_last_of('/');
  const size_t dot = out.find_last_of('.');
  const bool has_ext = dot != std::string::npos && dot > 0 &&
                       (slash == std::string::npos || dot > slash + 1);
  if (!has_ext) return out + ".w" + warp;
  return out.substr(0, dot) + ".w" + warp + out.substr(dot);
}

class Runner {
 public:
  Runner(const CommandLine& cl, const FeatureOptions& opts, Backend& backend)
      : cl_(cl), opts_(opts), backend_(backend) {
    if (!cl.warps.empty()) {
      std::vector<float> warps;
      for (const std::string& w : cl.warps) warps.push_back(parse_float("--warps", w));
      extractor_ = std::make_unique<FeatureExtractor>(opts, backend, warps);
    }
  }

  void run(const Job& job) {
    AudioData audio = load(job.input);
    for (const std::string& w : audio.warnings)
      std::fprintf(stderr, "%s: warning: %s\n", kProgram, w.c_str());
    const int expected = static_cast<int>(std::lround(opts_.frame.sample_rate));
    if (audio.sample_rate != expected) {
      throw std::runtime_error(
          job.input + ": sample rate " + std::to_string(audio.sample_rate) +
          " Hz does not match the configured " + std::to_string(expected) +
          " Hz; resample it (e.g. `sox IN -r " + std::to_string(expected) +
          " OUT.wav`) or configure --sample-rate with matching filter edges");
    }
    if (cl_.verbose && audio.channels > 1)
      std::fprintf(stderr, "%s: %s: %d channels, %s\n", kProgram, job.input.c_str(),
                   audio.channels,
                   cl_.channel ? ("using channel " + std::to_string(cl_.channel)).c_str()
                               : "averaged into one");
    if (audio.samples.empty())
      std::fprintf(stderr, "%s: warning: %s: no audio samples; writing an empty feature file\n",
                   kProgram, job.input.c_str());

    const float* x = audio.samples.data();
    const int64_t n = static_cast<int64_t>(audio.samples.size());
    if (!extractor_) {
      FeatureMatrix m = n ? compute_features(opts_, backend_, x, n) : empty();
      write(job.output, m, job.input);
      return;
    }
    // Several warps from one FFT: columns [k*base, (k+1)*base) are warp k.
    FeatureMatrix all = n ? extractor_->compute(x, n) : FeatureMatrix{};
    const std::vector<uint8_t> learn = extractor_->cmn_learn_rows();
    const int base = extractor_->base_dim();
    for (size_t k = 0; k < cl_.warps.size(); ++k) {
      FeatureMatrix m;
      m.rows = all.rows;
      m.dim = base;
      m.data.resize(static_cast<size_t>(m.rows) * base);
      for (int64_t r = 0; r < m.rows; ++r)
        std::copy(all.row(r) + k * base, all.row(r) + (k + 1) * base, m.row(r));
      if (n) {
        postprocess_utterance(opts_, m, &learn);
      } else {
        m = empty();
      }
      write(warp_output_path(job.output, cl_.warps[k]), m, job.input);
    }
  }

 private:
  FeatureMatrix empty() const {
    FeatureMatrix m;
    m.dim = opts_.output_dim();
    return m;
  }

  AudioData load(const std::string& path) const {
    const std::vector<uint8_t> bytes = read_file_bytes(path);
    if (cl_.raw) {
      const int rate =
          cl_.rate ? *cl_.rate : static_cast<int>(std::lround(opts_.frame.sample_rate));
      return parse_raw_s16le(bytes.data(), bytes.size(), rate, path, cl_.raw_channels,
                             cl_.channel);
    }
    if (!bytes.empty() && !looks_like_wav(bytes.data(), bytes.size())) {
      try {
        parse_wav(bytes.data(), bytes.size(), path);  // a specific reason if it has one
      } catch (const AudioFileError& e) {
        const std::string what = e.what();
        if (what.find("not a WAV file") != std::string::npos)
          throw AudioFileError(what + "; for headerless 16-bit PCM use --raw --rate N");
        throw;
      }
    }
    WavReadOptions wopts;
    wopts.channel = cl_.channel;
    wopts.allow_truncated = cl_.allow_truncated;
    return parse_wav(bytes.data(), bytes.size(), path, wopts);
  }

  void write(const std::string& path, const FeatureMatrix& m, const std::string& input) {
    write_features(path, m, opts_, cl_.format);
    if (cl_.verbose)
      std::fprintf(stderr, "%s: %s -> %s: %lld frames of %d\n", kProgram, input.c_str(),
                   path.c_str(), static_cast<long long>(m.rows), m.dim);
  }

  const CommandLine& cl_;
  const FeatureOptions& opts_;
  Backend& backend_;
  std::unique_ptr<FeatureExtractor> extractor_;
};

void print_backends() {
  for (const BackendInfo& b : list_backends()) {
    std::printf("%-7s %-14s %s\n", b.name.c_str(),
                !b.compiled ? "not built" : b.usable ? "usable" : "unusable",
                b.detail.c_str());
  }
}

// Errors are one line each.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

void error(const std::string& what) {
  std::fprintf(stderr, "%s: error: %s\n", kProgram, one_line(what).c_str());
}

int run(int argc, char** argv) {
  CommandLine cl;
  FeatureOptions opts;
  std::vector<Job> jobs;
  try {
    cl = parse_command_line(argc, argv);
    if (cl.help) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (cl.version) {
      std::printf("%s %s\n", kProgram, GPUSPEECH_VERSION);
      return 0;
    }
    if (cl.list_backends) {
      print_backends();
      return 0;
    }
    if (!cl.list.empty() && (!cl.input.empty() || !cl.output.empty()))
      throw UsageError("-c LIST cannot be combined with -i/-o");
    if (cl.list.empty()) {
      if (cl.input.empty() || cl.output.empty())
        throw UsageError("give -i IN -o OUT or -c LIST (see --help)");
    }
    if (!cl.raw && (cl.rate || cl.raw_channels != 1))
      throw UsageError("--rate and --channels describe --raw input only (a WAV has its own)");
    if (cl.raw_channels < 1) throw UsageError("--channels must be >= 1");
    opts = build_options(cl, cl.verbose);
  } catch (const UsageError& e) {
    error(e.what());
    return 2;
  } catch (const FeatParamsError& e) {
    error(e.what());
    return 2;
  }

  BackendPtr backend;
  try {
    if (cl.list.empty()) {
      jobs.push_back({cl.input, cl.output});
    } else {
      jobs = read_job_list(cl.list);
    }
    std::string why;
    backend = open_backend(cl.backend, cl.device_id, &why);
    if (cl.verbose) {
      std::fprintf(stderr, "%s: backend %s (%s)%s%s\n", kProgram, backend->name(),
                   backend->device_name().c_str(), why.empty() ? "" : ": ", why.c_str());
    }
  } catch (const std::exception& e) {
    error(e.what());
    return 1;
  }

  int failed = 0;
  std::unique_ptr<Runner> runner;
  try {
    runner = std::make_unique<Runner>(cl, opts, *backend);
  } catch (const std::exception& e) {
    error(e.what());
    return 1;
  }
  for (const Job& job : jobs) {
    try {
      runner->run(job);
    } catch (const std::bad_alloc&) {
      error(job.input + ": out of memory");
      ++failed;
    } catch (const std::exception& e) {
      error(e.what());
      ++failed;
    }
  }
  if (failed && jobs.size() > 1)
    error(std::to_string(failed) + " of " + std::to_string(jobs.size()) + " files failed");
  return failed ? 1 : 0;
}

}  // namespace
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
