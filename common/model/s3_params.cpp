#include "s3_params.h"

#include <cctype>
#include <climits>
#include <cstdio>
#include <cstring>

#include "byte_reader.h"
#include "text_lines.h"  // quote_for_message

namespace gpuspeech {

namespace {

constexpr uint32_t kByteOrderMagic = 0x11223344u;

// Splits [start, end) into whitespace-separated words.
std::vector<std::string> words_of(const std::string& s, size_t start, size_t end) {
  std::vector<std::string> out;
  size_t i = start;
  while (i < end) {
    while (i < end && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t w = i;
    while (i < end && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > w) out.emplace_back(s, w, i - w);
  }
  return out;
}

// a x b x c, or INT64_MAX when that overflows: each count is bounded by the
// file size, their product is not.
int64_t product(int64_t a, int64_t b, int64_t c) {
  int64_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return INT64_MAX;
  return abc;
}

// The body after the header: 32-bit reads that also feed the checksum.
class S3Body {
 public:
  S3Body(const std::string& bytes, const std::string& name, const S3Header& h)
      : r_(bytes, name), checksum_(h.has_checksum) {
    r_.set_big_endian(h.big_endian);
    r_.seek(h.data_offset, "data");
  }

  ByteReader& reader() { return r_; }

  uint32_t u32(const std::string& what) {
    const uint32_t v = r_.u32(what);
    sum_ = ((sum_ << 20) | (sum_ >> 12)) + v;
    return v;
  }
  int32_t count(const std::string& what, int64_t min, int64_t max) {
    const size_t at = r_.offset();
    const int32_t v = static_cast<int32_t>(u32(what));
    if (v < min || v > max)
      r_.fail_at(at, what + " " + std::to_string(v) + " is out of range [" + std::to_string(min) +
                         ", " + std::to_string(max) + "]");
    return v;
  }
  // Reads the array-size word, checks it equals `expected` and that the
  // floats are present, then reads them.
  std::vector<float> floats(int64_t expected, const std::string& what) {
    const size_t at = r_.offset();
    const int32_t n = static_cast<int32_t>(u32("number of values"));
    if (int64_t(n) != expected)
      r_.fail_at(at, "number of values " + std::to_string(n) + " does not match the " + what +
                         " dimensions (" + std::to_string(expected) + ")");
    r_.require(size_t(n) * 4, std::to_string(n) + " float32 values");
    std::vector<float> v(static_cast<size_t>(n));
    for (float& f : v) {
      const uint32_t bits = u32("value");
      std::memcpy(&f, &bits, sizeof f);
    }
    return v;
  }
  // Verifies the checksum (if any) and that nothing follows.
  void finish() {
    if (checksum_) {
      const size_t at = r_.offset();
      const uint32_t computed = sum_;
      const uint32_t stored = r_.u32("checksum");
      if (stored != computed) {
        char buf[96];
        std::snprintf(buf, sizeof buf, "checksum mismatch: file has %08x, data gives %08x", stored,
                      computed);
        r_.fail_at(at, buf);
      }
    }
    if (r_.remaining() != 0)
      r_.fail(std::to_string(r_.remaining()) + " unexpected bytes after the data");
  }

 private:
  ByteReader r_;
  bool checksum_;
  uint32_t sum_ = 0;
};

}  // namespace

const std::string* S3Header::find(const std::string& key) const {
  for (const auto& kv : fields)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

S3Header parse_s3_header(const std::string& bytes, const std::string& name) {
  S3Header h;
  size_t pos = 0;
  int line = 0;
  auto fail = [&](const std::string& why) -> void {
    throw ModelError(name + ":" + std::to_string(line) + ": " + why);
  };
  // Next line as [start, end) without its newline; false at end of file.
  auto next_line = [&](size_t& start, size_t& end) {
    if (pos >= bytes.size()) return false;
    const size_t nl = bytes.find('\n', pos);
    if (nl == std::string::npos) return false;  // a header line always ends in \n
    start = pos;
    end = nl;
    pos = nl + 1;
    ++line;
    return true;
  };
  size_t start = 0, end = 0;
  if (!next_line(start, end)) fail("not a Sphinx parameter file (no header line)");
  if (end - start == 2 && bytes.compare(start, 2, "s3") == 0) {
    for (;;) {
      if (!next_line(start, end)) fail("truncated header: no 'endhdr' line");
      const std::vector<std::string> w = words_of(bytes, start, end);
      if (w.empty()) fail("empty header line");
      if (w[0] == "endhdr") break;
      if (w[0][0] == '#') continue;
      if (w.size() < 2) fail("header key " + quote_for_message(w[0]) + " has no value");
      h.fields.emplace_back(w[0], w[1]);
      if (w[0] == "chksum0") h.has_checksum = true;
    }
  } else {
    // Old format: a version line, comments up to "*end_comment*".
    const std::vector<std::string> w = words_of(bytes, start, end);
    if (w.empty()) fail("not a Sphinx parameter file (empty first line)");
    h.fields.emplace_back("version", w[0]);
    for (;;) {
      if (!next_line(start, end))
        fail("not a Sphinx parameter file (no \"s3\" line and no '*end_comment*')");
      if (bytes.compare(start, end - start, "*end_comment*") == 0) break;
    }
  }
  ByteReader r(bytes, name);
  r.seek(pos, "byte-order magic");
  const uint32_t magic = r.u32("byte-order magic");
  if (magic == kByteOrderMagic) {
    h.big_endian = false;
  } else if (__builtin_bswap32(magic) == kByteOrderMagic) {
    h.big_endian = true;
  } else {
    char buf[80];
    std::snprintf(buf, sizeof buf, "bad byte-order magic %08x (expected 11223344)", magic);
    r.fail_at(pos, buf);
  }
  h.data_offset = r.offset();
  return h;
}

size_t GaussianParams::index(int codebook, int stream, int gaussian) const {
  size_t per_codebook = 0, before = 0;
  for (int f = 0; f < num_streams; ++f) {
    per_codebook += size_t(density) * stream_dims[f];
    if (f < stream) before += size_t(density) * stream_dims[f];
  }
  return size_t(codebook) * per_codebook + before + size_t(gaussian) * stream_dims[stream];
}

GaussianParams parse_gaussian_params(const std::string& bytes, const std::string& name) {
  GaussianParams g;
  g.header = parse_s3_header(bytes, name);
  S3Body body(bytes, name, g.header);
  const int64_t room = int64_t(body.reader().remaining() / 4);
  g.num_codebooks = body.count("number of codebooks", 1, room);
  g.num_streams = body.count("number of feature streams", 1, room);
  g.density = body.count("number of Gaussians per codebook", 1, room);
  int64_t total_dim = 0;
  for (int f = 0; f < g.num_streams; ++f) {
    g.stream_dims.push_back(body.count("dimension of stream " + std::to_string(f), 1, room));
    total_dim += g.stream_dims.back();
  }
  const int64_t n = product(g.num_codebooks, g.density, total_dim);
  if (n > INT32_MAX) body.reader().fail("codebook dimensions give more than 2^31 values");
  g.values = body.floats(n, "codebooks x Gaussians x total dimension");
  body.finish();
  return g;
}

MixtureWeightParams parse_mixture_weights(const std::string& bytes, const std::string& name) {
  MixtureWeightParams m;
  m.header = parse_s3_header(bytes, name);
  S3Body body(bytes, name, m.header);
  const int64_t room = int64_t(body.reader().remaining() / 4);
  m.num_senones = body.count("number of senones", 1, room);
  m.num_streams = body.count("number of feature streams", 1, room);
  m.density = body.count("number of Gaussians per senone", 1, room);
  const int64_t n = product(m.num_senones, m.num_streams, m.density);
  if (n > INT32_MAX) body.reader().fail("dimensions give more than 2^31 values");
  m.values = body.floats(n, "senones x streams x Gaussians");
  body.finish();
  return m;
}

TransitionMatrixParams parse_transition_matrices(const std::string& bytes,
                                                 const std::string& name) {
  TransitionMatrixParams t;
  t.header = parse_s3_header(bytes, name);
  S3Body body(bytes, name, t.header);
  const int64_t room = int64_t(body.reader().remaining() / 4);
  t.num_tmats = body.count("number of transition matrices", 1, room);
  t.num_from = body.count("number of source states", 1, room);
  const size_t at = body.reader().offset();
  t.num_to = body.count("number of destination states", 1, room);
  if (t.num_to != t.num_from + 1)
    body.reader().fail_at(at, "destination states (" + std::to_string(t.num_to) +
                                  ") must be source states (" + std::to_string(t.num_from) +
                                  ") + 1");
  const int64_t n = product(t.num_tmats, t.num_from, t.num_to);
  if (n > INT32_MAX) body.reader().fail("dimensions give more than 2^31 values");
  t.values = body.floats(n, "matrices x rows x columns");
  body.finish();
  return t;
}

}  // namespace gpuspeech
