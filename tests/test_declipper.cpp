// Declipper (common/features/declipper.h): clipped peaks of a known wave come
// back closer to the wave; audio without runs at its peak passes unchanged;
// the output does not depend on how the input was cut; runs too long, too
// low or at the stream's edges are kept; bad options are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "common/features/declipper.h"

namespace gpuspeech {
namespace {

constexpr float kRate = 16000.0f;

DeclipOptions on() {
  DeclipOptions o;
  o.enabled = true;
  return o;
}

// The same, restoring a plateau's first run too: for the tests of a run's
// geometry.
DeclipOptions at_first_run() {
  DeclipOptions o = on();
  o.min_plateau_runs = 1;
  return o;
}

// A voiced-like wave: a few harmonics of a random fundamental with random
// phases and a slow envelope, peak about `peak`.
std::vector<float> wave(size_t n, uint32_t seed, float peak) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const float f0 = 100.0f + 150.0f * u(gen);
  float phase[5];
  for (float& p : phase) p = 6.2831853f * u(gen);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) {
    const float t = static_cast<float>(i) / kRate;
    float v = 0.0f;
    for (int h = 0; h < 5; ++h)
      v += std::sin(6.2831853f * f0 * (h + 1) * t + phase[h]) / static_cast<float>(h + 1);
    const float envelope = 0.6f + 0.4f * std::sin(6.2831853f * 3.0f * t);
    x[i] = std::round(v * envelope * peak / 1.8f);
  }
  return x;
}

// Hard clipping as a converter does it: at +32767 and, on the negative
// side, at -32768 or -32767 (sox leaves both).
std::vector<float> clip(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    y[i] = x[i] > 32767.0f ? 32767.0f : x[i] < -32767.0f ? (i % 3 ? -32768.0f : -32767.0f) : x[i];
  return y;
}

std::vector<float> feed(Declipper& d, const std::vector<float>& x, const std::vector<size_t>& sizes,
                        size_t* most_held = nullptr) {
  std::vector<float> out;
  size_t pos = 0, k = 0;
  while (pos < x.size()) {
    const size_t n = std::min(sizes[k++ % sizes.size()], x.size() - pos);
    d.accept(x.data() + pos, n, out);
    pos += n;
    if (most_held) *most_held = std::max(*most_held, pos - out.size());
  }
  d.flush(out);
  return out;
}

double rms_error(const std::vector<float>& a, const std::vector<float>& b,
                 const std::vector<float>& clipped) {
  double sum = 0.0;
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::fabs(clipped[i]) < 32767.0f) continue;  // the clipped samples only
    sum += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ++n;
  }
  return n ? std::sqrt(sum / static_cast<double>(n)) : 0.0;
}

TEST(Declipper, RestoredPeaksAreCloserToTheWave) {
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    // 6 dB past full scale: runs of a few samples up to a millisecond.
    const std::vector<float> original = wave(16000, seed, 65000.0f);
    const std::vector<float> clipped = clip(original);
    Declipper d(on(), kRate);
    const std::vector<float> restored = feed(d, clipped, {clipped.size()});
    ASSERT_EQ(restored.size(), clipped.size());
    EXPECT_GT(d.runs_restored(), 50) << seed;
    const double before = rms_error(clipped, original, clipped);
    const double after = rms_error(restored, original, clipped);
    EXPECT_GT(before, 3000.0) << seed;
    EXPECT_LT(after, 0.5 * before) << "seed " << seed << ": " << before << " -> " << after;
    size_t unclipped = 0, changed = 0;
    for (size_t i = 0; i < clipped.size(); ++i) {
      if (std::fabs(clipped[i]) < 32767.0f) {
        // Only runs near the peak change: a flat top the rounding left
        // within 0.9 of full scale is taken for clipping too.
        ++unclipped;
        if (restored[i] != clipped[i]) {
          ++changed;
          ASSERT_GE(std::fabs(clipped[i]), 0.9f * 32767.0f) << i;
        }
      } else {
        // Same sign, at least the plateau, at most max_gain times it.
        ASSERT_GT(restored[i] * clipped[i], 0.0f) << i;
        ASSERT_GE(std::fabs(restored[i]), std::fabs(clipped[i]) - 1.0f) << i;
        ASSERT_LE(std::fabs(restored[i]), 4.0f * 32768.0f) << i;
      }
    }
    EXPECT_LT(changed, unclipped / 200) << seed;
  }
}

