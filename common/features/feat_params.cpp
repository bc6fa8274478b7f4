#include "common/features/feat_params.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <sys/stat.h>

namespace gpuspeech {

namespace {

struct Entry {
  std::string key;  // without the leading dash
  std::string value;
  int line = 0;
};

class Parser {
 public:
  Parser(const std::string& name, FeatureKind kind) : name_(name) {
    result_.options = FeatureOptions::for_flavour(Flavour::kSphinx, kind);
    apply_pocketsphinx_defaults(result_.options);
  }

  FeatParams run(const std::string& text) {
    const std::vector<Entry> entries = tokenize(text);
    std::set<std::string> seen;
    for (const Entry& e : entries) {
      if (!seen.insert(e.key).second)
        warn(e.line, "-" + e.key + " given more than once; the last value wins");
      result_.entries.emplace_back(e.key, e.value);
    }
    for (const Entry& e : entries) apply(e);
    finish();
    return std::move(result_);
  }

 private:
  [[noreturn]] void fail(int line, const std::string& why) const {
    throw FeatParamsError(name_ + ":" + std::to_string(line) + ": " + why);
  }
  void warn(int line, const std::string& what) {
    result_.warnings.push_back(name_ + ":" + std::to_string(line) + ": " + what);
  }

  // Splits the text into (-key, value) pairs with their line numbers.
  std::vector<Entry> tokenize(const std::string& text) const {
    std::vector<Entry> entries;
    int line = 1;
    size_t i = 0;
    const size_t n = text.size();
    // Words of the current line; pairs never span lines.
    std::vector<std::string> words;
    auto flush_line = [&]() {
      for (size_t w = 0; w < words.size(); w += 2) {
        const std::string& key = words[w];
        if (key.size() < 2 || key[0] != '-' ||
            !(std::isalpha(static_cast<unsigned char>(key[1])) || key[1] == '_'))
          fail(line, "expected an option name starting with '-', found '" + key + "'");
        if (w + 1 >= words.size()) fail(line, "option " + key + " has no value");
        entries.push_back({key.substr(1), words[w + 1], line});
      }
      words.clear();
    };
    while (i < n) {
      const char c = text[i];
      if (c == '\n') {
        flush_line();
        ++line;
        ++i;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i;
      } else if (c == '#') {
        while (i < n && text[i] != '\n') ++i;
      } else if (c == '"' || c == '\'') {
        const size_t close = text.find(c, i + 1);
        const size_t eol = text.find('\n', i + 1);
        if (close == std::string::npos || (eol != std::string::npos && eol < close))
          fail(line, std::string("unterminated ") + c + " quote");
        words.push_back(text.substr(i + 1, close - i - 1));
        i = close + 1;
      } else if (c == '\0') {
        fail(line, "NUL byte in the file (not a text file?)");
      } else {
        const size_t start = i;
        while (i < n && !std::isspace(static_cast<unsigned char>(text[i])) &&
               text[i] != '\0')
          ++i;
        words.push_back(text.substr(start, i - start));
      }
    }
    flush_line();
    return entries;
  }

  double number(const Entry& e) const {
    const char* s = e.value.c_str();
    char* end = nullptr;
    errno = 0;
    const double v = std::strtod(s, &end);
    if (e.value.empty() || end != s + e.value.size())
      fail(e.line, "-" + e.key + ": '" + e.value + "' is not a number");
    if (errno == ERANGE || !std::isfinite(v))
      fail(e.line, "-" + e.key + ": '" + e.value + "' is out of range");
    return v;
  }

  float positive(const Entry& e) const {
    const double v = number(e);
    if (!(v > 0.0) || v > std::numeric_limits<float>::max())
      fail(e.line, "-" + e.key + " must be positive, got " + e.value);
    return static_cast<float>(v);
  }

  float non_negative(const Entry& e) const {
    const double v = number(e);
    if (!(v >= 0.0) || v > std::numeric_limits<float>::max())
      fail(e.line, "-" + e.key + " must be >= 0, got " + e.value);
    return static_cast<float>(v);
  }

  long integer(const Entry& e, long lo, long hi) const {
    const char* s = e.value.c_str();
    char* end = nullptr;
    errno = 0;
    const long v = std::strtol(s, &end, 10);
    if (e.value.empty() || end != s + e.value.size())
      fail(e.line, "-" + e.key + ": '" + e.value + "' is not an integer");
    if (errno == ERANGE || v < lo || v > hi)
      fail(e.line, "-" + e.key + " must be in " + std::to_string(lo) + ".." +
                       std::to_string(hi) + ", got " + e.value);
    return v;
  }

