#include "common/search/graph_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "common/model/acoustic_model.h"
#include "common/model/dictionary.h"
#include "common/model/fsg.h"
#include "common/model/jsgf.h"
#include "common/model/ngram_model.h"
#include "common/search/cache_file_io.h"
#include "common/search/content_hash.h"
#include "common/search/ngram_image.h"

namespace gpuspeech {

namespace {

// Bump whenever the compiler may build a different graph from the same
// inputs and options (any change to graph_compiler.cpp's output).
constexpr const char* kCacheFormat = "gpuspeech-graph 2";

bool is_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// mkdir -p; false if the directory cannot be made.
bool make_dirs(const std::string& path) {
  if (path.empty()) return false;
  std::string cur = path[0] == '/' ? "/" : "";
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// An exclusive advisory lock (flock) on DIR/graph-KEY.lock for the time of
// one compilation, so that processes that miss the cache together compile
// the graph once: the others wait (saying so through `progress`), then
// load what the first stored. A compilation of the en-us graph takes
// minutes and gigabytes; several decoders started at once on a cold cache
// (a media server's streams, a test suite) would each pay it. The kernel
// drops the lock when its holder exits, however it exits. Where no lock
// can be had (the file cannot be made, a file system without flock) each
// process compiles, as without the lock; the cache stays correct, since
// entries are renamed into place whole.
class CompileLock {
 public:
  CompileLock(const std::string& path, const std::function<void(const std::string&)>& progress) {
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return;
    if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    if (errno != EWOULDBLOCK) {
      release();
      return;
    }
    if (progress) progress("waiting for another process compiling the same graph (" + path + ")");
    waited_ = true;
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        release();
        return;
      }
    }
  }
  ~CompileLock() { release(); }
  CompileLock(const CompileLock&) = delete;
  CompileLock& operator=(const CompileLock&) = delete;

  // True when another process held the lock first: the cache is worth
  // reading again.
  bool waited() const { return waited_; }

 private:
  void release() {
    if (fd_ >= 0) close(fd_);  // closing the descriptor drops the lock
    fd_ = -1;
  }
  int fd_ = -1;
  bool waited_ = false;
};

}  // namespace

const char* to_string(GraphSourceKind kind) {
  switch (kind) {
    case GraphSourceKind::kNgram: return "lm";
    case GraphSourceKind::kJsgf: return "jsgf";
    case GraphSourceKind::kFsg: return "fsg";
  }
  return "?";
}

std::string GraphSources::filler_path() const {
  if (!filler_dictionary.empty()) return filler_dictionary;
  const std::string nd = model_dir + "/noisedict";
  return is_file(nd) ? nd : std::string();
}

