// The process-wide caches of channel prior libraries and of prior
// statistics files (channel_prior_cache.h).
#include "common/fmllr/channel_prior_cache.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <mutex>
#include <system_error>
#include <vector>

#include "common/file_identity.h"
#include "common/fmllr/fmllr_stats_io.h"

namespace gpuspeech {

namespace {

// Loaded objects by key, each held while a holder keeps it.
template <typename T>
struct Cache {
  std::mutex mutex;  // guards `held`, and is held while one loads
  std::map<std::string, std::weak_ptr<const T>> held;
};

template <typename T>
Cache<T>& cache() {
  static Cache<T>* c = new Cache<T>();  // never destroyed: decoders may outlive static destruction
  return *c;
}

bool sharing_enabled() {
  const char* env = std::getenv("GPUSPEECH_SHARE_RESOURCES");
  return env == nullptr || std::string(env) != "0";
}

// A path as one name for the thing it names (the same file or directory
// named two ways, relative or through a link, is one), or as given when it
// does not resolve (the load reports it); `resolved` says which.
std::string canonical_name(const std::string& path, bool* resolved) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::canonical(path, ec);
  *resolved = !ec;
  return ec ? path : p.string();
}

// The key: the library's directory, the dimension, and the identity of
// every file in it and of the model's means, so that a library rewritten
// on disk is loaded afresh by the next decoder while running ones keep
// theirs.
std::string sharing_key(const std::string& dir, int dim, const std::string& model_means) {
  namespace fs = std::filesystem;
  bool resolved = false;
  const std::string root = canonical_name(dir, &resolved);
  std::string key = root + ";" + std::to_string(dim) + ";";
  if (resolved) {
    std::vector<std::string> files;
    try {
      for (const fs::directory_entry& e : fs::directory_iterator(root)) files.push_back(e.path().string());
    } catch (const fs::filesystem_error&) {
      // Unlistable: keyed by what was listed; the load says why.
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) append_file_identity(key, f);
  }
  if (!model_means.empty()) append_file_identity(key, model_means);
  return key;
}

// A statistics file's key: the dimension and the file's identity under
// its canonical name.
std::string file_key(const std::string& path, int dim) {
  bool resolved = false;
  std::string key = std::to_string(dim) + ";";
  append_file_identity(key, canonical_name(path, &resolved));
  return key;
}

// The copy held under the key make_key() gives, or a new one from load()
// (whose failure caches nothing); `shared` says which. With sharing off,
// always a new one.
template <typename T, typename MakeKey, typename Load>
std::shared_ptr<const T> acquire(MakeKey make_key, bool* shared, Load load) {
  if (shared != nullptr) *shared = false;
  if (!sharing_enabled()) return std::make_shared<const T>(load());
  const std::string key = make_key();
  Cache<T>& c = cache<T>();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto it = c.held.begin(); it != c.held.end();) it = it->second.expired() ? c.held.erase(it) : std::next(it);
  if (std::shared_ptr<const T> held = c.held[key].lock()) {
    if (shared != nullptr) *shared = true;
    return held;
  }
  auto loaded = std::make_shared<const T>(load());
  c.held[key] = loaded;
  return loaded;
}

template <typename T>
size_t alive() {
  Cache<T>& c = cache<T>();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t n = 0;
  for (const auto& [key, held] : c.held) n += !held.expired();
  return n;
}

}  // namespace

std::shared_ptr<const ChannelPriorSet> acquire_channel_priors(const std::string& dir, int dim,
                                                              const std::string& model_means,
                                                              bool* shared) {
  return acquire<ChannelPriorSet>([&] { return sharing_key(dir, dim, model_means); }, shared,
                                  [&] { return load_channel_priors(dir, dim, model_means); });
}

size_t channel_prior_sets_alive() { return alive<ChannelPriorSet>(); }

std::shared_ptr<const FmllrStats> acquire_prior_stats(const std::string& path, int dim, bool* shared) {
  return acquire<FmllrStats>([&] { return file_key(path, dim); }, shared,
                             [&] { return read_fmllr_stats(path, dim); });
}

size_t prior_stats_alive() { return alive<FmllrStats>(); }

}  // namespace gpuspeech
