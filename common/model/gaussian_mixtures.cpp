#include "common/model/gaussian_mixtures.h"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuspeech {

namespace {

[[noreturn]] void fail(const std::string& why) {
  throw std::invalid_argument("GaussianMixtures: " + why);
}

}  // namespace

int GaussianMixtures::feature_dim() const {
  int64_t total = 0;
  for (const std::vector<int>& s : stream_components) total += static_cast<int64_t>(s.size());
  return static_cast<int>(total);
}

void GaussianMixtures::validate() const {
  const int streams = num_streams();
  if (streams < 1) fail("no feature streams");
  // Components over all streams must be a partition of 0..feature_dim()-1:
  // the scorer reads each stream's components out of a feature vector of
  // feature_dim() values, and Sphinx's -svspec splits the vector that way.
  int64_t total = 0;
  for (int t = 0; t < streams; ++t) {
    if (stream_components[t].empty())
      fail("stream " + std::to_string(t) + " has no feature components");
    total += static_cast<int64_t>(stream_components[t].size());
  }
  if (total > (1 << 20)) fail("implausible feature dimension " + std::to_string(total));
  std::vector<int> owner(static_cast<size_t>(total), -1);
  for (int t = 0; t < streams; ++t)
    for (int c : stream_components[t]) {
      if (c < 0 || c >= total)
        fail("stream " + std::to_string(t) + " names feature component " + std::to_string(c) +
             ", outside 0.." + std::to_string(total - 1) +
             " (the streams must partition the feature vector)");
      if (owner[static_cast<size_t>(c)] >= 0)
        fail("feature component " + std::to_string(c) + " is in stream " +
             std::to_string(owner[static_cast<size_t>(c)]) + " and stream " +
             std::to_string(t));
      owner[static_cast<size_t>(c)] = t;
    }

  if (num_codebooks < 1) fail("num_codebooks is " + std::to_string(num_codebooks));
  if (gaussians_per_codebook < 1)
    fail("gaussians_per_codebook is " + std::to_string(gaussians_per_codebook));
  if (num_senones < 1) fail("num_senones is " + std::to_string(num_senones));

  const int64_t gaussians = static_cast<int64_t>(num_codebooks) * gaussians_per_codebook;
  if (static_cast<int64_t>(means.size()) != streams ||
      static_cast<int64_t>(variances.size()) != streams)
    fail("means and variances must have one entry per stream (" + std::to_string(streams) +
         "), have " + std::to_string(means.size()) + " and " +
         std::to_string(variances.size()));
  for (int t = 0; t < streams; ++t) {
    const int64_t want = gaussians * stream_dim(t);
    const std::string where = "stream " + std::to_string(t);
    if (static_cast<int64_t>(means[t].size()) != want)
      fail(where + ": means hold " + std::to_string(means[t].size()) + " values, expected " +
           std::to_string(num_codebooks) + " codebooks x " +
           std::to_string(gaussians_per_codebook) + " Gaussians x dimension " +
           std::to_string(stream_dim(t)) + " = " + std::to_string(want));
    if (static_cast<int64_t>(variances[t].size()) != want)
      fail(where + ": variances hold " + std::to_string(variances[t].size()) +
           " values, expected " + std::to_string(want));
    for (int64_t i = 0; i < want; ++i) {
      const float m = means[t][static_cast<size_t>(i)];
      const float v = variances[t][static_cast<size_t>(i)];
      if (std::isfinite(m) && v > 0.0f && std::isfinite(v)) continue;
      const int64_t g = i / stream_dim(t);
      const std::string which = where + ", codebook " +
                                std::to_string(g / gaussians_per_codebook) + ", Gaussian " +
                                std::to_string(g % gaussians_per_codebook) + ", component " +
                                std::to_string(i % stream_dim(t));
      if (!std::isfinite(m)) fail(which + ": mean is not finite");
      fail(which + ": variance " + std::to_string(v) +
           " is not finite and positive (floor variances before scoring)");
    }
  }

  if (static_cast<int64_t>(senone_codebook.size()) != num_senones)
    fail("senone_codebook holds " + std::to_string(senone_codebook.size()) +
         " entries for " + std::to_string(num_senones) + " senones");
  for (int s = 0; s < num_senones; ++s)
    if (senone_codebook[s] < 0 || senone_codebook[s] >= num_codebooks)
      fail("senone " + std::to_string(s) + " uses codebook " +
           std::to_string(senone_codebook[s]) + ", outside 0.." +
           std::to_string(num_codebooks - 1));

  const int64_t want_w = static_cast<int64_t>(num_senones) * streams * gaussians_per_codebook;
  if (static_cast<int64_t>(log_weights.size()) != want_w)
    fail("log_weights hold " + std::to_string(log_weights.size()) + " values, expected " +
         std::to_string(num_senones) + " senones x " + std::to_string(streams) +
         " streams x " + std::to_string(gaussians_per_codebook) + " = " +
         std::to_string(want_w));
  for (int s = 0; s < num_senones; ++s)
    for (int t = 0; t < streams; ++t) {
      // A senone whose mixture has no weight left in a stream would score
      // -infinity on every frame; Sphinx floors mixture weights so that
      // never happens, and the search must not meet it either.
      bool any = false;
      for (int k = 0; k < gaussians_per_codebook; ++k) {
        const float w = log_weights[(static_cast<size_t>(s) * streams + t) *
                                        gaussians_per_codebook + k];
        if (std::isnan(w) || w == INFINITY)
          fail("senone " + std::to_string(s) + ", stream " + std::to_string(t) +
               ", component " + std::to_string(k) + ": log weight is " + std::to_string(w));
        if (w != -INFINITY) any = true;
      }
      if (!any)
        fail("senone " + std::to_string(s) + ", stream " + std::to_string(t) +
             ": every mixture weight is zero");
    }
}

}  // namespace gpuspeech
