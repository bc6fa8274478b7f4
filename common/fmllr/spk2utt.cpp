#include "common/fmllr/spk2utt.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuspeech {

int SpeakerMap::speaker_of(const std::string& utterance) const {
  const auto it = index.find(utterance);
  return it == index.end() ? -1 : it->second.first;
}

int SpeakerMap::utterance_line(const std::string& utterance) const {
  const auto it = index.find(utterance);
  return it == index.end() ? 0 : it->second.second;
}

namespace {

[[noreturn]] void fail(const std::string& source, int line, const std::string& why) {
  throw Spk2UttError(source + ":" + std::to_string(line) + ": " + why);
}

}  // namespace

SpeakerMap parse_spk2utt(const std::string& text, const std::string& source) {
  SpeakerMap map;
  map.source = source;
  std::map<std::string, int> speaker_line;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line_no;
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();

    std::vector<std::string> fields;
    std::string field;
    for (const char c : line) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (c == ' ' || c == '\t') {
        if (!field.empty()) fields.push_back(std::move(field));
        field.clear();
      } else if (u < 0x20 || u == 0x7f) {
        fail(source, line_no, "control character 0x" +
                                  std::string(1, "0123456789abcdef"[u >> 4]) +
                                  std::string(1, "0123456789abcdef"[u & 15]) +
                                  " (not a text spk2utt file?)");
      } else {
        field.push_back(c);
      }
    }
    if (!field.empty()) fields.push_back(std::move(field));
    if (fields.empty()) continue;

    const std::string& speaker = fields[0];
    if (fields.size() < 2)
      fail(source, line_no, "speaker '" + speaker + "' has no utterances (expected \"speaker utt1 utt2 ...\")");
    if (speaker.find('/') != std::string::npos || speaker == "." || speaker == "..")
      fail(source, line_no, "speaker id '" + speaker +
                                "' cannot name a transform file (it contains '/' or is '.' or '..')");
    const auto seen = speaker_line.find(speaker);
    if (seen != speaker_line.end())
      fail(source, line_no, "speaker '" + speaker + "' already has a line (line " +
                                std::to_string(seen->second) + ")");
    speaker_line[speaker] = line_no;
    const int s = static_cast<int>(map.speakers.size());
    map.speakers.push_back(speaker);
    map.speaker_lines.push_back(line_no);
    map.utterances.emplace_back();
    for (size_t k = 1; k < fields.size(); ++k) {
      const auto [it, added] = map.index.emplace(fields[k], std::make_pair(s, line_no));
      if (!added)
        fail(source, line_no, "utterance '" + fields[k] + "' is listed twice (also on line " +
                                  std::to_string(it->second.second) + ", speaker '" +
                                  map.speakers[static_cast<size_t>(it->second.first)] + "')");
      map.utterances.back().push_back(fields[k]);
    }
  }
  return map;
}

SpeakerMap read_spk2utt(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Spk2UttError(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Spk2UttError(path + ": read error");
  return parse_spk2utt(ss.str(), path);
}

}  // namespace gpuspeech
