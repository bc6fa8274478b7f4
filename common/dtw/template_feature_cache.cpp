#include "common/dtw/template_feature_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace gpuspeech {
namespace {

constexpr char kMagic[8] = {'G', 'S', 'D', 'T', 'W', 'F', '1', '\0'};
constexpr size_t kHeaderBytes = 8 + 8 + 4 + 4;
// No template comes near this many values (an hour of 39-value frames is
// 14 M); the bound keeps rows * dim * 4 far from overflow.
constexpr int64_t kMaxValues = int64_t{1} << 30;

}  // namespace

std::vector<uint8_t> dtw_feature_cache_bytes(const FeatureMatrix& features, int syllables) {
  const int64_t rows = features.rows;
  const int32_t dim = features.dim, count = syllables;
  std::vector<uint8_t> out(kHeaderBytes + features.data.size() * sizeof(float));
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, 8);
  std::memcpy(p + 8, &rows, 8);
  std::memcpy(p + 16, &dim, 4);
  std::memcpy(p + 20, &count, 4);
  if (!features.data.empty())
    std::memcpy(p + kHeaderBytes, features.data.data(), features.data.size() * sizeof(float));
  return out;
}

bool parse_dtw_feature_cache(const uint8_t* data, size_t size, FeatureMatrix* features,
                             int* syllables) {
  if (size < kHeaderBytes || std::memcmp(data, kMagic, 8) != 0) return false;
  int64_t rows;
  int32_t dim, count;
  std::memcpy(&rows, data + 8, 8);
  std::memcpy(&dim, data + 16, 4);
  std::memcpy(&count, data + 20, 4);
  if (rows < 1 || dim < 1 || count < 0 || rows > kMaxValues / dim) return false;
  const size_t values = static_cast<size_t>(rows) * static_cast<size_t>(dim);
  if (size - kHeaderBytes != values * sizeof(float)) return false;
  std::vector<float> v(values);
  std::memcpy(v.data(), data + kHeaderBytes, values * sizeof(float));
  for (float x : v)
    if (!std::isfinite(x)) return false;
  features->rows = rows;
  features->dim = dim;
  features->data = std::move(v);
  *syllables = count;
  return true;
}

bool read_dtw_feature_cache(const std::string& path, FeatureMatrix* features, int* syllables) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  struct stat st;
  std::vector<uint8_t> bytes;
  // The size first, so that a damaged entry's counts never size a buffer.
  const bool sized = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
                     static_cast<uint64_t>(st.st_size) <=
                         kHeaderBytes + static_cast<uint64_t>(kMaxValues) * sizeof(float);
  if (sized) {
    bytes.resize(static_cast<size_t>(st.st_size));
    const bool read = std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size() &&
                      std::fgetc(f) == EOF;  // (grown since: not an entry)
    std::fclose(f);
    return read && parse_dtw_feature_cache(bytes.data(), bytes.size(), features, syllables);
  }
  std::fclose(f);
  return false;
}

void write_dtw_feature_cache(const std::string& path, const FeatureMatrix& features, int syllables,
                             std::vector<std::string>* log) {
  const std::vector<uint8_t> bytes = dtw_feature_cache_bytes(features, syllables);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr;
  if (ok) {
    ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fclose(f) == 0 && ok;
  }
  if (!ok) {
    if (log) log->push_back(path + ": could not write the cache entry (continuing without)");
    std::remove(tmp.c_str());
    return;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

}  // namespace gpuspeech
