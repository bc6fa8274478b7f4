#include "common/dtw/projection_threshold.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/dtw/dtw.h"
#include "common/dtw/template_matcher.h"

namespace gpuspeech {

void ProjectionThresholdOptions::validate() const {
  if (words < 1) throw std::invalid_argument("projection threshold: words must be >= 1");
  if (template_voices < 1) throw std::invalid_argument("projection threshold: template voices must be >= 1");
  if (libraries < 1) throw std::invalid_argument("projection threshold: libraries must be >= 1");
  if (!(keep > 0.0f && keep <= 1.0f)) throw std::invalid_argument("projection threshold: keep must be in (0, 1]");
  if (k_nearest < 1) throw std::invalid_argument("projection threshold: k_nearest must be >= 1");
}

std::string recording_voice(const std::string& path) {
  const std::string name = template_file_stem(path);
  const size_t under = name.find('_');
  return under == std::string::npos ? std::string() : name.substr(under + 1);
}

namespace {

// The corpus under the map, made once for every library size drawn from it:
// the recordings by word and voice, each recording mapped as a template,
// and (when first drawn) its test warps mapped.
class MappedCorpus {
 public:
  MappedCorpus(const TemplateLibrary& corpus, const DtwProjection& map,
               const std::vector<std::vector<FeatureMatrix>>* test_warps)
      : map_(map), test_warps_(test_warps) {
    map.validate();
    if (map.input_dim != corpus.dim())
      throw std::invalid_argument("projection threshold: the map takes " + std::to_string(map.input_dim) +
                                  " values a frame, the corpus has " + std::to_string(corpus.dim()));
    const std::vector<DtwTemplate>& t = corpus.templates();
    std::map<std::string, int> voice_index;
    for (size_t i = 0; i < t.size(); ++i) {
      const std::string voice = recording_voice(t[i].path);
      if (voice.empty())
        throw std::invalid_argument("projection threshold: " + t[i].path +
                                    " names no voice (recordings are WORD_VOICE.wav)");
      const int v = voice_index.emplace(voice, static_cast<int>(voice_index.size())).first->second;
      by_word_[t[i].label][v] = i;
    }
    voices_ = static_cast<int>(voice_index.size());
    if (test_warps && test_warps->size() != t.size())
      throw std::invalid_argument("projection threshold: test warps for " + std::to_string(test_warps->size()) +
                                  " recordings, the corpus has " + std::to_string(t.size()));
    mapped_.reserve(t.size());
    for (const DtwTemplate& r : t) mapped_.push_back(map.apply(r.features));
    mapped_tests_.resize(t.size());
  }

  int voices() const { return voices_; }
  const std::map<std::string, std::map<int, size_t>>& by_word() const { return by_word_; }  // word -> voice -> recording
  const FeatureMatrix& mapped(size_t i) const { return mapped_[i]; }

  // A recording as a test: its features at each warp, mapped (made when
  // first drawn; most recordings are tests in several libraries).
  const std::vector<FeatureMatrix>& test(size_t i) {
    std::vector<FeatureMatrix>& m = mapped_tests_[i];
    if (m.empty()) {
      if (test_warps_ && !(*test_warps_)[i].empty())
        for (const FeatureMatrix& f : (*test_warps_)[i]) m.push_back(map_.apply(f));
      else
        m.push_back(mapped_[i]);
    }
    return m;
  }

