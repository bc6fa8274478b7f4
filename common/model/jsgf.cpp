#include "jsgf.h"

#include <cmath>
#include <unordered_map>

#include "byte_reader.h"  // read_model_file
#include "model_error.h"
#include "text_lines.h"

namespace gpuspeech {

namespace {

// Nesting of ( [ beyond this is refused, so that hostile input cannot
// exhaust the stack of the recursive-descent parser.
constexpr int kMaxNesting = 200;
// A compiled grammar larger than this is refused (rule references expand
// in place, so a few lines can ask for exponentially many states).
constexpr size_t kMaxGraphElements = 4'000'000;

enum class Tok {
  kEnd, kWord, kQuoted, kRuleName, kTag, kWeight,
  kSemi, kEquals, kBar, kStar, kPlus, kLParen, kRParen, kLBracket, kRBracket,
};

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  double weight = 0;
  long line = 0;
};

const char* describe(Tok t) {
  switch (t) {
    case Tok::kEnd: return "the end of the file";
    case Tok::kWord: return "a word";
    case Tok::kQuoted: return "a quoted token";
    case Tok::kRuleName: return "a rule name";
    case Tok::kTag: return "a tag";
    case Tok::kWeight: return "a weight";
    case Tok::kSemi: return "';'";
    case Tok::kEquals: return "'='";
    case Tok::kBar: return "'|'";
    case Tok::kStar: return "'*'";
    case Tok::kPlus: return "'+'";
    case Tok::kLParen: return "'('";
    case Tok::kRParen: return "')'";
    case Tok::kLBracket: return "'['";
    case Tok::kRBracket: return "']'";
  }
  return "?";
}

bool is_special(char c) {
  switch (c) {
    case ';': case '=': case '|': case '*': case '+': case '<': case '>':
    case '(': case ')': case '[': case ']': case '{': case '}': case '"': case '/':
      return true;
    default:
      return is_blank(c);
  }
}

class Lexer {
 public:
  Lexer(std::string_view text, const std::string& name) : t_(text), name_(name) {}

