// Options of template matching by dynamic time warping, one struct per
// stage, Kaldi-style: the defaults live here and nowhere else (the CLI, the
// engines and the tests all start from these values). docs/dtw.md explains
// each choice.
#pragma once

#include <string>
#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// The local path constraint (step pattern) and the global region it implies.
//
// Frames: i = 0..N-1 of the test utterance (the "time" axis, one column per
// frame), j = 0..M-1 of the template; d(i,j) the local distance.
//
//  kItakura  (asymmetric, slopes 1/2..2): every step advances i by one and j
//    by 0, 1 or 2, and two steps in a row may not both keep j (no two flat
//    steps in a row). The path starts at (0,0), ends at (N-1,M-1), and its
//    cost is the sum of d over its N cells; normalised by N. Two accumulated
//    costs per cell keep the "no two flat steps" rule exact:
//      F(i,j) = d(i,j) + S(i-1,j)                          (came flat)
//      S(i,j) = d(i,j) + min(F,S)(i-1,j-1), min(F,S)(i-1,j-2)  (came sloped)
//    with S(0,0) = d(0,0), F(0,0) = inf. The global (Itakura parallelogram)
//    region follows: floor(i/2) <= j <= 2i from the start and the same from
//    the end; only the cells inside it are computed. A template with
//    M-1 > 2(N-1) or floor((N-1)/2) > M-1 cannot be reached: its distance
//    is +inf.
//  kSymmetric (Sakoe-Chiba symmetric, P = 0): steps (1,0), (1,1), (0,1) with
//    weights 1, 2, 1:  g(i,j) = min(g(i-1,j) + d, g(i-1,j-1) + 2d, g(i,j-1) + d),
//    g(0,0) = 2 d(0,0); normalised by N + M.
enum class StepPattern { kItakura, kSymmetric };

// The local distance between a test frame x and a template frame y.
//  kEuclidean: sqrt(sum_k (x_k - y_k)^2) over every coefficient.
//  kCepstral:  the same over coefficients 1..D-1, leaving out c0 (the
//              frame's overall level), so a louder or quieter rendering of
//              the same spectral shape costs nothing: the truncated cepstral
//              distance. Meaningful for cepstra (MFCC, PLP) only.
enum class LocalDistance { kEuclidean, kCepstral };

struct DtwOptions {
  StepPattern pattern = StepPattern::kItakura;
  // Sakoe-Chiba band: only cells within `band` frames (measured along j) of
  // the straight line from (0,0) to (N-1,M-1) are allowed. -1 = no band.
  // Works with either pattern; the band follows the diagonal of the
  // N x M rectangle, so templates of another length stay reachable.
  int band = -1;
  LocalDistance distance = LocalDistance::kEuclidean;
  // Divide the accumulated cost by the path weight (N for kItakura, N + M
  // for kSymmetric), so templates of different lengths compare fairly.
  bool normalize = true;

  // Throws std::invalid_argument naming the bad option.
  void validate() const;
  // A canonical "key=value;..." text, for cache keys and logs.
  std::string fingerprint() const;
};

// The frame representation that is compared.
//  kMfcc:     mel cepstra (FeatureOptions kind mfcc)
//  kFbank:    log mel filterbank energies (kind fbank)
//  kSpectrum: the plain log power spectrum, fft_size/2 + 1 bins, made from
//             the same framing, pre-emphasis and window by the backend's
//             frame_signal and power_spectrum (dtw_features.h)
//  kPlp:      perceptual linear prediction cepstra (kind plp): Bark bands,
//             equal loudness, cube root, an all-pole model of order
//             features.plp.order
enum class DtwFeatureKind { kMfcc, kFbank, kSpectrum, kPlp };

// Energy-based endpointing (endpointer.h). Levels are in dB of the mean
// square of a frame in 16-bit sample units (a full-scale sine is ~87 dB).
struct EndpointOptions {
  float frame_ms = 10.0f;        // analysis frame and hop
  float threshold_db = 12.0f;    // speech: this far above the noise floor...
  float min_level_db = 35.0f;    // ...and above this absolute level
  int start_frames = 3;          // speech frames in a row that start a segment
  int end_frames = 30;           // non-speech frames in a row that end it
  int min_speech_frames = 8;     // shorter segments are dropped (clicks)
  int pad_frames = 5;            // kept before the onset and after the offset
  // The noise floor follows a falling level at once and a rising one by
  // this many dB per second, so a word barely lifts it while a louder
  // background is learnt within seconds (and cannot hold a segment open).
  float floor_rise_db_per_s = 3.0f;

  void validate() const;
  std::string fingerprint() const;
};

