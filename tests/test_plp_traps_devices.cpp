// PLP and TRAPS from each device backend (opencl, cuda) against the
// double-precision reference, to the same 1e-4 as the CPU backend
// (test_plp_traps.cpp). Backends with no usable device are skipped unless
// GPUSPEECH_REQUIRE_BACKENDS names them (see test_backends.h).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/backends/backend_registry.h"
#include "tests/reference_check.h"
#include "tests/test_backends.h"

namespace gpuspeech {
namespace {

class DeviceVsReference : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string name = GetParam();
    for (const BackendInfo& i : list_backends()) {
      if (i.name != name) continue;
      if (!i.usable) {
        if (testing::is_required_backend(name))
          FAIL() << "required backend " << name << " is not usable: " << i.detail;
        GTEST_SKIP() << "backend '" << name << "' not usable here: " << i.detail;
      }
      backend_ = open_backend(name, 0);
      return;
    }
    if (testing::is_required_backend(name))
      FAIL() << "required backend " << name << " is not compiled in";
    GTEST_SKIP() << "backend '" << name << "' not compiled in";
  }
  Backend& backend() { return *backend_; }
  const std::vector<float>& speech() {
    static const std::vector<float> s =
        reference::read_raw_s16(testing::audio_dir() + "/goforward.raw");
    return s;
  }
  BackendPtr backend_;
};

TEST_P(DeviceVsReference, Plp) {
  reference::expect_agrees(backend(), FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kPlp),
                           speech(), {}, "plp sphinx");
  FeatureOptions k = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kPlp);
  k.plp.use_energy = true;
  reference::expect_agrees(backend(), k, speech(), {}, "plp kaldi+energy");
  reference::expect_agrees(backend(), FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kPlp),
                           speech(), {0.9f, 1.0f, 1.1f}, "plp htk warps");
}

TEST_P(DeviceVsReference, Traps) {
  reference::expect_agrees(backend(), FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kTraps),
                           speech(), {}, "traps sphinx");
  FeatureOptions h = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kTraps);
  h.traps.context = 15;
  h.traps.num_coeffs = 5;
  reference::expect_agrees(backend(), h, speech(), {0.92f, 1.06f}, "traps htk warps");
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceVsReference, ::testing::Values("opencl", "cuda"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace gpuspeech
