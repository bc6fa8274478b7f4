// Many streams on one set of shared resources, made concurrently. A stream
// on a device spends most of its making waiting: its backend's handles,
// the scorer's upload, its search tables, and the warm-up utterance
// (RecognizerConfig::warm_up). Made one after another, 512 CUDA streams
// took 115 s on the H100 machine; made here on every core, 127 more CUDA
// streams took 1.1 s on one H100 and 255 took 1.6 s over two
// (docs/benchmarks.md, issue 18's run).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "common/engine/recognizer.h"

namespace gpuspeech {

// `count` recognizers on `resources` with `config`, made on up to `threads`
// threads at once (0: one per core), returned in order. If any fails, the
// others still finish being made and are destroyed, and the first error
// (by stream index) is rethrown.
std::vector<std::unique_ptr<Recognizer>> make_streams(
    const std::shared_ptr<const RecognitionResources>& resources, const RecognizerConfig& config,
    size_t count, unsigned threads = 0);

}  // namespace gpuspeech