  // Reads the "#JSGF version [charset [locale]];" header.
  void header(JsgfGrammar& g) {
    if (t_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
    skip_blanks();
    if (t_.compare(pos_, 5, "#JSGF") != 0)
      fail(line_, "missing '#JSGF V1.0;' header: this is not a JSGF grammar");
    pos_ += 5;
    const long start = line_;
    const size_t semi = t_.find(';', pos_);
    const size_t eol = t_.find('\n', pos_);
    if (semi == std::string_view::npos || (eol != std::string_view::npos && eol < semi))
      fail(start, "the '#JSGF' header must end with ';' on its line");
    std::vector<std::string_view> f;
    split_fields(t_.substr(pos_, semi - pos_), f);
    if (f.empty() || f.size() > 3) fail(start, "malformed '#JSGF' header");
    g.version = std::string(f[0]);
    if (f.size() > 1) g.charset = std::string(f[1]);
    if (f.size() > 2) g.locale = std::string(f[2]);
    pos_ = semi + 1;
  }

  std::vector<Token> tokens() {
    std::vector<Token> out;
    for (;;) {
      Token tok = next();
      const bool end = tok.kind == Tok::kEnd;
      out.push_back(std::move(tok));
      if (end) return out;
    }
  }

 private:
  [[noreturn]] void fail(long line, const std::string& why) const {
    throw ModelError(name_ + ":" + std::to_string(line) + ": " + why);
  }
  void skip_blanks() {
    while (pos_ < t_.size() && is_blank(t_[pos_])) {
      if (t_[pos_] == '\n') ++line_;
      ++pos_;
    }
  }
  // Text up to the closing `close`, honouring backslash escapes; the
  // opening character has been consumed.
  std::string delimited(char close, const char* what, long start) {
    std::string s;
    while (pos_ < t_.size()) {
      char c = t_[pos_++];
      if (c == '\n') ++line_;
      if (c == '\\' && pos_ < t_.size()) {
        c = t_[pos_++];
        if (c == '\n') ++line_;
        s += c;
        continue;
      }
      if (c == close) return s;
      s += c;
    }
    fail(start, std::string("unterminated ") + what);
  }

  Token next() {
    for (;;) {
      skip_blanks();
      if (pos_ + 1 < t_.size() && t_[pos_] == '/' && t_[pos_ + 1] == '/') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
        continue;
      }
      if (pos_ + 1 < t_.size() && t_[pos_] == '/' && t_[pos_ + 1] == '*') {
        const long start = line_;
        const size_t end = t_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) fail(start, "unterminated /* comment");
        for (size_t i = pos_; i < end; ++i)
          if (t_[i] == '\n') ++line_;
        pos_ = end + 2;
        continue;
      }
      break;
    }
    Token tok;
    tok.line = line_;
    if (pos_ >= t_.size()) return tok;
    const char c = t_[pos_++];
    switch (c) {
      case ';': tok.kind = Tok::kSemi; return tok;
      case '=': tok.kind = Tok::kEquals; return tok;
      case '|': tok.kind = Tok::kBar; return tok;
      case '*': tok.kind = Tok::kStar; return tok;
      case '+': tok.kind = Tok::kPlus; return tok;
      case '(': tok.kind = Tok::kLParen; return tok;
      case ')': tok.kind = Tok::kRParen; return tok;
      case '[': tok.kind = Tok::kLBracket; return tok;
      case ']': tok.kind = Tok::kRBracket; return tok;
      case '<': {
        const size_t close = t_.find('>', pos_);
        size_t bad = pos_;
        while (bad < t_.size() && bad < close && !is_blank(t_[bad]) && t_[bad] != '<') ++bad;
        if (close == std::string_view::npos || bad != close)
          fail(tok.line, "unterminated or malformed rule name starting " +
                             quote_for_message(t_.substr(pos_ - 1, 20)));
        tok.kind = Tok::kRuleName;
        tok.text = std::string(t_.substr(pos_, close - pos_));
        if (tok.text.empty()) fail(tok.line, "empty rule name '<>'");
        pos_ = close + 1;
        return tok;
      }
      case '{':
        tok.kind = Tok::kTag;
        tok.text = delimited('}', "tag '{'", tok.line);
        return tok;
      case '"':
        tok.kind = Tok::kQuoted;
        tok.text = delimited('"', "quoted token", tok.line);
        if (trim(tok.text).empty()) fail(tok.line, "empty quoted token");
        return tok;
      case '/': {
        const size_t close = t_.find('/', pos_);
        const size_t eol = t_.find('\n', pos_);
        if (close == std::string_view::npos || (eol != std::string_view::npos && eol < close))
          fail(tok.line, "unterminated weight (expected '/number/')");
        double w = 0;
        const std::string_view body = trim(t_.substr(pos_, close - pos_));
        if (!parse_double(body, w) || std::isnan(w) || std::isinf(w) || w < 0)
          fail(tok.line, "weight " + quote_for_message(body) + " is not a number of 0 or more");
        tok.kind = Tok::kWeight;
        tok.weight = w;
        pos_ = close + 1;
        return tok;
      }
      case '>':
      case '}':
        fail(tok.line, std::string("unexpected '") + c + "'");
      default:
        break;
    }
    size_t end = pos_;
    while (end < t_.size() && !is_special(t_[end])) ++end;
    tok.kind = Tok::kWord;
    tok.text = std::string(t_.substr(pos_ - 1, end - pos_ + 1));
    pos_ = end;
    return tok;
  }

