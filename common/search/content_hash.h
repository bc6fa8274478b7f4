// A fast 128-bit non-cryptographic hash of byte streams: the checksum of
// search graph files and the cache key of compiled graphs (the hash of the
// model, dictionary and grammar bytes plus the compile options). It guards
// against corruption and stale caches, not against an adversary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpuspeech {

class ContentHasher {
 public:
  void update(const void* data, size_t size);
  void update(const std::string& s);
  // A length-prefixed field, so that ("ab","c") and ("a","bc") differ.
  void update_field(const std::string& s);
  void update_u64(uint64_t v);
  // Reads the whole file into the hash; throws std::runtime_error
  // "FILE: reason" when it cannot be read.
  void update_file(const std::string& path);

  // 32 lowercase hex digits; the hasher may keep being updated afterwards.
  std::string hex() const;
  uint64_t low64() const;

 private:
  void mix_word(uint64_t w);
  void finish(uint64_t* a, uint64_t* b) const;
  uint64_t a_ = 0x6a09e667f3bcc908ULL;
  uint64_t b_ = 0xbb67ae8584caa73bULL;
  uint64_t length_ = 0;
  uint8_t pending_[8] = {};
  size_t pending_size_ = 0;
};

}  // namespace gpuspeech
