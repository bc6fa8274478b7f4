// libFuzzer target: the WAV and raw readers on arbitrary bytes. Every input
// must either parse into sane audio or throw AudioFileError; any other
// exception, crash, sanitizer report, hang or runaway allocation is a bug.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "common/features/wav_reader.h"

namespace {

// Checks what a successful parse promises.
void check(const gpuspeech::AudioData& a) {
  if (a.sample_rate < 1 || static_cast<uint32_t>(a.sample_rate) > gpuspeech::kMaxSampleRate)
    __builtin_trap();
  if (a.channels < 1 || a.channels > gpuspeech::kMaxWavChannels) __builtin_trap();
  // Float WAVs may exceed full scale, but samples are always finite.
  for (float v : a.samples)
    if (!std::isfinite(v)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  try {
    check(parse_wav(data, size, "fuzz.wav"));
  } catch (const AudioFileError&) {
  }
  try {
    WavReadOptions o;
    o.allow_truncated = true;
    o.channel = 1;
    check(parse_wav(data, size, "fuzz.wav", o));
  } catch (const AudioFileError&) {
  }
  try {
    check(parse_raw_s16le(data, size, 16000, "fuzz.raw", 1 + (size % 3), size % 4));
  } catch (const AudioFileError&) {
  }
  return 0;
}
