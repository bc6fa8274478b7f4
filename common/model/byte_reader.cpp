#include "byte_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuspeech {

std::string read_model_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    throw ModelError(path + ": cannot read: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw ModelError(path + ": cannot read: not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path + ": cannot read: " + std::strerror(errno));
  std::string bytes;
  bytes.resize(static_cast<size_t>(st.st_size));
  if (!bytes.empty() && !in.read(&bytes[0], static_cast<std::streamsize>(bytes.size())))
    throw ModelError(path + ": cannot read: read error");
  return bytes;
}

bool model_file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

void ByteReader::fail(const std::string& why) const { fail_at(offset_, why); }

void ByteReader::fail_at(size_t offset, const std::string& why) const {
  throw ModelError(name_ + ": offset " + std::to_string(offset) + ": " + why);
}

void ByteReader::require(size_t n, const std::string& what) const {
  if (n > remaining()) {
    std::ostringstream os;
    os << "truncated: " << what << " needs " << n << " bytes, " << remaining()
       << " left in the file";
    fail(os.str());
  }
}

void ByteReader::skip(size_t n, const std::string& what) {
  require(n, what);
  offset_ += n;
}

void ByteReader::seek(size_t offset, const std::string& what) {
  if (offset > size_) fail("truncated: " + what + " lies beyond the end of the file");
  offset_ = offset;
}

uint8_t ByteReader::u8(const std::string& what) {
  require(1, what);
  return data_[offset_++];
}

uint16_t ByteReader::u16(const std::string& what) {
  require(2, what);
  const uint8_t* p = data_ + offset_;
  offset_ += 2;
  return big_endian_ ? static_cast<uint16_t>(p[0] << 8 | p[1])
                     : static_cast<uint16_t>(p[1] << 8 | p[0]);
}

uint32_t ByteReader::u32(const std::string& what) {
  require(4, what);
  const uint8_t* p = data_ + offset_;
  offset_ += 4;
  if (big_endian_) return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
  return uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0];
}

float ByteReader::f32(const std::string& what) {
  const uint32_t bits = u32(what);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

int32_t ByteReader::count(const std::string& what, int64_t max) {
  const size_t at = offset_;
  const int32_t v = i32(what);
  if (v < 0 || v > max)
    fail_at(at,
            what + " " + std::to_string(v) + " is out of range [0, " + std::to_string(max) + "]");
  return v;
}

}  // namespace gpuspeech
