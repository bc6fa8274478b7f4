// Sphinx's feature-stream specification (-svspec in feat.params), which
// splits the feature vector into the streams a multi-stream model scores
// separately, e.g. en-us's "0-12/13-25/26-38": three streams of 13.
//
// Syntax (sphinxbase parse_subvecs): streams separated by '/', each a
// ','-separated list of items, an item a component index "N" or an
// inclusive range "A-B" with A <= B. Indices are 0-based and kept in the
// order written.
#pragma once

#include <string>
#include <vector>

namespace gpuspeech {

// Throws std::invalid_argument("svspec 'SPEC': why (at character N)") on a
// malformed spec.
std::vector<std::vector<int>> parse_svspec(const std::string& spec);

}  // namespace gpuspeech
