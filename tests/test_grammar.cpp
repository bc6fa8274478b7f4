// Grammars: JSGF compiled here against the FSGs sphinx_jsgf2fsg compiles
// from the same files (tests/data/grammar/*.fsg: same sentences, same best
// path weights), goforward.gram against pocketsphinx-testdata's
// goforward.fsg, the cards grammar against its transcriptions, the Sphinx
// FSG and keyphrase readers, words missing from a dictionary, and syntax
// errors with their line numbers.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/model/dictionary.h"
#include "common/model/fsg.h"
#include "common/model/jsgf.h"
#include "common/model/keyphrase_list.h"
#include "common/model/model_error.h"
#include "common/model/vocabulary_check.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

using Sentence = std::vector<std::string>;

std::string testdata(const std::string& f) { return testing::audio_dir() + "/" + f; }
std::string reference_file(const std::string& f) { return testing::data_dir() + "/grammar/" + f; }

template <typename Fn>
void expect_model_error(Fn fn, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "no ModelError; expected one mentioning " << fragments[0];
  } catch (const ModelError& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
  }
}

std::string join(const Sentence& s) {
  std::string out;
  for (const std::string& w : s) out += (out.empty() ? "" : " ") + w;
  return out;
}

Sentence split(const std::string& s) {
  std::istringstream in(s);
  Sentence out;
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

// Same sentences up to `max_words` words (all of them: the enumeration must
// complete), and the same best path weight for each.
void expect_same_language(const WordGraph& mine, const WordGraph& reference, size_t max_words,
                          const std::string& what) {
  bool complete_a = false, complete_b = false;
  const auto a = mine.sentences(max_words, 2000000, &complete_a);
  const auto b = reference.sentences(max_words, 2000000, &complete_b);
  ASSERT_TRUE(complete_a && complete_b) << what;
  EXPECT_EQ(a.size(), b.size()) << what;
  std::set<Sentence> sa(a.begin(), a.end()), sb(b.begin(), b.end());
  for (const Sentence& s : a)
    if (!sb.count(s)) ADD_FAILURE() << what << ": only here: '" << join(s) << "'";
  for (const Sentence& s : b)
    if (!sa.count(s)) ADD_FAILURE() << what << ": only in the reference: '" << join(s) << "'";
  // Weights: sphinx writes probabilities through its log tables, exact to
  // about 1e-4.
  size_t checked = 0;
  for (size_t i = 0; i < a.size() && checked < 3000; i += 1 + a.size() / 3000, ++checked) {
    const double wa = mine.best_log_prob(a[i]), wb = reference.best_log_prob(a[i]);
    EXPECT_NEAR(wa, wb, 1e-3) << what << ": '" << join(a[i]) << "'";
  }
  std::printf("%s: %zu sentences of up to %zu words, same as the reference\n", what.c_str(),
              a.size(), max_words);
}

TEST(Jsgf, GoforwardMatchesSphinxJsgf2fsg) {
  const JsgfGrammar g = read_jsgf(testdata("goforward.gram"));
  EXPECT_EQ(g.name, "goforward");
  EXPECT_EQ(g.version, "V1.0");
  ASSERT_EQ(g.rules.size(), 4u);
  // The default rule is the first public one, as pocketsphinx takes it.
  const WordGraph top = compile_jsgf(g);
  EXPECT_EQ(top.name, "<goforward.move>");
  EXPECT_EQ(top.sentences(10, 10), std::vector<Sentence>{split("go forward ten meters")});
  expect_same_language(top, read_fsg(reference_file("goforward.move.fsg")), 8, "goforward <move>");
  expect_same_language(compile_jsgf(g, "move2"), read_fsg(reference_file("goforward.move2.fsg")), 8,
                       "goforward <move2>");
}

TEST(Jsgf, GoforwardGramAgainstGoforwardFsg) {
  // The testdata's goforward.fsg is <move2> with the unit required:
  // <move2> says everything it says, and the unit-less sentences besides.
  const WordGraph move2 = read_jsgf_graph(testdata("goforward.gram"), "goforward.move2");
  const WordGraph fsg = read_fsg(testdata("goforward.fsg"));
  bool complete = false;
  const auto gram = move2.sentences(8, 100000, &complete);
  ASSERT_TRUE(complete);
  const auto fsgs = fsg.sentences(8, 100000, &complete);
  ASSERT_TRUE(complete);
  EXPECT_EQ(fsgs.size(), 2u * 10u * 2u);
  std::set<Sentence> in_gram(gram.begin(), gram.end());
  for (const Sentence& s : fsgs) EXPECT_TRUE(in_gram.count(s)) << join(s);
  size_t unitless = 0;
  std::set<Sentence> in_fsg(fsgs.begin(), fsgs.end());
  for (const Sentence& s : gram)
    if (!in_fsg.count(s)) {
      EXPECT_EQ(s.size(), 3u) << join(s);
      ++unitless;
    }
  EXPECT_EQ(unitless, 2u * 10u);
  EXPECT_TRUE(fsg.accepts(split("go backward seven meters")));
  EXPECT_NEAR(fsg.best_log_prob(split("go backward seven meter")),
              std::log(1.0) + std::log(0.5) + std::log(0.1) + std::log(0.1), 1e-6);
}

TEST(Jsgf, CardsGrammar) {
  const WordGraph cards = read_jsgf_graph(testdata("cards/cards.gram"));
  EXPECT_EQ(cards.name, "<cards.cards>");
  // Every transcription is a sentence of the grammar.
  std::ifstream in(testdata("cards/cards.transcription"));
  ASSERT_TRUE(in);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    Sentence s = split(line.substr(0, line.find('(')));
    ASSERT_GE(s.size(), 2u);
    ASSERT_EQ(s.front(), "<s>");
    ASSERT_EQ(s.back(), "</s>");
    s = Sentence(s.begin() + 1, s.end() - 1);
    EXPECT_TRUE(cards.accepts(s)) << join(s);
    ++n;
  }
  EXPECT_EQ(n, 5);
  EXPECT_FALSE(cards.accepts(split("of clubs")));
  EXPECT_FALSE(cards.accepts(split("ace of clubs ace of clubs ace of clubs ace of clubs")));
  expect_same_language(cards, read_fsg(reference_file("cards.cards.fsg")), 5, "cards <cards>");
}

