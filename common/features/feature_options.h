// Options for every configurable stage of feature extraction, one struct per
// stage, Kaldi-style. Defaults live here and nowhere else: the CLI, the
// GStreamer element and feat.params parsing all start from these values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpuspeech {

// Which toolkit's conventions a cepstral pipeline follows. The flavour picks
// defaults (see FeatureOptions::for_flavour) and details no single option
// expresses: Sphinx pre-emphasises the continuous signal and floors the log
// at a constant, Kaldi pre-emphasises inside each frame, and so on.
enum class Flavour { kSphinx, kHtk, kKaldi };

enum class FeatureKind {
  kMfcc,   // cepstra from a mel filterbank
  kFbank,  // log mel filterbank energies
  kPlp,    // perceptual linear prediction cepstra
  kTraps,  // TRAPS (LC-RC): per-band temporal trajectories
};

enum class WindowType { kHamming, kHanning, kPovey, kRectangular, kBlackman };

enum class PreemphasisMode {
  kContinuous,  // y[n] = x[n] - a x[n-1] over the whole signal (Sphinx)
  kPerFrame,    // inside each frame, first sample y[0] = x[0] - a x[0] (Kaldi, HTK)
};

// Cutting the signal into frames.
struct FrameOptions {
  float sample_rate = 16000.0f;
  float frame_length_ms = 25.625f;  // Sphinx -wlen 0.025625
  float frame_shift_ms = 10.0f;     // Sphinx -frate 100
  int fft_size = 512;               // 0: next power of two >= frame length
  float preemphasis = 0.97f;        // 0 disables
  PreemphasisMode preemphasis_mode = PreemphasisMode::kContinuous;
  WindowType window = WindowType::kHamming;
  bool remove_dc = false;  // subtract each frame's mean before windowing
  // Kaldi's snip_edges: only frames that fit entirely in the signal. When
  // false the last partial frame is zero-padded (what sphinx_fe does at the
  // end of an utterance).
  bool snip_edges = false;
  float dither = 0.0f;  // std-dev of Gaussian dither in sample units; 0 = off
  uint32_t dither_seed = 0;

  int frame_length_samples() const;  // rounded like the toolkits do
  int frame_shift_samples() const;
  int padded_fft_size() const;  // fft_size, or next pow2 if fft_size == 0
};

// The triangular mel filterbank and the mel scale.
enum class MelScale {
  kSphinx,  // 2595 log10(1 + f/700), filter edges rounded to DFT bins, unit area
  kHtk,     // 1127 ln(1 + f/700), triangles on the mel axis, peak 1
};

// Vocal-tract length normalisation by a piecewise-linear frequency warp
// (the form Kaldi and HTK use: linear with slope 1/alpha up to a knee, then
// a line that maps the Nyquist frequency onto itself).
// The two knees (low_cutoff * max(1, warp) and high_cutoff * min(1, warp))
// must fall strictly inside the filterbank's [low_freq, high_freq] whenever a
// warp other than 1 is used; check_vtln (mel_filterbank.h) says so clearly.
struct VtlnOptions {
  float warp = 1.0f;            // 1.0 = no warp
  float low_cutoff = 200.0f;    // Hz; lower knee (Kaldi's default is 100)
  float high_cutoff = 6300.0f;  // Hz; upper knee; <= 0: offset from Nyquist
};

struct MelOptions {
  int num_filters = 25;      // Sphinx -nfilt (en-us: 25)
  float low_freq = 130.0f;   // Sphinx -lowerf (en-us: 130)
  float high_freq = 6800.0f; // Sphinx -upperf (en-us: 6800); <= 0: offset from Nyquist
  MelScale scale = MelScale::kSphinx;
  bool use_power = true;  // power spectrum (true) or magnitude (HTK default)
  // kSphinx only: snap each filter's left, centre and right edge to the
  // nearest DFT bin frequency (sphinx_fe -round_filters yes, its default).
  // false keeps the exact mel-spaced edges (-round_filters no).
  bool round_filters = true;
  VtlnOptions vtln;
};

