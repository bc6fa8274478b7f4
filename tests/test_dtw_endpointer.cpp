// The energy endpointer (common/dtw/endpointer.h): segments found in audio
// with silences between bursts of known position, real speech placed in
// noise, chunking independence, clicks dropped, and a background that gets
// louder not holding a segment open.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "common/dtw/endpointer.h"
#include "common/features/wav_reader.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

constexpr float kRate = 16000.0f;

// White noise at `rms` (16-bit units) for `seconds`.
void add_noise(std::vector<float>& s, double seconds, float rms, std::mt19937& gen) {
  std::normal_distribution<float> nd(0.0f, rms);
  const auto n = static_cast<size_t>(seconds * kRate);
  for (size_t k = 0; k < n; ++k) s.push_back(nd(gen));
}

// A voiced-like burst: harmonics of 150 Hz at `rms`, over the noise.
void add_burst(std::vector<float>& s, double seconds, float rms, float noise_rms, std::mt19937& gen) {
  std::normal_distribution<float> nd(0.0f, noise_rms);
  const auto n = static_cast<size_t>(seconds * kRate);
  for (size_t k = 0; k < n; ++k) {
    const double t = static_cast<double>(k) / kRate;
    double v = 0.0;
    for (int h = 1; h <= 5; ++h) v += std::sin(2 * M_PI * 150.0 * h * t) / h;
    s.push_back(static_cast<float>(v * rms / 0.9) + nd(gen));
  }
}

TEST(Endpointer, FindsBurstsBetweenSilences) {
  std::mt19937 gen(1);
  std::vector<float> s;
  add_noise(s, 1.0, 10.0f, gen);          // ~20 dB
  add_burst(s, 0.4, 2000.0f, 10.0f, gen);  // ~66 dB, 1.0 .. 1.4 s
  add_noise(s, 1.0, 10.0f, gen);
  add_burst(s, 0.6, 1000.0f, 10.0f, gen);  // 2.4 .. 3.0 s
  add_noise(s, 0.8, 10.0f, gen);
  EndpointOptions o;
  const auto segs = find_speech(s.data(), static_cast<int64_t>(s.size()), kRate, o);
  ASSERT_EQ(segs.size(), 2u);
  const int64_t tol = (o.pad_frames + 2) * 160;
  EXPECT_NEAR(segs[0].begin, 16000, tol);
  EXPECT_NEAR(segs[0].end, 22400, tol);
  EXPECT_NEAR(segs[1].begin, 38400, tol);
  EXPECT_NEAR(segs[1].end, 48000, tol);
  // Padding is there, on both sides.
  EXPECT_LT(segs[0].begin, 16000);
  EXPECT_GT(segs[0].end, 22400);
  const SpeechSegment ext = speech_extent(s.data(), static_cast<int64_t>(s.size()), kRate, o);
  EXPECT_EQ(ext.begin, segs[0].begin);
  EXPECT_EQ(ext.end, segs[1].end);
}

TEST(Endpointer, SameSegmentsWhateverTheChunking) {
  std::mt19937 gen(2);
  std::vector<float> s;
  for (int w = 0; w < 4; ++w) {
    add_noise(s, 0.7, 30.0f, gen);
    add_burst(s, 0.3 + 0.1 * w, 1500.0f, 30.0f, gen);
  }
  add_noise(s, 0.7, 30.0f, gen);
  EndpointOptions o;
  Endpointer whole(o, kRate);
  auto a = whole.push(s.data(), static_cast<int64_t>(s.size()));
  for (auto& x : whole.finish()) a.push_back(x);
  Endpointer chunked(o, kRate);
  std::vector<SpeechSegment> b;
  std::uniform_int_distribution<int> chunk(1, 700);
  for (size_t pos = 0; pos < s.size();) {
    const size_t len = std::min<size_t>(static_cast<size_t>(chunk(gen)), s.size() - pos);
    for (auto& x : chunked.push(s.data() + pos, static_cast<int64_t>(len))) b.push_back(x);
    pos += len;
  }
  for (auto& x : chunked.finish()) b.push_back(x);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].begin, b[k].begin);
    EXPECT_EQ(a[k].end, b[k].end);
  }
}