TEST(Jsgf, EveryConstructMatchesSphinxJsgf2fsg) {
  const JsgfGrammar g = read_jsgf(reference_file("features.gram"));
  EXPECT_EQ(g.charset, "UTF-8");
  EXPECT_EQ(g.locale, "en");
  for (const char* rule : {"command", "digits", "counted", "nested", "path", "ping", "qualified"}) {
    const WordGraph mine = compile_jsgf(g, rule);
    const WordGraph sphinx = read_fsg(reference_file(std::string("features.") + rule + ".fsg"));
    expect_same_language(mine, sphinx, 7, std::string("features <") + rule + ">");
  }
  const WordGraph command = compile_jsgf(g, "command");
  EXPECT_NEAR(command.best_log_prob(split("open the door")), std::log(3.0), 1e-6);
  EXPECT_NEAR(command.best_log_prob(split("close window please")), std::log(0.5), 1e-6);
  EXPECT_EQ(command.best_log_prob(split("shut light")), 0.0);
  EXPECT_EQ(command.best_log_prob(split("open")), -HUGE_VAL);
  EXPECT_TRUE(compile_jsgf(g, "path").accepts(split("go left left right left stop")));
  EXPECT_FALSE(compile_jsgf(g, "path").accepts(split("go left left")));
  EXPECT_TRUE(compile_jsgf(g, "ping").accepts(split("ping pong ping pong ping pong")));
}

TEST(Jsgf, NoStateSharingAcrossAlternatives) {
  // sphinx_jsgf2fsg's FSG of "(red | green)* blue | yes" also accepts
  // "red yes" (its starred group shares the rule's entry state); the
  // grammar does not say it, and neither does the graph compiled here.
  const WordGraph mine = read_jsgf_graph(reference_file("sharing.gram"));
  const WordGraph sphinx = read_fsg(reference_file("sharing.colours.fsg"));
  EXPECT_TRUE(sphinx.accepts(split("red yes")));
  EXPECT_FALSE(mine.accepts(split("red yes")));
  for (const char* s : {"yes", "blue", "red blue", "green red green blue"}) {
    EXPECT_TRUE(mine.accepts(split(s))) << s;
    EXPECT_TRUE(sphinx.accepts(split(s))) << s;
  }
  // Otherwise the languages agree.
  bool complete = false;
  for (const Sentence& s : sphinx.sentences(5, 100000, &complete)) {
    const bool sharing_artefact = s.back() == "yes" && s.size() > 1;
    EXPECT_EQ(mine.accepts(s), !sharing_artefact) << join(s);
  }
  EXPECT_TRUE(complete);
}

