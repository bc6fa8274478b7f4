// The template library: recordings of the words (commands) to recognise,
// each turned into DTW features once and cached on disk.
//
// Source: a directory (every *.wav in it, by name; a template's label is
// its file's base name up to the first underscore: yes_1.wav and
// yes_anna.wav are two templates of "yes", stop.wav one of "stop") or a
// list file, one template per line, "PATH" (label from the name as above)
// or "LABEL PATH"; blank lines and lines starting with '#' are skipped;
// relative paths are taken from the list file's directory.
//
// Cache: DIR/dtw-KEY.feat, KEY the content hash (search/content_hash.h) of
// the file's bytes and DtwFeatureConfig::fingerprint(), so a changed
// recording or another feature setting never reads a stale entry, and
// adding a template is dropping in a file. DIR is $GPUSPEECH_CACHE_DIR,
// else $XDG_CACHE_HOME/gpuspeech, else ~/.cache/gpuspeech
// (default_graph_cache_dir()), under dtw/. A damaged entry is recomputed.
//
// Errors (TemplateError, "<path>: <reason>"): a directory without *.wav
// files, an empty list, an unreadable or malformed file, a recording with
// zero samples, one at another sample rate than the features', one in
// which the endpointer finds no speech (with trim_silence), one too short
// for a single frame.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/backends/backend.h"
#include "common/dtw/dtw_features.h"

namespace gpuspeech {

class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct DtwTemplate {
  std::string label;
  std::string path;
  FeatureMatrix features;
  // Syllables of the recording's kept samples (syllable_count.h), for
  // rejection; 0 = not known.
  int syllables = 0;
};

// Every template's frames back to back, for the engines (dtw_engine.h):
// template t is rows [offsets[t], offsets[t+1]) of `frames` (dim floats each).
struct PackedTemplates {
  int dim = 0;
  std::vector<float> frames;
  std::vector<int64_t> offsets = {0};
  int64_t count() const { return static_cast<int64_t>(offsets.size()) - 1; }
  int64_t length(int64_t t) const { return offsets[t + 1] - offsets[t]; }
  int64_t max_length() const;
  void add(const FeatureMatrix& m);  // throws std::invalid_argument on a dim mismatch or 0 rows
};

struct TemplateLibraryOptions {
  DtwFeatureConfig features;
  // "" = the default cache directory; "-" = no cache.
  std::string cache_dir;
};

// A template file's base name without its extension ("a/yes_1.wav" ->
// "yes_1"), the text the naming rule above reads.
std::string template_file_stem(const std::string& path);
// The label of a template file by the naming rule above.
std::string template_label_from_path(const std::string& path);

class TemplateLibrary {
 public:
  // Loads the templates of `source` (a directory or a list file), computing
  // features on `backend` for those not cached. `log` (optional) receives a
  // line per template computed or read from the cache.
  static TemplateLibrary load(const std::string& source, const TemplateLibraryOptions& opts,
                              Backend& backend, std::vector<std::string>* log = nullptr);

  size_t size() const { return templates_.size(); }
  const DtwTemplate& operator[](size_t i) const { return templates_[i]; }
  const std::vector<DtwTemplate>& templates() const { return templates_; }
  int dim() const { return dim_; }
  int64_t cache_hits() const { return cache_hits_; }
  PackedTemplates pack() const;
  std::vector<std::string> labels() const;
  // Appends a template made in memory (template_averaging.h); its features
  // must have dim() columns (std::invalid_argument otherwise).
  void add(DtwTemplate t);
  // A library with this one's dimension and no templates.
  TemplateLibrary empty_copy() const;
  // A library with no templates whose features have `dim` values a frame
  // (dim >= 1; std::invalid_argument otherwise), for templates made in memory.
  static TemplateLibrary empty(int dim);

 private:
  std::vector<DtwTemplate> templates_;
  int dim_ = 0;
  int64_t cache_hits_ = 0;
};

}  // namespace gpuspeech
