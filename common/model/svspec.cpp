#include "svspec.h"

#include <cctype>
#include <stdexcept>

namespace gpuspeech {

namespace {

// No Sphinx feature vector comes near this; it keeps "0-2000000000" from
// allocating gigabytes.
constexpr long kMaxComponent = 1 << 16;

}  // namespace

std::vector<std::vector<int>> parse_svspec(const std::string& spec) {
  std::vector<std::vector<int>> streams(1);
  size_t i = 0;
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument("svspec '" + spec + "': " + why + " (at character " +
                                std::to_string(i) + ")");
  };
  auto number = [&]() -> long {
    if (i >= spec.size() || !std::isdigit(static_cast<unsigned char>(spec[i])))
      fail("expected a component index");
    long v = 0;
    while (i < spec.size() && std::isdigit(static_cast<unsigned char>(spec[i]))) {
      v = v * 10 + (spec[i] - '0');
      if (v > kMaxComponent) fail("component index too large");
      ++i;
    }
    return v;
  };
  long total = 0;
  for (;;) {
    const long a = number();
    long b = a;
    if (i < spec.size() && spec[i] == '-') {
      ++i;
      b = number();
      if (b < a) fail("range " + std::to_string(a) + "-" + std::to_string(b) + " runs backwards");
    }
    total += b - a + 1;
    if (total > kMaxComponent) fail("too many components");
    for (long c = a; c <= b; ++c) streams.back().push_back(static_cast<int>(c));
    if (i == spec.size()) break;
    if (spec[i] == ',') {
      ++i;
    } else if (spec[i] == '/') {
      ++i;
      streams.emplace_back();
    } else {
      fail(std::string("unexpected '") + spec[i] + "'");
    }
  }
  return streams;
}

}  // namespace gpuspeech
