// Where a template set finds its projection map (feature_projection.h):
// among the files and directories it is given, the map learnt on the very
// features the set computes (DtwFeatureConfig::frame_signature()). One
// list serves both of band matching's sets (band_limit.h): the wide map
// and the map of the cut filterbank sit side by side, and each set takes
// its own.
//
// The maps shipped with gpuspeech (data/dtw-projection, made by
// tools/make-dtw-projections.sh) are found through
// shipped_dtw_projection_dirs(): the installed copy, then the source
// tree's (a tool run from the build directory).
#pragma once

#include <string>
#include <vector>

#include "common/dtw/feature_projection.h"

namespace gpuspeech {

// A directory is searched for files ending in ".projection", in name
// order; a file is taken as given.
constexpr const char* kDtwProjectionSuffix = ".projection";

// The shipped maps' directories, in search order (from the build's
// GPUSPEECH_DTW_PROJECTION_DIRS); those that do not exist are left out.
std::vector<std::string> shipped_dtw_projection_dirs();

// The first map among `paths` whose features are `frame_signature`.
// Throws std::runtime_error when a file cannot be read or parsed (naming
// it), or when none fits: the message names each map seen and the first
// features in which it differs, so that a user knows to learn a map
// (gpuspeech-dtw --learn-projection) for the features asked for.
DtwProjection find_dtw_projection(const std::vector<std::string>& paths, const std::string& frame_signature);

}  // namespace gpuspeech
