#include "common/dtw/projection_catalog.h"

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace gpuspeech {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The first "key=value" item of two signatures that differs, as "key:
// templates X, map Y" (the signatures list their keys in one order).
std::string first_difference(const std::string& wanted, const std::string& offered) {
  auto items = [](const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string item; std::getline(in, item, ';');) out.push_back(item);
    return out;
  };
  const std::vector<std::string> a = items(wanted), b = items(offered);
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const std::string x = i < a.size() ? a[i] : "(nothing)";
    const std::string y = i < b.size() ? b[i] : "(nothing)";
    if (x != y) return "templates " + x + ", map " + y;
  }
  return "";
}

}  // namespace

std::vector<std::string> shipped_dtw_projection_dirs() {
  std::vector<std::string> dirs;
#ifdef GPUSPEECH_DTW_PROJECTION_DIRS
  std::istringstream list(GPUSPEECH_DTW_PROJECTION_DIRS);
  std::error_code ec;
  for (std::string dir; std::getline(list, dir, ':');)
    if (!dir.empty() && std::filesystem::is_directory(dir, ec)) dirs.push_back(dir);
#endif
  return dirs;
}

DtwProjection find_dtw_projection(const std::vector<std::string>& paths, const std::string& frame_signature) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      std::vector<std::string> in_dir;
      for (const auto& e : std::filesystem::directory_iterator(p, ec))
        if (ends_with(e.path().filename().string(), kDtwProjectionSuffix)) in_dir.push_back(e.path().string());
      if (ec) throw std::runtime_error(p + ": cannot list the directory: " + ec.message());
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(p);
    }
  }
  std::string seen;
  for (const std::string& f : files) {
    DtwProjection p = load_dtw_projection(f);
    if (p.features == frame_signature) return p;
    seen += "\n  " + f + ": " + first_difference(frame_signature, p.features);
  }
  if (files.empty())
    throw std::runtime_error("no DTW projection map to look in (give a map file or directory; "
                             "gpuspeech-dtw --learn-projection learns one)");
  throw std::runtime_error("no DTW projection map was learnt on these features (learn one with "
                           "gpuspeech-dtw --learn-projection); the maps seen differ:" + seen);
}

}  // namespace gpuspeech
