// Isolated-word recognition by template matching, the whole chain in one
// place so that gpuspeech-dtw and the gpudtw element behave identically:
// the template library, the test utterance's features (at every VTLN test
// warp), one engine call per warp, the best warp per template, the k-nearest
// decision, its second pass (path_rescoring.h) and the rejection threshold
// (fixed, learnt from the templates, template_calibration.h, or a map's,
// feature_projection.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/dtw/band_limit.h"
#include "common/dtw/dtw_engine.h"
#include "common/dtw/dtw_features.h"
#include "common/dtw/dtw_options.h"
#include "common/dtw/feature_projection.h"
#include "common/dtw/template_library.h"
#include "common/dtw/template_matcher.h"

namespace gpuspeech {

// What template averaging (template_averaging.h) does with the library.
//  kNone:  the recordings only
//  kAdd:   each word's averaged template joins its recordings
//  kOnly:  each word with two or more recordings is replaced by its average
// Measured (docs/dtw.md): helps with two template voices, hurts with six
// from two synthesisers (an average of unlike voices resembles none), so
// the default is kNone.
enum class TemplateAveraging { kNone, kAdd, kOnly };
const char* to_string(TemplateAveraging);
TemplateAveraging parse_template_averaging(const std::string&);  // none|add|only

struct WordRecognizerOptions {
  TemplateLibraryOptions library;   // features (incl. test warps) and cache
  TemplateAveraging averaging = TemplateAveraging::kNone;
  DtwOptions dtw;
  DtwDecisionOptions decision;
  std::string engine = "cpu";       // make_dtw_engine's name
  int device_id = 0;
  int threads = 0;                  // cpu engine threads, 0 = all cores
  // Band matching (band_limit.h): a test that passed through a narrow
  // channel (8 kHz audio resampled) is matched against the templates'
  // features with the filterbank cut at band_limit.edge_hz, its own cut
  // the same; that second set is made when the first such test comes.
  // Wide-band tests are not affected. Measured on the cross-speaker
  // benchmark (docs/dtw.md): the 8 kHz voice 83.3 -> 91.7 %, the whole
  // set 94.0 -> 95.4 %. mfcc, fbank and plp only (spectrum has no
  // filterbank to cut).
  bool band_match = true;
  BandLimitOptions band_limit;
  // Where DtwDecisionOptions::Reject::kMapped finds its maps
  // (projection_catalog.h): map files and directories of them; each
  // template set takes the map learnt on its own features (band matching's
  // cut set the map of the cut filterbank). Empty: the maps shipped with
  // gpuspeech, which cover the default features; with other features
  // rejection is then off (rejection_note()). A named map that does not fit
  // is an error; a cut set without a map is not made (band_match_error()),
  // so band-limited tests are matched as wide-band ones.
  std::vector<std::string> projections;

  // The defaults chosen on the cross-speaker benchmark (docs/dtw.md).
  static WordRecognizerOptions defaults();
  // Throws std::invalid_argument naming the bad option.
  void validate() const;
};

// The library options of band matching's second set: the filterbank cut at
// band.edge_hz, the VTLN knee kept in its place relative to the band's top.
TemplateLibraryOptions band_limited_library(const TemplateLibraryOptions& wide, const BandLimitOptions& band);

class WordRecognizer {
 public:
  // Loads the templates of `source` (TemplateLibrary::load; TemplateError
  // on a bad library), works out the rejection threshold from the
  // recordings, averages the templates as asked and opens the engine. `backend` computes features and must outlive this object.
  WordRecognizer(const std::string& source, const WordRecognizerOptions& opts, Backend& backend,
                 std::vector<std::string>* log = nullptr);

