// Reading a Sphinx acoustic model's feat.params into FeatureOptions, so that a
// model such as Debian's pocketsphinx-en-us gets the front end it was
// trained with.
//
// Syntax (as sphinxbase's argument files): whitespace-separated pairs
// `-name value`, normally one per line; `#` at the start of a word comments
// out the rest of the line; a value may be quoted with "..." or '...'. A
// repeated option takes its last value (with a warning).
//
// Meaning: the result starts from FeatureOptions::for_flavour(kSphinx, kind)
// and then takes pocketsphinx's own defaults for every front-end option (a
// feat.params that leaves out -transform means `legacy` to pocketsphinx,
// -lifter 0, -nfilt 40, -cmn live with -cmninit 40,3,-1, and so on; see
// apply_pocketsphinx_defaults), then the file's values:
//   -samprate -lowerf -upperf -nfilt -wlen (seconds) -frate (frames/s) -nfft
//   -alpha -ncep -lifter -remove_dc      the obvious fields
//   -transform dct|legacy|htk            CepstralTransform kSphinxDct /
//                                        kSphinxLegacy / kHtkDct
//   -dither yes|no, -seed N              Gaussian dither of std-dev 0.5 sample
//                                        (sphinx adds "1/2-bit" noise; the
//                                        exact noise differs), seeded if N >= 0
//   -feat 1s_c_d_dd | s2_4x | 1s_c       Sphinx 39-dim deltas | Sphinx-II's
//                                        four streams (51 dims) | none
//   -round_filters yes|no                MelOptions::round_filters
//   -cmn none|batch|current|live|prior   NormOptions (current = batch,
//                                        prior = live, as in sphinxbase)
//   -cmninit a,b,c                       live CMN start; padded with zeros to
//                                        the feature dimension as sphinx does
//   -varnorm yes|no                      CVN
//   -warp_type piecewise_linear, -warp_params "a [F]"
//                                        VTLN: sphinx maps frequency w to a*w
//                                        below F; our warp factor is the
//                                        inverse (vtln.warp = 1/a) and F, if
//                                        given, becomes vtln.high_cutoff. The
//                                        knee follows our (Kaldi-style) form.
//   -remove_noise, -remove_silence, -vad_threshold, -vad_prespeech,
//   -vad_postspeech, -vad_startspeech    NoiseOptions. Unlike the others,
//                                        these stay off unless the file
//                                        turns them on (pocketsphinx's
//                                        default is yes; options.h keeps
//                                        them off unless asked for).
// Unsupported values are errors that name the line: -unit_area no,
// -doublebw yes, -feat other than 1s_c_d_dd/s2_4x/1s_c, a warp type
// other than piecewise_linear when -warp_params is given. Automatic gain
// control (-agc max|emax|noise) is not implemented and becomes a warning.
// Decoder-side options that do not change the features (-svspec, -model,
// -ceplen, -lda, -ldadim, -agcthresh, -topn, -input_endian, -mach_endian)
// are accepted silently. Unknown options become warnings, never errors.
//
// The result is not validated (FeatureOptions::validate): a caller may
// still override fields, e.g. from command-line flags, and validates after.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/features/feature_options.h"

namespace gpuspeech {

// A missing, unreadable or malformed feat.params. what() is
// "FILE:LINE: reason" (or "FILE: reason" when no line applies).
class FeatParamsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FeatParams {
  FeatureOptions options;
  // Each "FILE:LINE: what", for options ignored or unknown.
  std::vector<std::string> warnings;
  // Every option as written, name without the dash, in file order.
  std::vector<std::pair<std::string, std::string>> entries;
};

// Sets the front-end fields to the values pocketsphinx uses when a
// feat.params does not mention them (its built-in argument defaults).
void apply_pocketsphinx_defaults(FeatureOptions& opts);

// Parses `text`; `name` stands for the file in messages. `kind` selects the
// feature kind of the starting point (the file itself is about MFCC).
FeatParams parse_feat_params_string(const std::string& text,
                                    const std::string& name = "<feat.params>",
                                    FeatureKind kind = FeatureKind::kMfcc);

// Reads and parses a file; FeatParamsError if it cannot be read.
FeatParams parse_feat_params_file(const std::string& path,
                                  FeatureKind kind = FeatureKind::kMfcc);

}  // namespace gpuspeech
