#include "common/file_identity.h"

#include <sys/stat.h>

namespace gpuspeech {

void append_file_identity(std::string& key, const std::string& path) {
  key += path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    key += "=absent;";
    return;
  }
  key += "=" + std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino)) + ":" +
         std::to_string(static_cast<long long>(st.st_size)) + ":" +
         std::to_string(static_cast<long long>(st.st_mtim.tv_sec)) + "." +
         std::to_string(static_cast<long long>(st.st_mtim.tv_nsec)) + ";";
}

}  // namespace gpuspeech
