// The process-wide cache of channel prior libraries (channel_prior_cache.h).
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

namespace gpuspeech {

namespace {

struct Cache {
  std::mutex mutex;  // guards `sets`, and is held while one loads
  std::map<std::string, std::weak_ptr<const ChannelPriorSet>> sets;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: decoders may outlive static destruction
  return *c;
}

bool sharing_enabled() {
  const char* env = std::getenv("GPUSPEECH_SHARE_RESOURCES");
  return env == nullptr || std::string(env) != "0";
}

// The key: the library's directory (the same directory named two ways,
// relative or through a link, is one library), the dimension, and the
// identity of every file in it and of the model's means, so that a
// library rewritten on disk is loaded afresh by the next decoder while
// running ones keep theirs. A path that does not resolve keys as given
// (the load reports it).
std::string sharing_key(const std::string& dir, int dim, const std::string& model_means) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path root = fs::canonical(dir, ec);
  std::string key = (ec ? fs::path(dir) : root).string() + ";" + std::to_string(dim) + ";";
  if (!ec) {
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

}  // namespace

std::shared_ptr<const ChannelPriorSet> acquire_channel_priors(const std::string& dir, int dim,
                                                              const std::string& model_means,
                                                              bool* shared) {
  if (shared != nullptr) *shared = false;
  if (!sharing_enabled())
    return std::make_shared<const ChannelPriorSet>(load_channel_priors(dir, dim, model_means));
  const std::string key = sharing_key(dir, dim, model_means);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto it = c.sets.begin(); it != c.sets.end();)
    it = it->second.expired() ? c.sets.erase(it) : std::next(it);
  if (std::shared_ptr<const ChannelPriorSet> held = c.sets[key].lock()) {
    if (shared != nullptr) *shared = true;
    return held;
  }
  auto loaded = std::make_shared<const ChannelPriorSet>(load_channel_priors(dir, dim, model_means));
  c.sets[key] = loaded;
  return loaded;
}

size_t channel_prior_sets_alive() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t n = 0;
  for (const auto& [key, set] : c.sets) n += !set.expired();
  return n;
}

}  // namespace gpuspeech