std::string default_graph_cache_dir() {
  if (const char* d = std::getenv("GPUSPEECH_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::string(x) + "/gpuspeech";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::string(h) + "/.cache/gpuspeech";
  return "";
}

std::string graph_cache_key(const GraphSources& src, const GraphBuildOptions& opt) {
  ContentHasher h;
  h.update_field(kCacheFormat);
  h.update_field(to_string(src.kind));
  h.update_field(src.kind == GraphSourceKind::kJsgf ? src.jsgf_rule : std::string());
  // The language weight resolved, so that leaving it to the kind and
  // giving the kind's value share an entry.
  h.update_field((src.kind == GraphSourceKind::kNgram ? opt.compile.for_ngram() : opt.compile.for_grammar())
                     .fingerprint());
  h.update_field(src.kind != GraphSourceKind::kNgram ? std::string()
                 : opt.prune.prunes() ? opt.prune.fingerprint()
                                      : "auto above " + std::to_string(opt.auto_prune_above) + ": " +
                                            opt.auto_prune.fingerprint());
  for (const std::string& f : {src.model_dir + "/mdef", src.model_dir + "/transition_matrices",
                               src.dictionary, src.filler_path(), src.grammar}) {
    h.update_field(f.empty() ? "<none>" : "<file>");
    if (!f.empty()) h.update_file(f);
  }
  return h.hex();
}

GraphBuildResult build_search_graph(const GraphSources& src, const GraphBuildOptions& opt) {
  GraphBuildResult r;
  const std::string key = graph_cache_key(src, opt);
  const std::string dir = opt.cache_dir == "-" ? "" : (opt.cache_dir.empty() ? default_graph_cache_dir() : opt.cache_dir);
  if (!dir.empty()) r.cache_path = dir + "/graph-" + key + ".gsg";
  // A pruned LM is cached with the graph; whether automatic pruning applied
  // shows by the file's presence. Caches written before n-gram images hold
  // it as ARPA text.
  const std::string stem = dir.empty() ? "" : dir + "/graph-" + key;
  const std::string pruned_image = dir.empty() ? "" : stem + ".pruned.lm";
  const std::string pruned_arpa = dir.empty() ? "" : stem + ".pruned.arpa";
  auto cached_pruned_lm = [&]() -> std::string {
    if (dir.empty()) return "";
    if (is_file(pruned_image)) return pruned_image;
    return is_file(pruned_arpa) ? pruned_arpa : "";
  };
  // The cache entry, when there is a usable one (true: r holds it).
  auto load_cached = [&]() {
    const std::string pruned_path = cached_pruned_lm();
    if (r.cache_path.empty() || !is_file(r.cache_path) ||
        (opt.prune.prunes() && src.kind == GraphSourceKind::kNgram && pruned_path.empty()))
      return false;
    // (On a graph that turns out unusable, the futures' destructors wait
    // for the reads and drop what they threw.)
    std::future<NgramModel> pruned, full;
    if (opt.read_rescoring_lms && src.kind == GraphSourceKind::kNgram && !pruned_path.empty()) {
      pruned = std::async(std::launch::async,
                          [&pruned_path] { return read_cached_ngram_model(pruned_path); });
      full = std::async(std::launch::async, [&src] { return read_ngram_model(src.grammar); });
    }
    try {
      r.graph = SearchGraph::load(r.cache_path);
      if (r.graph.source_hash != key) throw std::runtime_error(r.cache_path + ": key mismatch");
    } catch (const std::exception& e) {
      r.log.push_back(std::string("cache entry unusable, compiling again: ") + e.what());
      return false;
    }
    if (!pruned_path.empty()) r.pruned_lm_path = pruned_path;
    if (pruned.valid()) {
      r.pruned_lm = std::make_shared<const NgramModel>(pruned.get());
      r.full_lm = std::make_shared<const NgramModel>(full.get());
      if (pruned_path != pruned_image) {
        // An older cache's ARPA text: the next start reads the image.
        try {
          write_ngram_image(pruned_image, *r.pruned_lm);
          r.pruned_lm_path = pruned_image;
          r.log.push_back("pruned LM cached as " + pruned_image);
        } catch (const std::exception& e) {
          r.log.push_back(std::string("pruned LM image not written: ") + e.what());
        }
      }
    }
    r.from_cache = true;
    r.log.push_back("graph loaded from the cache: " + r.cache_path);
    return true;
  };
  if (!opt.rebuild && load_cached()) return r;
  // A miss: compile under the entry's lock, unless a process that held it
  // first has stored the graph meanwhile.
  std::unique_ptr<CompileLock> lock;
  if (!r.cache_path.empty() && make_dirs(dir)) {
    lock = std::make_unique<CompileLock>(dir + "/graph-" + key + ".lock", opt.compile.progress);
    if (lock->waited()) {
      r.log.push_back("waited for another process compiling the same graph");
      if (!opt.rebuild && load_cached()) return r;
    }
  }

#ifdef GPUSPEECH_HAVE_OPENFST
  const AcousticModel am = AcousticModel::load(src.model_dir);
  const Dictionary dict = Dictionary::load(src.dictionary, src.filler_path());
  for (const std::string& w : dict.warnings()) r.log.push_back("warning: " + w);
  switch (src.kind) {
    case GraphSourceKind::kJsgf:
      r.graph = compile_grammar_graph(am.mdef(), am.transitions(), dict,
                                      read_jsgf_graph(src.grammar, src.jsgf_rule), opt.compile,
                                      &r.report);
      break;
    case GraphSourceKind::kFsg: {
      std::vector<std::string> warnings;
      const WordGraph wg = read_fsg(src.grammar, &warnings);
      for (const std::string& w : warnings) r.log.push_back("warning: " + w);
      r.graph = compile_grammar_graph(am.mdef(), am.transitions(), dict, wg, opt.compile, &r.report);
      break;
    }
    case GraphSourceKind::kNgram: {
      NgramModel lm = read_ngram_model(src.grammar);
      if (opt.compile.progress)
        opt.compile.progress("read " + src.grammar + ": order " + std::to_string(lm.order()) +
                             ", " + std::to_string(lm.vocabulary_size()) + " words");
      for (const std::string& w : lm.warnings()) r.log.push_back("warning: " + w);
      int64_t higher = 0;
      for (int n = 2; n <= lm.order(); ++n) higher += static_cast<int64_t>(lm.num_ngrams(n));
      r.prune = opt.prune;
      if (!opt.prune.prunes() && opt.auto_prune_above > 0 && higher > opt.auto_prune_above) {
        r.prune = opt.auto_prune;
        r.log.push_back(src.grammar + ": " + std::to_string(higher) +
                        " n-grams of order >= 2, more than " + std::to_string(opt.auto_prune_above) +
                        ": pruned for the graph (" + r.prune.fingerprint() + ")");
      }
      if (r.prune.prunes()) {
        r.pruned_lm_path = pruned_image;
        lm = prune_ngram_model(lm, r.prune, &r.prune_report);
        r.log.push_back(r.prune_report.summary());
        if (opt.compile.progress) opt.compile.progress(r.prune_report.summary());
      }
      r.graph = compile_ngram_graph(am.mdef(), am.transitions(), dict, lm, opt.compile, &r.report);
      if (r.prune.prunes()) r.pruned_lm = std::make_shared<const NgramModel>(std::move(lm));
      if (!r.pruned_lm_path.empty() && make_dirs(dir)) {
        try {
          write_ngram_image(r.pruned_lm_path, *r.pruned_lm);
        } catch (const std::exception& e) {
          r.log.push_back(std::string("pruned LM not cached: ") + e.what());
          r.pruned_lm_path.clear();
        }
      } else {
        r.pruned_lm_path.clear();
      }
      break;
    }
  }
  r.graph.source_hash = key;
  if (!r.cache_path.empty()) {
    if (make_dirs(dir)) {
      try {
        r.graph.save(r.cache_path);  // writes a temporary file and renames it
        r.log.push_back("graph cached as " + r.cache_path);
      } catch (const std::exception& e) {
        r.log.push_back(std::string("graph not cached: ") + e.what());
        r.cache_path.clear();
      }
    } else {
      r.log.push_back("graph not cached: cannot create " + dir);
      r.cache_path.clear();
    }
  }
  return r;
#else
  throw std::runtime_error(src.grammar + ": no compiled graph for it in the cache" +
                           (dir.empty() ? std::string() : " (" + dir + ")") +
                           ", and this build has no graph compiler (OpenFst)");
#endif
}

}  // namespace gpuspeech