TEST(Jsgf, SyntaxAndSemantics) {
  // Comments, tags, quoted tokens, weights on groups, <VOID>, zero weights.
  const JsgfGrammar g = parse_jsgf(
      "\xEF\xBB\xBF#JSGF V1.0;\n"
      "grammar t; // trailing comment\n"
      "/* a\n   multi-line comment */\n"
      "public <a> = \"new york\" {city} | /2/ (to | from) <b> | <VOID> gone;\n"
      "<b> = /0/ never | here {x} there;\n"
      "public <c> = [<NULL>] one+ two* {t};\n",
      "t.gram");
  const WordGraph a = compile_jsgf(g);
  EXPECT_EQ(a.sentences(5, 100),
            (std::vector<Sentence>{{"from", "here", "there"}, {"new york"}, {"to", "here", "there"}}));
  EXPECT_NEAR(a.best_log_prob(split("to here there")), std::log(2.0), 1e-6);
  const WordGraph c = compile_jsgf(g, "<t.c>");
  EXPECT_TRUE(c.accepts(split("one")));
  EXPECT_TRUE(c.accepts(split("one one two two two")));
  EXPECT_FALSE(c.accepts(split("two")));
  EXPECT_FALSE(c.accepts(split("one two one")));
  EXPECT_EQ(g.find_rule("t.b"), g.find_rule("b"));
  EXPECT_EQ(g.find_rule("zzz"), nullptr);
}

TEST(Jsgf, ErrorsNameTheLine) {
  struct Case {
    std::string text;
    std::vector<std::string> fragments;
  };
  const std::string head = "#JSGF V1.0;\ngrammar g;\n";
  const std::vector<Case> cases = {
      {"grammar g;\npublic <a> = x;\n", {"e.gram:1:", "missing '#JSGF V1.0;' header"}},
      {"#JSGF V1.0\ngrammar g;\n", {"e.gram:1:", "must end with ';'"}},
      {"#JSGF V1.0;\npublic <a> = x;\n", {"e.gram:2:", "expected the 'grammar NAME;'"}},
      {head + "public <a> = x\n", {"e.gram:4:", "expected ';' at the end of the rule"}},
      {head + "\npublic <a> = x y;\n<b> = (x | y;\n", {"e.gram:5:", "to close the group"}},
      {head + "public <a> = [x;\n", {"e.gram:3:", "to close the optional"}},
      {head + "public <a> = x | ;\n", {"e.gram:3:", "empty alternative"}},
      {head + "public <a> = ;\n", {"e.gram:3:", "empty alternative"}},
      {head + "public <a> = x;\n\n<a> = y;\n", {"e.gram:5:", "<a> is defined twice", "line 3"}},
      {head + "public <a> = x\n  <nothere>;\n", {"e.gram:4:", "<nothere> is not defined"}},
      {head + "import <other.*>;\n", {"e.gram:3:", "import", "not supported"}},
      {head + "public <a> = <other.rule>;\n", {"e.gram:3:", "another grammar"}},
      {head + "public <a> = /x/ y;\n", {"e.gram:3:", "weight 'x'"}},
      {head + "public <a> = /-1/ y;\n", {"e.gram:3:", "weight '-1'"}},
      {head + "public <a> = y /1;\n", {"e.gram:3:", "unterminated weight"}},
      {head + "/* never closed\npublic <a> = x;\n", {"e.gram:3:", "unterminated /* comment"}},
      {head + "public <a> = x {tag;\n", {"e.gram:3:", "unterminated tag"}},
      {head + "public <a> = \"x;\n", {"e.gram:3:", "unterminated quoted token"}},
      {head + "public <a = x;\n", {"e.gram:3:", "malformed rule name"}},
      {head + "public <a> = x > y;\n", {"e.gram:3:", "unexpected '>'"}},
      {head + "public <NULL> = x;\n", {"e.gram:3:", "reserved"}},
      {head + "public x = y;\n", {"e.gram:3:", "expected a rule definition"}},
      {head + "public <a> = x;\npublic <b> = (((((((((((((((((((((((((((((((((((((((((((((((((("
              "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
              "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
              "(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((",
       {"e.gram:4:", "nested too deeply"}},
  };
  for (const Case& c : cases)
    expect_model_error([&] { parse_jsgf(c.text, "e.gram"); }, c.fragments);

  // Compilation errors.
  expect_model_error(
      [&] { compile_jsgf(parse_jsgf(head + "public <a> = <a> x | y;\n", "l.gram")); },
      {"l.gram:3:", "<a> refers to <a> (itself)", "right recursion"});
  expect_model_error(
      [&] {
        compile_jsgf(parse_jsgf(head + "public <a> = x <b> z;\n<b> = y <a> | w;\n", "m.gram"));
      },
      {"m.gram:4:", "<b> refers to <a> (which refers to it)"});
  expect_model_error([&] { compile_jsgf(parse_jsgf(head + "public <a> = (x <a>)*;\n", "s.gram")); },
                     {"s.gram:3:", "right recursion"});
  expect_model_error([&] { compile_jsgf(parse_jsgf(head + "<a> = x;\n", "p.gram")); },
                     {"p.gram", "no public rule"});
  expect_model_error([&] { compile_jsgf(parse_jsgf(head + "public <a> = x;\n", "p.gram"), "b"); },
                     {"p.gram", "no rule <b>"});
  // A grammar that doubles with each rule: refused, not exhausted.
  std::string big = head + "public <r0> = <r1> <r1>;\n";
  for (int i = 1; i < 40; ++i)
    big += "<r" + std::to_string(i) + "> = <r" + std::to_string(i + 1) + "> <r" +
           std::to_string(i + 1) + ">;\n";
  big += "<r40> = x;\n";
  expect_model_error([&] { compile_jsgf(parse_jsgf(big, "big.gram")); },
                     {"big.gram", "expands to more than"});
  expect_model_error([] { read_jsgf("/nonexistent.gram"); }, {"cannot read"});
  // Right recursion through an optional at the end is allowed.
  EXPECT_TRUE(compile_jsgf(parse_jsgf(head + "public <a> = x [<a>];\n", "r.gram"))
                  .accepts(split("x x x")));
}

