#include "acoustic_model.h"

#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "common/model/byte_reader.h"
#include "common/model/s3_params.h"
#include "common/model/sendump.h"
#include "common/model/svspec.h"

namespace gpuspeech {

const char* to_string(AcousticModelType type) {
  switch (type) {
    case AcousticModelType::kContinuous:
      return "continuous";
    case AcousticModelType::kSemiContinuous:
      return "semi-continuous";
    case AcousticModelType::kPtm:
      return "ptm";
  }
  return "?";
}

const FeatureOptions& AcousticModel::feature_options() const {
  if (!feature_error_.empty()) throw ModelError(feature_error_);
  return feature_options_;
}

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string dims_string(const GaussianParams& g) {
  std::string s = std::to_string(g.num_codebooks) + " codebooks x " + std::to_string(g.density) +
                  " Gaussians, stream sizes";
  for (int d : g.stream_dims) s += " " + std::to_string(d);
  return s;
}

// (key, value) pairs of a feat.params-style text, for when the full parser
// rejects the file but the streams (-svspec) are still needed: words, '#'
// to the end of the line a comment, quotes stripped.
std::vector<std::pair<std::string, std::string>> scan_arguments(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ws(line);
    std::vector<std::string> words;
    std::string w;
    while (ws >> w) {
      if (w[0] == '#') break;
      if (w.size() >= 2 && (w[0] == '"' || w[0] == '\'') && w.back() == w[0])
        w = w.substr(1, w.size() - 2);
      words.push_back(w);
    }
    for (size_t i = 0; i + 1 < words.size(); i += 2)
      if (words[i].size() > 1 && words[i][0] == '-')
        out.emplace_back(words[i].substr(1), words[i + 1]);
  }
  return out;
}

}  // namespace

class AcousticModelLoader {
 public:
  AcousticModelLoader(const std::string& dir, const AcousticModelOptions& options) {
    m_.dir_ = dir;
    m_.options_ = options;
  }

  AcousticModel run() {
    check_options();
    if (model_file_exists(path("feature_transform")))
      throw ModelError(path("feature_transform") +
                       ": feature transforms (LDA/MLLT) are not supported");
    m_.mdef_ = ModelDefinition::load(path("mdef"));
    if (m_.mdef_.num_cross_base_senones() > 0)
      warn(path("mdef"), std::to_string(m_.mdef_.num_cross_base_senones()) +
                             " senone uses are shared between different base phones");
    load_transitions();
    load_feat_params();
    load_codebooks();
    load_weights();
    if (model_file_exists(path("noisedict"))) m_.noisedict_ = path("noisedict");
    try {
      m_.mixtures_.validate();
    } catch (const std::invalid_argument& e) {
      throw ModelError(m_.dir_ + ": " + e.what());
    }
    return std::move(m_);
  }

 private:
  std::string path(const std::string& file) const { return m_.dir_ + "/" + file; }
  void warn(const std::string& file, const std::string& what) {
    m_.warnings_.push_back(file + ": " + what);
  }

  void check_options() const {
    const AcousticModelOptions& o = m_.options_;
    if (!(o.var_floor > 0) || !std::isfinite(o.var_floor))
      throw std::invalid_argument("AcousticModelOptions: var_floor must be positive");
    if (!(o.mixw_floor > 0 && o.mixw_floor < 1))
      throw std::invalid_argument("AcousticModelOptions: mixw_floor must be in (0, 1)");
    if (!(o.tmat_floor >= 0 && o.tmat_floor < 1))
      throw std::invalid_argument("AcousticModelOptions: tmat_floor must be in [0, 1)");
  }

  // ----------------------------------------------------------- transitions

