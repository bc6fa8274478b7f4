// The binary files of the graph cache (search_graph.h's graph, and
// ngram_image.h's pruned LM): fields little-endian, the file's last 8
// bytes a checksum of every byte before them (ContentHasher::low64), and
// files written whole under a temporary name, then renamed, so that a
// reader never sees half of one.
//
// The reader takes its bytes once, in order, from a ByteSource: a buffer
// in memory (a parser's input, as fuzzed) or an open file, whose arrays are
// read straight into their final storage (no staging copy of a 400 MB
// graph). It checks that each read fits in what is left of the file, and
// a parser checks its header's counts against the file's size before it
// allocates anything.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/search/content_hash.h"

namespace gpuspeech {

constexpr bool host_is_little_endian() {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return false;
#else
  return true;
#endif
}

template <typename T>
T byteswap_value(T v) {
  uint8_t b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  std::memcpy(&v, b, sizeof(T));
  return v;
}

// Asks the kernel to back the whole 2 MB pages inside [p, p + bytes) with
// huge pages (transparent huge pages in "madvise" mode, the default of
// Debian and Ubuntu). The en-us graph's arrays are 400 MB, written once as
// they load: with 4 KB pages that is 100 000 page faults, which on a
// virtual machine cost more than the copying. Advice only: where it is
// refused, nothing changes.
void advise_huge_pages(void* p, size_t bytes);

// Appends values in little-endian order.
class CacheFileWriter {
 public:
  template <typename T>
  void put(T v) {
    if (!host_is_little_endian()) v = byteswap_value(v);
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  template <typename T>
  void put_array(const std::vector<T>& v) {
    if (host_is_little_endian()) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
      bytes.insert(bytes.end(), p, p + v.size() * sizeof(T));
    } else {
      for (T x : v) put(x);
    }
  }
  void put_bytes(const std::string& s) { bytes.insert(bytes.end(), s.begin(), s.end()); }
  void put_bytes(const char* s, size_t n) { bytes.insert(bytes.end(), s, s + n); }
  // Appends the checksum of every byte so far: the file is complete.
  void put_checksum();
  std::vector<uint8_t> bytes;
};

// Writes `bytes` to PATH.tmpPID and renames it to `path`. Throws
// std::runtime_error "PATH: reason".
void write_file_atomically(const std::string& path, const void* bytes, size_t size);

// Where a parser's bytes come from, read once, in order.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Copies the next n bytes to dst; false when fewer than n remain.
  virtual bool read(void* dst, size_t n) = 0;
};

class MemorySource : public ByteSource {
 public:
  MemorySource(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool read(void* dst, size_t n) override;

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  explicit FileSource(FILE* f) : f_(f) {}
  bool read(void* dst, size_t n) override;

 private:
  FILE* f_;
};

// The size of an open regular file; false for anything else.
bool regular_file_size(FILE* f, size_t* size);

// Opens `path` for a parser: calls parse(source, size) with the file as a
// FileSource and closes it, however parse ends. Throws std::runtime_error
// "PATH: cannot open: ..." or "PATH: not a regular file".
template <typename Parse>
auto parse_cache_file(const std::string& path, Parse parse) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  size_t size = 0;
  if (!regular_file_size(f, &size)) {
    std::fclose(f);
    throw std::runtime_error(path + ": not a regular file");
  }
  FileSource source(f);
  try {
    auto result = parse(source, size);
    std::fclose(f);
    return result;
  } catch (...) {
    std::fclose(f);
    throw;
  }
}

// Reads a file's fields in order from a source of `size` bytes, hashing
// every byte it reads for the checksum at the end. Failures throw
// std::runtime_error "NAME: why (at byte N)".
class CacheFileReader {
 public:
  CacheFileReader(ByteSource& source, size_t size, const std::string& name)
      : source_(source), size_(size), name_(name) {}
  [[noreturn]] void fail(const std::string& why) const;
  size_t remaining() const { return size_ - pos_; }
  size_t pos() const { return pos_; }
  template <typename T>
  T get(const char* what) {
    T v;
    take(&v, sizeof(T), what);
    return host_is_little_endian() ? v : byteswap_value(v);
  }
  template <typename T>
  void get_array(std::vector<T>& out, uint64_t count, const char* what) {
    if (count > remaining() / sizeof(T)) fail(std::string("truncated reading ") + what);
    out.reserve(static_cast<size_t>(count));
    advise_huge_pages(out.data(), static_cast<size_t>(count) * sizeof(T));
    out.resize(static_cast<size_t>(count));
    take(out.data(), static_cast<size_t>(count) * sizeof(T), what);
    if (!host_is_little_endian())
      for (T& x : out) x = byteswap_value(x);
  }
  std::string get_string(uint64_t n, const char* what);
  // Reads the stored checksum, the file's last 8 bytes, and compares it
  // with the hash of every byte read before it.
  bool checksum_matches();

 private:
  void take(void* dst, size_t n, const char* what);
  ByteSource& source_;
  size_t size_;
  std::string name_;
  size_t pos_ = 0;
  ContentHasher hash_;
};

}  // namespace gpuspeech
