// Which backends a test runs on: every usable one. A backend named in
// GPUSPEECH_REQUIRE_BACKENDS (comma-separated, e.g. "opencl" in CI, "cuda"
// on the GPU machine) must be usable, or the test fails instead of skipping.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/backends/backend_registry.h"

namespace gpuspeech::testing {

inline std::vector<std::string> required_backends() {
  std::vector<std::string> out;
  const char* env = std::getenv("GPUSPEECH_REQUIRE_BACKENDS");
  if (!env) return out;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Usable backends; adds a test failure for each required one that is not.
inline std::vector<std::string> backends_under_test() {
  std::vector<std::string> usable;
  const std::vector<BackendInfo> all = list_backends();
  for (const BackendInfo& b : all)
    if (b.usable) usable.push_back(b.name);
  for (const std::string& req : required_backends()) {
    bool found = false;
    for (const BackendInfo& b : all)
      if (b.name == req) {
        found = true;
        EXPECT_TRUE(b.usable) << "required backend " << req
                              << " is not usable: " << b.detail;
      }
    EXPECT_TRUE(found) << "GPUSPEECH_REQUIRE_BACKENDS names unknown backend " << req;
  }
  return usable;
}

inline bool is_required_backend(const std::string& name) {
  for (const std::string& r : required_backends())
    if (r == name) return true;
  return false;
}

// list_backends(), probed once per run.
inline const std::vector<BackendInfo>& backend_infos() {
  static const std::vector<BackendInfo> infos = list_backends();
  return infos;
}

// One instance per backend for the whole run: device backends compile their
// kernels on first use, and doing that once keeps the suites fast.
inline Backend& shared_backend(const std::string& name) {
  static std::map<std::string, BackendPtr> opened;
  BackendPtr& b = opened[name];
  if (!b) b = open_backend(name, 0);
  return *b;
}

// The backend a parameterised device test runs on, or why there is none:
// `required` says whether that is a failure (a backend list_backends() does
// not know, or one GPUSPEECH_REQUIRE_BACKENDS names) rather than a skip.
// In SetUp():
//   const testing::BackendForTest b = testing::backend_for_test(GetParam());
//   if (!b.backend) { if (b.required) FAIL() << b.problem; GTEST_SKIP() << b.problem; }
struct BackendForTest {
  Backend* backend = nullptr;
  bool required = false;
  std::string problem;
};

inline BackendForTest backend_for_test(const std::string& name) {
  BackendForTest out;
  const BackendInfo* info = nullptr;
  for (const BackendInfo& i : backend_infos())
    if (i.name == name) info = &i;
  if (info == nullptr) {
    out.required = true;
    out.problem = "list_backends() does not list '" + name + "'";
  } else if (!info->usable) {
    out.required = is_required_backend(name);
    out.problem = out.required ? "backend '" + name +
                                     "' is required by GPUSPEECH_REQUIRE_BACKENDS but not usable: " +
                                     info->detail
                               : "backend '" + name + "' not usable here: " + info->detail;
  } else {
    out.backend = &shared_backend(name);
  }
  return out;
}

// Directory of test audio (pocketsphinx-testdata's data folder by default).
inline std::string audio_dir() {
  const char* env = std::getenv("GPUSPEECH_AUDIO_DIR");
  return env ? env : "/usr/share/pocketsphinx/test/data";
}

// Directory of the installed models (pocketsphinx-en-us's by default):
// en-us/en-us (acoustic model), en-us/cmudict-en-us.dict, en-us/*.lm.bin.
inline std::string model_dir() {
  const char* env = std::getenv("GPUSPEECH_MODEL_DIR");
  return env ? env : "/usr/share/pocketsphinx/model";
}

inline std::string data_dir() {
  const char* env = std::getenv("GPUSPEECH_TEST_DATA");
  return env ? env : "tests/data";
}

}  // namespace gpuspeech::testing
