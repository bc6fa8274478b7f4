#include "common/features/feature_options.h"

#include "common/features/mel_filterbank.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <stdexcept>

namespace gpuspeech {

int FrameOptions::frame_length_samples() const {
  // Sphinx: (int)(wlen * rate + 0.5); Kaldi truncates rate * ms / 1000. The
  // two agree for every configuration shipped with either toolkit.
  return static_cast<int>(sample_rate * frame_length_ms / 1000.0 + 0.5);
}

int FrameOptions::frame_shift_samples() const {
  return static_cast<int>(sample_rate * frame_shift_ms / 1000.0 + 0.5);
}

int FrameOptions::padded_fft_size() const {
  if (fft_size > 0) return fft_size;
  int n = 1;
  while (n < frame_length_samples()) n <<= 1;
  return n;
}

FeatureOptions FeatureOptions::for_flavour(Flavour flavour, FeatureKind kind) {
  FeatureOptions o;
  o.kind = kind;
  o.flavour = flavour;
  switch (flavour) {
    case Flavour::kSphinx:
      // The struct defaults are Sphinx en-us (feat.params of
      // pocketsphinx-en-us); the log is ln(x + 1e-4) as in sphinxbase.
      o.log.mode = LogFloorMode::kOffset;
      o.log.floor_value = 1e-4f;
      break;
    case Flavour::kKaldi:
      // compute-mfcc-feats / torchaudio.compliance.kaldi defaults, dither off.
      o.frame.frame_length_ms = 25.0f;
      o.frame.fft_size = 0;  // round_to_power_of_two
      o.frame.preemphasis_mode = PreemphasisMode::kPerFrame;
      o.frame.window = WindowType::kPovey;
      o.frame.remove_dc = true;
      o.frame.snip_edges = true;
      o.mel.num_filters = 23;
      o.mel.low_freq = 20.0f;
      o.mel.high_freq = 0.0f;
      o.mel.scale = MelScale::kHtk;
      o.log.mode = LogFloorMode::kClamp;
      o.log.floor_value = FLT_EPSILON;
      o.mfcc.transform = CepstralTransform::kKaldiDct;
      o.mfcc.energy_floor = 1.0f;  // torchaudio's default; Kaldi's is 0
      o.mel.vtln.low_cutoff = 100.0f;  // Kaldi's VTLN knees
      o.mel.vtln.high_cutoff = -500.0f;
      if (kind == FeatureKind::kPlp) o.plp.num_filters = 23;
      break;
    case Flavour::kHtk:
      // A common HCopy configuration: TARGETKIND = MFCC_0, 25 ms Hamming,
      // 26 filters over the whole band, magnitude spectrum, lifter 22.
      o.frame.frame_length_ms = 25.0f;
      o.frame.preemphasis_mode = PreemphasisMode::kPerFrame;
      o.frame.window = WindowType::kHamming;
      o.frame.snip_edges = true;
      o.mel.num_filters = 26;
      o.mel.low_freq = 0.0f;
      o.mel.high_freq = 0.0f;
      o.mel.scale = MelScale::kHtk;
      o.mel.use_power = false;
      o.log.mode = LogFloorMode::kClamp;
      o.log.floor_value = 1.0f;  // HTK's mel floor
      o.mfcc.transform = CepstralTransform::kHtkDct;
      o.mel.vtln.low_cutoff = 100.0f;
      o.mel.vtln.high_cutoff = -500.0f;
      break;
  }
  if (kind == FeatureKind::kFbank && flavour == Flavour::kSphinx) {
    o.mel.num_filters = 40;  // sphinx_fe's default filter count
  }
  return o;
}

int FeatureOptions::base_dim() const {
  switch (kind) {
    case FeatureKind::kMfcc: return mfcc.num_ceps;
    case FeatureKind::kFbank: return mel.num_filters;
    case FeatureKind::kPlp: return plp.num_ceps;
    case FeatureKind::kTraps: return mel.num_filters * 2 * traps.num_coeffs;
  }
  return 0;
}

int FeatureOptions::output_dim() const {
  switch (delta.layout) {
    case DeltaOptions::Layout::kNone: return base_dim();
    case DeltaOptions::Layout::kSphinx1sCDDd: return 3 * base_dim();
    case DeltaOptions::Layout::kRegression: return (1 + delta.order) * base_dim();
    case DeltaOptions::Layout::kSphinxS2_4x: return 51;
  }
  return base_dim();
}

std::vector<int> FeatureOptions::stream_dims() const {
  if (delta.layout == DeltaOptions::Layout::kSphinxS2_4x) return {12, 24, 3, 12};
  return {output_dim()};
}

namespace {
[[noreturn]] void bad(const std::string& what) {
  throw std::invalid_argument(what);
}
}  // namespace

bool FeatureOptions::live_cmn_from_speech() const {
  return norm.cmn == NormOptions::Cmn::kLive && norm.live_from_speech &&
         (kind == FeatureKind::kMfcc || kind == FeatureKind::kFbank);
}

bool FeatureOptions::cmn_skips_negative_c0() const {
  return norm.cmn != NormOptions::Cmn::kNone && norm.skip_negative_c0 &&
         flavour == Flavour::kSphinx && kind == FeatureKind::kMfcc;
}

void FeatureOptions::validate() const {
  const FrameOptions& f = frame;
  if (!(f.sample_rate >= 1000.0f && f.sample_rate <= 384000.0f))
    bad("sample-rate must be between 1000 and 384000 Hz, got " +
        std::to_string(f.sample_rate));
  if (!(f.frame_length_ms > 0.0f) || !(f.frame_shift_ms > 0.0f))
    bad("frame length and shift must be positive");
  // Bounded before converting to samples, which would overflow an int.
  if (!(f.frame_length_ms <= 10000.0f) || !(f.frame_shift_ms <= 10000.0f))
    bad("frame length and shift must be at most 10000 ms");
  const int len = f.frame_length_samples();
  const int shift = f.frame_shift_samples();
  if (len < 2) bad("frame length is under 2 samples");
  if (shift < 1) bad("frame shift is under 1 sample");
  const int fft = f.padded_fft_size();
  if (fft < len)
    bad("fft-size " + std::to_string(fft) + " is smaller than the frame (" +
        std::to_string(len) + " samples)");
  if (fft & (fft - 1))
    bad("fft-size must be a power of two, got " + std::to_string(fft));
  if (fft > 65536) bad("fft-size above 65536 is not supported");
  if (!(f.preemphasis >= 0.0f && f.preemphasis < 1.0f))
    bad("preemphasis must be in [0, 1)");
  if (!(f.dither >= 0.0f)) bad("dither must be >= 0");

  const double nyquist = f.sample_rate / 2.0;
  const double high = mel.high_freq > 0 ? mel.high_freq : nyquist + mel.high_freq;
  if (mel.num_filters < 1 || mel.num_filters > 1024)
    bad("num-filters must be in 1..1024");
  if (!(mel.low_freq >= 0.0f) || !(high > mel.low_freq) || high > nyquist + 1e-3)
    bad("filterbank edges must satisfy 0 <= low-freq < high-freq <= " +
        std::to_string(nyquist) + " Hz (got " + std::to_string(mel.low_freq) +
        ", " + std::to_string(high) + ")");
  check_vtln(mel, f.sample_rate, mel.vtln.warp);
  if (log.mode != LogFloorMode::kConstant && !(log.floor_value > 0.0f))
    bad("the log floor must be positive");

  switch (kind) {
    case FeatureKind::kMfcc:
      if (mfcc.num_ceps < 1 || mfcc.num_ceps > mel.num_filters)
        bad("num-ceps must be in 1..num-filters (" +
            std::to_string(mel.num_filters) + ")");
      if (mfcc.lifter < 0) bad("lifter must be >= 0");
      break;
    case FeatureKind::kFbank:
      if (mfcc.use_energy) bad("use-energy is not supported for fbank");
      break;
    case FeatureKind::kPlp:
      if (plp.num_filters < 3 || plp.num_filters > 256)
        bad("PLP num-filters must be in 3..256");
      if (plp.order < 1 || plp.order >= plp.num_filters)
        bad("PLP order must be in 1..num-filters-1");
      if (plp.num_ceps < 1 || plp.num_ceps > 64)
        bad("PLP num-ceps must be in 1..64");
      if (!(plp.compress > 0.0f && plp.compress <= 1.0f))
        bad("PLP compression exponent must be in (0, 1]");
      if (plp.lifter < 0) bad("lifter must be >= 0");
      break;
    case FeatureKind::kTraps:
      if (traps.context < 1 || traps.context > 100)
        bad("TRAPS context must be in 1..100 frames");
      if (traps.num_coeffs < 1 || traps.num_coeffs > traps.context + 1)
        bad("TRAPS num-coeffs must be in 1..context+1");
      break;
  }
  if (delta.layout == DeltaOptions::Layout::kRegression &&
      (delta.order < 1 || delta.order > 2 || delta.window < 1 || delta.window > 10))
    bad("regression deltas need order 1..2 and window 1..10");
  if (delta.layout == DeltaOptions::Layout::kSphinxS2_4x &&
      (kind != FeatureKind::kMfcc || base_dim() != 13))
    bad("s2_4x features need 13 MFCC cepstra (c0..c12), got " +
        std::to_string(base_dim()) + " " + to_string(kind) + " values a frame");
  if (norm.cvn && norm.cmn != NormOptions::Cmn::kBatch)
    bad("cvn needs batch cmn");
  if (!norm.cmn_init.empty() &&
      static_cast<int>(norm.cmn_init.size()) != base_dim())
    bad("cmn-init has " + std::to_string(norm.cmn_init.size()) +
        " values but features have " + std::to_string(base_dim()));
  if (norm.live_window < 1) bad("live CMN window must be >= 1");
  if (noise.remove_noise || noise.remove_silence) {
    if (kind != FeatureKind::kMfcc && kind != FeatureKind::kFbank)
      bad("remove-noise and remove-silence apply to mfcc and fbank only");
    if (!std::isfinite(noise.vad_threshold)) bad("vad-threshold must be finite");
    // sphinxbase keeps these counts in 16-bit integers.
    const int counts[] = {noise.vad_prespeech, noise.vad_postspeech, noise.vad_startspeech};
    for (int c : counts)
      if (c < 0 || c > 32767)
        bad("vad-prespeech, vad-postspeech and vad-startspeech must be in 0..32767");
  }
  if (declip.enabled) declip.validate();
}

void DeclipOptions::validate() const {
  if (!(max_run_ms > 0.0f && max_run_ms <= 100.0f)) bad("declip max-run must be in (0, 100] ms");
  if (!(peak_fraction > 0.0f && peak_fraction <= 1.0f))
    bad("declip peak-fraction must be in (0, 1]");
  if (!(min_level >= 0.0f) || !std::isfinite(min_level))
    bad("declip min-level must be >= 0 and finite");
  if (!(max_gain >= 1.0f && max_gain <= 100.0f)) bad("declip max-gain must be in [1, 100]");
  if (!(level_tolerance >= 0.0f && level_tolerance <= 1024.0f))
    bad("declip level-tolerance must be in [0, 1024]");
  if (min_plateau_runs < 1 || min_plateau_runs > 1000)
    bad("declip min-plateau-runs must be in [1, 1000]");
}

int DeclipOptions::max_run_samples(float sample_rate) const {
  return std::max(2, static_cast<int>(std::lround(max_run_ms * 1e-3 * sample_rate)));
}

const char* to_string(Flavour f) {
  switch (f) {
    case Flavour::kSphinx: return "sphinx";
    case Flavour::kHtk: return "htk";
    case Flavour::kKaldi: return "kaldi";
  }
  return "?";
}

const char* to_string(FeatureKind k) {
  switch (k) {
    case FeatureKind::kMfcc: return "mfcc";
    case FeatureKind::kFbank: return "fbank";
    case FeatureKind::kPlp: return "plp";
    case FeatureKind::kTraps: return "traps";
  }
  return "?";
}

const char* to_string(WindowType w) {
  switch (w) {
    case WindowType::kHamming: return "hamming";
    case WindowType::kHanning: return "hanning";
    case WindowType::kPovey: return "povey";
    case WindowType::kRectangular: return "rectangular";
    case WindowType::kBlackman: return "blackman";
  }
  return "?";
}

Flavour parse_flavour(const std::string& s) {
  if (s == "sphinx") return Flavour::kSphinx;
  if (s == "htk") return Flavour::kHtk;
  if (s == "kaldi") return Flavour::kKaldi;
  bad("unknown flavour '" + s + "' (expected sphinx|htk|kaldi)");
}

FeatureKind parse_feature_kind(const std::string& s) {
  if (s == "mfcc") return FeatureKind::kMfcc;
  if (s == "fbank") return FeatureKind::kFbank;
  if (s == "plp") return FeatureKind::kPlp;
  if (s == "traps") return FeatureKind::kTraps;
  bad("unknown feature kind '" + s + "' (expected mfcc|fbank|plp|traps)");
}

WindowType parse_window(const std::string& s) {
  if (s == "hamming") return WindowType::kHamming;
  if (s == "hanning" || s == "hann") return WindowType::kHanning;
  if (s == "povey") return WindowType::kPovey;
  if (s == "rectangular") return WindowType::kRectangular;
  if (s == "blackman") return WindowType::kBlackman;
  bad("unknown window '" + s +
      "' (expected hamming|hanning|povey|rectangular|blackman)");
}

const char* noise_start_name(bool start_at_first_sound) {
  return start_at_first_sound ? "first-sound" : "first-frame";
}

bool parse_noise_start(const std::string& s) {
  for (bool first_sound : {false, true})
    if (s == noise_start_name(first_sound)) return first_sound;
  bad("unknown noise start '" + s + "' (expected first-frame|first-sound)");
}

}  // namespace gpuspeech
