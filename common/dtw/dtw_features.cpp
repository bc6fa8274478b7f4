#include "common/dtw/dtw_features.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "common/features/postprocess.h"
#include "common/features/window.h"

namespace gpuspeech {
namespace {

// The log of a power below one 16-bit unit squared is taken at one: digital
// silence reads 0 rather than -inf, and quantisation noise stays flat.
constexpr float kSpectrumLogFloor = 1.0f;

}  // namespace

DtwFeatureComputer::DtwFeatureComputer(const DtwFeatureConfig& config, Backend& backend)
    : config_(config), backend_(backend) {
  config_.validate();
  FeatureOptions opts = config_.features;
  if (config_.kind == DtwFeatureKind::kSpectrum) {
    // Only the framing of this extractor is used.
    opts = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
    opts.frame = config_.features.frame;
  }
  extractor_ = std::make_unique<FeatureExtractor>(opts, backend_);
  const bool warping = !(config_.test_warps.size() == 1 && config_.test_warps[0] == 1.0f);
  if (warping) warped_ = std::make_unique<FeatureExtractor>(opts, backend_, config_.test_warps);
  if (config_.kind == DtwFeatureKind::kSpectrum) {
    const std::vector<double> w = make_window(opts.frame.window, extractor_->frame_length());
    const std::vector<float> wf(w.begin(), w.end());
    window_ = backend_.alloc(wf.size());
    backend_.upload(*window_, wf.data(), wf.size());
  }
}

DtwFeatureComputer::~DtwFeatureComputer() = default;

FeatureMatrix DtwFeatureComputer::log_spectrum(const float* samples, int64_t n) {
  FeatureMatrix m;
  const int fft = config_.features.frame.padded_fft_size();
  m.dim = fft / 2 + 1;
  m.rows = extractor_->num_frames(n);
  if (m.rows == 0) return m;
  const FramingSpec spec = extractor_->framing_for(1, n, n);
  BufferPtr signal = backend_.alloc(static_cast<size_t>(n));
  backend_.upload(*signal, samples, static_cast<size_t>(n));
  BufferPtr frames = backend_.alloc(static_cast<size_t>(m.rows) * fft);
  backend_.frame_signal(*signal, spec, *window_, *frames, nullptr);
  const size_t count = static_cast<size_t>(m.rows) * m.dim;
  BufferPtr power = backend_.alloc(count);
  backend_.power_spectrum(*frames, m.rows, fft, false, *power);
  backend_.apply(UnaryOp::kLogClamp, kSpectrumLogFloor, *power, count);
  m.data.resize(count);
  backend_.download(*power, m.data.data(), count);
  if (config_.features.norm.cmn == NormOptions::Cmn::kBatch)
    apply_batch_cmn(m, config_.features.norm.cvn);
  if (config_.features.norm.min_max) apply_min_max(m);
  return m;
}

FeatureMatrix DtwFeatureComputer::compute_untrimmed(const float* samples, int64_t n) {
  if (config_.kind == DtwFeatureKind::kSpectrum) return log_spectrum(samples, n);
  FeatureMatrix m = extractor_->compute(samples, n);
  const std::vector<uint8_t> learn = extractor_->cmn_learn_rows();
  postprocess_utterance(config_.features, m, &learn);
  return m;
}

std::vector<FeatureMatrix> DtwFeatureComputer::compute_warped_untrimmed(const float* samples, int64_t n) {
  if (!warped_) return {compute_untrimmed(samples, n)};
  const FeatureMatrix all = warped_->compute(samples, n);
  const std::vector<uint8_t> learn = warped_->cmn_learn_rows();
  const int base = warped_->base_dim();
  const int warps = warped_->num_warps();
  std::vector<FeatureMatrix> out(static_cast<size_t>(warps));
  for (int k = 0; k < warps; ++k) {
    FeatureMatrix& m = out[static_cast<size_t>(k)];
    m.rows = all.rows;
    m.dim = base;
    m.data.resize(static_cast<size_t>(all.rows) * base);
    for (int64_t r = 0; r < all.rows; ++r)
      std::copy(all.row(r) + k * base, all.row(r) + (k + 1) * base, m.row(r));
    postprocess_utterance(config_.features, m, &learn);
  }
  return out;
}

std::vector<FeatureMatrix> DtwFeatureComputer::compute_warped(const float* samples, int64_t n,
                                                              SpeechSegment* kept, bool* speech_found) {
  SpeechSegment k{0, n};
  bool found = true;
  if (config_.trim_silence) {
    const SpeechSegment s = speech_extent(samples, n, config_.features.frame.sample_rate, config_.endpoint);
    if (s.end > s.begin) k = s;
    else found = false;
  }
  if (kept) *kept = k;
  if (speech_found) *speech_found = found;
  return compute_warped_untrimmed(samples + k.begin, k.end - k.begin);
}

DtwUtterance DtwFeatureComputer::compute(const float* samples, int64_t n) {
  DtwUtterance u;
  u.kept = {0, n};
  if (config_.trim_silence) {
    const SpeechSegment s =
        speech_extent(samples, n, config_.features.frame.sample_rate, config_.endpoint);
    if (s.end > s.begin) u.kept = s;
    else u.speech_found = false;
  }
  u.features = compute_untrimmed(samples + u.kept.begin, u.kept.end - u.kept.begin);
  return u;
}

AudioData read_dtw_audio(const std::string& path, float sample_rate) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  const int rate = static_cast<int>(std::lround(sample_rate));
  AudioData a = looks_like_wav(bytes.data(), bytes.size())
                    ? parse_wav(bytes.data(), bytes.size(), path)
                    : parse_raw_s16le(bytes.data(), bytes.size(), rate, path);
  if (a.sample_rate != rate)
    throw AudioFileError(path + ": sample rate " + std::to_string(a.sample_rate) +
                         " Hz, but the features are set up for " + std::to_string(rate) +
                         " Hz (convert it, e.g. sox IN -r " + std::to_string(rate) + " OUT)");
  if (a.samples.empty()) throw AudioFileError(path + ": no audio (zero samples)");
  return a;
}

}  // namespace gpuspeech
