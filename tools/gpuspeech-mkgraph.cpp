// gpuspeech-mkgraph: compiles (or takes from the cache) the search graph for
// an acoustic model, a dictionary and a grammar or language model. The usage
// text below is the reference for its behaviour.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/model/arpa_lm.h"
#include "common/search/graph_cache.h"
#include "common/search/ngram_image.h"
#include "common/search/graph_compiler.h"

#ifndef GPUSPEECH_VERSION
#define GPUSPEECH_VERSION "unknown"
#endif

namespace gpuspeech {
namespace {

constexpr const char* kUsage = R"(Usage: gpuspeech-mkgraph --hmm DIR --dict FILE (--lm FILE | --jsgf FILE | --fsg FILE)
                         [OPTIONS] [-o GRAPH]

Compiles the decoding graph (HCLG) for an acoustic model, a pronunciation
dictionary and a grammar or n-gram language model, and stores it in the graph
cache (a second run with the same inputs loads it from there). -o also writes
it to GRAPH.

Inputs:
  --hmm DIR             Sphinx acoustic model directory (mdef, transition_matrices)
  --dict FILE           pronunciation dictionary
  --fdict FILE          filler dictionary (default: DIR/noisedict)
  --lm FILE             n-gram LM: ARPA text or Sphinx binary (.lm.bin)
  --jsgf FILE           JSGF grammar
  --rule NAME           JSGF rule to use (default: the first public rule)
  --fsg FILE            Sphinx FSG grammar

Scores (pocketsphinx's options and defaults, but --lw 7.5 for an LM):
  --lw X                language weight (7.5 for an LM, 6.5 for a grammar)
  --wip X               word insertion penalty, a probability (0.65)
  --silprob X           silence probability (0.005)
  --fillprob X          filler probability (1e-8)
  --pip X               phone insertion penalty, a probability (1.0)
  --no-fillers          no silence or filler words between words
  --compact-word-ends   put each word's label on the arc into its last HMM
                        state rather than on an epsilon arc at its exact end:
                        a smaller graph, word ends early by that state's
                        self-loop frames

LM pruning (for LMs too large to compile whole; the pruned LM is cached as
ARPA next to the graph for the rescorer). Without these options, an LM with
more than 2.5 M n-grams of order >= 2 (such as en-us.lm.bin) is pruned to its
1 M most important bigrams:
  --prune-order N       keep n-grams up to order N only (e.g. 2: bigrams)
  --prune-ngrams K      keep the K most important n-grams of order >= 2
  --no-auto-prune       compile the whole LM however large

Cache:
  --cache DIR           cache directory (default $GPUSPEECH_CACHE_DIR, else
                        $XDG_CACHE_HOME/gpuspeech, else ~/.cache/gpuspeech;
                        gpuspeech-transcribe's option of the same name);
                        --cache-dir DIR is the same
  --no-cache            neither read nor write the cache
  --rebuild             compile even if the graph is cached
  -o GRAPH              also write the graph to GRAPH (and a pruned LM to
                        GRAPH.pruned.arpa)
  -q                    print only errors
  --help, --version
)";

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "gpuspeech-mkgraph: %s\n(see gpuspeech-mkgraph --help)\n", why.c_str());
  std::exit(2);
}

float parse_float(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const float f = std::strtof(v.c_str(), &end);
  if (v.empty() || *end != '\0') usage_error(opt + ": not a number: '" + v + "'");
  return f;
}

long long parse_int(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n < 0) usage_error(opt + ": not a non-negative integer: '" + v + "'");
  return n;
}

