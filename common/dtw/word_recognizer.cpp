#include "common/dtw/word_recognizer.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

#include "common/dtw/path_rescoring.h"
#include "common/dtw/dtw.h"
#include "common/dtw/projection_catalog.h"
#include "common/dtw/syllable_count.h"
#include "common/dtw/template_averaging.h"
#include "common/dtw/template_calibration.h"
#include "common/features/mel_filterbank.h"

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
  // Rejection by the installed map of these features (feature_projection.h,
  // projection_catalog.h): 0-3 % of the known words rejected on all three
  // benchmark libraries, 95-97 % of the two-syllable and 22-27 % of the
  // one-syllable unknown words (docs/dtw.md). Other features have no
  // installed map, and nothing is rejected for them (rejection_note()).
  o.decision.reject = DtwDecisionOptions::Reject::kMapped;
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
    : opts_(opts), source_(source), backend_(backend) {
  opts_.validate();
  // The installed maps cover the default features only: with other
  // features and no map of the user's, rejection is off and says why. A
  // map the user named must fit.
  installed_maps_ = opts_.decision.reject == DtwDecisionOptions::Reject::kMapped && opts_.projections.empty();
  if (installed_maps_) opts_.projections = shipped_dtw_projection_dirs();
  load_set(wide_, opts_.library, log);
}

void WordRecognizer::load_set(TemplateSet& set, const TemplateLibraryOptions& library,
                              std::vector<std::string>* log) {
  set.library = TemplateLibrary::load(source_, library, backend_, log);
  // From the recordings themselves: an average is not an independent voice.
  set.threshold = rejection_threshold(set.library, opts_.dtw, opts_.decision);
  if (opts_.decision.reject == DtwDecisionOptions::Reject::kMapped) {
    try {
      set.projection = find_dtw_projection(opts_.projections, library.features.frame_signature());
    } catch (const std::runtime_error& e) {
      if (!installed_maps_ || &set != &wide_) throw;
      rejection_note_ = std::string("nothing is rejected: ") + e.what();
      opts_.decision.reject = DtwDecisionOptions::Reject::kOff;
      set.threshold = 0.0f;
    }
  }
  if (opts_.decision.reject == DtwDecisionOptions::Reject::kMapped) {
    // The same features give the same dimension; a map without a threshold
    // (learnt without a calibration corpus) cannot reject.
    if (!set.projection.has_threshold())
      throw std::runtime_error("the DTW projection map for these features has no rejection threshold "
                               "(gpuspeech-dtw --learn-projection learns one with --calibrate-projection)");
  }
  if (opts_.averaging != TemplateAveraging::kNone) {
    std::vector<DtwTemplate> averages = average_templates(set.library, opts_.dtw);
    if (opts_.averaging == TemplateAveraging::kOnly) {
      TemplateLibrary kept = set.library.empty_copy();
      for (const DtwTemplate& t : set.library.templates()) {
        bool averaged = false;
        for (const DtwTemplate& a : averages) averaged = averaged || a.label == t.label;
        if (!averaged) kept.add(t);
      }
      set.library = std::move(kept);
    }
    for (DtwTemplate& a : averages) set.library.add(std::move(a));
  }
  set.labels = set.library.labels();
  set.word_thresholds.clear();
  if (opts_.decision.reject == DtwDecisionOptions::Reject::kMapped) {
    // Counted as mapped_score() sees them: the recordings and any averages.
    std::map<std::string, size_t> templates;
    for (const DtwTemplate& t : set.library.templates()) ++templates[t.label];
    set.threshold = 0.0f;
    for (const auto& [label, n] : templates) {
      const float t = set.projection.threshold_for(n);
      set.word_thresholds[label] = t;
      set.threshold = std::max(set.threshold, t);
    }
  }
  set.features = std::make_unique<DtwFeatureComputer>(library.features, backend_);
  set.engine = make_dtw_engine(opts_.engine, opts_.dtw, opts_.device_id, opts_.threads);
  set.engine->set_templates(set.library.pack());
  set.mapped.clear();
  if (!set.projection.empty())
    for (const DtwTemplate& t : set.library.templates()) set.mapped.push_back(set.projection.apply(t.features));
}

float WordRecognizer::mapped_score(const TemplateSet& set, const std::vector<FeatureMatrix>& warped,
                                   const std::string& label) const {
  std::vector<FeatureMatrix> mapped_test;
  for (const FeatureMatrix& f : warped) mapped_test.push_back(set.projection.apply(f));
  std::vector<float> d;
  const std::vector<DtwTemplate>& ts = set.library.templates();
  for (size_t t = 0; t < ts.size(); ++t) {
    if (ts[t].label != label) continue;
    float best = std::numeric_limits<float>::infinity();
    for (const FeatureMatrix& f : mapped_test)
      best = std::min(best, dtw_distance(f.data.data(), f.rows, set.mapped[t].data.data(), set.mapped[t].rows,
                                         f.dim, opts_.dtw));
    d.push_back(best);
  }
  return label_score(d, opts_.decision.k_nearest);
}