TEST(Fsg, TestdataFiles) {
  const WordGraph go = read_fsg(testdata("goforward.fsg"));
  EXPECT_EQ(go.name, "turtle");
  EXPECT_EQ(go.num_states, 7);
  EXPECT_EQ(go.start_state, 0);
  EXPECT_EQ(go.final_state, 6);
  EXPECT_EQ(go.arcs.size(), 17u);
  // TIDIGITS: any number of digits, each of the 11 with the same weight.
  const WordGraph digits = read_fsg(testdata("tidigits/lm/tidigits.fsg"));
  bool complete = false;
  const auto s = digits.sentences(3, 100000, &complete);
  EXPECT_TRUE(complete);
  EXPECT_EQ(s.size(), 11u + 11u * 11u + 11u * 11u * 11u);
  EXPECT_NEAR(digits.best_log_prob(split("one oh")), 4 * std::log(0.0909), 1e-5);
  // Written out and read back.
  const WordGraph again = parse_fsg(format_fsg(go), "again.fsg");
  expect_same_language(again, go, 6, "goforward.fsg round trip");
}

TEST(Fsg, ErrorsNameTheLine) {
  const std::string head = "FSG_BEGIN x\nNUM_STATES 3\nSTART_STATE 0\nFINAL_STATE 2\n";
  struct Case {
    std::string text;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"nothing here\n", {"e.fsg:", "no FSG_BEGIN"}},
      {"FSG_BEGIN a b\n", {"e.fsg:1:", "malformed FSG_BEGIN"}},
      {"FSG_BEGIN\nSTART_STATE 0\n", {"e.fsg:2:", "expected 'NUM_STATES"}},
      {"FSG_BEGIN\nN 0\n", {"e.fsg:2:", "must be positive"}},
      {"FSG_BEGIN\nN 1000000000\n", {"e.fsg:2:", "absurd"}},
      {"FSG_BEGIN\nN 3\nS 3\n", {"e.fsg:3:", "start state 3 is out of range", "0..2"}},
      {"FSG_BEGIN\nN 3\nS 0\nF -1\n", {"e.fsg:4:", "final state -1 is out of range"}},
      {"FSG_BEGIN\nN 3\nS 0\n", {"e.fsg", "truncated", "FINAL_STATE"}},
      {head + "TRANSITION 0 3 1.0 a\n", {"e.fsg:5:", "to-state 3 is out of range"}},
      {head + "# comment\nT 7 1 1.0 a\n", {"e.fsg:6:", "from-state 7 is out of range"}},
      {head + "T 0 1 0 a\n", {"e.fsg:5:", "must be above 0"}},
      {head + "T 0 1 -0.5 a\n", {"e.fsg:5:", "must be above 0"}},
      {head + "T 0 1 x a\n", {"e.fsg:5:", "not a number"}},
      {head + "T 0 1 nan a\n", {"e.fsg:5:", "not a number"}},
      {head + "T 0 1 0.5 a b\n", {"e.fsg:5:", "malformed transition"}},
      {head + "T 0 x 0.5 a\n", {"e.fsg:5:", "to-state 'x' is not an integer"}},
      {head + "T 0 1 0.5 a\n", {"e.fsg", "truncated", "no FSG_END"}},
      {head + "BOGUS 0 1\n", {"e.fsg:5:", "expected TRANSITION or FSG_END"}},
  };
  for (const Case& c : cases) expect_model_error([&] { parse_fsg(c.text, "e.fsg"); }, c.fragments);
  std::vector<std::string> warnings;
  const WordGraph g = parse_fsg(head + "T 0 1 3.0 a\nT 1 2 1 b\nFSG_END\n", "w.fsg", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("w.fsg:5:"), std::string::npos);
  EXPECT_NEAR(g.best_log_prob({"a", "b"}), std::log(3.0), 1e-6);
}

