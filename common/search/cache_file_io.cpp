#include "common/search/cache_file_io.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpuspeech {

void advise_huge_pages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

void CacheFileWriter::put_checksum() {
  ContentHasher h;
  h.update(bytes.data(), bytes.size());
  put<uint64_t>(h.low64());
}

void write_file_atomically(const std::string& path, const void* bytes, size_t size) {
  const std::string tmp = path + ".tmp" + std::to_string(static_cast<long>(getpid()));
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  const size_t n = size ? std::fwrite(bytes, 1, size, f) : 0;
  bool ok = n == size;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": write failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename into place: " + std::strerror(e));
  }
}

bool MemorySource::read(void* dst, size_t n) {
  if (n > size_ - pos_) return false;
  if (n) std::memcpy(dst, data_ + pos_, n);
  pos_ += n;
  return true;
}

bool FileSource::read(void* dst, size_t n) {
  return n == 0 || std::fread(dst, 1, n, f_) == n;  // (large reads bypass stdio's buffer)
}

bool regular_file_size(FILE* f, size_t* size) {
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = static_cast<size_t>(st.st_size);
  return true;
}

void CacheFileReader::fail(const std::string& why) const {
  throw std::runtime_error(name_ + ": " + why + " (at byte " + std::to_string(pos_) + ")");
}

std::string CacheFileReader::get_string(uint64_t n, const char* what) {
  if (n > remaining()) fail(std::string("truncated reading ") + what);
  std::string s(static_cast<size_t>(n), '\0');
  take(s.data(), s.size(), what);
  return s;
}

bool CacheFileReader::checksum_matches() {
  if (remaining() != 8) fail("checksum is not at the end of the file");
  uint8_t b[8];
  if (!source_.read(b, 8)) fail("truncated reading checksum");
  pos_ += 8;
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored |= uint64_t{b[i]} << (8 * i);
  return stored == hash_.low64();
}

void CacheFileReader::take(void* dst, size_t n, const char* what) {
  if (n > remaining() || !source_.read(dst, n)) fail(std::string("truncated reading ") + what);
  hash_.update(dst, n);
  pos_ += n;
}

}  // namespace gpuspeech