enum class CepstralTransform {
  kSphinxDct,  // Sphinx "dct": orthonormal-like DCT-II, c0 scaled by sqrt(1/N)
  kSphinxLegacy,  // Sphinx "legacy": plain cos sum over filters / N
  kHtkDct,     // sqrt(2/N) sum m_j cos(pi i (j+0.5)/N) for every i
  kKaldiDct,   // orthonormal DCT-II (Kaldi / torchaudio)
};

// How the log of a filterbank energy is protected from log(0).
enum class LogFloorMode {
  kConstant,  // x > 0 ? ln x : floor_value
  kClamp,     // ln(max(x, floor_value)) (Kaldi: FLT_EPSILON; HTK: 1.0)
  kOffset,    // ln(x + floor_value) (Sphinx: 1e-4)
};

struct LogOptions {
  LogFloorMode mode = LogFloorMode::kClamp;
  float floor_value = 0.0f;  // filled per flavour
};

struct MfccOptions {
  int num_ceps = 13;
  CepstralTransform transform = CepstralTransform::kSphinxDct;
  int lifter = 22;  // 0: none; L: c_i *= 1 + L/2 sin(pi i / L)
  // C0 (default) or the frame's log energy as the first coefficient (HTK
  // and Kaldi use_energy). The energy is computed from the raw frame after
  // DC removal and before pre-emphasis and window, like Kaldi's raw_energy.
  bool use_energy = false;
  float energy_floor = 0.0f;  // log energy >= ln(energy_floor) when > 0
};

struct PlpOptions {
  int num_filters = 21;  // critical bands on the Bark scale
  int order = 12;        // LPC order
  int num_ceps = 13;
  float compress = 0.33f;  // cube-root intensity-loudness compression
  int lifter = 22;
  bool use_energy = false;
};

struct TrapsOptions {
  int context = 25;   // frames on each side; the trajectory spans 2*context+1
  int num_coeffs = 8;  // DCT coefficients kept per half (left and right)
};

struct DeltaOptions {
  // Sphinx "1s_c_d_dd": 39-dim [c, d, dd] with d = c[t+2]-c[t-2],
  // dd = d[t+1]-d[t-1] and frames outside the utterance replicate its edges.
  // Sphinx "s2_4x" (Sphinx-II's four streams, semi-continuous models such
  // as tidigits; needs exactly 13 cepstra c0..c12): 51 dims
  //   [c1..c12 | d2(c1..c12), d4(c1..c12) | c0, d2(c0), dd(c0) | dd(c1..c12)]
  // with d2 = c[t+2]-c[t-2], d4 = c[t+4]-c[t-4] and dd as in 1s_c_d_dd;
  // the stream sizes are 12, 24, 3, 12 (FeatureOptions::stream_dims()).
  enum class Layout { kNone, kSphinx1sCDDd, kRegression, kSphinxS2_4x };
  Layout layout = Layout::kNone;
  int order = 2;   // kRegression: 1 = deltas, 2 = + accelerations
  int window = 2;  // kRegression: N in sum_n n (c[t+n] - c[t-n]) / (2 sum n^2)
};

// Sphinx's front-end noise removal and voice activity detection
// (sphinx_noise.h): spectral subtraction on the mel power energies, and
// dropping the frames its VAD calls silence. sphinx_fe and pocketsphinx
// enable both by default; here they are off unless asked for. They apply to
// MFCC and fbank with a single VTLN warp, and run on the host, in order.
struct NoiseOptions {
  bool remove_noise = false;    // Sphinx -remove_noise
  bool remove_silence = false;  // Sphinx -remove_silence: drop non-speech frames
  float vad_threshold = 2.0f;   // -vad_threshold: min. ln(power / noise) of speech
  int vad_prespeech = 20;       // -vad_prespeech: frames held in silence = this + 1
  int vad_postspeech = 50;      // -vad_postspeech: non-speech frames that end speech
  int vad_startspeech = 10;     // -vad_startspeech: speech frames that start speech
  // Where the noise estimate starts. false: at the stream's first frame,
  // at its energy / 20, as Debian's sphinxbase build does (sphinx_fe's and
  // pocketsphinx's numbers). The estimate then rises at 0.5 % a frame, so
  // for the first seconds it lies far below the noise, and noise alone
  // passes for speech; after digital zeros it starts at 0. true: frames of
  // digital silence (every band 0) leave the trackers unset, and the first
  // frame with energy starts the estimate at that energy, as upstream
  // sphinxbase does; the estimate falls to the noise within a few frames
  // (it falls at 50 % a frame). Measured (docs/benchmarks.md, "The noise
  // estimate started at the first sound"): transcribe on a long noisy
  // recording cut into its sentences, each file beginning in the pause's
  // noise, makes 6-13 % fewer errors; files where the speech begins with
  // the noise, and long streams, hardly change.
  bool start_at_first_sound = false;
};

