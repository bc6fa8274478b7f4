// fMLLR statistics (fmllr_stats.h) saved as text, so that what one
// recording or channel taught can be used again: gpuspeech-transcribe
// writes each speaker's beside its transform (--fmllr-dir), and
// gpudecoder's `adapt-prior` starts every stream's estimate from them
// (AdaptiveRedecoderOptions::prior).
//
// One Kaldi text matrix (fmllr_io.h's syntax) of d + 1 columns and
// 1 + d + d (d + 1) rows, d the feature dimension:
//   row 0                      beta (frames), then d zeros
//   rows 1 .. d                k_i, the d rows of K
//   then, for i = 0 .. d-1,    G_i, d + 1 rows each
// Every problem is an FmllrFormatError "FILE: reason" (or "FILE:LINE:").
#pragma once

#include <string>

#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/fmllr_stats.h"

namespace gpuspeech {

// Checks the shape (and expected_dim when >= 0), that beta is >= 0, row 0's
// padding zero, each G_i symmetric with a non-negative diagonal, and
// that beta is 0 exactly when every k and G entry is.
FmllrStats parse_fmllr_stats(const std::string& text, const std::string& source, int expected_dim = -1);
FmllrStats read_fmllr_stats(const std::string& path, int expected_dim = -1);
// Exact round trip (17 significant digits). Throws FmllrFormatError when
// the statistics are not finite or the file cannot be written.
std::string format_fmllr_stats(const FmllrStats& s);
void write_fmllr_stats(const std::string& path, const FmllrStats& s);

}  // namespace gpuspeech
