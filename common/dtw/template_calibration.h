// A rejection threshold the templates give themselves. A user cannot guess
// a DTW distance: it depends on the features, the words and the voices.
// But templates of the same word by different voices already show how far
// apart the voices of a word lie: every template is matched against the
// other templates of its word, and the upper quartile of those distances
// is the library's scale. A test scoring well above it is farther from
// every word than the template voices are from each other: out of
// vocabulary.
//
// Why the upper quartile of all same-word pairs and not, say, each
// template's leave-one-out nearest score: the nearest score shrinks as
// voices are added (a library of ten voices, six of them from one
// synthesiser, halved it and the same scale then rejected two thirds of the
// words), while the spread of the pairs stays put; the upper quartile
// leans towards the unlike pairs, which is what a new voice is (measured,
// docs/dtw.md).
//
// Cost: each template is compared with at most kMaxCalibrationPeers other
// templates of its word (the first ones in library order), on the host with
// dtw_distance(), so a library of T templates costs at most
// T x kMaxCalibrationPeers DTWs once at load time, whatever the device.
#pragma once

#include "common/dtw/dtw_options.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {

struct TemplateScale {
  float upper_quartile = 0.0f;  // of the same-word pair distances; 0 when pairs is 0
  int pairs = 0;                // reachable (template, other template of its word) pairs
};

constexpr int kMaxCalibrationPeers = 16;

// Both directions of every pair count (the Itakura pattern is asymmetric).
// The quartile is the order statistic at floor(0.75 (pairs - 1)).
TemplateScale template_scale(const TemplateLibrary& library, const DtwOptions& dtw);

// The threshold `decision` asks for: 0 (none) for kOff, reject_distance for
// kFixed, reject_scale x template_scale().upper_quartile for
// kFromTemplates. Throws std::invalid_argument for kFromTemplates when no
// word has two templates that reach each other (nothing to learn the scale
// from).
float rejection_threshold(const TemplateLibrary& library, const DtwOptions& dtw,
                          const DtwDecisionOptions& decision);

}  // namespace gpuspeech