  std::string_view t_;
  const std::string& name_;
  size_t pos_ = 0;
  long line_ = 1;
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, JsgfGrammar& g) : toks_(std::move(tokens)), g_(g) {}

  void parse() {
    expect_word("grammar", "the 'grammar NAME;' declaration");
    const Token& n = take();
    if (n.kind != Tok::kWord) fail(n, "expected the grammar's name after 'grammar'");
    g_.name = n.text;
    expect(Tok::kSemi, "after the grammar's name");
    while (peek().kind != Tok::kEnd) {
      const Token& first = peek();
      if (first.kind == Tok::kWord && first.text == "import")
        fail(first, "import statements are not supported (put the rules in this file)");
      JsgfRule rule;
      if (first.kind == Tok::kWord && first.text == "public") {
        rule.is_public = true;
        take();
      }
      const Token& name = take();
      if (name.kind != Tok::kRuleName)
        fail(name, std::string("expected a rule definition '<name> = ...;', found ") +
                       describe(name.kind) + (name.text.empty() ? "" : " " + quote_for_message(name.text)));
      rule.name = local_name(name);
      rule.line = name.line;
      if (rule.name == "NULL" || rule.name == "VOID")
        fail(name, "<" + rule.name + "> is reserved and cannot be defined");
      expect(Tok::kEquals, "after the rule name");
      rule.body = alternatives(0);
      expect(Tok::kSemi, "at the end of the rule");
      for (const JsgfRule& r : g_.rules)
        if (r.name == rule.name)
          fail(name, "rule <" + rule.name + "> is defined twice (first at line " +
                         std::to_string(r.line) + ")");
      g_.rules.push_back(std::move(rule));
    }
  }

  // Rule references must name defined rules.
  void check_references() const {
    for (const JsgfRule& r : g_.rules) check_refs(r.body);
  }

 private:
  [[noreturn]] void fail(const Token& t, const std::string& why) const {
    throw ModelError(g_.source + ":" + std::to_string(t.line) + ": " + why);
  }
  const Token& peek() const { return toks_[pos_]; }
  const Token& take() {
    const Token& t = toks_[pos_];
    if (t.kind != Tok::kEnd) ++pos_;
    return t;
  }
  void expect(Tok kind, const char* where) {
    const Token& t = take();
    if (t.kind != kind)
      fail(t, std::string("expected ") + describe(kind) + " " + where + ", found " +
                  describe(t.kind) + (t.text.empty() ? "" : " " + quote_for_message(t.text)));
  }
  void expect_word(const char* word, const char* what) {
    const Token& t = take();
    if (t.kind != Tok::kWord || t.text != word) fail(t, std::string("expected ") + what);
  }

  std::string local_name(const Token& t) const {
    const size_t dot = t.text.rfind('.');
    if (dot == std::string::npos) return t.text;
    if (t.text.compare(0, dot, g_.name) != 0 || dot != g_.name.size())
      fail(t, "<" + t.text + "> refers to another grammar; imports are not supported");
    if (dot + 1 == t.text.size()) fail(t, "malformed rule name <" + t.text + ">");
    return t.text.substr(dot + 1);
  }

  JsgfExpansion alternatives(int depth) {
    if (depth > kMaxNesting) fail(peek(), "groups nested too deeply");
    JsgfExpansion alts;
    alts.kind = JsgfExpansion::Kind::kAlternatives;
    alts.line = peek().line;
    bool any_weight = false;
    for (;;) {
      double w = 1.0;
      if (peek().kind == Tok::kWeight) {
        w = take().weight;
        any_weight = true;
      }
      alts.children.push_back(sequence(depth));
      alts.weights.push_back(w);
      if (peek().kind != Tok::kBar) break;
      take();
    }
    if (alts.children.size() == 1 && !any_weight) return std::move(alts.children[0]);
    return alts;
  }

  JsgfExpansion sequence(int depth) {
    JsgfExpansion seq;
    seq.kind = JsgfExpansion::Kind::kSequence;
    seq.line = peek().line;
    for (;;) {
      const Tok k = peek().kind;
      if (k == Tok::kTag) {  // a tag anywhere in a sequence says nothing
        take();
        continue;
      }
      if (k == Tok::kSemi || k == Tok::kBar || k == Tok::kRParen || k == Tok::kRBracket ||
          k == Tok::kEnd)
        break;
      seq.children.push_back(item(depth));
    }
    if (seq.children.empty())
      fail(peek(), std::string("empty alternative before ") + describe(peek().kind));
    if (seq.children.size() == 1) return std::move(seq.children[0]);
    return seq;
  }

  JsgfExpansion item(int depth) {
    JsgfExpansion e = primary(depth);
    for (;;) {
      const Tok k = peek().kind;
      if (k == Tok::kTag) {
        take();
      } else if (k == Tok::kStar || k == Tok::kPlus) {
        JsgfExpansion rep;
        rep.kind = k == Tok::kStar ? JsgfExpansion::Kind::kStar : JsgfExpansion::Kind::kPlus;
        rep.line = take().line;
        rep.children.push_back(std::move(e));
        e = std::move(rep);
      } else {
        return e;
      }
    }
  }

  JsgfExpansion primary(int depth) {
    const Token& t = take();
    JsgfExpansion e;
    e.line = t.line;
    switch (t.kind) {
      case Tok::kWord:
      case Tok::kQuoted:
        e.kind = JsgfExpansion::Kind::kToken;
        e.text = t.text;
        return e;
      case Tok::kRuleName:
        if (t.text == "NULL") {
          e.kind = JsgfExpansion::Kind::kNull;
        } else if (t.text == "VOID") {
          e.kind = JsgfExpansion::Kind::kVoid;
        } else {
          e.kind = JsgfExpansion::Kind::kRuleRef;
          e.text = local_name(t);
        }
        return e;
      case Tok::kLParen: {
        e = alternatives(depth + 1);
        expect(Tok::kRParen, "to close the group '('");
        return e;
      }
      case Tok::kLBracket: {
        e.kind = JsgfExpansion::Kind::kOptional;
        e.children.push_back(alternatives(depth + 1));
        expect(Tok::kRBracket, "to close the optional '['");
        return e;
      }
      default:
        fail(t, std::string("unexpected ") + describe(t.kind) +
                    (t.text.empty() ? "" : " " + quote_for_message(t.text)));
    }
  }

  void check_refs(const JsgfExpansion& e) const {
    if (e.kind == JsgfExpansion::Kind::kRuleRef && !g_.find_rule(e.text))
      throw ModelError(g_.source + ":" + std::to_string(e.line) + ": rule <" + e.text +
                       "> is not defined");
    for (const JsgfExpansion& c : e.children) check_refs(c);
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  JsgfGrammar& g_;
};

