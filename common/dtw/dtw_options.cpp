#include "common/dtw/dtw_options.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "common/features/feature_signature.h"

namespace gpuspeech {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

}  // namespace

void DtwOptions::validate() const {
  if (band < -1)
    throw std::invalid_argument("dtw band must be -1 (off) or >= 0 frames, got " +
                                std::to_string(band));
}

std::string DtwOptions::fingerprint() const {
  return std::string("pattern=") + to_string(pattern) + ";band=" + std::to_string(band) +
         ";distance=" + to_string(distance) + ";normalize=" + (normalize ? "1" : "0");
}

void DtwDecisionOptions::validate() const {
  if (k_nearest < 1)
    throw std::invalid_argument("dtw decision: k_nearest must be >= 1, got " + std::to_string(k_nearest));
  if (rescore_words < 0)
    throw std::invalid_argument("dtw decision: rescore_words must be >= 0 (0 = off), got " +
                                std::to_string(rescore_words));
  if (!(rescore_power >= 1.0f && rescore_power <= 16.0f))
    throw std::invalid_argument("dtw decision: rescore_power must be in [1, 16], got " + num(rescore_power));
  if (!(rescore_weight >= 0.0f && std::isfinite(rescore_weight)))
    throw std::invalid_argument("dtw decision: rescore_weight must be >= 0, got " + num(rescore_weight));
  if (reject == Reject::kFixed && !(reject_distance > 0.0f))
    throw std::invalid_argument("dtw decision: a fixed rejection threshold must be > 0, got " +
                                num(reject_distance));
  if (reject == Reject::kFromTemplates && !(reject_scale > 0.0f))
    throw std::invalid_argument("dtw decision: the rejection scale must be > 0, got " + num(reject_scale));
}

std::string DtwDecisionOptions::fingerprint() const {
  const char* mode = reject == Reject::kOff      ? "off"
                     : reject == Reject::kFixed  ? "fixed"
                     : reject == Reject::kMapped ? "mapped"
                                                 : "templates";
  return "k=" + std::to_string(k_nearest) + ";reject=" + mode + ";reject-distance=" + num(reject_distance) +
         ";reject-scale=" + num(reject_scale) + ";rescore=" + std::to_string(rescore_words) + "," +
         num(rescore_power) + "," + num(rescore_weight) + ";syllables=" + (syllable_check ? "on" : "off");
}

void EndpointOptions::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("endpointer: " + what); };
  if (!(frame_ms >= 1.0f && frame_ms <= 100.0f)) bad("frame_ms must be in [1, 100], got " + num(frame_ms));
  if (!(threshold_db > 0.0f)) bad("threshold_db must be > 0, got " + num(threshold_db));
  if (!(min_level_db >= 0.0f)) bad("min_level_db must be >= 0, got " + num(min_level_db));
  if (start_frames < 1) bad("start_frames must be >= 1, got " + std::to_string(start_frames));
  if (end_frames < 1) bad("end_frames must be >= 1, got " + std::to_string(end_frames));
  if (min_speech_frames < 1) bad("min_speech_frames must be >= 1, got " + std::to_string(min_speech_frames));
  if (pad_frames < 0) bad("pad_frames must be >= 0, got " + std::to_string(pad_frames));
  if (!(floor_rise_db_per_s >= 0.0f)) bad("floor_rise_db_per_s must be >= 0, got " + num(floor_rise_db_per_s));
}

std::string EndpointOptions::fingerprint() const {
  return "frame=" + num(frame_ms) + ";threshold=" + num(threshold_db) + ";min-level=" +
         num(min_level_db) + ";start=" + std::to_string(start_frames) + ";end=" +
         std::to_string(end_frames) + ";min-speech=" + std::to_string(min_speech_frames) +
         ";pad=" + std::to_string(pad_frames) + ";rise=" + num(floor_rise_db_per_s);
}

DtwFeatureConfig DtwFeatureConfig::for_kind(DtwFeatureKind kind) {
  DtwFeatureConfig c;
  c.kind = kind;
  // Spectrum uses the MFCC options' framing; its kind field is not read.
  c.features = FeatureOptions::for_flavour(Flavour::kSphinx, kind == DtwFeatureKind::kFbank ? FeatureKind::kFbank
                                                             : kind == DtwFeatureKind::kPlp ? FeatureKind::kPlp
                                                                                             : FeatureKind::kMfcc);
  c.features.norm.cmn = NormOptions::Cmn::kBatch;
  c.features.delta.layout = DeltaOptions::Layout::kNone;
  c.features.frame.dither = 1.0f;
  c.features.frame.dither_seed = 1;
  // Measured on the cross-speaker benchmark (docs/dtw.md): a shorter
  // sinusoidal lifter (12 rather than 22) weights the middle cepstra, which
  // carry the vowel shape, over the high ones, which carry more of the
  // speaker; and five test warps close much of the gap between voices.
  c.features.mfcc.lifter = 12;
  if (kind != DtwFeatureKind::kSpectrum) c.test_warps = {0.85f, 0.92f, 1.0f, 1.08f, 1.15f};
  return c;
}

