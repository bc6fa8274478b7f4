// One copy of the shared recognition resources per process for each
// distinct ResourceOptions::sharing_key(): every Recognizer (every
// gpudecoder element, every stream of gpuspeech-transcribe) with the same
// model, dictionary, grammar and graph options reads the same model, graph
// and LMs. Entries are reference-counted by the streams holding them: the
// last stream to let go frees them, and the next acquire loads afresh.
//
// Thread-safe. Two threads asking for the same key at once load it once
// (the second waits for the first); different keys load in parallel. A
// failed load caches nothing: the next acquire tries again and reports the
// error again.
//
// GPUSPEECH_SHARE_RESOURCES=0 in the environment makes every acquire load
// its own copy (for measuring what sharing saves).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/engine/recognition_resources.h"

namespace gpuspeech {

// The process's resources for `options`, loaded if no stream holds them.
// `log` (optional) receives the load's lines, repeated from the first load
// for a shared copy, then one line saying which. `shared` (optional) is
// set true when the copy was already loaded. Throws what
// RecognitionResources::load throws.
std::shared_ptr<const RecognitionResources> acquire_recognition_resources(
    const ResourceOptions& options, std::string* log = nullptr, bool* shared = nullptr);

// How many distinct resource sets streams hold now (for tests and reports).
size_t recognition_resources_alive();

}  // namespace gpuspeech
