// The process-wide cache of shared recognition resources (resource_cache.h).
#include "common/engine/resource_cache.h"

#include <cstdlib>
#include <map>
#include <mutex>

namespace gpuspeech {

namespace {

// `resources` is written only with both `loading` and the cache's mutex
// held, so reading it under either one is safe.
struct Entry {
  std::mutex loading;  // held while this key loads: a second asker waits
  std::weak_ptr<const RecognitionResources> resources;
};

struct Cache {
  std::mutex mutex;  // guards `entries` only, never held while loading
  std::map<std::string, std::shared_ptr<Entry>> entries;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: streams may outlive static destruction
  return *c;
}

bool sharing_enabled() {
  const char* env = std::getenv("GPUSPEECH_SHARE_RESOURCES");
  return env == nullptr || std::string(env) != "0";
}

}  // namespace

std::shared_ptr<const RecognitionResources> acquire_recognition_resources(
    const ResourceOptions& options, std::string* log, bool* shared) {
  if (shared != nullptr) *shared = false;
  if (!sharing_enabled()) return RecognitionResources::load(options, log);
  const std::string key = options.sharing_key();
  std::shared_ptr<Entry> entry;
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    // Drop the entries no stream holds any more (and none is loading).
    for (auto it = c.entries.begin(); it != c.entries.end();) {
      if (it->second.use_count() == 1 && it->second->resources.expired())
        it = c.entries.erase(it);
      else
        ++it;
    }
    std::shared_ptr<Entry>& e = c.entries[key];
    if (!e) e = std::make_shared<Entry>();
    entry = e;
  }
  std::lock_guard<std::mutex> loading(entry->loading);
  if (std::shared_ptr<const RecognitionResources> held = entry->resources.lock()) {
    if (log != nullptr)
      *log += held->load_log() + "resources: model, graph and LMs shared with the streams "
                                 "already using them\n";
    if (shared != nullptr) *shared = true;
    return held;
  }
  std::shared_ptr<const RecognitionResources> loaded = RecognitionResources::load(options, log);
  {
    std::lock_guard<std::mutex> lock(cache().mutex);
    entry->resources = loaded;
  }
  return loaded;
}

size_t recognition_resources_alive() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  size_t n = 0;
  for (const auto& [key, e] : c.entries)
    if (!e->resources.expired()) ++n;
  return n;
}

}  // namespace gpuspeech
