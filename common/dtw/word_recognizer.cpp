#include "common/dtw/word_recognizer.h"

#include <stdexcept>
#include <utility>

#include "common/dtw/path_rescoring.h"
#include "common/dtw/syllable_count.h"
#include "common/dtw/template_averaging.h"
#include "common/dtw/template_calibration.h"

namespace gpuspeech {

const char* to_string(TemplateAveraging a) {
  switch (a) {
    case TemplateAveraging::kNone: return "none";
    case TemplateAveraging::kAdd: return "add";
    case TemplateAveraging::kOnly: return "only";
  }
  return "?";
}

TemplateAveraging parse_template_averaging(const std::string& s) {
  if (s == "none") return TemplateAveraging::kNone;
  if (s == "add") return TemplateAveraging::kAdd;
  if (s == "only") return TemplateAveraging::kOnly;
  throw std::invalid_argument("unknown template averaging '" + s + "' (none|add|only)");
}

WordRecognizerOptions WordRecognizerOptions::defaults() {
  // Measured on the cross-speaker benchmark (docs/dtw.md): PLP cepstra
  // (whose all-pole model smooths away more of the voice than the mel
  // cepstrum does) matched with the symmetric pattern, five VTLN test warps
  // and k 2: 92.6 % where mfcc / Itakura / nearest neighbour gave 73.1 %.
  WordRecognizerOptions o;
  o.library.features = DtwFeatureConfig::for_kind(DtwFeatureKind::kPlp);
  o.dtw.pattern = StepPattern::kSymmetric;
  return o;
}

void WordRecognizerOptions::validate() const {
  library.features.validate();
  dtw.validate();
  decision.validate();
  if (dtw.distance == LocalDistance::kCepstral && library.features.kind != DtwFeatureKind::kMfcc &&
      library.features.kind != DtwFeatureKind::kPlp)
    throw std::invalid_argument("distance cepstral needs cepstra, mfcc or plp features (it leaves out c0)");
}

WordRecognizer::WordRecognizer(const std::string& source, const WordRecognizerOptions& opts, Backend& backend,
                               std::vector<std::string>* log)
    : opts_(opts) {
  opts_.validate();
  library_ = TemplateLibrary::load(source, opts_.library, backend, log);
  // From the recordings themselves: an average is not an independent voice.
  threshold_ = rejection_threshold(library_, opts_.dtw, opts_.decision);
  if (opts_.averaging != TemplateAveraging::kNone) {
    std::vector<DtwTemplate> averages = average_templates(library_, opts_.dtw);
    if (opts_.averaging == TemplateAveraging::kOnly) {
      TemplateLibrary kept = library_.empty_copy();
      for (const DtwTemplate& t : library_.templates()) {
        bool averaged = false;
        for (const DtwTemplate& a : averages) averaged = averaged || a.label == t.label;
        if (!averaged) kept.add(t);
      }
      library_ = std::move(kept);
    }
    for (DtwTemplate& a : averages) library_.add(std::move(a));
  }
  labels_ = library_.labels();
  features_ = std::make_unique<DtwFeatureComputer>(opts_.library.features, backend);
  engine_ = make_dtw_engine(opts_.engine, opts_.dtw, opts_.device_id, opts_.threads);
  engine_->set_templates(library_.pack());
}

MatchDecision WordRecognizer::decide(const std::vector<FeatureMatrix>& warped) {
  std::vector<std::vector<float>> per_warp;
  for (const FeatureMatrix& f : warped) per_warp.push_back(engine_->match(f.data.data(), f.rows));
  MatchDecision m =
      decide_rescored(warped, per_warp, library_.templates(), labels_, opts_.dtw, opts_.decision, threshold_);
  last_per_warp_ = std::move(per_warp);
  return m;
}

WordRecognizer::Result WordRecognizer::recognise(const float* samples, int64_t n, bool endpointed) {
  Result r;
  std::vector<FeatureMatrix> warped;
  if (endpointed) {
    r.kept = {0, n};
    warped = features_->compute_warped_untrimmed(samples, n);
  } else {
    warped = features_->compute_warped(samples, n, &r.kept, &r.speech_found);
  }
  r.frames = warped.empty() ? 0 : warped[0].rows;
  if (r.frames < 1) {
    r.decision.label.clear();
    r.decision.rejected = true;
    return r;
  }
  r.decision = decide(warped);
  if (threshold_ > 0.0f && opts_.decision.syllable_check && !r.decision.rejected) {
    r.syllables = count_syllables(samples + r.kept.begin, r.kept.end - r.kept.begin,
                                  opts_.library.features.features.frame.sample_rate);
    r.decision.rejected = !syllables_fit(r.decision.label, r.syllables);
    r.syllables_rejected = r.decision.rejected;
  }
  return r;
}

bool WordRecognizer::syllables_fit(const std::string& label, int syllables) const {
  // A word none of whose templates has a count (0: under three frames of
  // level to count in) cannot say no.
  bool known = false;
  for (const DtwTemplate& t : library_.templates()) {
    if (t.label != label || t.syllables <= 0) continue;
    if (t.syllables == syllables) return true;
    known = true;
  }
  return !known;
}

}  // namespace gpuspeech
