// What tells one version of a file from another without reading it, for
// the caches that share loaded files between streams
// (common/engine/resource_cache.h, common/fmllr/channel_prior_cache.h): a
// file replaced or rewritten on disk gets a new identity, so the next
// stream loads it afresh while running ones keep their copy.
#pragma once

#include <string>

namespace gpuspeech {

// Appends "path=dev:inode:size:mtime_ns;" to `key`, or "path=absent;".
void append_file_identity(std::string& key, const std::string& path);

}  // namespace gpuspeech
