// The DTW feature cache's entry: one template's features and syllable
// count, stored under a name that hashes the recording's bytes and the
// feature options (template_library.cpp), so that a library is turned into
// features once. Entries are machine-local: values in the host's byte
// order.
//
//   char[8]  magic "GSDTWF1\0"
//   i64      rows           i32 dim          i32 syllable count
//   f32[rows * dim]         the features, row by row
//
// An entry that is not exactly this (a short or long file, a count that
// the file's size does not hold, a value that is not finite) is not an
// entry: the reader says so and the caller computes the features again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/features/feature_pipeline.h"

namespace gpuspeech {

// The bytes of an entry for `features` (rows >= 1, dim >= 1) and
// `syllables` (>= 0).
std::vector<uint8_t> dtw_feature_cache_bytes(const FeatureMatrix& features, int syllables);

// true and *features, *syllables set when [data, data + size) is an entry;
// false otherwise, leaving them unchanged. Allocates nothing before the
// size has been checked against the header's counts.
bool parse_dtw_feature_cache(const uint8_t* data, size_t size, FeatureMatrix* features,
                             int* syllables);

// Reads the entry at `path`: false when it is missing, unreadable or not an
// entry.
bool read_dtw_feature_cache(const std::string& path, FeatureMatrix* features, int* syllables);

// Writes the entry under a temporary name and renames it into place, so a
// reader never sees half a file. A failure is not an error (the cache is
// an optimisation): it adds a line to `log` (optional) and leaves no file.
void write_dtw_feature_cache(const std::string& path, const FeatureMatrix& features, int syllables,
                             std::vector<std::string>* log);

}  // namespace gpuspeech