class Compiler {
 public:
  explicit Compiler(const JsgfGrammar& g) : g_(g) {}

  WordGraph run(const JsgfRule& top) {
    out_.source = g_.source;
    out_.name = "<" + g_.name + "." + top.name + ">";
    out_.start_state = out_.add_state();
    out_.final_state = out_.add_state();
    stack_.push_back({&top, out_.start_state});
    compile(top.body, out_.start_state, out_.final_state, 0);
    stack_.pop_back();
    return std::move(out_);
  }

 private:
  struct Frame {
    const JsgfRule* rule;
    int entry;
  };

  int new_state() {
    check_size();
    return out_.add_state();
  }
  void arc(int from, int to, int word, float lp) {
    check_size();
    out_.add_arc(from, to, word, lp);
  }
  void check_size() const {
    if (static_cast<size_t>(out_.num_states) + out_.arcs.size() > kMaxGraphElements)
      throw ModelError(g_.source + ": the grammar expands to more than " +
                       std::to_string(kMaxGraphElements) +
                       " states and arcs (rules referring to rules many times over?)");
  }

  // Connects `entry` to `exit` by the paths of `e`. `tail_from`: the
  // position is the last thing said by every rule on the stack at index
  // tail_from or above, so a reference back to one of those is right
  // recursion.
  void compile(const JsgfExpansion& e, int entry, int exit, size_t tail_from) {
    using K = JsgfExpansion::Kind;
    switch (e.kind) {
      case K::kToken:
        arc(entry, exit, out_.intern_word(e.text), 0.0f);
        return;
      case K::kNull:
        if (entry != exit) arc(entry, exit, WordGraph::kEpsilon, 0.0f);
        return;
      case K::kVoid:
        return;
      case K::kSequence: {
        int from = entry;
        const size_t n = e.children.size();
        for (size_t i = 0; i < n; ++i) {
          const bool last = i + 1 == n;
          const int to = last ? exit : new_state();
          compile(e.children[i], from, to, last ? tail_from : stack_.size());
          from = to;
        }
        return;
      }
      case K::kAlternatives:
        for (size_t i = 0; i < e.children.size(); ++i) {
          const double w = e.weights[i];
          if (w == 0.0) continue;  // unspeakable
          if (w == 1.0) {
            compile(e.children[i], entry, exit, tail_from);
          } else {
            const int s = new_state();
            arc(entry, s, WordGraph::kEpsilon, static_cast<float>(std::log(w)));
            compile(e.children[i], s, exit, tail_from);
          }
        }
        return;
      case K::kOptional:
        compile(e.children[0], entry, exit, tail_from);
        if (entry != exit) arc(entry, exit, WordGraph::kEpsilon, 0.0f);
        return;
      case K::kStar: {
        // A fresh loop state, so that looping never re-enters what shares
        // `entry` (the state-sharing flaw of pocketsphinx's compiler).
        const int loop = new_state();
        arc(entry, loop, WordGraph::kEpsilon, 0.0f);
        compile(e.children[0], loop, loop, stack_.size());
        arc(loop, exit, WordGraph::kEpsilon, 0.0f);
        return;
      }
      case K::kPlus: {
        const int loop = new_state();
        const int after = new_state();
        arc(entry, loop, WordGraph::kEpsilon, 0.0f);
        compile(e.children[0], loop, after, stack_.size());
        arc(after, loop, WordGraph::kEpsilon, 0.0f);
        arc(after, exit, WordGraph::kEpsilon, 0.0f);
        return;
      }
      case K::kRuleRef: {
        const JsgfRule* r = g_.find_rule(e.text);
        if (!r)
          throw ModelError(g_.source + ":" + std::to_string(e.line) + ": rule <" + e.text +
                           "> is not defined");
        for (size_t i = 0; i < stack_.size(); ++i) {
          if (stack_[i].rule != r) continue;
          if (tail_from > i)
            throw ModelError(
                g_.source + ":" + std::to_string(e.line) + ": rule <" + stack_.back().rule->name +
                "> refers to <" + r->name + "> " +
                (stack_.size() - 1 == i ? "(itself) " : "(which refers to it) ") +
                "other than as the last thing it says; only right recursion has a "
                "finite-state equivalent");
          // Right recursion: back to the start of that rule's expansion; its
          // end is this position's end too.
          arc(entry, stack_[i].entry, WordGraph::kEpsilon, 0.0f);
          return;
        }
        // A fresh entry state: the target of any right recursion into `r`,
        // reached from nothing else.
        const int start = new_state();
        arc(entry, start, WordGraph::kEpsilon, 0.0f);
        stack_.push_back({r, start});
        compile(r->body, start, exit, tail_from);
        stack_.pop_back();
        return;
      }
    }
  }

