// A rejection threshold the templates give themselves. A user cannot guess
// a DTW distance: it depends on the features, the words and the voices.
// But templates of the same word from different voices already show how
// far a word lies from itself across speakers: each template is scored
// against the other templates of its label exactly as a test would be
// (the mean of its k nearest, decide_match's rule), and the median of
// those leave-one-out scores is the library's scale. A test scoring well
// above that scale is far from every voice of every word: out of
// vocabulary.
//
// Cost: each template is compared with at most kMaxPeers other templates of
// its label (the first ones in library order), on the host with
// dtw_distance(), so a library of T templates costs at most T x kMaxPeers
// DTWs once at load time, whatever the device.
#pragma once

#include "common/dtw/dtw_options.h"
#include "common/dtw/template_library.h"

namespace gpuspeech {

struct TemplateScale {
  float median = 0.0f;  // median leave-one-out score; 0 when `scored` is 0
  int scored = 0;       // templates that had a reachable peer of their label
};

constexpr int kMaxCalibrationPeers = 16;

// Throws std::invalid_argument when k_nearest < 1.
TemplateScale template_scale(const TemplateLibrary& library, const DtwOptions& dtw, int k_nearest);

// The threshold `decision` asks for: 0 (none) for kOff, reject_distance for
// kFixed, reject_scale x template_scale().median for kFromTemplates. Throws
// std::invalid_argument for kFromTemplates when no label has two
// templates that reach each other (nothing to learn the scale from).
float rejection_threshold(const TemplateLibrary& library, const DtwOptions& dtw,
                          const DtwDecisionOptions& decision);

}  // namespace gpuspeech
