// The graph cache's copy of a pruned LM (graph_cache.h): an NgramModel's
// trie written as it lies in memory, so that a cached start reads it in
// tens of milliseconds where the same model as ARPA text took 0.6 s to
// parse (a hash lookup per word of 1 million bigrams), on the longest of
// the threads a cached start runs. Values are the model's own floats, so
// a model read back scores exactly as the one written.
//
// The file (cache_file_io.h's conventions: little-endian, a checksum at
// the end):
//
//   char[8]  magic "GPUSNGRM"
//   u32      version (1)
//   u32      source format (LmFileFormat of the model written)
//   u32      order N (1..NgramModel::kMaxOrder)
//   u32      vocabulary size V
//   u64      vocabulary bytes (the sum of 4 + length over the words)
//   per order n = 1..N: u64 entries, u32 flags (1: back-offs, 2: derived
//            flags; the highest order may lack back-offs), u32 reserved (0)
//   per word: u32 length, bytes
//   per order n: u32 words[entries] (n > 1), f32 log10_prob[entries],
//            f32 log10_backoff[entries] (if flagged), u32 children[entries
//            + 1] (n < N), u8 derived[entries] (if flagged)
//   u64      checksum
//
// The counts are checked against the file's size before anything is
// allocated, the checksum before the trie is built, and the trie by
// NgramModel::from_trie (every index, every ordering), so a damaged file
// is an error naming it, never a crash. Writing then reading gives the
// same bytes back (the fuzz target checks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/model/ngram_model.h"

namespace gpuspeech {

// True when the bytes start like an n-gram image.
bool is_ngram_image(std::string_view bytes);

// The file's bytes. Throws std::invalid_argument for a model that no image
// can hold (a word longer than 64 KB).
std::vector<uint8_t> format_ngram_image(const NgramModel& model);
// Writes the image under a temporary name and renames it into place.
// Throws std::runtime_error "PATH: reason".
void write_ngram_image(const std::string& path, const NgramModel& model);

// Throw std::runtime_error "NAME: reason" for anything but a whole, intact
// image; the model's source() is `name`.
NgramModel parse_ngram_image(const uint8_t* bytes, size_t size, const std::string& name);
NgramModel read_ngram_image(const std::string& path);

// The pruned LM of a cache entry: an image, or the ARPA text that caches
// written before images hold (read_ngram_model). Throws naming the file.
NgramModel read_cached_ngram_model(const std::string& path);

}  // namespace gpuspeech
