#include "sendump.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "byte_reader.h"
#include "text_lines.h"  // quote_for_message

namespace gpuspeech {

namespace {

constexpr int32_t kMaxTitleLength = 999;  // pocketsphinx's byte-order test

// "key N" with N in [lo, hi]; false if `s` is not `key` followed by an
// integer (format descriptions such as "cluster_count centroids" are text,
// not values); an integer out of range is an error.
bool keyed_int(const std::string& s, const char* key, long lo, long hi, long& out, ByteReader& r,
               size_t at) {
  const size_t klen = std::strlen(key);
  if (s.compare(0, klen, key) != 0 || s.size() <= klen || s[klen] != ' ') return false;
  const std::string v = s.substr(klen + 1);
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size()) return false;
  if (errno != 0 || n < lo || n > hi)
    r.fail_at(at, "value out of range in header string " + quote_for_message(s));
  out = n;
  return true;
}

}  // namespace

double SendumpWeights::nats_per_step() const { return std::ldexp(std::log(log_base), shift); }

float SendumpWeights::log_weight(int senone, int stream, int gaussian) const {
  const size_t i = (size_t(stream) * density + gaussian) * num_senones + senone;
  return static_cast<float>(-double(quantized.at(i)) * nats_per_step());
}

SendumpWeights parse_sendump(const std::string& bytes, const std::string& name,
                             const SendumpShape& expected) {
  SendumpWeights w;
  ByteReader r(bytes, name);

  // Byte order: the one in which the title length is plausible.
  r.require(4, "title length");
  uint32_t n = r.u32("title length");
  if (n < 1 || n > kMaxTitleLength) {
    r.set_big_endian(true);
    r.seek(0, "title length");
    n = r.u32("title length");
    if (n < 1 || n > kMaxTitleLength)
      r.fail_at(0, "not a sendump file (title length out of 1..999 in both byte orders)");
  }
  w.big_endian = r.big_endian();

  long n_feat = expected.num_streams, n_density = expected.density, n_sen = expected.num_senones,
       n_clust = 0, n_bits = 8;
  double log_base = 1.0001;
  long shift = 10;
  for (int index = 0;; ++index) {
    const size_t at = r.offset();
    const int32_t len = index == 0 ? static_cast<int32_t>(n) : r.i32("header string length");
    if (len == 0 && index >= 2) break;
    if (len < 1 || size_t(len) > r.remaining())
      r.fail_at(at, "header string length " + std::to_string(len) + " out of range");
    const char* p = reinterpret_cast<const char*>(r.here());
    // Title and header must be NUL-terminated (pocketsphinx checks); the
    // strings after them need not be (en-us has a "!!!" pad).
    if (index < 2 && p[len - 1] != '\0')
      r.fail_at(at, index == 0 ? "title is not NUL-terminated" : "header is not NUL-terminated");
    std::string s(p, strnlen(p, size_t(len)));
    r.skip(size_t(len), "header string");
    w.header_strings.push_back(s);
    if (index < 2) continue;
    long v = 0;
    auto check_same = [&](long& field, const char* what) {
      if (field != 0 && field != v)
        r.fail_at(at, std::string(what) + " " + std::to_string(v) + " differs from the model's " +
                          std::to_string(field));
      field = v;
    };
    if (keyed_int(s, "feature_count", 1, 1 << 16, v, r, at))
      check_same(n_feat, "feature_count");
    else if (keyed_int(s, "mixture_count", 1, 1 << 24, v, r, at))
      check_same(n_density, "mixture_count");
    else if (keyed_int(s, "model_count", 1, 1 << 24, v, r, at))
      check_same(n_sen, "model_count");
    else if (keyed_int(s, "cluster_count", 0, 16, v, r, at))
      n_clust = v;
    else if (keyed_int(s, "cluster_bits", 1, 8, v, r, at))
      n_bits = v;
    else if (keyed_int(s, "mixw_shift", 0, 30, v, r, at))
      shift = v;
    else if (s.compare(0, 8, "logbase ") == 0) {
      char* end = nullptr;
      const char* c = s.c_str() + 8;
      const double b = std::strtod(c, &end);
      if (end != c && *end == '\0') {
        if (!(b > 1.0) || !(b < 2.0))
          r.fail_at(at, "value out of range in header string " + quote_for_message(s));
        log_base = b;
      }
    }
  }
  if (!(n_clust == 0 || n_clust == 15 || n_clust == 16))
    r.fail("cluster_count " + std::to_string(n_clust) + " (must be 0, 15 or 16)");
  if (n_clust == 15) n_clust = 16;  // as pocketsphinx: the 16th value is stored anyway
  if (!(n_bits == 8 || n_bits == 4))
    r.fail("cluster_bits " + std::to_string(n_bits) + " (must be 8 or 4)");
  if ((n_bits == 4) != (n_clust == 16))
    r.fail("cluster_bits " + std::to_string(n_bits) + " with cluster_count " +
           std::to_string(n_clust) + " (4-bit weights need 16 clusters and 8-bit none)");

  long rows = n_density, columns = n_sen;
  if (n_clust == 0) {
    const size_t at = r.offset();
    rows = r.i32("number of rows");
    columns = r.i32("number of columns");
    if (rows < 1 || columns < 1)
      r.fail_at(at, "rows " + std::to_string(rows) + " / columns " + std::to_string(columns) +
                        " must be positive");
    if (n_density != 0 && rows != n_density)
      r.fail_at(at, "rows (" + std::to_string(rows) + ") != Gaussians per codebook (" +
                        std::to_string(n_density) + ")");
    if (n_sen != 0 && columns < n_sen)
      r.fail_at(at, "columns (" + std::to_string(columns) + ") < senones (" +
                        std::to_string(n_sen) + ")");
    n_density = rows;
    if (n_sen == 0) n_sen = columns;
  }
  if (n_feat == 0) r.fail("number of feature streams unknown (no feature_count)");
  if (n_density == 0) r.fail("number of Gaussians unknown (no mixture_count)");
  if (n_sen == 0) r.fail("number of senones unknown (no model_count)");

  uint8_t clusters[16] = {0};
  if (n_clust) {
    r.require(16, "cluster values");
    std::memcpy(clusters, r.here(), 16);
    r.skip(16, "cluster values");
  }
  const long step = n_bits == 4 ? (columns + 1) / 2 : columns;
  // Three 31-bit counts from the file can overflow 64 bits.
  unsigned long long fd = 0, data = 0;
  if (__builtin_mul_overflow(static_cast<unsigned long long>(n_feat),
                             static_cast<unsigned long long>(n_density), &fd) ||
      __builtin_mul_overflow(fd, static_cast<unsigned long long>(step), &data) ||
      data != r.remaining())
    r.fail(std::to_string(r.remaining()) + " bytes of weights where " + std::to_string(n_feat) +
           " streams x " + std::to_string(n_density) + " Gaussians x " + std::to_string(step) +
           " bytes are needed");

  w.num_streams = static_cast<int>(n_feat);
  w.density = static_cast<int>(n_density);
  w.num_senones = static_cast<int>(n_sen);
  w.log_base = log_base;
  w.shift = static_cast<int>(shift);
  w.cluster_bits = static_cast<int>(n_bits);
  w.quantized.resize(size_t(n_feat) * n_density * n_sen);
  uint8_t* out = w.quantized.data();
  for (long row = 0; row < n_feat * n_density; ++row) {
    const uint8_t* in = r.here();
    if (n_bits == 8) {
      std::memcpy(out, in, size_t(n_sen));
    } else {
      for (long s = 0; s < n_sen; ++s)
        out[s] = clusters[(s & 1) ? in[s / 2] >> 4 : in[s / 2] & 0x0f];
    }
    out += n_sen;
    r.skip(size_t(step), "weights");
  }
  return w;
}

}  // namespace gpuspeech