  bool boolean(const Entry& e) const {
    std::string v = e.value;
    for (char& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (v == "yes" || v == "true" || v == "1") return true;
    if (v == "no" || v == "false" || v == "0") return false;
    fail(e.line, "-" + e.key + ": '" + e.value + "' is not yes or no");
  }

  std::vector<float> number_list(const Entry& e) const {
    std::vector<float> out;
    size_t start = 0;
    while (true) {
      const size_t comma = e.value.find(',', start);
      Entry item{e.key, e.value.substr(start, comma == std::string::npos
                                                  ? std::string::npos
                                                  : comma - start),
                 e.line};
      const double v = number(item);
      if (std::fabs(v) > std::numeric_limits<float>::max())
        fail(e.line, "-" + e.key + ": '" + item.value + "' is out of range");
      out.push_back(static_cast<float>(v));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  }

  void apply(const Entry& e) {
    FeatureOptions& o = result_.options;
    const std::string& k = e.key;
    const bool plp = o.kind == FeatureKind::kPlp;
    if (k == "samprate") {
      o.frame.sample_rate = positive(e);
    } else if (k == "lowerf") {
      o.mel.low_freq = non_negative(e);
    } else if (k == "upperf") {
      o.mel.high_freq = positive(e);
    } else if (k == "nfilt") {
      o.mel.num_filters = static_cast<int>(integer(e, 1, 100000));
    } else if (k == "wlen") {
      const double ms = positive(e) * 1000.0;
      if (ms > std::numeric_limits<float>::max()) fail(e.line, "-wlen is out of range");
      o.frame.frame_length_ms = static_cast<float>(ms);
    } else if (k == "frate") {
      o.frame.frame_shift_ms = static_cast<float>(1000.0 / integer(e, 1, 1000000));
    } else if (k == "nfft") {
      o.frame.fft_size = static_cast<int>(integer(e, 1, 1 << 24));
    } else if (k == "alpha") {
      o.frame.preemphasis = non_negative(e);
    } else if (k == "dither") {
      o.frame.dither = boolean(e) ? 0.5f : 0.0f;
    } else if (k == "seed") {
      const long seed = integer(e, std::numeric_limits<int32_t>::min(),
                                std::numeric_limits<int32_t>::max());
      if (seed >= 0) o.frame.dither_seed = static_cast<uint32_t>(seed);
    } else if (k == "transform") {
      if (e.value == "dct") {
        o.mfcc.transform = CepstralTransform::kSphinxDct;
      } else if (e.value == "legacy") {
        o.mfcc.transform = CepstralTransform::kSphinxLegacy;
      } else if (e.value == "htk") {
        o.mfcc.transform = CepstralTransform::kHtkDct;
      } else {
        fail(e.line, "-transform '" + e.value + "' is not one of dct, legacy, htk");
      }
    } else if (k == "lifter") {
      const int lifter = static_cast<int>(integer(e, 0, 100000));
      (plp ? o.plp.lifter : o.mfcc.lifter) = lifter;
    } else if (k == "ncep") {
      const int ncep = static_cast<int>(integer(e, 1, 100000));
      (plp ? o.plp.num_ceps : o.mfcc.num_ceps) = ncep;
    } else if (k == "remove_dc") {
      o.frame.remove_dc = boolean(e);
    } else if (k == "round_filters") {
      o.mel.round_filters = boolean(e);
    } else if (k == "unit_area") {
      if (!boolean(e))
        fail(e.line, "-unit_area no is not supported (Sphinx filters always have unit "
                     "area here)");
    } else if (k == "doublebw") {
      if (boolean(e)) fail(e.line, "-doublebw yes is not supported");
    } else if (k == "feat") {
      if (e.value == "1s_c_d_dd") {
        o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
      } else if (e.value == "1s_c") {
        o.delta.layout = DeltaOptions::Layout::kNone;
      } else if (e.value == "s2_4x") {
        o.delta.layout = DeltaOptions::Layout::kSphinxS2_4x;
      } else {
        fail(e.line, "-feat '" + e.value +
                         "' is not supported (only 1s_c_d_dd, s2_4x and 1s_c are)");
      }
    } else if (k == "cmn") {
      if (e.value == "none") {
        o.norm.cmn = NormOptions::Cmn::kNone;
      } else if (e.value == "batch" || e.value == "current") {
        o.norm.cmn = NormOptions::Cmn::kBatch;
      } else if (e.value == "live" || e.value == "prior") {
        o.norm.cmn = NormOptions::Cmn::kLive;
      } else {
        fail(e.line, "-cmn '" + e.value +
                         "' is not one of none, batch, current, live, prior");
      }
    } else if (k == "cmninit") {
      o.norm.cmn_init = number_list(e);
      cmninit_line_ = e.line;
    } else if (k == "varnorm") {
      o.norm.cvn = boolean(e);
    } else if (k == "agc") {
      if (e.value == "max" || e.value == "emax" || e.value == "noise") {
        warn(e.line, "-agc " + e.value + " is not implemented; ignored (no gain control)");
      } else if (e.value != "none") {
        fail(e.line, "-agc '" + e.value + "' is not one of none, max, emax, noise");
      }
    } else if (k == "remove_noise") {
      o.noise.remove_noise = boolean(e);
    } else if (k == "remove_silence") {
      o.noise.remove_silence = boolean(e);
    } else if (k == "vad_threshold") {
      const double v = number(e);
      if (std::fabs(v) > 1e6) fail(e.line, "-vad_threshold is out of range");
      o.noise.vad_threshold = static_cast<float>(v);
    } else if (k == "vad_prespeech") {
      o.noise.vad_prespeech = static_cast<int>(integer(e, 0, 100000));
    } else if (k == "vad_postspeech") {
      o.noise.vad_postspeech = static_cast<int>(integer(e, 0, 100000));
    } else if (k == "vad_startspeech") {
      o.noise.vad_startspeech = static_cast<int>(integer(e, 0, 100000));
    } else if (k == "warp_type") {
      if (e.value != "inverse_linear" && e.value != "affine" &&
          e.value != "piecewise_linear")
        fail(e.line, "-warp_type '" + e.value +
                         "' is not one of inverse_linear, affine, piecewise_linear");
      warp_type_ = e.value;
      warp_type_line_ = e.line;
    } else if (k == "warp_params") {
      warp_params_ = e;
      have_warp_params_ = true;
    } else if (is_decoder_only(k)) {
      // Shapes the decoder's view of the features, not the features.
    } else {
      warn(e.line, "unknown option -" + k + " ignored");
    }
  }

  static bool is_decoder_only(const std::string& k) {
    static const std::set<std::string> keys = {
        "svspec", "model", "ceplen", "lda", "ldadim", "agcthresh", "topn",
        "input_endian", "mach_endian"};
    return keys.count(k) != 0;
  }

  void finish() {
    FeatureOptions& o = result_.options;
    if (have_warp_params_) {
      const Entry& e = warp_params_;
      if (warp_type_ != "piecewise_linear")
        fail(warp_type_line_ ? warp_type_line_ : e.line,
             "-warp_type " + warp_type_ +
                 " is not supported (only piecewise_linear, with -warp_params)");
      std::istringstream words(e.value);
      std::string a_str, f_str, extra;
      words >> a_str >> f_str >> extra;
      if (a_str.empty()) fail(e.line, "-warp_params is empty");
      if (!extra.empty()) fail(e.line, "-warp_params takes at most two values");
      const float a = positive({e.key, a_str, e.line});
      o.mel.vtln.warp = 1.0f / a;
      if (!f_str.empty()) {
        const float f = positive({e.key, f_str, e.line});
        if (f >= o.frame.sample_rate / 2)
          fail(e.line, "-warp_params cut-off " + f_str + " Hz is not below Nyquist");
        o.mel.vtln.high_cutoff = f;
      }
    }
    // Sphinx fills a short -cmninit with zeros. The built-in default
    // (40,3,-1) is cut to fit when the features have fewer dimensions.
    const size_t dim = static_cast<size_t>(o.base_dim());
    if (cmninit_line_ != 0 && o.norm.cmn_init.size() > dim)
      fail(cmninit_line_, "-cmninit has " + std::to_string(o.norm.cmn_init.size()) +
                              " values but the features have " + std::to_string(dim));
    o.norm.cmn_init.resize(dim, 0.0f);
  }

  std::string name_;
  FeatParams result_;
  std::string warp_type_ = "inverse_linear";
  int warp_type_line_ = 0;
  Entry warp_params_;
  bool have_warp_params_ = false;
  int cmninit_line_ = 0;
};

}  // namespace

void apply_pocketsphinx_defaults(FeatureOptions& o) {
  // pocketsphinx 5prealpha's argument defaults (pocketsphinx_batch -h).
  o.frame.sample_rate = 16000.0f;
  o.frame.frame_length_ms = 25.625f;  // -wlen 0.025625
  o.frame.frame_shift_ms = 10.0f;     // -frate 100
  o.frame.fft_size = 512;
  o.frame.preemphasis = 0.97f;
  o.frame.remove_dc = false;
  o.frame.dither = 0.0f;
  o.mel.num_filters = 40;
  o.mel.low_freq = 133.33334f;
  o.mel.high_freq = 6855.4976f;
  o.mfcc.num_ceps = 13;
  o.mfcc.transform = CepstralTransform::kSphinxLegacy;
  o.mfcc.lifter = 0;
  o.mel.round_filters = true;
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  o.norm.cmn = NormOptions::Cmn::kLive;
  o.norm.cvn = false;
  o.norm.cmn_init = {40.0f, 3.0f, -1.0f};
}

FeatParams parse_feat_params_string(const std::string& text, const std::string& name,
                                    FeatureKind kind) {
  return Parser(name, kind).run(text);
}

FeatParams parse_feat_params_file(const std::string& path, FeatureKind kind) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw FeatParamsError(path + ": cannot open feat.params: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw FeatParamsError(path + ": is a directory, not a feat.params file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw FeatParamsError(path + ": cannot open feat.params: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw FeatParamsError(path + ": read error");
  return parse_feat_params_string(text.str(), path, kind);
}

}  // namespace gpuspeech
