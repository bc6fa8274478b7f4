// libFuzzer target: a channel prior library's `weights` file
// (common/fmllr/channel_weights.h, read by gpudecoder's adapt-channels) on
// arbitrary bytes. Every input must either parse or throw
// ChannelPriorError "fuzz.weights:LINE: ..." with LINE a line the input
// has. A parsed list must keep the header's promises (names unique, plain
// words without '#', weights from 0 to 1, lines rising), and written back
// one channel a line it must parse to the same list. Anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "common/fmllr/channel_priors.h"
#include "common/fmllr/channel_weights.h"

namespace {

const char kSource[] = "fuzz.weights";

bool plain_word(const std::string& w) {
  if (w.empty() || w.find('#') != std::string::npos) return false;
  for (const char c : w)
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string text(reinterpret_cast<const char*>(data), size);
  int num_lines = 1;
  for (const char c : text) num_lines += c == '\n';

  std::vector<ChannelWeight> weights;
  try {
    weights = parse_channel_weights(text, kSource);
  } catch (const ChannelPriorError& e) {
    const std::string what = e.what();
    const std::string prefix = std::string(kSource) + ":";
    if (what.rfind(prefix, 0) != 0) __builtin_trap();
    const long line = std::strtol(what.c_str() + prefix.size(), nullptr, 10);
    if (line < 1 || line > num_lines) __builtin_trap();
    return 0;
  }
  std::set<std::string> names;
  int last_line = 0;
  for (const ChannelWeight& w : weights) {
    if (!plain_word(w.name) || !names.insert(w.name).second) __builtin_trap();
    if (!(w.weight >= 0.0 && w.weight <= 1.0)) __builtin_trap();
    if (w.line <= last_line || w.line > num_lines) __builtin_trap();
    last_line = w.line;
  }

  // Written back, it must read as the same list (17 digits: the same doubles).
  std::string out;
  char number[64];
  for (const ChannelWeight& w : weights) {
    std::snprintf(number, sizeof number, "%.17g", w.weight);
    out += w.name + ' ' + number + '\n';
  }
  const std::vector<ChannelWeight> back = parse_channel_weights(out, kSource);
  if (back.size() != weights.size()) __builtin_trap();
  for (size_t i = 0; i < back.size(); ++i)
    if (back[i].name != weights[i].name || back[i].weight != weights[i].weight) __builtin_trap();
  return 0;
}