  void load_transitions() {
    const std::string file = path("transition_matrices");
    const TransitionMatrixParams t = parse_transition_matrices(read_model_file(file), file);
    const ModelDefinition& mdef = m_.mdef_;
    if (t.num_tmats != mdef.num_tmats())
      throw ModelError(file + ": " + std::to_string(t.num_tmats) + " transition matrices, but " +
                       path("mdef") + " declares " + std::to_string(mdef.num_tmats()));
    if (t.num_from != mdef.num_emitting_states())
      throw ModelError(file + ": matrices for " + std::to_string(t.num_from) +
                       " emitting states, but " + path("mdef") + " has " +
                       std::to_string(mdef.num_emitting_states()));
    TransitionMatrices& out = m_.tmats_;
    out.num_tmats = t.num_tmats;
    out.num_emitting = t.num_from;
    out.log_probs.resize(t.values.size());
    const int cols = t.num_to;
    const double floor = m_.options_.tmat_floor;
    std::vector<double> row(static_cast<size_t>(cols));
    for (int m = 0; m < t.num_tmats; ++m)
      for (int i = 0; i < t.num_from; ++i) {
        const size_t base = (size_t(m) * t.num_from + i) * cols;
        const std::string where = "matrix " + std::to_string(m) + ", row " + std::to_string(i);
        double sum = 0;
        for (int j = 0; j < cols; ++j) {
          const float v = t.values[base + j];
          if (!std::isfinite(v) || v < 0)
            throw ModelError(file + ": " + where + ": value " + std::to_string(v) +
                             " is not a finite non-negative number");
          row[j] = v;
          sum += v;
        }
        if (sum <= 0) {
          warn(file, where + " is all zero; the state has no way out");
        } else {
          // As pocketsphinx: normalise, raise non-zero values to the floor,
          // normalise again.
          double sum2 = 0;
          for (double& p : row) {
            p /= sum;
            if (p > 0 && p < floor) p = floor;
            sum2 += p;
          }
          for (double& p : row) p /= sum2;
        }
        for (int j = 0; j < cols; ++j) {
          if (row[j] > 0 && (j < i || j > i + 2))
            throw ModelError(file + ": " + where + ": transition to state " + std::to_string(j) +
                             (j < i ? " goes backwards" : " skips more than one state") +
                             " (pocketsphinx accepts only left-to-right topologies)");
          out.log_probs[base + j] = row[j] > 0 ? static_cast<float>(std::log(row[j])) : kNegInf;
        }
      }
  }

  // ----------------------------------------------------------- feat.params

  void load_feat_params() {
    const std::string file = path("feat.params");
    std::string text;
    const bool present = model_file_exists(file);
    if (present) text = read_model_file(file);
    try {
      FeatParams fp = parse_feat_params_string(text, file);
      m_.feature_options_ = fp.options;
      m_.feat_entries_ = fp.entries;
      for (const std::string& w : fp.warnings) m_.warnings_.push_back(w);
    } catch (const FeatParamsError& e) {
      m_.feature_error_ = e.what();
      m_.feat_entries_ = scan_arguments(text);
      warn(file, std::string("front end not supported, feature options unavailable: ") + e.what());
    }
  }

  const std::string* feat_entry(const std::string& key) const {
    const std::string* found = nullptr;
    for (const auto& kv : m_.feat_entries_)
      if (kv.first == key) found = &kv.second;  // the last one wins
    return found;
  }

  // ------------------------------------------------------------- codebooks