void DtwFeatureConfig::validate() const {
  if (kind == DtwFeatureKind::kMfcc && features.kind != FeatureKind::kMfcc)
    throw std::invalid_argument(std::string("dtw features: kind mfcc needs FeatureOptions kind mfcc, got ") +
                                to_string(features.kind));
  if (kind == DtwFeatureKind::kPlp && features.kind != FeatureKind::kPlp)
    throw std::invalid_argument(std::string("dtw features: kind plp needs FeatureOptions kind plp, got ") +
                                to_string(features.kind));
  if (kind == DtwFeatureKind::kFbank && features.kind != FeatureKind::kFbank)
    throw std::invalid_argument(std::string("dtw features: kind fbank needs FeatureOptions kind fbank, got ") +
                                to_string(features.kind));
  features.validate();
  if (kind == DtwFeatureKind::kSpectrum) {
    if (features.norm.cmn == NormOptions::Cmn::kLive)
      throw std::invalid_argument("dtw features: spectrum supports batch CMN or none, not live CMN");
    if (features.delta.layout != DeltaOptions::Layout::kNone)
      throw std::invalid_argument("dtw features: spectrum takes no deltas");
    if (features.noise.remove_noise || features.noise.remove_silence)
      throw std::invalid_argument("dtw features: spectrum has no Sphinx noise stage");
  }
  endpoint.validate();
  if (test_warps.empty()) throw std::invalid_argument("dtw features: test_warps needs at least one warp (1 = none)");
  for (float w : test_warps)
    if (!(w > 0.5f && w < 2.0f))
      throw std::invalid_argument("dtw features: a VTLN warp must lie in (0.5, 2), got " + num(w));
  if (kind == DtwFeatureKind::kSpectrum && !(test_warps.size() == 1 && test_warps[0] == 1.0f))
    throw std::invalid_argument("dtw features: VTLN warps need mfcc or fbank (the spectrum has no filterbank)");
}

int DtwFeatureConfig::dim() const {
  if (kind == DtwFeatureKind::kSpectrum) return features.frame.padded_fft_size() / 2 + 1;
  return features.output_dim();
}

std::string DtwFeatureConfig::fingerprint() const {
  std::string s = frame_signature();
  s += ";trim=" + std::string(trim_silence ? "1;" : "0");
  if (trim_silence) s += endpoint.fingerprint();
  return s;
}

std::string DtwFeatureConfig::frame_signature() const {
  std::string s = std::string("dtw-kind=") + to_string(kind) + ";";
  if (kind == DtwFeatureKind::kSpectrum) {
    // Only the framing and normalisation apply.
    FeatureOptions f = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
    f.frame = features.frame;
    f.norm = features.norm;
    s += feature_signature(f);
  } else {
    s += feature_signature(features);
  }
  return s;
}

const char* to_string(StepPattern p) {
  return p == StepPattern::kItakura ? "itakura" : "symmetric";
}
const char* to_string(LocalDistance d) {
  return d == LocalDistance::kEuclidean ? "euclidean" : "cepstral";
}
const char* to_string(DtwFeatureKind k) {
  switch (k) {
    case DtwFeatureKind::kMfcc: return "mfcc";
    case DtwFeatureKind::kFbank: return "fbank";
    case DtwFeatureKind::kSpectrum: return "spectrum";
    case DtwFeatureKind::kPlp: return "plp";
  }
  return "?";
}

StepPattern parse_step_pattern(const std::string& s) {
  if (s == "itakura") return StepPattern::kItakura;
  if (s == "symmetric") return StepPattern::kSymmetric;
  throw std::invalid_argument("unknown step pattern '" + s + "' (itakura|symmetric)");
}
LocalDistance parse_local_distance(const std::string& s) {
  if (s == "euclidean") return LocalDistance::kEuclidean;
  if (s == "cepstral") return LocalDistance::kCepstral;
  throw std::invalid_argument("unknown distance '" + s + "' (euclidean|cepstral)");
}
DtwFeatureKind parse_dtw_feature_kind(const std::string& s) {
  if (s == "mfcc") return DtwFeatureKind::kMfcc;
  if (s == "fbank") return DtwFeatureKind::kFbank;
  if (s == "spectrum") return DtwFeatureKind::kSpectrum;
  if (s == "plp") return DtwFeatureKind::kPlp;
  throw std::invalid_argument("unknown feature kind '" + s + "' (mfcc|fbank|spectrum|plp)");
}

std::vector<float> parse_warp_list(const std::string& s) {
  std::vector<float> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const double w = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || !(w > 0.5 && w < 2.0))
      throw std::invalid_argument("bad warp list '" + s + "': each warp must be a number in (0.5, 2), got '" +
                                  item + "'");
    out.push_back(static_cast<float>(w));
    pos = comma + 1;
  }
  return out;
}

}  // namespace gpuspeech
