#include "common/search/content_hash.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gpuspeech {

namespace {

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// The 64-bit finaliser of MurmurHash3 (public domain): every input bit
// affects every output bit.
inline uint64_t fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

inline uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

void ContentHasher::mix_word(uint64_t w) {
  // Two lanes with different multipliers and rotations: 128 bits of state.
  a_ = rotl(a_ ^ (w * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL + 0x52dce729;
  b_ = rotl(b_ + (w * 0x4cf5ad432745937fULL), 27) * 0x87c37b91114253d5ULL ^ a_;
}

void ContentHasher::update(const void* data, size_t size) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  length_ += size;
  while (size > 0 && pending_size_ > 0) {
    pending_[pending_size_++] = *p++;
    --size;
    if (pending_size_ == 8) {
      mix_word(load_le64(pending_));
      pending_size_ = 0;
    }
  }
  while (size >= 8) {
    mix_word(load_le64(p));
    p += 8;
    size -= 8;
  }
  while (size > 0) {
    pending_[pending_size_++] = *p++;
    --size;
  }
}

void ContentHasher::update(const std::string& s) { update(s.data(), s.size()); }

void ContentHasher::update_field(const std::string& s) {
  update_u64(s.size());
  update(s);
}

void ContentHasher::update_u64(uint64_t v) {
  uint8_t bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<uint8_t>(v >> (8 * i));
  update(bytes, 8);
}

void ContentHasher::update_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> buf(1 << 20);
  for (;;) {
    size_t n = std::fread(buf.data(), 1, buf.size(), f);
    if (n > 0) update(buf.data(), n);
    if (n < buf.size()) {
      bool failed = std::ferror(f) != 0;
      std::fclose(f);
      if (failed) throw std::runtime_error(path + ": read error");
      return;
    }
  }
}

void ContentHasher::finish(uint64_t* out_a, uint64_t* out_b) const {
  // Finalise copies: the tail bytes and the length go in last.
  uint64_t a = a_, b = b_;
  uint64_t tail = 0;
  for (size_t i = 0; i < pending_size_; ++i) tail |= static_cast<uint64_t>(pending_[i]) << (8 * i);
  a ^= fmix(tail + 0x9e3779b97f4a7c15ULL);
  b ^= fmix(length_);
  a += b;
  b += a;
  a = fmix(a);
  b = fmix(b);
  a += b;
  b += a;
  *out_a = a;
  *out_b = b;
}

uint64_t ContentHasher::low64() const {
  uint64_t a, b;
  finish(&a, &b);
  return a;
}

std::string ContentHasher::hex() const {
  uint64_t a, b;
  finish(&a, &b);
  static const char* digits = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[i] = digits[(a >> (60 - 4 * i)) & 15];
    out[16 + i] = digits[(b >> (60 - 4 * i)) & 15];
  }
  return out;
}

}  // namespace gpuspeech