TEST(Declipper, AudioWithoutRunsAtItsPeakPassesUnchanged) {
  // Continuous values never repeat; the same wave below full scale has runs
  // only where a rounded sample repeats, below the peak or under 512.
  std::mt19937 gen(7);
  std::normal_distribution<float> g(0.0f, 3000.0f);
  std::vector<float> noise(20000);
  for (float& v : noise) v = g(gen);
  Declipper d(on(), kRate);
  EXPECT_EQ(feed(d, noise, {333}), noise);
  EXPECT_EQ(d.runs_restored(), 0);
  const std::vector<float> quiet = wave(20000, 3, 300.0f);  // under min_level
  EXPECT_EQ(feed(d, quiet, {quiet.size()}), quiet);
  EXPECT_EQ(d.runs_restored(), 0);
}

TEST(Declipper, OutputDoesNotDependOnTheCutting) {
  const std::vector<float> clipped = clip(wave(24000, 11, 90000.0f));
  Declipper d(on(), kRate);
  const std::vector<float> whole = feed(d, clipped, {clipped.size()});
  std::mt19937 gen(5);
  for (size_t max_piece : {1, 2, 3, 17, 160, 5000}) {
    std::uniform_int_distribution<size_t> u(1, max_piece);
    std::vector<size_t> sizes(101);
    for (size_t& s : sizes) s = u(gen);
    size_t most_held = 0;
    EXPECT_EQ(feed(d, clipped, sizes, &most_held), whole) << "pieces up to " << max_piece;
    EXPECT_LE(most_held, static_cast<size_t>(d.max_delay())) << max_piece;
  }
  EXPECT_EQ(declip(on(), kRate, clipped.data(), static_cast<int64_t>(clipped.size())), whole);
}

TEST(Declipper, KeepsRunsItCannotRestore) {
  Declipper d(at_first_run(), kRate);
  const int max_run = on().max_run_samples(kRate);  // 64 at 16 kHz
  ASSERT_EQ(max_run, 64);
  auto ramp_around = [](std::vector<float> run) {
    std::vector<float> x = {1000.0f, 9000.0f, 20000.0f};
    x.insert(x.end(), run.begin(), run.end());
    x.insert(x.end(), {20000.0f, 9000.0f, 1000.0f});
    return x;
  };
  // Too long: all of it kept, the samples past max_run too.
  const std::vector<float> stuck = ramp_around(std::vector<float>(max_run + 10, 30000.0f));
  EXPECT_EQ(feed(d, stuck, {7}), stuck);
  // Exactly max_run: restored (raised above its level).
  const std::vector<float> longest = ramp_around(std::vector<float>(max_run, 30000.0f));
  const std::vector<float> out = feed(d, longest, {7});
  EXPECT_GT(out[3 + max_run / 2], 30000.0f);
  // A run at the very start or end of the stream: no samples around it.
  const std::vector<float> at_start = {30000.0f, 30000.0f, 30000.0f, 9000.0f, 100.0f};
  EXPECT_EQ(feed(d, at_start, {1}), at_start);
  const std::vector<float> at_end = {100.0f, 9000.0f, 30000.0f, 30000.0f};
  EXPECT_EQ(feed(d, at_end, {1}), at_end);
  // Below the peak seen before it: a flat top of a quieter wave.
  const std::vector<float> quieter = {0.0f,    20000.0f, 32000.0f, 20000.0f, 0.0f,
                                      8000.0f, 9000.0f,  9000.0f,  8000.0f,  0.0f};
  EXPECT_EQ(feed(d, quieter, {3}), quieter);
  // The same flat top as the loudest yet is restored, the sign kept: the
  // cubic through (-2, 0), (-1, -8000), (2, -8000), (3, 0) is -12000 at 0
  // and 1.
  const std::vector<float> negative = {0.0f, -8000.0f, -9000.0f, -9000.0f, -8000.0f, 0.0f};
  const std::vector<float> n_out = feed(d, negative, {2});
  EXPECT_FLOAT_EQ(n_out[2], -12000.0f);
  EXPECT_FLOAT_EQ(n_out[3], -12000.0f);
  // A gentler top whose cubic stays under the plateau keeps the plateau.
  const std::vector<float> gentle = {0.0f, -5000.0f, -9000.0f, -9000.0f, -5000.0f, 0.0f};
  EXPECT_EQ(feed(d, gentle, {2}), gentle);
}

