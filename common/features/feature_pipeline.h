// The feature pipeline: turns audio into feature frames on any backend.
//
// FeatureExtractor compiles FeatureOptions into a fixed list of backend
// operations and the constant matrices they need (window, filterbank, DCT),
// uploaded once. Every kind is the same skeleton:
//
//   spectral_bands (framing -> power spectrum -> filterbank -> log or pow,
//   one backend operation: a device keeps frames and spectra on the chip)
//     MFCC:  -> gemm(DCT with lifter folded in) [-> log energy into c0]
//     fbank: (done)
//     PLP:   -> pow(1/3) -> gemm(IDFT to autocorrelation) -> lpc_to_cepstrum
//            -> gemm(lifter)
//     TRAPS: -> splice(context) -> gemm(half-Hamming-weighted DCTs)
//
// K VTLN warps share one FFT: the K warped filterbanks are stacked into one
// matrix, so the filterbank GEMM produces all K at once.
//
// Normalisation and deltas (postprocess.h) run on the host afterwards; they
// are cheap and identical for every backend.
//
// Sphinx noise and silence removal (NoiseOptions, sphinx_noise.h) are the one
// host-side stage inside the spectral pipeline: each frame depends on all the
// frames before it, so when either is on the band energies are downloaded
// after the filterbank GEMM, processed frame by frame on the host
// (SphinxNoiseRemover: noise-reduced energies and a per-frame speech
// decision) and, for remove_noise, uploaded again before the log. With
// remove_silence, compute() then drops the frames SphinxVad calls silence.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "common/backends/backend.h"
#include "common/features/feature_options.h"

namespace gpuspeech {

class SphinxNoiseRemover;

// A feature matrix on the host: rows frames of dim floats, row-major.
struct FeatureMatrix {
  int64_t rows = 0;
  int dim = 0;
  std::vector<float> data;
  float* row(int64_t r) { return data.data() + r * dim; }
  const float* row(int64_t r) const { return data.data() + r * dim; }
};

class FeatureExtractor {
 public:
  // Validates `opts` (std::invalid_argument on bad values) and uploads the
  // constant matrices to `backend`, which must outlive the extractor.
  // `warps` lists VTLN factors computed together from one FFT; empty means
  // the single warp opts.mel.vtln.warp.
  FeatureExtractor(const FeatureOptions& opts, Backend& backend,
                   std::vector<float> warps = {});
  ~FeatureExtractor();
  FeatureExtractor(const FeatureExtractor&) = delete;
  FeatureExtractor& operator=(const FeatureExtractor&) = delete;

  const FeatureOptions& options() const { return opts_; }
  Backend& backend() const { return backend_; }
  int num_warps() const { return static_cast<int>(warps_.size()); }
  // Floats per frame per warp, before deltas (options().base_dim()).
  int base_dim() const { return base_dim_; }
  int frame_length() const { return frame_length_; }
  int frame_shift() const { return frame_shift_; }
  // Frames of context the spectral stage needs on each side (TRAPS).
  int spectral_context() const;

  // Frames an utterance of `num_samples` samples yields (snip_edges: whole
  // frames only; otherwise also one zero-padded frame for leftover samples,
  // as sphinx_fe does).
  int64_t num_frames(int64_t num_samples) const;

  // Spectral features of one whole utterance, samples in 16-bit units
  // (a float in [-1, 1] must be scaled by 32768 first). The result has
  // num_frames(n) rows of num_warps() * base_dim() floats: warp k's features
  // are columns [k * base_dim, (k + 1) * base_dim).
  // With noise.remove_noise / remove_silence the noise trackers and the VAD
  // start afresh (like one sphinx_fe run), and with remove_silence only the
  // frames the VAD keeps are returned (fewer than num_frames(n) rows).
  FeatureMatrix compute(const float* samples, int64_t num_samples);

