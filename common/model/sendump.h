// pocketsphinx's "sendump": quantised mixture weights of a semi-continuous
// or PTM model (Debian's en-us ships one instead of mixture_weights).
//
// Layout (ptm_mgau.c / s2_semi_mgau.c read_sendump; docs/model-formats.md):
//   int32 length + NUL-terminated title, int32 length + NUL-terminated
//   header, then (int32 length, string) pairs up to a zero length. Strings
//   "feature_count N", "mixture_count N", "model_count N" (senones),
//   "cluster_count 0|15|16", "cluster_bits 8|4", "logbase B",
//   "mixw_shift S" set the shape and the units. The byte order is the one
//   that makes the title length lie in 1..999.
//   With cluster_count 0: int32 rows (= Gaussians), int32 columns (>= the
//   senones; extra columns are padding), then for each stream and Gaussian
//   one row of `columns` bytes, one per senone.
//   With cluster_count 15 or 16: 16 bytes of cluster values, then for each
//   stream and Gaussian ceil(senones / 2) bytes of 4-bit cluster indices
//   (even senones in the low nibble, odd ones in the high nibble).
//
// Each byte value q (or cluster value) is a negated, scaled log weight in
// pocketsphinx's units: weight = B^(-q * 2^S), i.e.
//   ln(weight) = -q * 2^S * ln(B),
// with B = 1.0001 and S = 10 unless the file says otherwise (pocketsphinx
// scores mixture weights with its -logbase, default 1.0001, shifted by
// SENSCR_SHIFT = 10, the same numbers). The quantiser truncates towards
// smaller weights, so a senone's weights sum to between about
// exp(-0.1024) = 0.90 and 1; pocketsphinx uses them as they are and so do
// we (no renormalisation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_error.h"

namespace gpuspeech {

// The shape the caller expects (from the means file and the mdef); 0 leaves
// a field to the file. Differences from the file's own counts are errors,
// as in pocketsphinx.
struct SendumpShape {
  int num_streams = 0;
  int density = 0;
  int num_senones = 0;
};

struct SendumpWeights {
  int num_streams = 0;
  int density = 0;
  int num_senones = 0;
  double log_base = 1.0001;
  int shift = 10;
  int cluster_bits = 8;
  bool big_endian = false;
  std::vector<std::string> header_strings;  // all strings before the data
  // num_streams x density x num_senones quantised values q (cluster indices
  // already resolved).
  std::vector<uint8_t> quantized;

  // Natural-log size of one quantisation step: 2^shift * ln(log_base).
  double nats_per_step() const;
  // ln(weight) of Gaussian `gaussian` in stream `stream` of `senone`.
  float log_weight(int senone, int stream, int gaussian) const;
};

SendumpWeights parse_sendump(const std::string& bytes, const std::string& name,
                             const SendumpShape& expected = {});

}  // namespace gpuspeech
