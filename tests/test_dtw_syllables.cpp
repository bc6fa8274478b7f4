// The syllable count of common/dtw/syllable_count.h on synthetic words: n
// vowel-like bursts (a 1 kHz tone, in the counted band) parted by
// silence or by a deep dip are n syllables; a shallow dip does not part
// them; a 6 kHz "fricative" adds none, however loud; the samples'
// scale and a noise floor well below the word change nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "common/dtw/syllable_count.h"

namespace gpuspeech {
namespace {

constexpr float kRate = 16000.0f;

// `seconds` of a sine of `hz` at `amplitude`, with 10 ms ramps.
void append_tone(std::vector<float>& x, float hz, float seconds, float amplitude) {
  const int n = static_cast<int>(seconds * kRate), ramp = static_cast<int>(0.01f * kRate);
  for (int i = 0; i < n; ++i) {
    const float edge = std::min(1.0f, std::min(i, n - 1 - i) / static_cast<float>(ramp));
    x.push_back(amplitude * edge * std::sin(2.0f * 3.14159265f * hz * i / kRate));
  }
}
void append_silence(std::vector<float>& x, float seconds) {
  x.insert(x.end(), static_cast<size_t>(seconds * kRate), 0.0f);
}

std::vector<float> bursts(int n, float gap_amplitude) {
  std::vector<float> x;
  append_silence(x, 0.1f);
  for (int i = 0; i < n; ++i) {
    if (i > 0) append_tone(x, 1000.0f, 0.15f, gap_amplitude);
    append_tone(x, 1000.0f, 0.12f, 1.0f);
  }
  append_silence(x, 0.1f);
  return x;
}

int count(const std::vector<float>& x) {
  return count_syllables(x.data(), static_cast<int64_t>(x.size()), kRate);
}

TEST(DtwSyllables, BurstsPartedBySilenceOrADeepDipAreCounted) {
  for (int n = 1; n <= 4; ++n) {
    EXPECT_EQ(count(bursts(n, 0.0f)), n) << n << " bursts, silence between";
    EXPECT_EQ(count(bursts(n, 0.05f)), n) << n << " bursts, a 26 dB dip between";
  }
}

TEST(DtwSyllables, AShallowDipDoesNotPartThem) {
  EXPECT_EQ(count(bursts(3, 0.8f)), 1) << "2 dB dips";
  EXPECT_EQ(count(bursts(2, 0.6f)), 1) << "4.4 dB dip";
}

// vowel, a 6 kHz "s" `s_db` below it after a short gap, vowel again.
std::vector<float> vowel_s_vowel(float s_db) {
  std::vector<float> x;
  append_silence(x, 0.1f);
  append_tone(x, 1000.0f, 0.12f, 1.0f);
  append_silence(x, 0.05f);
  append_tone(x, 6000.0f, 0.1f, std::pow(10.0f, -s_db / 20.0f));
  append_silence(x, 0.05f);
  append_tone(x, 1000.0f, 0.12f, 1.0f);
  append_silence(x, 0.1f);
  return x;
}

TEST(DtwSyllables, AFricativeIsNoNucleusHoweverLoud) {
  // The band's edges are first-order filters: 6 kHz loses only about 5 dB
  // against 1 kHz, so a loud "s" reaches the counted band. It is no
  // nucleus: its level there is below, not 15 dB above, the fricative
  // band's (as flite's /s/ of "six", "start" and "stop").
  EXPECT_EQ(count(vowel_s_vowel(14.0f)), 2);
  EXPECT_EQ(count(vowel_s_vowel(0.0f)), 2);
  EXPECT_EQ(count(vowel_s_vowel(-6.0f)), 2) << "an s louder than the vowels";
  // Without the voicing test it was a nucleus of its own.
  SyllableCountOptions off;
  off.voiced_margin_db = 0.0f;
  const std::vector<float> x = vowel_s_vowel(0.0f);
  EXPECT_EQ(count_syllables(x.data(), static_cast<int64_t>(x.size()), kRate, off), 3);
}

// At 8 kHz there is no fricative band: every frame may be a nucleus, and
// the count is the band's alone.
TEST(DtwSyllables, NoFricativeBandAtEightKilohertz) {
  std::vector<float> x;
  const float rate = 8000.0f;
  for (int burst = 0; burst < 2; ++burst) {
    x.insert(x.end(), 800, 0.0f);
    for (int i = 0; i < 960; ++i) x.push_back(std::sin(2.0f * 3.14159265f * 1000.0f * i / rate));
  }
  x.insert(x.end(), 800, 0.0f);
  EXPECT_EQ(count_syllables(x.data(), static_cast<int64_t>(x.size()), rate), 2);
}

// Nothing voiced (noise with as much energy above 4 kHz as in the band):
// no syllable.
TEST(DtwSyllables, NoiseAloneHasNoNucleus) {
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::vector<float> x(8000);
  for (float& v : x) v = noise(rng);
  EXPECT_EQ(count(x), 0);
}

TEST(DtwSyllables, ScaleAndAQuietNoiseFloorChangeNothing) {
  const unsigned seed = std::random_device{}();
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.003f);  // about 47 dB below the bursts
  for (int n = 1; n <= 3; ++n) {
    std::vector<float> x = bursts(n, 0.0f);
    for (float& v : x) v = 32767.0f * (v + noise(rng));
    EXPECT_EQ(count(x), n) << n << " bursts in 16-bit units with noise (seed " << seed << ")";
  }
}

TEST(DtwSyllables, NothingToCount) {
  EXPECT_EQ(count({}), 0);
  EXPECT_EQ(count(std::vector<float>(100, 0.5f)), 0) << "shorter than three frames";
  EXPECT_EQ(count_nuclei({}), 0);
}

}  // namespace
}  // namespace gpuspeech