// Restoring clipped peaks (declipper.h): runs of 2 to max_run_ms of
// (nearly) equal samples at the signal's peak level, recurring at one level
// as an overdriven input or a level pushed past full scale leaves them, are
// redrawn by a cubic through the two samples on each side. Off here (the
// toolkits' front ends have no such stage); the recognizer's front end
// turns it on (RecognizerConfig).
// Runs on the host before everything else, the same for every backend.
struct DeclipOptions {
  bool enabled = false;
  // Longest run restored; longer ones (a stuck input, a square wave) are
  // left as they are. 4 ms: every run of the degraded set's clipped
  // condition (12 dB past full scale) is at most 3 ms long.
  float max_run_ms = 4.0f;
  // A run is a candidate when its magnitude is at least this fraction of
  // the largest seen before it, and at least min_level (16-bit units).
  float peak_fraction = 0.9f;
  float min_level = 512.0f;
  // Samples of one sign within this much (16-bit units) of a run's first
  // one's magnitude continue it.
  float level_tolerance = 2.0f;
  // Clipping flattens peak after peak at one level; a speech waveform's
  // own flat tops do not recur at one level. So a run is restored only
  // once this many runs of its sign (it included) have been seen at its
  // level, within level_tolerance, with no run at another level between.
  // The first min_plateau_runs - 1 runs of a plateau are kept as they are.
  int min_plateau_runs = 3;
  // A restored sample is at most this many times the run's level (a cubic
  // over a long gap can overshoot): 4 = 12 dB.
  float max_gain = 4.0f;

  // Samples in the longest restored run at `sample_rate` (at least 2).
  int max_run_samples(float sample_rate) const;
  // Throws std::invalid_argument naming the bad field.
  void validate() const;
};

