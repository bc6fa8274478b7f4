// The `weights` file of a channel prior library (channel_priors.h): how
// much of its prior a stream that takes a channel gets.
//
// Text, one channel a line: "NAME WEIGHT", WEIGHT from 0 to 1 (a factor on
// AdaptiveRedecoderOptions::prior_frames; 0: the channel is recognised but
// brings no statistics). '#' starts a comment; blank lines are skipped. A
// channel named twice is an error, as the file would not say which weight
// holds.
#pragma once

#include <string>
#include <vector>

namespace gpuspeech {

struct ChannelWeight {
  std::string name;
  double weight = 1.0;
  int line = 0;  // 1-based, for messages
};

// Throws ChannelPriorError (channel_priors.h) "SOURCE:LINE: reason".
std::vector<ChannelWeight> parse_channel_weights(const std::string& text, const std::string& source);

}  // namespace gpuspeech