int run(int argc, char** argv) {
  GraphSources src;
  GraphBuildOptions opt;
  std::string out;
  bool quiet = false;
  int grammars = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("gpuspeech-mkgraph %s\n", GPUSPEECH_VERSION);
      return 0;
    } else if (a == "--hmm") {
      src.model_dir = value();
    } else if (a == "--dict") {
      src.dictionary = value();
    } else if (a == "--fdict") {
      src.filler_dictionary = value();
    } else if (a == "--lm") {
      src.kind = GraphSourceKind::kNgram, src.grammar = value(), ++grammars;
    } else if (a == "--jsgf") {
      src.kind = GraphSourceKind::kJsgf, src.grammar = value(), ++grammars;
    } else if (a == "--fsg") {
      src.kind = GraphSourceKind::kFsg, src.grammar = value(), ++grammars;
    } else if (a == "--rule") {
      src.jsgf_rule = value();
    } else if (a == "--lw") {
      opt.compile.language_weight = parse_float(a, value());
    } else if (a == "--wip") {
      opt.compile.word_insertion_penalty = parse_float(a, value());
    } else if (a == "--silprob") {
      opt.compile.silence_prob = parse_float(a, value());
    } else if (a == "--fillprob") {
      opt.compile.filler_prob = parse_float(a, value());
    } else if (a == "--pip") {
      opt.compile.phone_insertion_penalty = parse_float(a, value());
    } else if (a == "--no-fillers") {
      opt.compile.use_fillers = false;
    } else if (a == "--compact-word-ends") {
      opt.compile.word_labels_on_epsilon = false;
    } else if (a == "--prune-order") {
      opt.prune.max_order = static_cast<int>(parse_int(a, value()));
    } else if (a == "--prune-ngrams") {
      opt.prune.max_ngrams = parse_int(a, value());
    } else if (a == "--no-auto-prune") {
      opt.auto_prune_above = 0;
    } else if (a == "--cache" || a == "--cache-dir") {
      opt.cache_dir = value();
      if (opt.cache_dir.empty() || opt.cache_dir == "-") usage_error(a + " needs a directory");
    } else if (a == "--no-cache") {
      opt.cache_dir = "-";
    } else if (a == "--rebuild") {
      opt.rebuild = true;
    } else if (a == "-o") {
      out = value();
    } else if (a == "-q") {
      quiet = true;
    } else {
      usage_error("unknown option '" + a + "'");
    }
  }
  if (src.model_dir.empty()) usage_error("--hmm is required");
  if (src.dictionary.empty()) usage_error("--dict is required");
  if (grammars != 1) usage_error("give exactly one of --lm, --jsgf, --fsg");
  if (!src.jsgf_rule.empty() && src.kind != GraphSourceKind::kJsgf) usage_error("--rule needs --jsgf");
  if (opt.prune.prunes() && src.kind != GraphSourceKind::kNgram)
    usage_error("--prune-order and --prune-ngrams apply to --lm only");
  try {
    opt.compile.validate();
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
  }
  if (out.empty() && opt.cache_dir == "-") usage_error("--no-cache needs -o (the graph must go somewhere)");

  if (!quiet)
    opt.compile.progress = [](const std::string& line) {
      std::fprintf(stderr, "  %s\n", line.c_str());
      std::fflush(stderr);
    };
  const auto t0 = std::chrono::steady_clock::now();
  const GraphBuildResult r = build_search_graph(src, opt);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string pruned_out;
  if (!out.empty()) {
    r.graph.save(out);
    // The rescorer needs the LM the graph was built with.
    if (r.pruned_lm || !r.pruned_lm_path.empty()) {
      pruned_out = out + ".pruned.arpa";
      const NgramModel lm = r.pruned_lm ? *r.pruned_lm : read_cached_ngram_model(r.pruned_lm_path);
      std::ofstream f(pruned_out, std::ios::binary);
      f << format_arpa_lm(lm);
      if (!f) throw std::runtime_error(pruned_out + ": write failed");
    }
  }
  if (!quiet) {
    for (const std::string& line : r.log) std::fprintf(stderr, "%s\n", line.c_str());
    for (const std::string& line : r.report.notes) std::fprintf(stderr, "%s\n", line.c_str());

    int64_t eps = 0;
    for (int32_t il : r.graph.arc_ilabel) eps += il == 0;
    std::printf("graph %s: %d states, %lld arcs (%lld epsilon), %zu words, %d senones\n",
                r.graph.source_hash.c_str(), r.graph.num_states(),
                static_cast<long long>(r.graph.num_arcs()), static_cast<long long>(eps),
                r.graph.words.size(), r.graph.num_senones);
    std::printf("%s in %.2f s, peak RSS %lld MiB\n", r.from_cache ? "loaded" : "compiled", secs,
                static_cast<long long>(peak_rss_bytes() / (1024 * 1024)));
    if (!r.cache_path.empty()) std::printf("cache: %s\n", r.cache_path.c_str());
    if (!r.pruned_lm_path.empty()) std::printf("pruned LM: %s\n", r.pruned_lm_path.c_str());
    if (!out.empty()) std::printf("written: %s\n", out.c_str());
    if (!pruned_out.empty()) std::printf("written: %s (the pruned LM in the graph)\n", pruned_out.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace gpuspeech

int main(int argc, char** argv) {
  try {
    return gpuspeech::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuspeech-mkgraph: %s\n", e.what());
    return 1;
  }
}
