// A library of channel priors, and the choice of one per stream by the
// stream's own statistics.
//
// A prior (AdaptiveRedecoderOptions::prior) helps a stream's first
// sentence only when it is the stream's channel: on GSM-coded speech a
// prior made from real speech through the GSM codec took the live chain
// from 17.3 to 11.0 % WER, while priors on channels that distort less cost
// 0.4-3 points (docs/benchmarks.md, "A channel's statistics as a prior").
// A media server or a phone gateway knows its channel; a general pipeline
// does not. So the streams are given several priors and each stream takes
// the one its speech says it came through, or none. A channel may also be
// in a library only to be recognised (weight 0): a stream nearest to it
// then takes no other channel's prior. Mu-law streams took GSM's, the
// nearest channel there was, and lost by it (11.0 against 8.2 % with none,
// docs/benchmarks.md); the mu-law channel's own statistics as a prior
// gave 10.2 %, the library's speakers costing more than its channel gives.
//
// The choice: the transform of each prior's statistics alone, scored by
// the fMLLR objective (fmllr_estimate.h) on the stream's statistics (the
// EM auxiliary function: how well that transform explains the stream's
// aligned frames, nats a frame). A transform from real speech also learns
// the speakers it was recorded from, and on synthetic or unusual voices
// any real-speech transform beats the identity (by up to 1.5 nats a
// frame on issue 15's sets), so a channel is not scored against the
// identity but against a reference: the transform of the same recordings
// without the channel. The difference is what the channel adds. Measured
// on issue 15's sentences, one sentence a speaker: the GSM prior's
// difference was 3.2-5.7 nats a frame on every GSM sentence and at most
// 0.84 on the eight other channels (noise, reverberation, clipping, opus,
// mp3, a telephone band); the default threshold, 1.5, lies between.
//
// On disk, a directory (tools/make-channel-priors.sh writes one):
//   reference.stats      the recordings as recorded (fmllr_stats_io.h)
//   NAME.stats           the same recordings through channel NAME, one
//                        file per channel
//   model                optional: "means BYTES FNV1A64HEX", the acoustic
//                        model's means file the statistics were taken
//                        with; a model with other means is refused
//                        (statistics are the model's Gaussians' own).
//   weights              optional: lines "NAME WEIGHT", a channel's
//                        ChannelPrior::weight (channel_weights.h).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/fmllr/fmllr_estimate.h"
#include "common/fmllr/fmllr_stats.h"
#include "common/fmllr/fmllr_transform.h"

namespace gpuspeech {

struct ChannelPrior {
  std::string name;  // the file's stem: "gsm"
  std::shared_ptr<const FmllrStats> stats;
  FmllrTransform transform;  // estimated from `stats` alone
  // How much of the prior a stream that takes this channel gets, a factor
  // on AdaptiveRedecoderOptions::prior_frames (the library's `weights`
  // file; 1 when it names no weight). 0: the channel is recognised (a
  // stream that is nearer to it than to the others takes it, and not a
  // channel whose prior would mislead it) but brings no statistics.
  double weight = 1.0;
};

struct ChannelChoice {
  int index = -1;  // into ChannelPriorSet::channels; -1: none
  // The chosen channel's objective over the reference's (nats a frame);
  // with none chosen, the best channel's (-inf when there are none).
  double gain = 0.0;
};

struct ChannelPriorSet {
  ChannelPrior reference;
  std::vector<ChannelPrior> channels;  // sorted by name

  // The channel whose transform explains `stream` best, when it beats the
  // reference's by at least `min_gain` nats a frame; none when `stream`
  // holds no frames.
  ChannelChoice choose(const FmllrStats& stream, double min_gain) const;
};

// A directory that is not a channel library, or unreadable statistics:
// the message names the file and the reason.
struct ChannelPriorError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// The library was made with another acoustic model (its `model` file).
struct ChannelPriorModelMismatch : ChannelPriorError {
  using ChannelPriorError::ChannelPriorError;
};

// Reads `dir` (see the top of this file): reference.stats and at least one
// channel, every file of dimension `dim` with frames. `model_means`: the
// acoustic model's means file, checked against `dir`/model when both are
// there (empty: not checked). Each transform is estimated with
// `estimation` (a transform that cannot be estimated is an error).
ChannelPriorSet load_channel_priors(const std::string& dir, int dim, const std::string& model_means = "",
                                    const FmllrOptions& estimation = {});

// "means BYTES FNV1A64HEX" of a file, what `dir`/model holds.
std::string model_file_signature(const std::string& path);

}  // namespace gpuspeech
