// Kaldi's spk2utt files: which utterances belong to which speaker, for
// per-speaker adaptation (gpuspeech-transcribe --fmllr two-pass --spk2utt).
//
//    speaker1 utt1 utt2 utt3
//    speaker2 utt4
//
// One line per speaker: the speaker id, then one or more utterance ids,
// separated by spaces or tabs (a '\r' before the newline is tolerated).
// Lines that are empty or only whitespace are skipped. Every problem is a
// Spk2UttError "FILE:LINE: reason":
//  - a line with a speaker and no utterance;
//  - a speaker given on two lines, an utterance given twice (on one line or
//    two; both line numbers are named);
//  - a speaker id that cannot name a file: it is also the base name of the
//    speaker's transform file (DIR/<speaker>.mat), so '/', "." and ".." are
//    refused;
//  - a control character (other than tab and the '\r' above) or NUL.
// Whether the utterances exist is for the caller to check (utterance_line()
// gives the line to name).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuspeech {

class Spk2UttError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SpeakerMap {
  std::string source;                                // the file, for messages
  std::vector<std::string> speakers;                 // in file order
  std::vector<std::vector<std::string>> utterances;  // per speaker, in file order
  std::vector<int> speaker_lines;                    // 1-based line of each speaker

  // Index into speakers, or -1 when the utterance is not listed.
  int speaker_of(const std::string& utterance) const;
  // 1-based line that lists the utterance, or 0.
  int utterance_line(const std::string& utterance) const;

  // utterance -> (speaker index, line)
  std::map<std::string, std::pair<int, int>> index;
};

// `source` names the text in messages.
SpeakerMap parse_spk2utt(const std::string& text, const std::string& source);
// Reads and parses a file; Spk2UttError also when it cannot be read.
SpeakerMap read_spk2utt(const std::string& path);

}  // namespace gpuspeech
