// Keyphrase lists for keyword spotting (pocketsphinx -kws): one phrase per
// line, optionally ending with its detection threshold between slashes:
//
//   oh mighty computer /1e-40/
//   hello world
//
// The threshold is a probability (pocketsphinx takes its log); a phrase
// without one uses the decoder's default (-kws_threshold, 1 in pocketsphinx).
// Lines are trimmed; blank lines and lines starting with '#' are skipped.
//
// pocketsphinx accepts anything and lets the dictionary lookup reject what
// it cannot use; here a malformed line (a '/' that does not close a
// "/number/" at the end of the line, a threshold that is not a positive
// number) is reported with its line number: as a ModelError when `strict`,
// else as a warning with the line skipped (Debian's goforward.kws has two
// such lines on purpose).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuspeech {

struct Keyphrase {
  std::vector<std::string> words;
  std::optional<double> threshold;  // probability; unset: the default
  long line = 0;
  std::string text() const;  // the words joined by single spaces
};

struct KeyphraseList {
  std::string source;
  std::vector<Keyphrase> phrases;
  std::vector<std::string> warnings;  // "FILE:LINE: what"
};

KeyphraseList read_keyphrase_list(const std::string& path, bool strict = false);
// `name` stands for the file in messages.
KeyphraseList parse_keyphrase_list(std::string_view text, const std::string& name,
                                   bool strict = false);

}  // namespace gpuspeech