  void load_codebooks() {
    const std::string mean_file = path("means"), var_file = path("variances");
    const GaussianParams means = parse_gaussian_params(read_model_file(mean_file), mean_file);
    const GaussianParams vars = parse_gaussian_params(read_model_file(var_file), var_file);
    if (vars.num_codebooks != means.num_codebooks || vars.num_streams != means.num_streams ||
        vars.density != means.density || vars.stream_dims != means.stream_dims)
      throw ModelError(var_file + ": dimensions (" + dims_string(vars) + ") differ from " +
                       mean_file + " (" + dims_string(means) + ")");

    const ModelDefinition& mdef = m_.mdef_;
    const int n_cb = means.num_codebooks;
    if (n_cb == mdef.num_base_phones())
      m_.type_ = AcousticModelType::kPtm;
    else if (n_cb == 1)
      m_.type_ = AcousticModelType::kSemiContinuous;
    else if (n_cb == mdef.num_senones())
      m_.type_ = AcousticModelType::kContinuous;
    else
      throw ModelError(mean_file + ": " + std::to_string(n_cb) +
                       " codebooks fit no model type: PTM needs one per base phone (" +
                       std::to_string(mdef.num_base_phones()) +
                       "), semi-continuous one, continuous one per senone (" +
                       std::to_string(mdef.num_senones()) + ")");

    GaussianMixtures& g = m_.mixtures_;
    g.num_codebooks = n_cb;
    g.gaussians_per_codebook = means.density;
    g.num_senones = mdef.num_senones();
    set_streams(means);

    const int n_streams = means.num_streams;
    g.means.assign(static_cast<size_t>(n_streams), {});
    g.variances.assign(static_cast<size_t>(n_streams), {});
    const float floor = static_cast<float>(m_.options_.var_floor);
    for (int t = 0; t < n_streams; ++t) {
      const int dim = means.stream_dims[t];
      std::vector<float>& mu = g.means[t];
      std::vector<float>& var = g.variances[t];
      mu.reserve(size_t(n_cb) * means.density * dim);
      var.reserve(mu.capacity());
      for (int cb = 0; cb < n_cb; ++cb)
        for (int k = 0; k < means.density; ++k) {
          const size_t at = means.index(cb, t, k);
          for (int d = 0; d < dim; ++d) {
            const float m = means.values[at + d], v = vars.values[at + d];
            const std::string where = "codebook " + std::to_string(cb) + ", stream " +
                                      std::to_string(t) + ", Gaussian " + std::to_string(k) +
                                      ", component " + std::to_string(d);
            if (!std::isfinite(m)) throw ModelError(mean_file + ": " + where + ": not finite");
            if (!std::isfinite(v)) throw ModelError(var_file + ": " + where + ": not finite");
            mu.push_back(m);
            m_.floored_variances_ += v < floor;
            var.push_back(v < floor ? floor : v);  // pocketsphinx floors negatives too
          }
        }
    }

    g.senone_codebook.assign(static_cast<size_t>(g.num_senones), 0);
    int unused = 0;
    for (int s = 0; s < g.num_senones; ++s) {
      switch (m_.type_) {
        case AcousticModelType::kContinuous:
          g.senone_codebook[s] = s;
          break;
        case AcousticModelType::kSemiContinuous:
          g.senone_codebook[s] = 0;
          break;
        case AcousticModelType::kPtm: {
          const int base = mdef.senone_base_phone(s);
          if (base < 0) {
            ++unused;  // never scored by a search; any codebook will do
            g.senone_codebook[s] = 0;
          } else {
            g.senone_codebook[s] = base;
          }
          break;
        }
      }
    }
    if (unused > 0)
      warn(path("mdef"), std::to_string(unused) +
                             " senone(s) used by no phone (codebook 0 "
                             "stands in for their PTM codebook)");
  }

  void set_streams(const GaussianParams& means) {
    GaussianMixtures& g = m_.mixtures_;
    const std::string mean_file = path("means"), fp_file = path("feat.params");
    const std::string* spec = feat_entry("svspec");
    int feature_dim = -1;
    std::vector<int> front_streams;  // the front end's own split (s2_4x: four)
    if (m_.feature_error_.empty()) {
      feature_dim = m_.feature_options_.output_dim();
      front_streams = m_.feature_options_.stream_dims();
    }
    if (spec) {
      try {
        g.stream_components = parse_svspec(*spec);
      } catch (const std::invalid_argument& e) {
        throw ModelError(fp_file + ": " + e.what());
      }
      if (static_cast<int>(g.stream_components.size()) != means.num_streams)
        throw ModelError(fp_file + ": -svspec gives " + std::to_string(g.stream_components.size()) +
                         " streams, but " + mean_file + " has " +
                         std::to_string(means.num_streams));
      for (int t = 0; t < means.num_streams; ++t) {
        if (static_cast<int>(g.stream_components[t].size()) != means.stream_dims[t])
          throw ModelError(fp_file + ": -svspec stream " + std::to_string(t) + " has " +
                           std::to_string(g.stream_components[t].size()) + " components, but " +
                           mean_file + " has " + std::to_string(means.stream_dims[t]));
        for (int c : g.stream_components[t])
          if (feature_dim >= 0 && c >= feature_dim)
            throw ModelError(fp_file + ": -svspec names feature component " + std::to_string(c) +
                             ", but the front end gives " + std::to_string(feature_dim));
      }
      return;
    }
    // No -svspec: the codebook streams cut the feature vector in order.
    g.stream_components.clear();
    int next = 0;
    for (int t = 0; t < means.num_streams; ++t) {
      g.stream_components.emplace_back();
      for (int d = 0; d < means.stream_dims[t]; ++d) g.stream_components.back().push_back(next++);
    }
    if (feature_dim >= 0 && means.stream_dims != front_streams) {
      std::string streams;
      for (int d : front_streams) streams += (streams.empty() ? "" : " ") + std::to_string(d);
      throw ModelError(mean_file + ": codebooks of " + std::to_string(means.num_streams) +
                       " stream(s) over " + std::to_string(next) +
                       " components do not fit the front end of " + fp_file + " (streams of " +
                       streams + ") and there is no -svspec");
    }
  }