  // One utterance: whole recording (trimmed as the features ask) or, with
  // `endpointed`, samples already cut to the word (no second trim).
  struct Result {
    MatchDecision decision;
    SpeechSegment kept;        // the samples the features came from
    bool speech_found = true;  // false: trimming found no speech, all kept
    int64_t frames = 0;        // feature frames of the utterance
    // With rejection and DtwDecisionOptions::syllable_check on: the kept
    // samples' syllables (syllable_count.h; 0 otherwise), and whether the
    // word was rejected for them (none of its templates has that count).
    int syllables = 0;
    bool syllables_rejected = false;
    // With band_match: the test was band-limited and matched against the
    // templates cut at the same edge.
    bool band_limited = false;
  };
  Result recognise(const float* samples, int64_t n, bool endpointed = false);
  // The decision for features already computed (one matrix per test warp,
  // by the wide-band features); no syllable check or band matching (they
  // need the samples).
  MatchDecision decide(const std::vector<FeatureMatrix>& warped);
  // Whether `syllables` is the count of one of `label`'s templates (true
  // when none of them has a known count).
  bool syllables_fit(const std::string& label, int syllables) const;

  // The wide-band (as configured) set's library, labels, engine and
  // threshold.
  const TemplateLibrary& library() const { return wide_.library; }
  const std::vector<std::string>& labels() const { return wide_.labels; }
  DtwEngine& engine() { return *wide_.engine; }
  const WordRecognizerOptions& options() const { return opts_; }
  // The threshold in force for wide-band tests: 0 = none. With kMapped a
  // distance in the mapped space, which depends on how many templates a
  // word has (DtwProjection::thresholds): `label`'s, or without a label the
  // largest of any word.
  float reject_threshold(const std::string& label = "") const;
  // Non-empty when the options asked for rejection by the installed maps
  // (kMapped, no projections given) and none fits the features: rejection
  // is then off, and this says so (for a warning).
  const std::string& rejection_note() const { return rejection_note_; }
  // kMapped: the last decision's score in the mapped space (the chosen
  // word's k-nearest mean there); 0 when no word was scored.
  float last_mapped_score() const { return last_mapped_score_; }
  // Why the band-limited set could not be made (band-limited tests are
  // then matched as wide-band ones); empty when it was, or was not needed.
  const std::string& band_match_error() const { return band_match_error_; }
  // Every template's distance per test warp of the last decision (one list
  // per warp, in config order, templates as in the set that decided): for
  // offline analysis (--dump-distances).
  const std::vector<std::vector<float>>& last_distances() const { return last_per_warp_; }

 private:
  // The templates as one band's matching sees them: the library (with any
  // averages), its labels, the test features' computer, the engine holding
  // the templates, and the rejection threshold learnt from the recordings.
  struct TemplateSet {
    TemplateLibrary library;
    std::vector<std::string> labels;
    std::unique_ptr<DtwFeatureComputer> features;
    std::unique_ptr<DtwEngine> engine;
    float threshold = 0.0f;
    // kMapped: each word's threshold, by its count of templates.
    std::map<std::string, float> word_thresholds;
    // kMapped: the set's map and its templates mapped.
    DtwProjection projection;
    std::vector<FeatureMatrix> mapped;
  };
  // kMapped: the chosen word's k-mean distance in the set's mapped space.
  float mapped_score(const TemplateSet& set, const std::vector<FeatureMatrix>& warped,
                     const std::string& label) const;
  void load_set(TemplateSet& set, const TemplateLibraryOptions& library, std::vector<std::string>* log);
  MatchDecision decide_with(TemplateSet& set, const std::vector<FeatureMatrix>& warped);
  // The band-limited set, made on first use; null when band matching
  // cannot change anything (off, kind spectrum, or the edge at or above the
  // configured filterbank's top).
  TemplateSet* narrow_set();
  // Whether a band-limited test could still go to a cut set: band matching
  // on, a kind and an edge that allow one, and no failed attempt to make
  // it. When not, recognise() skips the spectrum check.
  bool narrow_set_possible() const;

  WordRecognizerOptions opts_;
  std::string source_;
  Backend& backend_;
  TemplateSet wide_;
  float last_mapped_score_ = 0.0f;
  bool installed_maps_ = false;
  std::string rejection_note_;
  std::unique_ptr<TemplateSet> narrow_;
  bool narrow_tried_ = false;
  std::string band_match_error_;
  std::vector<std::vector<float>> last_per_warp_;
};

}  // namespace gpuspeech
