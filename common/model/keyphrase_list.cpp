#include "keyphrase_list.h"

#include <cmath>

#include "byte_reader.h"  // read_model_file
#include "model_error.h"
#include "text_lines.h"

namespace gpuspeech {

std::string Keyphrase::text() const {
  std::string s;
  for (const std::string& w : words) {
    if (!s.empty()) s += ' ';
    s += w;
  }
  return s;
}

KeyphraseList read_keyphrase_list(const std::string& path, bool strict) {
  const std::string text = read_model_file(path);
  return parse_keyphrase_list(text, path, strict);
}

KeyphraseList parse_keyphrase_list(std::string_view text, const std::string& name,
                                   bool strict) {
  KeyphraseList out;
  out.source = name;
  TextLines lines(text);
  std::string_view line;
  std::vector<std::string_view> fields;
  while (lines.next(line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    const long ln = lines.line_number();
    auto problem = [&](const std::string& why) {
      const std::string msg = name + ":" + std::to_string(ln) + ": " + why;
      if (strict) throw ModelError(msg);
      out.warnings.push_back(msg + "; line skipped");
    };
    Keyphrase k;
    k.line = ln;
    std::string_view phrase = line;
    if (line.back() == '/') {
      const size_t open =
          line.size() < 2 ? std::string_view::npos : line.rfind('/', line.size() - 2);
      if (open == std::string_view::npos) {
        problem("threshold '/' at the end of the line is not opened by another '/'");
        continue;
      }
      const std::string_view body = trim(line.substr(open + 1, line.size() - open - 2));
      double t = 0;
      if (!parse_double(body, t) || !std::isfinite(t) || t <= 0) {
        problem("threshold " + quote_for_message(body) + " is not a probability above 0");
        continue;
      }
      k.threshold = t;
      phrase = line.substr(0, open);
    }
    if (phrase.find('/') != std::string_view::npos) {
      problem("'/' inside the phrase (a threshold goes at the end: 'phrase /1e-20/')");
      continue;
    }
    split_fields(phrase, fields);
    if (fields.empty()) {
      problem("threshold without a phrase");
      continue;
    }
    for (std::string_view f : fields) k.words.emplace_back(f);
    out.phrases.push_back(std::move(k));
  }
  return out;
}

}  // namespace gpuspeech
