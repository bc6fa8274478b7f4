#include "common/features/feature_pipeline.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <random>
#include <stdexcept>
#include <utility>

#include "common/features/cepstral_transform.h"
#include "common/features/declipper.h"
#include "common/features/mel_filterbank.h"
#include "common/features/plp.h"
#include "common/features/postprocess.h"
#include "common/features/sphinx_noise.h"
#include "common/features/traps.h"
#include "common/features/window.h"

namespace gpuspeech {

// Device work buffers, grown on demand and reused across calls.
struct FeatureExtractor::Scratch {
  int64_t capacity = 0;  // rows
  BufferPtr energy;      // rows
  BufferPtr bands;       // rows x (warps * bands)
  BufferPtr work;        // PLP autocorrelation / TRAPS splice
  BufferPtr work2;       // PLP raw cepstra
  BufferPtr signal;      // compute(): the uploaded utterance
};

namespace {

UnaryOp log_op(LogFloorMode mode) {
  switch (mode) {
    case LogFloorMode::kConstant: return UnaryOp::kLogFloor;
    case LogFloorMode::kClamp: return UnaryOp::kLogClamp;
    case LogFloorMode::kOffset: return UnaryOp::kLogOffset;
  }
  return UnaryOp::kLogClamp;
}

BufferPtr upload_matrix(Backend& b, const std::vector<float>& m) {
  BufferPtr buf = b.alloc(m.size());
  b.upload(*buf, m.data(), m.size());
  return buf;
}

// The non-zero bins of each filterbank row, as Backend::spectral_bands
// takes them: first bin and count, float-stored. Taken from the matrix
// itself, so the support is right for every filter shape (mel, PLP, warped).
std::vector<float> filterbank_support(const std::vector<float>& fb, int rows, int bins) {
  std::vector<float> ranges(2 * static_cast<size_t>(rows), 0.0f);
  for (int j = 0; j < rows; ++j) {
    const float* row = fb.data() + static_cast<size_t>(j) * bins;
    int first = 0, last = -1;
    for (int k = 0; k < bins; ++k)
      if (row[k] != 0.0f) {
        if (last < 0) first = k;
        last = k;
      }
    ranges[2 * j] = static_cast<float>(first);
    ranges[2 * j + 1] = static_cast<float>(last - first + 1);  // 0 for an empty row
  }
  return ranges;
}

}  // namespace

FeatureExtractor::FeatureExtractor(const FeatureOptions& opts, Backend& backend,
                                   std::vector<float> warps)
    : opts_(opts), backend_(backend), warps_(std::move(warps)) {
  opts_.validate();
  if (warps_.empty()) warps_.push_back(opts_.mel.vtln.warp);
  if (warps_.size() > 64) throw std::invalid_argument("at most 64 VTLN warps at once");
  for (float w : warps_) check_vtln(opts_.mel, opts_.frame.sample_rate, w);
  // TRAPS transforms every warp's bands with one dense matrix, whose size
  // grows with the square of the warp count.
  if (opts_.kind == FeatureKind::kTraps && warps_.size() > 4)
    throw std::invalid_argument("TRAPS supports at most 4 VTLN warps at once");

  const FrameOptions& f = opts_.frame;
  frame_length_ = f.frame_length_samples();
  frame_shift_ = f.frame_shift_samples();
  fft_size_ = f.padded_fft_size();
  base_dim_ = opts_.base_dim();
  const int bins = fft_size_ / 2 + 1;
  const int nwarps = num_warps();

  std::vector<double> w = make_window(f.window, frame_length_);
  window_ = upload_matrix(backend_, std::vector<float>(w.begin(), w.end()));

  // One filterbank row block per warp, stacked: a single GEMM from one FFT
  // yields every warp's band energies.
  std::vector<float> stacked;
  if (opts_.kind == FeatureKind::kPlp) {
    num_bands_ = opts_.plp.num_filters;
    const float high = static_cast<float>(resolve_high_freq(opts_.mel.high_freq, f.sample_rate));
    for (float warp : warps_) {
      std::vector<float> fb = plp_filterbank(opts_.plp, fft_size_, f.sample_rate,
                                             opts_.mel.low_freq, high, opts_.mel.vtln, warp);
      stacked.insert(stacked.end(), fb.begin(), fb.end());
    }
  } else {
    num_bands_ = opts_.mel.num_filters;
    // Kaldi leaves the Nyquist bin out of its mel banks.
    const bool nyquist = opts_.flavour != Flavour::kKaldi;
    for (float warp : warps_) {
      std::vector<float> fb = mel_filterbank(opts_.mel, fft_size_, f.sample_rate, warp, nyquist);
      stacked.insert(stacked.end(), fb.begin(), fb.end());
    }
  }
  if (stacked.size() != static_cast<size_t>(nwarps) * num_bands_ * bins)
    throw std::logic_error("filterbank has the wrong shape");
  filterbank_ = upload_matrix(backend_, stacked);
  filterbank_ranges_ = upload_matrix(backend_, filterbank_support(stacked, nwarps * num_bands_, bins));

  switch (opts_.kind) {
    case FeatureKind::kMfcc:
      cepstral_ = upload_matrix(
          backend_, cepstral_matrix(opts_.mfcc.transform, opts_.mfcc.num_ceps,
                                    num_bands_, opts_.mfcc.lifter));
      break;
    case FeatureKind::kPlp:
      cepstral_ = upload_matrix(backend_, plp_autocorr_matrix(opts_.plp));
      plp_lifter_ = upload_matrix(backend_, plp_lifter_matrix(opts_.plp));
      break;
    case FeatureKind::kTraps:
      // Built over every warp's bands at once, which keeps warp k's output
      // in columns [k * base_dim, (k + 1) * base_dim).
      cepstral_ = upload_matrix(backend_, traps_matrix(opts_.traps, nwarps * num_bands_));
      break;
    case FeatureKind::kFbank:
      break;
  }
  if (opts_.noise.remove_noise || opts_.noise.remove_silence) {
    // One speech decision per frame: every warp would need its own.
    if (nwarps != 1)
      throw std::invalid_argument("Sphinx noise / silence removal needs a single VTLN warp");
    noise_ = std::make_unique<SphinxNoiseRemover>(num_bands_, opts_.noise);
  } else if (opts_.live_cmn_from_speech() && nwarps == 1) {
    // The trackers for their speech decisions alone (the bands pass
    // unchanged): live CMN learns from speech. With several warps (DTW's
    // test warps) there is no one decision, and every frame learns.
    noise_ = std::make_unique<SphinxNoiseRemover>(num_bands_, opts_.noise);
  }
  scratch_ = new Scratch();
}

FeatureExtractor::~FeatureExtractor() { delete scratch_; }

int FeatureExtractor::spectral_context() const {
  return opts_.kind == FeatureKind::kTraps ? opts_.traps.context : 0;
}

int64_t FeatureExtractor::num_frames(int64_t n) const {
  if (n <= 0) return 0;
  if (opts_.frame.snip_edges)
    return n < frame_length_ ? 0 : 1 + (n - frame_length_) / frame_shift_;
  // sphinx_fe: whole frames, then one zero-padded frame from whatever
  // samples follow the last whole frame's start + shift.
  if (n < frame_length_) return 1;
  const int64_t whole = 1 + (n - frame_length_) / frame_shift_;
  return whole * frame_shift_ < n ? whole + 1 : whole;
}

FramingSpec FeatureExtractor::framing_for(int64_t num_utts, int64_t num_samples,
                                          int64_t stride) const {
  FramingSpec s;
  s.num_utts = num_utts;
  s.utt_stride = stride;
  s.valid_length = num_samples;
  s.frames_per_utt = num_frames(num_samples);
  s.first_frame_offset = 0;
  s.frame_shift = frame_shift_;
  s.frame_length = frame_length_;
  s.fft_size = fft_size_;
  s.preemphasis = opts_.frame.preemphasis;
  s.preemphasis_per_frame = opts_.frame.preemphasis_mode == PreemphasisMode::kPerFrame;
  s.remove_dc = opts_.frame.remove_dc;
  return s;
}

void FeatureExtractor::ensure_scratch(int64_t rows) {
  if (rows <= scratch_->capacity) return;
  const int64_t cap = std::max<int64_t>(rows, scratch_->capacity * 3 / 2);
  const int64_t bands = static_cast<int64_t>(num_warps()) * num_bands_;
  Scratch& s = *scratch_;
  s.energy = backend_.alloc(cap);
  // The bands need a buffer of their own only where something reads them
  // after spectral_bands: TRAPS' splice, or MFCC's and PLP's first map
  // when the noise stage keeps it out of spectral_bands (fbank's go to
  // the output, projected MFCC and PLP's are never written out).
  const bool projected_or_out = projects_bands() || opts_.kind == FeatureKind::kFbank;
  if (!projected_or_out) s.bands = backend_.alloc(cap * bands);
  if (opts_.kind == FeatureKind::kPlp) {
    s.work = backend_.alloc(cap * num_warps() * (opts_.plp.order + 1));
    s.work2 = backend_.alloc(cap * num_warps() * opts_.plp.num_ceps);
  } else if (opts_.kind == FeatureKind::kTraps) {
    s.work = backend_.alloc(cap * bands * (2 * opts_.traps.context + 1));
  }
  s.capacity = cap;
}

void FeatureExtractor::compute_device(const DeviceBuffer& signal,
                                      const FramingSpec& spec, DeviceBuffer& out) {
  const int64_t rows = spec.rows();
  speech_flags_.clear();
  if (rows == 0) return;
  if (spec.frame_length != frame_length_ || spec.frame_shift != frame_shift_ ||
      spec.fft_size != fft_size_)
    throw std::invalid_argument("FramingSpec does not match the extractor's frames");
  if (out.size() < static_cast<size_t>(rows) * num_warps() * base_dim_)
    throw std::invalid_argument("output buffer too small");
  if (noise_ && spec.num_utts != 1)
    throw std::invalid_argument(
        "Sphinx noise / silence removal tracks one stream: one utterance per call");
  ensure_scratch(rows);
  run_spectral(signal, spec, out);
}

void FeatureExtractor::run_spectral(const DeviceBuffer& signal, const FramingSpec& spec,
                                    DeviceBuffer& out) {
  Scratch& s = *scratch_;
  const int64_t rows = spec.rows();
  const int nwarps = num_warps();
  const int bands = nwarps * num_bands_;
  const bool energy = (opts_.kind == FeatureKind::kMfcc && opts_.mfcc.use_energy) ||
                      (opts_.kind == FeatureKind::kPlp && opts_.plp.use_energy);

  // Framing, power spectrum, filterbank and the log (PLP: the cube root) in
  // one backend operation, so a device keeps frames and spectra on the chip.
  // The Sphinx noise stage must see the raw band energies: then the log
  // runs after it, as a separate apply.
  BandsSpec b;
  b.magnitude = !opts_.mel.use_power && opts_.kind != FeatureKind::kPlp;
  b.num_bands = bands;
  if (opts_.kind == FeatureKind::kPlp) {
    b.op = UnaryOp::kPow;
    b.op_param = opts_.plp.compress;
  } else {
    b.op = log_op(opts_.log.mode);
    b.op_param = opts_.log.floor_value;
  }
  b.apply_op = !noise_;
  const bool project = projects_bands();
  if (project) {
    b.projection = cepstral_.get();
    b.projection_group = num_bands_;
    b.projection_outputs =
        opts_.kind == FeatureKind::kMfcc ? opts_.mfcc.num_ceps : opts_.plp.order + 1;
  }
  // fbank's bands and projected MFCC's cepstra are the output; projected
  // PLP gives the autocorrelation that lpc_to_cepstrum reads.
  DeviceBuffer* dst = s.bands.get();
  if (opts_.kind == FeatureKind::kFbank || (project && opts_.kind == FeatureKind::kMfcc))
    dst = &out;
  else if (project)
    dst = s.work.get();
  DeviceBuffer& band_buf = *dst;
  backend_.spectral_bands(signal, spec, *window_, b, *filterbank_, *filterbank_ranges_, band_buf,
                          energy ? s.energy.get() : nullptr);
  if (noise_) {
    run_noise_stage(rows, band_buf);
    backend_.apply(b.op, b.op_param, band_buf, static_cast<size_t>(rows) * bands);
  }

  // The energy floor follows Kaldi: ln(max(E, FLT_EPSILON)), and at least
  // ln(energy_floor) when that is set.
  const float energy_clamp = std::max(FLT_EPSILON, opts_.mfcc.energy_floor);
  switch (opts_.kind) {
    case FeatureKind::kFbank:
      break;
    case FeatureKind::kMfcc: {
      const int nceps = opts_.mfcc.num_ceps;
      // [rows x (warps*bands)] is [rows*warps x bands] row-major: one GEMM
      // transforms every warp.
      if (!project) backend_.gemm_nt(*s.bands, rows * nwarps, num_bands_, *cepstral_, nceps, out);
      if (opts_.mfcc.use_energy)
        for (int k = 0; k < nwarps; ++k)
          backend_.log_into_column(*s.energy, rows, energy_clamp, out, nwarps * nceps, k * nceps);
      break;
    }
    case FeatureKind::kPlp: {
      const int order = opts_.plp.order, nceps = opts_.plp.num_ceps;
      if (!project)
        backend_.gemm_nt(*s.bands, rows * nwarps, num_bands_, *cepstral_, order + 1, *s.work);
      backend_.lpc_to_cepstrum(*s.work, rows * nwarps, order, nceps, *s.work2);
      backend_.gemm_nt(*s.work2, rows * nwarps, nceps, *plp_lifter_, nceps, out);
      if (opts_.plp.use_energy)
        for (int k = 0; k < nwarps; ++k)
          backend_.log_into_column(*s.energy, rows, energy_clamp, out, nwarps * nceps, k * nceps);
      break;
    }
    case FeatureKind::kTraps: {
      const int c = opts_.traps.context;
      backend_.splice(*s.bands, spec.num_utts, spec.frames_per_utt, bands, c, c, *s.work);
      backend_.gemm_nt(*s.work, rows, (2 * c + 1) * bands, *cepstral_,
                       bands * 2 * opts_.traps.num_coeffs, out);
      break;
    }
  }
}

// The first linear map after the bands (MFCC's DCT, PLP's inverse DFT)
// goes with them, so a device keeps the bands on the chip too; not when
// the noise stage must see the bands between.
bool FeatureExtractor::projects_bands() const {
  return !noise_ && (opts_.kind == FeatureKind::kMfcc || opts_.kind == FeatureKind::kPlp);
}

void FeatureExtractor::reset_noise_state() {
  if (noise_) noise_->reset();
  speech_flags_.clear();
}

// Host-side and sequential by nature: frame t's gains and speech decision
// depend on the trackers after frame t-1. Rows are one utterance's frames in
// order (compute_device checks num_utts == 1).
void FeatureExtractor::run_noise_stage(int64_t rows, DeviceBuffer& bands) {
  const size_t count = static_cast<size_t>(rows) * num_bands_;
  host_bands_.resize(count);
  backend_.download(bands, host_bands_.data(), count);
  speech_flags_.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    speech_flags_[r] = noise_->process(host_bands_.data() + r * num_bands_) ? 1 : 0;
  if (opts_.noise.remove_noise) backend_.upload(bands, host_bands_.data(), count);
}

FeatureMatrix FeatureExtractor::compute(const float* samples, int64_t n) {
  FeatureMatrix m;
  m.dim = num_warps() * base_dim_;
  m.rows = num_frames(n);
  reset_noise_state();
  kept_frames_.clear();
  if (m.rows == 0) return m;
  std::vector<float> declipped;
  if (opts_.declip.enabled) {
    // Before dither, which would break up the runs of equal samples.
    declipped = declip(opts_.declip, opts_.frame.sample_rate, samples, n);
    samples = declipped.data();
  }
  std::vector<float> dithered;
  if (opts_.frame.dither > 0.0f) {
    // Dither on the host with a seeded generator, so every backend sees the
    // same samples.
    std::mt19937 gen(opts_.frame.dither_seed);
    std::normal_distribution<float> noise(0.0f, opts_.frame.dither);
    dithered.assign(samples, samples + n);
    for (float& v : dithered) v += noise(gen);
    samples = dithered.data();
  }
  Scratch& s = *scratch_;
  if (!s.signal || s.signal->size() < static_cast<size_t>(n)) s.signal = backend_.alloc(n);
  backend_.upload(*s.signal, samples, n);
  BufferPtr out = backend_.alloc(static_cast<size_t>(m.rows) * m.dim);
  compute_device(*s.signal, framing_for(1, n, n), *out);
  m.data.resize(static_cast<size_t>(m.rows) * m.dim);
  backend_.download(*out, m.data.data(), m.data.size());
  if (opts_.noise.remove_silence) {
    const int64_t whole = n < frame_length_ ? 0 : 1 + (n - frame_length_) / frame_shift_;
    drop_silence(m, !opts_.frame.snip_edges && m.rows > whole);
  }
  return m;
}

// Keeps the frames SphinxVad releases, in order, as sphinx_fe writes them.
// `last_is_leftover`: the last frame is the zero-padded one that sphinx_fe
// computes in fe_end_utt, which releases only that frame.
void FeatureExtractor::drop_silence(FeatureMatrix& m, bool last_is_leftover) {
  if (speech_flags_.size() != static_cast<size_t>(m.rows))
    throw std::logic_error("speech decisions do not match the frames");
  SphinxVad vad(opts_.noise);
  std::vector<int64_t> keep;
  keep.reserve(static_cast<size_t>(m.rows));
  for (int64_t t = 0; t < m.rows; ++t) {
    if (t == m.rows - 1 && last_is_leftover)
      vad.push_final(speech_flags_[t] != 0, keep);
    else
      vad.push(speech_flags_[t] != 0, keep);
  }
  // keep is increasing, so rows move towards the front only.
  for (size_t k = 0; k < keep.size(); ++k)
    if (keep[k] != static_cast<int64_t>(k))
      std::copy(m.row(keep[k]), m.row(keep[k]) + m.dim, m.row(static_cast<int64_t>(k)));
  m.rows = static_cast<int64_t>(keep.size());
  m.data.resize(static_cast<size_t>(m.rows) * m.dim);
  kept_frames_ = std::move(keep);
}

std::vector<uint8_t> FeatureExtractor::cmn_learn_rows() const {
  if (!noise_ || !opts_.live_cmn_from_speech()) return {};
  std::vector<uint8_t> states = speech_states_after_hangover(speech_flags_, opts_.noise);
  if (kept_frames_.empty()) return states;
  std::vector<uint8_t> kept(kept_frames_.size());
  for (size_t k = 0; k < kept_frames_.size(); ++k)
    kept[k] = states[static_cast<size_t>(kept_frames_[k])];
  return kept;
}

FeatureMatrix compute_features(const FeatureOptions& opts, Backend& backend,
                               const float* samples, int64_t num_samples) {
  FeatureExtractor extractor(opts, backend);
  FeatureMatrix m = extractor.compute(samples, num_samples);
  const std::vector<uint8_t> learn = extractor.cmn_learn_rows();
  postprocess_utterance(opts, m, &learn);
  return m;
}

}  // namespace gpuspeech