TEST(Keyphrases, GoforwardKws) {
  const KeyphraseList k = read_keyphrase_list(testdata("goforward.kws"));
  ASSERT_EQ(k.phrases.size(), 4u);
  EXPECT_EQ(k.phrases[0].text(), "anything");
  ASSERT_TRUE(k.phrases[0].threshold.has_value());
  EXPECT_DOUBLE_EQ(*k.phrases[0].threshold, 1e-10);
  EXPECT_EQ(k.phrases[1].text(), "something");
  EXPECT_FALSE(k.phrases[1].threshold.has_value());
  EXPECT_EQ(k.phrases[2].text(), "forward");
  EXPECT_EQ(k.phrases[2].line, 5);
  EXPECT_EQ(k.phrases[3].text(), "non_existign_word");
  ASSERT_EQ(k.warnings.size(), 2u);
  EXPECT_NE(k.warnings[0].find("goforward.kws:3:"), std::string::npos);
  EXPECT_NE(k.warnings[1].find("goforward.kws:4:"), std::string::npos);
  expect_model_error([] { read_keyphrase_list(testdata("goforward.kws"), true); },
                     {"goforward.kws:3:", "'/' inside the phrase"});

  const KeyphraseList t = parse_keyphrase_list(
      "# comment\n  oh mighty computer /1e-40/  \r\nhello   world\n\n/1e-5/\nx /0/\ny /2e-3 /\n",
      "t.kws");
  ASSERT_EQ(t.phrases.size(), 3u);
  EXPECT_EQ(t.phrases[0].words, (std::vector<std::string>{"oh", "mighty", "computer"}));
  EXPECT_DOUBLE_EQ(*t.phrases[0].threshold, 1e-40);
  EXPECT_EQ(t.phrases[1].text(), "hello world");
  EXPECT_DOUBLE_EQ(*t.phrases[2].threshold, 2e-3);
  ASSERT_EQ(t.warnings.size(), 2u);
  EXPECT_NE(t.warnings[0].find("t.kws:5:"), std::string::npos);
  EXPECT_NE(t.warnings[1].find("t.kws:6:"), std::string::npos);
}

TEST(VocabularyCheck, GrammarsAgainstTheEnUsDictionary) {
  const Dictionary d = Dictionary::load(testing::model_dir() + "/en-us/cmudict-en-us.dict",
                                        testing::model_dir() + "/en-us/en-us/noisedict");
  EXPECT_NO_THROW(check_words(read_jsgf_graph(testdata("goforward.gram")), d));
  EXPECT_NO_THROW(check_words(read_jsgf_graph(testdata("cards/cards.gram")), d));
  EXPECT_NO_THROW(check_words(read_fsg(testdata("goforward.fsg")), d));
  expect_model_error([&] { check_words(read_jsgf_graph(testdata("defective.gram")), d); },
                     {testdata("defective.gram"), "1 word is not in the dictionary",
                      "cmudict-en-us.dict", "really_bad_word"});
  expect_model_error([&] { check_words(read_keyphrase_list(testdata("goforward.kws")), d); },
                     {"goforward.kws", "non_existign_word"});
  // Many missing words: listed up to 20, then counted.
  std::string gram = "#JSGF V1.0;\ngrammar m;\npublic <a> = ";
  for (int i = 0; i < 30; ++i) gram += (i ? " | zzq" : "zzq") + std::to_string(i);
  gram += ";\n";
  expect_model_error([&] { check_words(compile_jsgf(parse_jsgf(gram, "m.gram")), d); },
                     {"m.gram: 30 words are", "zzq0 zzq1", "(10 more)"});
  EXPECT_EQ(missing_words({"go", "qqqx", "go", "qqqx"}, d), std::vector<std::string>{"qqqx"});
}

}  // namespace
}  // namespace gpuspeech