// How an utterance (template or test) becomes a feature matrix for DTW.
struct DtwFeatureConfig {
  DtwFeatureKind kind = DtwFeatureKind::kMfcc;
  // Framing, filterbank, cepstra and normalisation (norm.cmn, deltas) as
  // for the feature pipeline; kind is set from `kind` (spectrum uses only
  // the framing part and norm). Defaults: for_kind().
  FeatureOptions features;
  // Cut leading and trailing silence with the endpointer before the
  // features are computed: DTW pins both ends of the path, so silence of
  // unequal length at the ends would have to be warped onto speech.
  bool trim_silence = true;
  EndpointOptions endpoint;
  // Speaker normalisation by frequency warping (VTLN), on the test side
  // only: a test utterance's mfcc or fbank is computed at each of these
  // warp factors from one FFT (FeatureExtractor's several warps), matched
  // against every template at each, and each template keeps its smallest
  // distance: the best relative warp per (test, template) pair, at the cost
  // of one DTW per warp. Templates are computed at warp 1 (features.mel.vtln
  // holds the knees). {1} = no warping; not for kind spectrum.
  std::vector<float> test_warps = {1.0f};

  // The defaults for a kind: Sphinx-flavoured framing (25.6 ms / 10 ms,
  // Hamming, pre-emphasis 0.97), 13 MFCCs or 25 log mel bands, batch CMN
  // (per-utterance mean removal, which takes out the channel and the
  // speaker's long-term spectral tilt), no deltas.
  static DtwFeatureConfig for_kind(DtwFeatureKind kind);

  void validate() const;
  // Frames per utterance row: 13, 25, fft/2+1, ... after deltas.
  int dim() const;
  // Everything that decides the numbers, for the template cache key.
  std::string fingerprint() const;
  // What decides one frame's numbers: "dtw-kind=K;" and the front end's
  // feature_signature() (for spectrum only its framing and normalisation).
  // Trimming and the test warps are left out: a projection map
  // (feature_projection.h) records this, and works frame by frame on
  // features from the same front end at any warp.
  std::string frame_signature() const;
};

// How the distances to the templates become a label, and when the answer is
// "none of these words".
struct DtwDecisionOptions {
  // A label's score is the mean of its `k_nearest` smallest template
  // distances, at most all but one of its templates (decide_match); the
  // smallest score wins.
  // 1 = plain nearest neighbour. More than one asks several voices of a word
  // to agree, so one template that happens to lie close loses its pull
  // (measured: 2 beats 1 and 3 across speakers, docs/dtw.md).
  int k_nearest = 2;
  // The second pass of path_rescoring.h: the `rescore_words` best words are
  // re-ranked by their score + rescore_weight x the power mean (exponent
  // rescore_power) of the local distances along their templates' paths.
  // 0 or 1 = off. Measured (docs/dtw.md): power 3 and weight 0.5 gain on
  // the test voices and on the templates with their own voice left out;
  // re-ranking the best 3 or all words gives the same labels as the best 2,
  // which take two thirds of the host DTWs of 3.
  int rescore_words = 2;
  float rescore_power = 3.0f;
  float rescore_weight = 0.5f;
  // Rejection (an out-of-vocabulary word, a cough): the winning score is
  // compared with a threshold.
  //  kOff:      never (only an utterance no template reaches is rejected)
  //  kFixed:    threshold = reject_distance
  //  kFromTemplates: threshold = reject_scale x the templates' own scale:
  //             the upper quartile of the DTW distances between templates
  //             of the same word (template_calibration.h).
  //             Templates of a word from several voices thereby say how far
  //             apart the word lies across speakers; a user never has to
  //             guess a distance.
  //  kMapped:  the score and the threshold of a map of the features
  //             learnt from other voices (feature_projection.h;
  //             WordRecognizerOptions::projection): the chosen word's
  //             k-mean distance in the mapped space against the map's own
  //             threshold. The word is still chosen in the plain space.
  enum class Reject { kOff, kFixed, kFromTemplates, kMapped };
  Reject reject = Reject::kOff;
  float reject_distance = 0.0f;
  float reject_scale = 0.8f;
  // With rejection on, also reject a word whose syllable count
  // (syllable_count.h) none of the winning word's templates has: an
  // unknown word of another length in syllables lies as near the templates
  // as a known word does, but is not that word. Measured (docs/dtw.md, "A
  // syllable count"): two-syllable unknown words 60 -> 97 % rejected, no
  // known word lost.
  bool syllable_check = true;

  void validate() const;
  std::string fingerprint() const;
};

const char* to_string(StepPattern);
const char* to_string(LocalDistance);
const char* to_string(DtwFeatureKind);
// Parse helpers for CLI flags and element properties; std::invalid_argument
// listing the accepted names.
StepPattern parse_step_pattern(const std::string&);     // itakura|symmetric
LocalDistance parse_local_distance(const std::string&); // euclidean|cepstral
DtwFeatureKind parse_dtw_feature_kind(const std::string&); // mfcc|fbank|spectrum
// "0.9,1,1.1": comma-separated warp factors, each a number in (0.5, 2).
std::vector<float> parse_warp_list(const std::string&);

}  // namespace gpuspeech
