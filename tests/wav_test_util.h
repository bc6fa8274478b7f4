// Test helper: writes samples (16-bit values held as floats) to `path` as a
// 16-bit mono PCM WAV file at `rate` Hz, for tests that need files on disk.
#pragma once

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace gpuspeech {
namespace testing {

inline void write_wav(const std::string& path, const std::vector<float>& samples, int rate = 16000) {
  std::ofstream f(path, std::ios::binary);
  auto u32 = [&](uint32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](uint16_t v) { f.write(reinterpret_cast<const char*>(&v), 2); };
  const uint32_t bytes = static_cast<uint32_t>(samples.size() * 2);
  f.write("RIFF", 4);
  u32(36 + bytes);
  f.write("WAVEfmt ", 8);
  u32(16);
  u16(1);
  u16(1);
  u32(static_cast<uint32_t>(rate));
  u32(static_cast<uint32_t>(rate * 2));
  u16(2);
  u16(16);
  f.write("data", 4);
  u32(bytes);
  for (float s : samples) u16(static_cast<uint16_t>(static_cast<int16_t>(std::lround(s))));
}

}  // namespace testing
}  // namespace gpuspeech