bool WordRecognizer::narrow_set_possible() const {
  if (!opts_.band_match || (narrow_tried_ && !narrow_)) return false;
  const DtwFeatureConfig& wide = opts_.library.features;
  if (wide.kind == DtwFeatureKind::kSpectrum) return false;
  const float rate = wide.features.frame.sample_rate;
  return opts_.band_limit.edge_hz < resolve_high_freq(wide.features.mel.high_freq, rate);
}

TemplateLibraryOptions band_limited_library(const TemplateLibraryOptions& wide, const BandLimitOptions& band) {
  const float rate = wide.features.features.frame.sample_rate;
  const double top = resolve_high_freq(wide.features.features.mel.high_freq, rate);
  const double edge = band.edge_hz;
  TemplateLibraryOptions library = wide;
  MelOptions& mel = library.features.features.mel;
  // The VTLN knee keeps its place relative to the band's top.
  const double knee = mel.vtln.high_cutoff > 0.0f ? mel.vtln.high_cutoff : 0.5 * rate + mel.vtln.high_cutoff;
  mel.high_freq = static_cast<float>(edge);
  mel.vtln.high_cutoff = static_cast<float>(knee * edge / top);
  return library;
}

WordRecognizer::TemplateSet* WordRecognizer::narrow_set() {
  if (narrow_tried_) return narrow_.get();
  if (!narrow_set_possible()) return nullptr;
  narrow_tried_ = true;
  const TemplateLibraryOptions library = band_limited_library(opts_.library, opts_.band_limit);
  // A set that cannot be made (say, test warps whose knees leave the
  // narrow band) leaves band-limited tests to the wide set, as without
  // band matching, and says why (band_match_error).
  try {
    auto set = std::make_unique<TemplateSet>();
    load_set(*set, library, nullptr);
    narrow_ = std::move(set);
  } catch (const std::exception& e) {
    band_match_error_ = e.what();
  }
  return narrow_.get();
}

MatchDecision WordRecognizer::decide_with(TemplateSet& set, const std::vector<FeatureMatrix>& warped) {
  std::vector<std::vector<float>> per_warp;
  for (const FeatureMatrix& f : warped) per_warp.push_back(set.engine->match(f.data.data(), f.rows));
  const bool mapped = opts_.decision.reject == DtwDecisionOptions::Reject::kMapped;
  last_mapped_score_ = 0.0f;
  // The word is chosen in the plain space (measured better there, docs/dtw.md);
  // the map only says whether it was said.
  MatchDecision m = decide_rescored(warped, per_warp, set.library.templates(), set.labels, opts_.dtw,
                                    opts_.decision, mapped ? 0.0f : set.threshold);
  if (mapped && !m.rejected && !m.label.empty()) {
    last_mapped_score_ = mapped_score(set, warped, m.label);
    const auto t = set.word_thresholds.find(m.label);
    m.rejected = t == set.word_thresholds.end() || !(last_mapped_score_ <= t->second);
  }
  last_per_warp_ = std::move(per_warp);
  return m;
}

MatchDecision WordRecognizer::decide(const std::vector<FeatureMatrix>& warped) {
  return decide_with(wide_, warped);
}

WordRecognizer::Result WordRecognizer::recognise(const float* samples, int64_t n, bool endpointed) {
  Result r;
  const float rate = opts_.library.features.features.frame.sample_rate;
  TemplateSet* set = &wide_;
  // The spectrum is looked at only while a cut set exists or may still be
  // made: without one a band-limited test goes to the wide set anyway.
  if (narrow_set_possible() && is_band_limited(samples, n, rate, opts_.band_limit)) {
    if (TemplateSet* narrow = narrow_set()) {
      set = narrow;
      r.band_limited = true;
    }
  }
  std::vector<FeatureMatrix> warped;
  if (endpointed) {
    r.kept = {0, n};
    warped = set->features->compute_warped_untrimmed(samples, n);
  } else {
    warped = set->features->compute_warped(samples, n, &r.kept, &r.speech_found);
  }
  r.frames = warped.empty() ? 0 : warped[0].rows;
  if (r.frames < 1) {
    r.decision.label.clear();
    r.decision.rejected = true;
    return r;
  }
  r.decision = decide_with(*set, warped);
  if (set->threshold > 0.0f && opts_.decision.syllable_check && !r.decision.rejected) {
    r.syllables = count_syllables(samples + r.kept.begin, r.kept.end - r.kept.begin, rate);
    r.decision.rejected = !syllables_fit(r.decision.label, r.syllables);
    r.syllables_rejected = r.decision.rejected;
  }
  return r;
}

float WordRecognizer::reject_threshold(const std::string& label) const {
  if (label.empty() || wide_.word_thresholds.empty()) return wide_.threshold;
  const auto t = wide_.word_thresholds.find(label);
  return t == wide_.word_thresholds.end() ? 0.0f : t->second;
}

bool WordRecognizer::syllables_fit(const std::string& label, int syllables) const {
  // A word none of whose templates has a count (0: under three frames of
  // level to count in) cannot say no.
  bool known = false;
  for (const DtwTemplate& t : wide_.library.templates()) {
    if (t.label != label || t.syllables <= 0) continue;
    if (t.syllables == syllables) return true;
    known = true;
  }
  return !known;
}

}  // namespace gpuspeech
