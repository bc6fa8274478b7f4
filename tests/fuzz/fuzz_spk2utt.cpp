// libFuzzer target: Kaldi spk2utt files (common/fmllr/spk2utt.h, read by
// gpuspeech-transcribe --spk2utt) on arbitrary bytes. Every input must either
// parse or throw Spk2UttError "fuzz.spk2utt:LINE: ..." with LINE a line the
// input has. A parsed map must keep the promises of the header (speakers
// unique and usable as file names, every speaker with utterances, every
// utterance listed once and found by the index at its speaker and line), and
// writing it back out must parse to the same map. Anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

#include "common/fmllr/spk2utt.h"

namespace {

const char kSource[] = "fuzz.spk2utt";

// A field as the parser splits them: non-empty, no separator or control byte.
bool plain_field(const std::string& f) {
  if (f.empty()) return false;
  for (const char c : f) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return false;  // control bytes and the space
  }
  return true;
}

void check(const gpuspeech::SpeakerMap& m, int num_lines) {
  if (m.source != kSource) __builtin_trap();
  const size_t n = m.speakers.size();
  if (m.utterances.size() != n || m.speaker_lines.size() != n) __builtin_trap();
  std::set<std::string> speakers;
  size_t total = 0;
  for (size_t s = 0; s < n; ++s) {
    const std::string& spk = m.speakers[s];
    if (!plain_field(spk) || spk.find('/') != std::string::npos || spk == "." || spk == "..")
      __builtin_trap();
    if (!speakers.insert(spk).second) __builtin_trap();
    const int line = m.speaker_lines[s];
    if (line < 1 || line > num_lines) __builtin_trap();
    if (s > 0 && line <= m.speaker_lines[s - 1]) __builtin_trap();
    if (m.utterances[s].empty()) __builtin_trap();
    for (const std::string& utt : m.utterances[s]) {
      if (!plain_field(utt)) __builtin_trap();
      if (m.speaker_of(utt) != static_cast<int>(s)) __builtin_trap();
      if (m.utterance_line(utt) != line) __builtin_trap();
      ++total;
    }
  }
  if (m.index.size() != total) __builtin_trap();  // no utterance twice
  if (m.speaker_of("") != -1 || m.utterance_line("") != 0) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string text(reinterpret_cast<const char*>(data), size);
  int num_lines = 1;
  for (const char c : text) num_lines += c == '\n';

  SpeakerMap m;
  try {
    m = parse_spk2utt(text, kSource);
  } catch (const Spk2UttError& e) {
    const std::string what = e.what();
    const std::string prefix = std::string(kSource) + ":";
    if (what.rfind(prefix, 0) != 0) __builtin_trap();
    const long line = std::strtol(what.c_str() + prefix.size(), nullptr, 10);
    if (line < 1 || line > num_lines) __builtin_trap();
    return 0;
  }
  check(m, num_lines);

  // Written back one speaker a line, it must read as the same map.
  std::string out;
  for (size_t s = 0; s < m.speakers.size(); ++s) {
    out += m.speakers[s];
    for (const std::string& utt : m.utterances[s]) out += ' ' + utt;
    out += '\n';
  }
  const SpeakerMap back = parse_spk2utt(out, kSource);
  if (back.speakers != m.speakers || back.utterances != m.utterances) __builtin_trap();
  return 0;
}