  // --------------------------------------------------------------- weights

  void load_weights() {
    const std::string sendump = path("sendump");
    if (m_.type_ != AcousticModelType::kContinuous && model_file_exists(sendump)) {
      load_sendump(sendump);
      return;
    }
    const std::string mixw = path("mixture_weights");
    if (!model_file_exists(mixw)) {
      if (model_file_exists(sendump))
        throw ModelError(mixw + ": missing; a continuous model needs it (" + sendump +
                         " serves only semi-continuous and PTM models)");
      throw ModelError(mixw + ": missing (and no sendump)");
    }
    load_mixture_weights(mixw);
  }

  void load_sendump(const std::string& file) {
    GaussianMixtures& g = m_.mixtures_;
    SendumpShape shape;
    shape.num_streams = g.num_streams();
    shape.density = g.gaussians_per_codebook;
    shape.num_senones = g.num_senones;
    const SendumpWeights w = parse_sendump(read_model_file(file), file, shape);
    m_.weights_file_ = "sendump";
    const int streams = g.num_streams(), density = g.gaussians_per_codebook;
    g.log_weights.resize(size_t(g.num_senones) * streams * density);
    for (int s = 0; s < g.num_senones; ++s)
      for (int t = 0; t < streams; ++t)
        for (int k = 0; k < density; ++k)
          g.log_weights[(size_t(s) * streams + t) * density + k] = w.log_weight(s, t, k);
  }

  void load_mixture_weights(const std::string& file) {
    GaussianMixtures& g = m_.mixtures_;
    const MixtureWeightParams w = parse_mixture_weights(read_model_file(file), file);
    m_.weights_file_ = "mixture_weights";
    if (w.num_senones != g.num_senones)
      throw ModelError(file + ": " + std::to_string(w.num_senones) + " senones, but " +
                       path("mdef") + " has " + std::to_string(g.num_senones));
    if (w.num_streams != g.num_streams())
      throw ModelError(file + ": " + std::to_string(w.num_streams) + " streams, but " +
                       path("means") + " has " + std::to_string(g.num_streams()));
    if (w.density != g.gaussians_per_codebook)
      throw ModelError(file + ": " + std::to_string(w.density) + " weights per mixture, but " +
                       path("means") + " has " + std::to_string(g.gaussians_per_codebook) +
                       " Gaussians per codebook");
    const int density = w.density;
    const double floor = m_.options_.mixw_floor;
    g.log_weights.resize(w.values.size());
    int zero_rows = 0;
    for (size_t row = 0; row < w.values.size() / density; ++row) {
      const float* in = &w.values[row * density];
      double sum = 0;
      for (int k = 0; k < density; ++k) {
        if (!std::isfinite(in[k]) || in[k] < 0)
          throw ModelError(file + ": senone " + std::to_string(row / w.num_streams) + ", stream " +
                           std::to_string(row % w.num_streams) + ": weight " +
                           std::to_string(in[k]) + " is not a finite non-negative number");
        sum += in[k];
      }
      if (sum <= 0) ++zero_rows;
      // As pocketsphinx (vector_sum_norm, vector_floor, vector_sum_norm); a
      // zero row stays zero through the first step and comes out uniform.
      double sum2 = 0;
      std::vector<double> p(static_cast<size_t>(density));
      for (int k = 0; k < density; ++k) {
        p[k] = sum > 0 ? in[k] / sum : 0.0;
        if (p[k] < floor) p[k] = floor;
        sum2 += p[k];
      }
      for (int k = 0; k < density; ++k)
        g.log_weights[row * density + k] = static_cast<float>(std::log(p[k] / sum2));
    }
    if (zero_rows > 0)
      warn(file, std::to_string(zero_rows) + " mixture(s) have all-zero weights (made uniform)");
  }

  AcousticModel m_;
};

AcousticModel AcousticModel::load(const std::string& dir, const AcousticModelOptions& options) {
  return AcousticModelLoader(dir, options).run();
}

}  // namespace gpuspeech
