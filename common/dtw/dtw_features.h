// Audio to the frames DTW compares: the feature pipeline's MFCC or fbank,
// or the plain log power spectrum (the pipeline has no such kind, so it is
// made here from the same backend operations the pipeline starts with:
// frame_signal, power_spectrum, log). Leading and trailing silence is cut
// by the endpointer first when the config asks (dtw_options.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/dtw/dtw_options.h"
#include "common/dtw/endpointer.h"
#include "common/features/feature_pipeline.h"
#include "common/features/wav_reader.h"

namespace gpuspeech {

struct DtwUtterance {
  FeatureMatrix features;  // rows x config.dim()
  SpeechSegment kept;      // the samples the features were computed from
  bool speech_found = true;  // false: trimming found no speech, all samples kept
};

class DtwFeatureComputer {
 public:
  // Validates `config` (std::invalid_argument) and prepares the extractor on
  // `backend`, which must outlive this object.
  DtwFeatureComputer(const DtwFeatureConfig& config, Backend& backend);
  ~DtwFeatureComputer();
  DtwFeatureComputer(const DtwFeatureComputer&) = delete;
  DtwFeatureComputer& operator=(const DtwFeatureComputer&) = delete;

  const DtwFeatureConfig& config() const { return config_; }
  int dim() const { return config_.dim(); }

  // Features of one utterance (samples in 16-bit units). With
  // trim_silence, the samples from the first to the last speech segment;
  // when there is none, all of them (speech_found = false).
  DtwUtterance compute(const float* samples, int64_t n);
  // The same without trimming.
  FeatureMatrix compute_untrimmed(const float* samples, int64_t n);

  // A test utterance at every warp of config.test_warps (one FFT), in that
  // order, without trimming; each as compute_untrimmed() would give it with
  // that warp (per-warp CMN and deltas). With the single warp 1 it is
  // {compute_untrimmed()}.
  std::vector<FeatureMatrix> compute_warped_untrimmed(const float* samples, int64_t n);
  // Trimmed as compute() does; `kept` and `speech_found` as there.
  std::vector<FeatureMatrix> compute_warped(const float* samples, int64_t n, SpeechSegment* kept = nullptr,
                                            bool* speech_found = nullptr);

 private:
  FeatureMatrix log_spectrum(const float* samples, int64_t n);

  DtwFeatureConfig config_;
  Backend& backend_;
  std::unique_ptr<FeatureExtractor> extractor_;  // framing for every kind
  std::unique_ptr<FeatureExtractor> warped_;     // every test warp; null with just {1}
  BufferPtr window_;                             // kSpectrum only
};

// Reads a WAV file (or headerless 16-bit PCM at `sample_rate`) for DTW.
// AudioFileError "<path>: <reason>" when it cannot be read, holds no
// samples, or is at another sample rate than `sample_rate`.
AudioData read_dtw_audio(const std::string& path, float sample_rate);

}  // namespace gpuspeech
