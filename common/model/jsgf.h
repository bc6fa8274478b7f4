// JSGF grammars (pocketsphinx -jsgf), parsed and compiled to a WordGraph.
//
//   #JSGF V1.0 [charset [locale]];
//   grammar name;
//   [public] <rule> = expansion;
//
// Expansions: words (or "quoted tokens"), rule references <rule> (also
// <name.rule> for this grammar's own rules), <NULL> (matches nothing, always)
// and <VOID> (never matches), sequences, alternatives a | b, groups ( ),
// optionals [ ], repetition e* and e+, weights /w/ before an alternative,
// tags { } (ignored), // and /* */ comments.
//
// Compilation follows pocketsphinx's reading of a grammar: the top rule is
// the one named, else the first public rule in the file; rule references
// are expanded in place; weights are used as given (log w on the way into
// the alternative, unweighted = 1, no normalisation), a weight of 0 makes
// the alternative unspeakable. A rule may refer to itself (directly or
// through others) only as the very last thing it says (right recursion),
// which becomes a loop; anything else has no finite-state equivalent and is
// an error. Where pocketsphinx's compiler shares states between a rule and
// what surrounds it (so that, for example, "(red | green)* blue | yes" also
// accepts "red yes"), this one builds each construct on its own states and
// accepts exactly the grammar's language.
//
// Not supported, each a clear error: import statements and references to
// other grammars.
//
// Every error is a ModelError "FILE:LINE: reason".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "word_graph.h"

namespace gpuspeech {

struct JsgfExpansion {
  enum class Kind {
    kToken,         // text: the word
    kRuleRef,       // text: the local rule name
    kNull,          // <NULL>
    kVoid,          // <VOID>
    kSequence,      // children in order
    kAlternatives,  // children, with weights (1 where none given)
    kOptional,      // children[0]
    kStar,          // children[0], zero or more times
    kPlus,          // children[0], one or more times
  };
  Kind kind = Kind::kNull;
  std::string text;
  std::vector<JsgfExpansion> children;
  std::vector<double> weights;  // kAlternatives only
  long line = 0;
};

struct JsgfRule {
  std::string name;  // without <> and without the grammar prefix
  bool is_public = false;
  JsgfExpansion body;
  long line = 0;
};

struct JsgfGrammar {
  std::string source;  // file name, for messages
  std::string version, charset, locale;
  std::string name;    // from "grammar name;"
  std::vector<JsgfRule> rules;  // file order

  // Rule by local name (a "<>" pair and this grammar's prefix are allowed),
  // or nullptr.
  const JsgfRule* find_rule(std::string_view name) const;
};

JsgfGrammar read_jsgf(const std::string& path);
// `name` stands for the file in messages.
JsgfGrammar parse_jsgf(std::string_view text, const std::string& name);

// Compiles rule `rule` (default: the first public rule) to a graph named
// "<grammar.rule>" as sphinx_jsgf2fsg names it. Throws ModelError.
WordGraph compile_jsgf(const JsgfGrammar& grammar, const std::string& rule = "");

// read_jsgf + compile_jsgf.
WordGraph read_jsgf_graph(const std::string& path, const std::string& rule = "");

}  // namespace gpuspeech