  const JsgfGrammar& g_;
  WordGraph out_;
  std::vector<Frame> stack_;
};

}  // namespace

const JsgfRule* JsgfGrammar::find_rule(std::string_view n) const {
  if (n.size() >= 2 && n.front() == '<' && n.back() == '>') n = n.substr(1, n.size() - 2);
  if (n.size() > name.size() + 1 && n.compare(0, name.size(), name) == 0 && n[name.size()] == '.')
    n = n.substr(name.size() + 1);
  for (const JsgfRule& r : rules)
    if (r.name == n) return &r;
  return nullptr;
}

JsgfGrammar parse_jsgf(std::string_view text, const std::string& name) {
  JsgfGrammar g;
  g.source = name;
  Lexer lexer(text, name);
  lexer.header(g);
  Parser parser(lexer.tokens(), g);
  parser.parse();
  parser.check_references();
  return g;
}

JsgfGrammar read_jsgf(const std::string& path) {
  const std::string text = read_model_file(path);
  return parse_jsgf(text, path);
}

WordGraph compile_jsgf(const JsgfGrammar& grammar, const std::string& rule) {
  const JsgfRule* top = nullptr;
  if (rule.empty()) {
    for (const JsgfRule& r : grammar.rules)
      if (r.is_public) {
        top = &r;
        break;
      }
    if (!top) throw ModelError(grammar.source + ": the grammar has no public rule");
  } else {
    top = grammar.find_rule(rule);
    if (!top) throw ModelError(grammar.source + ": no rule <" + rule + "> in the grammar");
  }
  return Compiler(grammar).run(*top);
}

WordGraph read_jsgf_graph(const std::string& path, const std::string& rule) {
  return compile_jsgf(read_jsgf(path), rule);
}

}  // namespace gpuspeech