TEST(Declipper, ResetForgetsThePeak) {
  Declipper d(at_first_run(), kRate);
  std::vector<float> out;
  const std::vector<float> loud = {0.0f, 30000.0f, 0.0f};
  d.accept(loud.data(), loud.size(), out);
  d.reset();
  out.clear();
  const std::vector<float> top = {0.0f, 8000.0f, 9000.0f, 9000.0f, 8000.0f, 0.0f};
  d.accept(top.data(), top.size(), out);
  d.flush(out);
  EXPECT_FLOAT_EQ(out[2], 12000.0f);  // the loud sample before the reset does not count
}

// A run is restored only from the third run of its sign at one level on:
// isolated flat tops, or flat tops at levels that differ, pass unchanged.
TEST(Declipper, RestoresOnlyPlateausThatRecur) {
  auto tops = [](std::vector<float> levels) {
    std::vector<float> x = {0.0f};
    for (float l : levels) {
      const float s = l > 0.0f ? 1.0f : -1.0f;
      const float side = l - s * 1000.0f;  // the cubic at the run is 1.33 l
      x.insert(x.end(), {side, l, l, side, 0.0f});
    }
    return x;
  };
  Declipper d(on(), kRate);
  // One level, three times: the third is restored, the first two are not.
  const std::vector<float> three = tops({9000.0f, 9000.0f, 9000.0f});
  std::vector<float> out = feed(d, three, {5});
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(out[2 + 5 * k], 9000.0f) << k;
    EXPECT_EQ(out[3 + 5 * k], 9000.0f) << k;
  }
  EXPECT_FLOAT_EQ(out[12], 12000.0f);
  EXPECT_FLOAT_EQ(out[13], 12000.0f);
  EXPECT_EQ(d.runs_restored(), 1);
  // Levels within the tolerance (2) count as one; a level outside it
  // starts a new plateau.
  out = feed(d, tops({9000.0f, 9001.0f, 8999.0f}), {5});
  EXPECT_GT(out[12], 9000.0f);
  const std::vector<float> drifting = tops({9000.0f, 9003.0f, 9006.0f, 9009.0f});
  EXPECT_EQ(feed(d, drifting, {5}), drifting);
  // Each sign has its plateau: interleaved, both are restored at their
  // third run.
  out = feed(d, tops({9000.0f, -9000.0f, 9000.0f, -9000.0f, 9000.0f, -9000.0f}), {4});
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(std::fabs(out[2 + 5 * k]), 9000.0f) << k;
  EXPECT_FLOAT_EQ(out[22], 12000.0f);
  EXPECT_FLOAT_EQ(out[27], -12000.0f);
}

TEST(Declipper, RefusesBadOptions) {
  FeatureOptions good = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  good.declip = on();
  EXPECT_NO_THROW(good.validate());
  auto bad = [&](auto change) {
    DeclipOptions o = on();
    change(o);
    EXPECT_THROW(Declipper(o, kRate), std::invalid_argument);
    FeatureOptions f = good;
    f.declip = o;
    EXPECT_THROW(f.validate(), std::invalid_argument);
  };
  bad([](DeclipOptions& o) { o.max_run_ms = 0.0f; });
  bad([](DeclipOptions& o) { o.max_run_ms = NAN; });
  bad([](DeclipOptions& o) { o.peak_fraction = 1.5f; });
  bad([](DeclipOptions& o) { o.min_level = -1.0f; });
  bad([](DeclipOptions& o) { o.max_gain = 0.5f; });
  bad([](DeclipOptions& o) { o.level_tolerance = -1.0f; });
  bad([](DeclipOptions& o) { o.min_plateau_runs = 0; });
  EXPECT_THROW(Declipper(on(), 0.0f), std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