  // The same for `spec.num_utts` utterances already on the device (see
  // FramingSpec; its frame fields are filled by framing_for()). `out`
  // receives spec.rows() x (num_warps * base_dim) floats. For benchmarks and
  // streaming; no host transfer happens. Declipping and dither are host
  // stages on the samples: compute() applies them, compute_device() does
  // not (StreamingFeatureExtractor applies them before uploading).
  void compute_device(const DeviceBuffer& signal, const FramingSpec& spec,
                      DeviceBuffer& out);

  // A FramingSpec for a batch of utterances of `num_samples` each, laid out
  // `stride` samples apart, with this extractor's frame settings.
  FramingSpec framing_for(int64_t num_utts, int64_t num_samples,
                          int64_t stride) const;

  // Sphinx noise / silence removal (opts.noise). True when the host-side
  // stage runs: remove_noise or remove_silence, or live CMN from speech
  // (NormOptions::live_from_speech, one warp), which needs its decisions.
  bool has_noise_stage() const { return noise_ != nullptr; }
  // compute_device() carries the noise trackers from call to call (one
  // stream, frames in order, one utterance per call); this starts them
  // afresh. compute() calls it itself.
  void reset_noise_state();
  // Speech decision of each frame of the last compute_device() call (1 =
  // speech), before the hangover: feed them to a SphinxVad to decide which
  // frames to keep. Empty when has_noise_stage() is false.
  const std::vector<uint8_t>& speech_flags() const { return speech_flags_; }
  // After compute() with remove_silence: the index of each frame returned
  // among the utterance's num_frames(n) frames (increasing). Empty when
  // compute() dropped nothing because remove_silence is off.
  const std::vector<int64_t>& kept_frames() const { return kept_frames_; }
  // After compute(): for each frame returned, whether live CMN learns from
  // it (the VAD's state after its hangover: speech_states_after_hangover
  // over all the utterance's frames, then the kept ones), to pass to
  // postprocess_utterance. Empty, meaning every frame, unless the options
  // ask for live CMN from speech (FeatureOptions::live_cmn_from_speech:
  // MFCC or fbank) and the noise stage runs.
  std::vector<uint8_t> cmn_learn_rows() const;

 private:
  struct Scratch;
  void ensure_scratch(int64_t rows);
  // Spectral features of the utterances in `signal` (compute_device after
  // its checks).
  void run_spectral(const DeviceBuffer& signal, const FramingSpec& spec, DeviceBuffer& out);
  // The host-side Sphinx noise stage on `rows` frames of band energies.
  void run_noise_stage(int64_t rows, DeviceBuffer& bands);
  // Whether spectral_bands also applies the first linear map (MFCC's DCT,
  // PLP's inverse DFT): so unless the noise stage must see the bands.
  bool projects_bands() const;
  // compute() with remove_silence: keeps the frames SphinxVad releases.
  void drop_silence(FeatureMatrix& m, bool last_is_leftover);

  FeatureOptions opts_;
  Backend& backend_;
  std::vector<float> warps_;
  int frame_length_ = 0;
  int frame_shift_ = 0;
  int fft_size_ = 0;
  int base_dim_ = 0;
  int num_bands_ = 0;  // filters per warp
  BufferPtr window_;
  BufferPtr filterbank_;   // (warps * bands) x (fft/2+1)
  BufferPtr filterbank_ranges_;  // each row's non-zero bins (Backend::spectral_bands)
  BufferPtr cepstral_;     // DCT (MFCC), IDFT (PLP) or TRAPS weights
  BufferPtr plp_lifter_;   // num_ceps x num_ceps diagonal (PLP)
  Scratch* scratch_ = nullptr;
  std::unique_ptr<SphinxNoiseRemover> noise_;  // null unless opts.noise asks
  std::vector<uint8_t> speech_flags_;
  std::vector<int64_t> kept_frames_;  // compute() with remove_silence
  std::vector<float> host_bands_;
};

// Full pipeline for one utterance: spectral features, then normalisation and
// deltas from opts (postprocess.h). Rows = num_frames, dim = output_dim().
FeatureMatrix compute_features(const FeatureOptions& opts, Backend& backend,
                               const float* samples, int64_t num_samples);

}  // namespace gpuspeech
