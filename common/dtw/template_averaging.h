// Template averaging: one template per word made from all of its
// recordings, which lies between the voices rather than at one of them.
//
// For each word with at least two templates: the medoid (the template
// whose summed DTW distance to the word's others is least) is the time
// axis; every other template is aligned to it by DTW (dtw_distance's best
// path; with the Itakura pattern each medoid frame gets exactly one frame
// of the other template, with the symmetric pattern the frames on that
// column are averaged first) and each medoid frame becomes the mean of
// itself and the frames aligned to it. One pass of what the literature
// calls DTW barycentre averaging, started from the medoid.
//
// Cost: n^2 DTWs per word of n templates for the medoid (each pair once)
// plus n - 1 alignments, on the host, once at load time.
#pragma once

#include <vector>

#include "common/dtw/dtw_options.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {

// The averaged template of every word that has two or more templates whose
// DTW paths exist, in label order; label as the word's, path
// "<average of LABEL>". Templates the medoid cannot reach are left out of
// its average.
std::vector<DtwTemplate> average_templates(const TemplateLibrary& library, const DtwOptions& dtw);

}  // namespace gpuspeech
