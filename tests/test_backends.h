// Which backends a test runs on: every usable one. A backend named in
// GPUSPEECH_REQUIRE_BACKENDS (comma-separated, e.g. "opencl" in CI, "cuda"
// on the GPU machine) must be usable, or the test fails instead of skipping.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "common/backend_registry.h"

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
