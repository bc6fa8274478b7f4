#include "common/dtw/template_library.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/dtw/syllable_count.h"
#include "common/dtw/template_feature_cache.h"
#include "common/search/content_hash.h"
#include "common/search/graph_cache.h"

namespace gpuspeech {
namespace {

// Bump when the file layout or the feature code changes meaning.
// Format 2 keeps the template's syllable count in the header word that
// format 1 left zero; format 3 counts syllables of voiced nuclei only
// (syllable_count.h), so no template keeps a count of before.
constexpr const char* kCacheFormat = "gpuspeech-dtw-features-3";

bool is_directory(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ends_with_wav(const std::string& name) {
  if (name.size() < 4) return false;
  std::string ext = name.substr(name.size() - 4);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".wav";
}

std::string dirname_of(const std::string& p) {
  const size_t slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

void make_dirs(const std::string& dir) {
  std::string cur;
  std::stringstream ss(dir);
  std::string part;
  if (!dir.empty() && dir[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    ::mkdir(cur.c_str(), 0755);
  }
}

struct Entry {
  std::string label;
  std::string path;
};

std::vector<Entry> list_directory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) throw TemplateError(dir + ": cannot open directory: " + std::strerror(errno));
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name[0] != '.' && ends_with_wav(name)) names.push_back(name);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  if (names.empty()) throw TemplateError(dir + ": no templates (no *.wav files in the directory)");
  std::vector<Entry> out;
  for (const std::string& n : names) out.push_back({template_label_from_path(n), dir + "/" + n});
  return out;
}

std::vector<Entry> read_list(const std::string& list) {
  std::ifstream in(list);
  if (!in) {
    if (errno == ENOENT) throw TemplateError(list + ": not found (give a directory of *.wav templates or a template list)");
    throw TemplateError(list + ": cannot open the template list: " + std::strerror(errno));
  }
  std::vector<Entry> out;
  std::string line;
  int line_no = 0;
  const std::string base = dirname_of(list);
  while (std::getline(in, line)) {
    ++line_no;
    std::stringstream ss(line);
    std::vector<std::string> words;
    std::string w;
    while (ss >> w) words.push_back(w);
    if (words.empty() || words[0][0] == '#') continue;
    if (words.size() > 2)
      throw TemplateError(list + ":" + std::to_string(line_no) +
                          ": expected \"PATH\" or \"LABEL PATH\", got " + std::to_string(words.size()) +
                          " fields");
    std::string path = words.back();
    if (path[0] != '/') path = base + "/" + path;
    out.push_back({words.size() == 2 ? words[0] : template_label_from_path(path), path});
  }
  if (out.empty()) throw TemplateError(list + ": no templates (the list is empty)");
  return out;
}

}  // namespace

std::string template_file_stem(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  const size_t dot = base.find_last_of('.');
  if (dot != std::string::npos && dot > 0) base.resize(dot);
  return base;
}

std::string template_label_from_path(const std::string& path) {
  std::string base = template_file_stem(path);
  const size_t us = base.find('_');
  if (us != std::string::npos && us > 0) base.resize(us);
  return base;
}

int64_t PackedTemplates::max_length() const {
  int64_t m = 0;
  for (int64_t t = 0; t < count(); ++t) m = std::max(m, length(t));
  return m;
}

void PackedTemplates::add(const FeatureMatrix& m) {
  if (m.rows < 1) throw std::invalid_argument("a template needs at least one frame");
  if (count() == 0 && frames.empty()) dim = m.dim;
  if (m.dim != dim)
    throw std::invalid_argument("template of " + std::to_string(m.dim) + " values per frame, others have " +
                                std::to_string(dim));
  frames.insert(frames.end(), m.data.begin(), m.data.end());
  offsets.push_back(offsets.back() + m.rows);
}

TemplateLibrary TemplateLibrary::load(const std::string& source, const TemplateLibraryOptions& opts,
                                      Backend& backend, std::vector<std::string>* log) {
  const std::vector<Entry> entries = is_directory(source) ? list_directory(source) : read_list(source);
  std::string cache_dir;
  if (opts.cache_dir != "-") {
    cache_dir = opts.cache_dir.empty() ? default_graph_cache_dir() : opts.cache_dir;
    if (!cache_dir.empty()) {
      cache_dir += "/dtw";
      make_dirs(cache_dir);
    }
  }
  const std::string fingerprint = opts.features.fingerprint();
  DtwFeatureComputer computer(opts.features, backend);
  const float rate = opts.features.features.frame.sample_rate;

  TemplateLibrary lib;
  lib.dim_ = opts.features.dim();
  for (const Entry& e : entries) {
    DtwTemplate t;
    t.label = e.label;
    t.path = e.path;
    std::vector<uint8_t> bytes;
    try {
      bytes = read_file_bytes(e.path);
    } catch (const AudioFileError& err) {
      throw TemplateError(err.what());
    }
    ContentHasher h;
    h.update_field(kCacheFormat);
    h.update_field(fingerprint);
    h.update(bytes.data(), bytes.size());
    const std::string cache_path = cache_dir.empty() ? "" : cache_dir + "/dtw-" + h.hex() + ".feat";
    if (!cache_path.empty() && read_dtw_feature_cache(cache_path, &t.features, &t.syllables) &&
        t.features.dim == lib.dim_) {
      ++lib.cache_hits_;
      if (log) log->push_back(e.path + ": features from the cache " + cache_path);
      lib.templates_.push_back(std::move(t));
      continue;
    }
    AudioData audio;
    try {
      audio = read_dtw_audio(e.path, rate);
    } catch (const AudioFileError& err) {
      throw TemplateError(err.what());
    }
    DtwUtterance u = computer.compute(audio.samples.data(), static_cast<int64_t>(audio.samples.size()));
    if (!u.speech_found)
    {
      char why[160];
      std::snprintf(why, sizeof why,
                    ": no speech found (no stretch above %g dB that is %g dB over the noise "
                    "floor); record it louder or turn silence trimming off",
                    static_cast<double>(opts.features.endpoint.min_level_db),
                    static_cast<double>(opts.features.endpoint.threshold_db));
      throw TemplateError(e.path + why);
    }
    if (u.features.rows < 1)
      throw TemplateError(e.path + ": too short for one frame of features");
    t.features = std::move(u.features);
    t.syllables = count_syllables(audio.samples.data() + u.kept.begin, u.kept.end - u.kept.begin, rate);
    if (log)
      log->push_back(e.path + ": " + std::to_string(t.features.rows) + " frames (samples " +
                     std::to_string(u.kept.begin) + ".." + std::to_string(u.kept.end) + " of " +
                     std::to_string(audio.samples.size()) + ")");
    if (!cache_path.empty()) write_dtw_feature_cache(cache_path, t.features, t.syllables, log);
    lib.templates_.push_back(std::move(t));
  }
  return lib;
}

PackedTemplates TemplateLibrary::pack() const {
  PackedTemplates p;
  p.dim = dim_;
  for (const DtwTemplate& t : templates_) p.add(t.features);
  return p;
}

void TemplateLibrary::add(DtwTemplate t) {
  if (t.features.rows < 1 || t.features.dim != dim_)
    throw std::invalid_argument("TemplateLibrary::add: " + t.path + ": " + std::to_string(t.features.rows) +
                                " frames of " + std::to_string(t.features.dim) + " values, the library has " +
                                std::to_string(dim_));
  templates_.push_back(std::move(t));
}

TemplateLibrary TemplateLibrary::empty(int dim) {
  if (dim < 1) throw std::invalid_argument("TemplateLibrary::empty: dim must be at least 1");
  TemplateLibrary l;
  l.dim_ = dim;
  return l;
}

TemplateLibrary TemplateLibrary::empty_copy() const {
  TemplateLibrary l;
  l.dim_ = dim_;
  return l;
}

std::vector<std::string> TemplateLibrary::labels() const {
  std::vector<std::string> out;
  for (const DtwTemplate& t : templates_) out.push_back(t.label);
  return out;
}

}  // namespace gpuspeech
