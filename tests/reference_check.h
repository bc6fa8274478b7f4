// Runs FeatureExtractor (PLP or TRAPS) on a backend and compares each warp's
// output with the double-precision reference (reference_features.h).
// Shared by the CPU unit test and the device-backend test.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/features/feature_pipeline.h"
#include "tests/reference_features.h"

namespace gpuspeech {
namespace reference {

// The agreement the issue asks of every float backend, in the sense of
// reference::compare.
constexpr double kPipelineTolerance = 1e-4;

inline std::vector<float> read_raw_s16(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open test audio " + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::vector<float> s(bytes.size() / 2);
  for (size_t i = 0; i < s.size(); ++i) {
    const auto lo = static_cast<unsigned char>(bytes[2 * i]);
    const auto hi = static_cast<unsigned char>(bytes[2 * i + 1]);
    s[i] = static_cast<float>(static_cast<int16_t>(lo | (hi << 8)));
  }
  return s;
}

inline void expect_agrees(Backend& backend, const FeatureOptions& opts,
                          const std::vector<float>& audio,
                          const std::vector<float>& warps,
                          const std::string& what) {
  FeatureExtractor ex(opts, backend, warps);
  const int64_t n = static_cast<int64_t>(audio.size());
  const FeatureMatrix got = ex.compute(audio.data(), n);
  const int64_t frames = ex.num_frames(n);
  ASSERT_EQ(got.rows, frames);
  ASSERT_GT(frames, 10);
  const int base = ex.base_dim();
  for (int k = 0; k < ex.num_warps(); ++k) {
    const double warp = warps.empty() ? opts.mel.vtln.warp : warps[k];
    const Matrix ref = opts.kind == FeatureKind::kPlp
                           ? plp(opts, audio.data(), n, frames, warp)
                           : traps(opts, audio.data(), n, frames, warp);
    ASSERT_EQ(ref[0].size(), static_cast<size_t>(base));
    const Agreement a = compare(ref, got.data.data(), got.dim, k * base);
    EXPECT_LE(a.worst, kPipelineTolerance)
        << what << " on " << backend.name() << ", warp " << warp << ": frame "
        << a.frame << " dim " << a.dim << " got " << a.got << " want " << a.want;
    std::printf("[ %s on %s, warp %.2f ] worst relative error %.3g (frame %lld dim %d)\n",
                what.c_str(), backend.name(), warp, a.worst,
                static_cast<long long>(a.frame), a.dim);
  }
}

}  // namespace reference
}  // namespace gpuspeech
