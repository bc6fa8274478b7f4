// Bounds-checked reading of little- or big-endian binary model files held in
// memory. Every read checks the bytes are there first; a short or corrupt
// file becomes ModelError("NAME: offset N: what was expected"), never a read
// past the end. Parsers take (bytes, name) so that tests and fuzzers can
// feed them memory; read_model_file() loads a file for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model_error.h"

namespace gpuspeech {

// The whole file as bytes. ModelError("PATH: cannot read: reason") if it is
// missing, not a regular file or unreadable.
std::string read_model_file(const std::string& path);

// True if `path` names an existing regular file.
bool model_file_exists(const std::string& path);

class ByteReader {
 public:
  ByteReader(const std::string& bytes, const std::string& name)
      : ByteReader(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name) {}
  ByteReader(const uint8_t* data, size_t size, const std::string& name)
      : data_(data), size_(size), name_(name) {}

  void set_big_endian(bool big) { big_endian_ = big; }
  bool big_endian() const { return big_endian_; }

  size_t offset() const { return offset_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - offset_; }
  const uint8_t* here() const { return data_ + offset_; }
  const std::string& name() const { return name_; }

  // Fails unless `n` more bytes are available; `what` names them.
  void require(size_t n, const std::string& what) const;
  void skip(size_t n, const std::string& what);
  void seek(size_t offset, const std::string& what);

  uint8_t u8(const std::string& what);
  uint16_t u16(const std::string& what);
  uint32_t u32(const std::string& what);
  int16_t i16(const std::string& what) { return static_cast<int16_t>(u16(what)); }
  int32_t i32(const std::string& what) { return static_cast<int32_t>(u32(what)); }
  float f32(const std::string& what);
  // A count: an int32 in [0, max]; fails naming `what` otherwise.
  int32_t count(const std::string& what, int64_t max);

  // Fails with "NAME: offset O: why" (O defaults to the current offset).
  [[noreturn]] void fail(const std::string& why) const;
  [[noreturn]] void fail_at(size_t offset, const std::string& why) const;

 private:
  const uint8_t* data_;
  size_t size_;
  std::string name_;
  size_t offset_ = 0;
  bool big_endian_ = false;
};

}  // namespace gpuspeech
