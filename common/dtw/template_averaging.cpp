#include "common/dtw/template_averaging.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "common/dtw/dtw.h"

namespace gpuspeech {

std::vector<DtwTemplate> average_templates(const TemplateLibrary& library, const DtwOptions& dtw) {
  std::map<std::string, std::vector<size_t>> by_label;
  for (size_t t = 0; t < library.size(); ++t) by_label[library[t].label].push_back(t);
  std::vector<DtwTemplate> out;
  for (const auto& [label, members] : by_label) {
    const size_t n = members.size();
    if (n < 2) continue;
    const FeatureMatrix& any = library[members[0]].features;
    const int dim = any.dim;
    // Pairwise distances, both directions (the Itakura pattern is not
    // symmetric), to find the medoid.
    std::vector<double> total(n, 0.0);
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) {
        if (a == b) continue;
        const FeatureMatrix& x = library[members[a]].features;
        const FeatureMatrix& y = library[members[b]].features;
        const float d = dtw_distance(x.data.data(), x.rows, y.data.data(), y.rows, dim, dtw);
        total[a] += std::isfinite(d) ? d : 1e30;
      }
    size_t medoid = 0;
    for (size_t a = 1; a < n; ++a)
      if (total[a] < total[medoid]) medoid = a;
    const FeatureMatrix& m = library[members[medoid]].features;
    // Running sums per medoid frame, starting with the medoid itself.
    std::vector<double> sum(m.data.begin(), m.data.end());
    std::vector<double> count(static_cast<size_t>(m.rows), 1.0);
    int used = 1;
    for (size_t b = 0; b < n; ++b) {
      if (b == medoid) continue;
      const FeatureMatrix& y = library[members[b]].features;
      std::vector<std::pair<int64_t, int64_t>> path;
      const float d = dtw_distance(m.data.data(), m.rows, y.data.data(), y.rows, dim, dtw, &path);
      if (!std::isfinite(d) || path.empty()) continue;
      // Frames of y on each medoid frame's column, averaged, so that every
      // recording weighs the same whatever the pattern.
      std::vector<double> col(static_cast<size_t>(m.rows) * dim, 0.0);
      std::vector<int> hits(static_cast<size_t>(m.rows), 0);
      for (const auto& [i, j] : path) {
        for (int k = 0; k < dim; ++k) col[static_cast<size_t>(i) * dim + k] += y.row(j)[k];
        ++hits[static_cast<size_t>(i)];
      }
      for (int64_t i = 0; i < m.rows; ++i) {
        if (hits[static_cast<size_t>(i)] == 0) continue;
        for (int k = 0; k < dim; ++k)
          sum[static_cast<size_t>(i) * dim + k] += col[static_cast<size_t>(i) * dim + k] / hits[static_cast<size_t>(i)];
        count[static_cast<size_t>(i)] += 1.0;
      }
      ++used;
    }
    if (used < 2) continue;
    DtwTemplate avg;
    avg.label = label;
    avg.path = "<average of " + label + ">";
    avg.syllables = library[members[medoid]].syllables;  // its time axis is the medoid's
    avg.features.rows = m.rows;
    avg.features.dim = dim;
    avg.features.data.resize(m.data.size());
    for (int64_t i = 0; i < m.rows; ++i)
      for (int k = 0; k < dim; ++k)
        avg.features.data[static_cast<size_t>(i) * dim + k] =
            static_cast<float>(sum[static_cast<size_t>(i) * dim + k] / count[static_cast<size_t>(i)]);
    out.push_back(std::move(avg));
  }
  return out;
}

}  // namespace gpuspeech
