// One copy of each channel prior library, and of each prior's statistics
// file, per process.
//
// Every gpudecoder that adapts loads the default library (1.4 MB of text,
// its transforms estimated: 20 ms) when its model loads; a media server
// running a decoder per stream would hold as many identical copies. The
// library is immutable once loaded (ChannelPriorSet::choose is const), so
// the streams share it as they share the model and graph
// (common/engine/resource_cache.h): one copy per directory, feature
// dimension and model means file, each file known by its identity
// (common/file_identity.h: a library rewritten on disk is a new one),
// freed when the last holder lets go.
//
// Thread-safe; loads are serialised (one lock, held while loading: a load
// is milliseconds and happens when a decoder starts). A failed load caches
// nothing: the next acquire tries again and throws again.
// GPUSPEECH_SHARE_RESOURCES=0 makes every acquire load its own copy, as it
// does for the recognition resources.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/fmllr/channel_priors.h"
#include "common/fmllr/fmllr_stats.h"

namespace gpuspeech {

// load_channel_priors(dir, dim, model_means) with the default estimation
// options, or the copy a holder already has. `shared` (optional) is set
// true when the copy was already loaded. Throws what load_channel_priors
// throws.
std::shared_ptr<const ChannelPriorSet> acquire_channel_priors(const std::string& dir, int dim,
                                                              const std::string& model_means = "",
                                                              bool* shared = nullptr);

// How many distinct libraries are held now (for tests and reports).
size_t channel_prior_sets_alive();

// read_fmllr_stats(path, dim) (gpudecoder's `adapt-prior`: one channel's
// statistics, 0.5 MB in memory for en-us, up to 1.2 MB of text), or the
// copy a holder already has, keyed and shared as the libraries are: by the
// file's canonical path, the dimension and the file's identity. Throws
// what read_fmllr_stats throws.
std::shared_ptr<const FmllrStats> acquire_prior_stats(const std::string& path, int dim, bool* shared = nullptr);

// How many distinct statistics files are held now.
size_t prior_stats_alive();

}  // namespace gpuspeech
