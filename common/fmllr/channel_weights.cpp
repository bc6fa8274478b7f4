#include "common/fmllr/channel_weights.h"

#include <charconv>
#include <sstream>
#include <system_error>

#include "common/fmllr/channel_priors.h"

namespace gpuspeech {

std::vector<ChannelWeight> parse_channel_weights(const std::string& text, const std::string& source) {
  std::vector<ChannelWeight> out;
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = source + ":" + std::to_string(n) + ": ";
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    ChannelWeight w;
    w.line = n;
    if (!(fields >> w.name)) continue;  // blank or a comment
    std::string extra;
    // The number is read as a word and converted whole (and whatever the
    // locale: an application may have set one with a decimal comma), so
    // that "0.5x" or "0,5" is refused rather than read in part.
    std::string number;
    fields >> number;
    const char* end = number.data() + number.size();
    const std::from_chars_result r = std::from_chars(number.data(), end, w.weight);
    const bool parsed = !number.empty() && r.ec == std::errc() && r.ptr == end;
    if (!parsed || (fields >> extra) || !(w.weight >= 0.0 && w.weight <= 1.0))
      throw ChannelPriorError(where + "expected \"NAME WEIGHT\" with a weight from 0 to 1");
    for (const ChannelWeight& seen : out)
      if (seen.name == w.name)
        throw ChannelPriorError(where + w.name + " given a weight again (first on line " +
                                std::to_string(seen.line) + ")");
    out.push_back(w);
  }
  return out;
}

}  // namespace gpuspeech
