// Sphinx-3 binary parameter files, as SphinxTrain writes them and
// pocketsphinx reads them (docs/model-formats.md):
//
//   "s3\n", then "key value\n" lines, then "endhdr\n"   (text header)
//   uint32 0x11223344                                  (byte order: the file
//                                                       is big-endian when
//                                                       it reads 0x44332211)
//   int32 counts, then float32 data                    (file byte order)
//   uint32 checksum                                    (when the header has
//                                                       a "chksum0" key)
//
// The checksum runs over every 32-bit value after the magic, in order:
// sum = rotl(sum, 20) + value. The pre-1996 header (a version line, comment
// lines up to "*end_comment*", then the magic; no checksum) is read too.
//
// These readers return the numbers as stored (counts, raw floats);
// normalising, flooring and taking logs is AcousticModel's job. Every count
// is checked against the bytes present before anything is allocated;
// problems are ModelError("NAME: offset N: why").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model_error.h"

namespace gpuspeech {

struct S3Header {
  // "key value" pairs in file order ("version" alone for the old format).
  std::vector<std::pair<std::string, std::string>> fields;
  bool big_endian = false;
  bool has_checksum = false;
  size_t data_offset = 0;  // first byte after the byte-order magic

  // The value of `key`, or nullptr.
  const std::string* find(const std::string& key) const;
};

S3Header parse_s3_header(const std::string& bytes, const std::string& name);

// means or variances: n_mgau codebooks of `density` Gaussians over n_feat
// streams of veclen[f] dimensions.
struct GaussianParams {
  S3Header header;
  int num_codebooks = 0;
  int num_streams = 0;
  int density = 0;
  std::vector<int> stream_dims;
  // num_codebooks x num_streams x density x stream_dims[stream], in file
  // order (codebook-major).
  std::vector<float> values;
  // Index of the first value of (codebook, stream, gaussian) in `values`.
  size_t index(int codebook, int stream, int gaussian) const;
};
GaussianParams parse_gaussian_params(const std::string& bytes, const std::string& name);

// mixture_weights: unnormalised weights (training counts), one row of
// `density` values per senone and stream.
struct MixtureWeightParams {
  S3Header header;
  int num_senones = 0;
  int num_streams = 0;
  int density = 0;
  std::vector<float> values;  // num_senones x num_streams x density
};
MixtureWeightParams parse_mixture_weights(const std::string& bytes, const std::string& name);

// transition_matrices: per matrix, one row per emitting state (num_from)
// over num_to = num_from + 1 destinations (the last is the final,
// non-emitting state); rows are unnormalised.
struct TransitionMatrixParams {
  S3Header header;
  int num_tmats = 0;
  int num_from = 0;
  int num_to = 0;
  std::vector<float> values;  // num_tmats x num_from x num_to
};
TransitionMatrixParams parse_transition_matrices(const std::string& bytes, const std::string& name);

}  // namespace gpuspeech