TEST(Endpointer, DropsClicksAndStaysQuietInSilence) {
  std::mt19937 gen(3);
  std::vector<float> s;
  add_noise(s, 1.0, 10.0f, gen);
  add_burst(s, 0.04, 5000.0f, 10.0f, gen);  // 40 ms click
  add_noise(s, 1.0, 10.0f, gen);
  EndpointOptions o;
  EXPECT_TRUE(find_speech(s.data(), static_cast<int64_t>(s.size()), kRate, o).empty());
  std::vector<float> zeros(32000, 0.0f);
  EXPECT_TRUE(find_speech(zeros.data(), 32000, kRate, o).empty());
  const SpeechSegment none = speech_extent(zeros.data(), 32000, kRate, o);
  EXPECT_EQ(none.begin, 0);
  EXPECT_EQ(none.end, 0);
}

TEST(Endpointer, LouderBackgroundDoesNotHoldASegmentOpen) {
  std::mt19937 gen(4);
  std::vector<float> s;
  add_noise(s, 1.0, 10.0f, gen);    // 20 dB
  add_noise(s, 12.0, 300.0f, gen);  // 50 dB from 1 s on: looks like speech at first
  add_burst(s, 0.5, 8000.0f, 300.0f, gen);  // a word at 78 dB, 13.0 .. 13.5 s
  add_noise(s, 1.5, 300.0f, gen);
  EndpointOptions o;
  const auto segs = find_speech(s.data(), static_cast<int64_t>(s.size()), kRate, o);
  ASSERT_EQ(segs.size(), 2u);
  // The step opens a segment that closes once the floor has caught up:
  // (30 - 12) dB at 3 dB/s is 6 s, plus end_frames.
  EXPECT_NEAR(segs[0].begin, 16000 - o.pad_frames * 160, 2 * 160);
  EXPECT_LT(segs[0].end, static_cast<int64_t>(8.0 * kRate));
  EXPECT_NEAR(segs[1].begin, static_cast<int64_t>(13.0 * kRate), (o.pad_frames + 2) * 160);
  EXPECT_NEAR(segs[1].end, static_cast<int64_t>(13.5 * kRate), (o.pad_frames + 2) * 160);
}

TEST(Endpointer, FindsRealSpeechPlacedInNoise) {
  const std::string path = testing::audio_dir() + "/goforward.raw";
  AudioData a = read_raw_s16le_file(path, 16000);
  std::mt19937 gen(5);
  std::vector<float> s;
  add_noise(s, 1.5, 20.0f, gen);
  const int64_t at = static_cast<int64_t>(s.size());
  std::normal_distribution<float> nd(0.0f, 20.0f);
  for (float v : a.samples) s.push_back(v + nd(gen));
  const int64_t until = static_cast<int64_t>(s.size());
  add_noise(s, 1.5, 20.0f, gen);
  EndpointOptions o;
  const auto segs = find_speech(s.data(), static_cast<int64_t>(s.size()), kRate, o);
  ASSERT_GE(segs.size(), 1u);
  const int64_t pad = o.pad_frames * 160 + 160;
  EXPECT_GE(segs.front().begin, at - pad);
  EXPECT_LE(segs.back().end, until + pad);
  // "go forward ten meters" is spoken over most of the file.
  EXPECT_GT(segs.back().end - segs.front().begin, (until - at) / 2);
}

TEST(Endpointer, RejectsBadOptions) {
  EndpointOptions o;
  o.start_frames = 0;
  EXPECT_THROW(Endpointer(o, kRate), std::invalid_argument);
  EXPECT_THROW(Endpointer(EndpointOptions(), 10.0f), std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