 private:
  const DtwProjection& map_;
  const std::vector<std::vector<FeatureMatrix>>* test_warps_;
  int voices_ = 0;
  std::map<std::string, std::map<int, size_t>> by_word_;
  std::vector<FeatureMatrix> mapped_;
  std::vector<std::vector<FeatureMatrix>> mapped_tests_;
};

float simulated_threshold(MappedCorpus& c, const DtwOptions& dtw, const ProjectionThresholdOptions& opts,
                          ProjectionThresholdReport* report) {
  opts.validate();
  const int voices = c.voices();
  if (voices <= opts.template_voices)
    throw std::invalid_argument("projection threshold: " + std::to_string(voices) + " voices, more than " +
                                std::to_string(opts.template_voices) + " are needed (the rest test)");
  std::mt19937 rng(opts.seed);
  std::vector<int> voice_order(voices);
  for (int v = 0; v < voices; ++v) voice_order[v] = v;
  std::vector<float> scores;
  for (int lib = 0; lib < opts.libraries; ++lib) {
    std::shuffle(voice_order.begin(), voice_order.end(), rng);
    std::vector<bool> is_template(voices, false);
    for (int i = 0; i < opts.template_voices; ++i) is_template[voice_order[i]] = true;
    // A word can be in the library when the template voices give it k
    // templates (as a user's library would) and another voice says it.
    std::vector<const std::map<int, size_t>*> eligible;
    for (const auto& [word, recs] : c.by_word()) {
      int templates = 0, tests = 0;
      for (const auto& [v, i] : recs) (is_template[v] ? templates : tests) += 1;
      if (templates >= std::min(opts.k_nearest + 1, opts.template_voices) && tests > 0)
        eligible.push_back(&recs);
    }
    if (static_cast<int>(eligible.size()) < opts.words)
      throw std::invalid_argument("projection threshold: only " + std::to_string(eligible.size()) +
                                  " words have templates by the drawn voices and a test, " +
                                  std::to_string(opts.words) + " are needed");
    std::shuffle(eligible.begin(), eligible.end(), rng);
    for (int w = 0; w < opts.words; ++w) {
      const std::map<int, size_t>& recs = *eligible[w];
      for (const auto& [tv, ti] : recs) {
        if (is_template[tv]) continue;
        const std::vector<FeatureMatrix>& warps = c.test(ti);
        std::vector<float> d;
        for (const auto& [rv, ri] : recs) {
          if (!is_template[rv]) continue;
          const FeatureMatrix& ref = c.mapped(ri);
          float best = std::numeric_limits<float>::infinity();
          for (const FeatureMatrix& test : warps)
            best = std::min(best, dtw_distance(test.data.data(), test.rows, ref.data.data(), ref.rows, test.dim, dtw));
          d.push_back(best);
        }
        scores.push_back(label_score(d, opts.k_nearest));
      }
    }
  }
  std::sort(scores.begin(), scores.end());  // +inf (no path) last
  const size_t n = scores.size();
  const size_t at = std::min(n - 1, static_cast<size_t>(std::ceil(opts.keep * static_cast<double>(n))) - 1);
  const float threshold = scores[at];
  if (!std::isfinite(threshold))
    throw std::runtime_error("projection threshold: too many tests found no DTW path to their templates");
  if (report) {
    report->scores = static_cast<int64_t>(n);
    report->median = scores[n / 2];
  }
  return threshold;
}

}  // namespace

float calibrate_projection_threshold(const TemplateLibrary& corpus, const DtwProjection& map,
                                     const DtwOptions& dtw, const ProjectionThresholdOptions& opts,
                                     const std::vector<std::vector<FeatureMatrix>>* test_warps,
                                     ProjectionThresholdReport* report) {
  opts.validate();
  MappedCorpus c(corpus, map, test_warps);
  return simulated_threshold(c, dtw, opts, report);
}

std::vector<float> calibrate_projection_thresholds(const TemplateLibrary& corpus, const DtwProjection& map,
                                                   const DtwOptions& dtw, ProjectionThresholdOptions opts,
                                                   int max_voices,
                                                   const std::vector<std::vector<FeatureMatrix>>* test_warps,
                                                   std::vector<ProjectionThresholdReport>* reports) {
  if (max_voices < 1) throw std::invalid_argument("projection threshold: at least one library size is needed");
  // The corpus is mapped once for all sizes.
  MappedCorpus c(corpus, map, test_warps);
  std::vector<float> thresholds;
  if (reports) reports->clear();
  for (int n = 1; n <= max_voices; ++n) {
    opts.template_voices = n;
    ProjectionThresholdReport report;
    thresholds.push_back(simulated_threshold(c, dtw, opts, &report));
    if (reports) reports->push_back(report);
  }
  return thresholds;
}

}  // namespace gpuspeech