struct NormOptions {
  enum class Cmn { kNone, kBatch, kLive };
  Cmn cmn = Cmn::kNone;
  bool cvn = false;  // variance normalisation (needs kBatch)
  // Starting mean for live CMN (Sphinx -cmninit); empty = first frame's.
  std::vector<float> cmn_init;
  int live_window = 500;  // frames after which live CMN starts forgetting
  // Live CMN: how many frames cmn_init counts as when the running mean
  // starts. Sphinx weighs it as the whole window (500 frames), so on a new
  // channel the mean needs seconds of speech to move half way, and the
  // first utterances are decoded with a mean that is not theirs. With 100
  // (1 s of speech) and live_from_speech the live chain gained on every
  // real LibriVox set and on six of nine degraded conditions; 30 gained
  // more on the degraded ones but lost words on clean LibriVox
  // (docs/benchmarks.md, "Live CMN from speech frames"). Must be >= 1.
  int live_init_frames = 100;
  // Live CMN learns its running mean only from the frames the Sphinx VAD
  // (the noise tracker's decision with its hangover, NoiseOptions::vad_*)
  // calls speech; every frame is still normalised. pocketsphinx's CMN sees
  // only the frames its VAD keeps (-remove_silence), while a stream here
  // keeps every frame, and without this the pauses pull the mean toward the
  // noise floor (measured on issue 15's long recordings: docs/benchmarks.md,
  // "Live CMN from speech frames"). The noise tracker then runs for its
  // decisions even without noise.remove_noise (the bands pass unchanged).
  // Takes effect where the decisions reach the normalisation
  // (StreamingFeatureExtractor, compute_features,
  // Recognizer::compute_features), for MFCC and fbank with one warp
  // (FeatureOptions::live_cmn_from_speech); elsewhere every frame counts.
  bool live_from_speech = true;
  // Sphinx's CMN (batch and live) leaves every frame whose c0 is negative
  // out of the mean it subtracts, while normalising every frame. In Sphinx's
  // scale c0 is the log energy: a frame of digital silence gives about -46
  // and speech 30-60, so 20-40 frames of zeros after an utterance (the
  // VAD's hangover keeps them) pull a 5 s utterance's c0 mean down by 4-8.
  // Off by default, by measurement (docs/benchmarks.md, "Codecs, clipping
  // and digital silence after the speech"): on issue 15's sets it gains
  // 1-7 points where zeros follow the speech (codecs, GSM, clipping) but
  // loses 2-6 on the noisy rows, whose 0.4 s of leading zeros leave about
  // 11 zero frames in the VAD's pre-speech window, and a word on LibriVox
  // with zeros first. Takes effect for Sphinx MFCC only
  // (FeatureOptions::cmn_skips_negative_c0): other flavours scale c0
  // otherwise, and fbank has no c0.
  bool skip_negative_c0 = false;
  bool min_max = false;   // scale each dimension to [0, 1] over the utterance
};

// Everything that defines one feature stream. Two streams with equal options
// produce identical numbers on every backend.
struct FeatureOptions {
  FeatureKind kind = FeatureKind::kMfcc;
  Flavour flavour = Flavour::kSphinx;
  FrameOptions frame;
  MelOptions mel;
  LogOptions log;
  MfccOptions mfcc;
  PlpOptions plp;
  TrapsOptions traps;
  DeltaOptions delta;
  NormOptions norm;
  NoiseOptions noise;  // Sphinx noise / silence removal (off by default)
  DeclipOptions declip;  // restoring clipped peaks (off by default)

  // The defaults of each toolkit for `kind`. Sphinx defaults are the
  // en-us model's feat.params; Kaldi's those of compute-mfcc-feats and
  // torchaudio.compliance.kaldi; HTK's those of a common HCopy config
  // (TARGETKIND MFCC_0, 25 ms Hamming, 26 filters, lifter 22).
  static FeatureOptions for_flavour(Flavour flavour, FeatureKind kind);

  // Features per frame before deltas (e.g. 13 for MFCC).
  int base_dim() const;
  // Features per frame as delivered (after deltas).
  int output_dim() const;
  // How a frame divides into independent feature streams (what a Sphinx
  // model's codebooks are over), in order: {output_dim()}, except s2_4x's
  // four streams {12, 24, 3, 12}.
  std::vector<int> stream_dims() const;
  // Throws std::invalid_argument naming the offending option.
  void validate() const;
  // Whether live CMN learns from the VAD's speech frames only: cmn live with
  // norm.live_from_speech, for the kinds the Sphinx noise tracker applies
  // to (mfcc, fbank: its bands are the mel filterbank's; PLP and TRAPS
  // learn from every frame).
  bool live_cmn_from_speech() const;
  // Whether CMN leaves frames with a negative c0 out of its mean:
  // norm.skip_negative_c0 for Sphinx MFCC (cmn batch or live).
  bool cmn_skips_negative_c0() const;
};

const char* to_string(Flavour);
const char* to_string(FeatureKind);
const char* to_string(WindowType);
// Parse helpers for CLI flags and element properties; throw
// std::invalid_argument listing the accepted names.
Flavour parse_flavour(const std::string&);
FeatureKind parse_feature_kind(const std::string&);
WindowType parse_window(const std::string&);
// NoiseOptions::start_at_first_sound by name: "first-frame" (false) or
// "first-sound" (true).
const char* noise_start_name(bool start_at_first_sound);
bool parse_noise_start(const std::string&);

}  // namespace gpuspeech
