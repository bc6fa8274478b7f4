// A canonical text form of the options that decide what a feature stream's
// numbers mean, so that a consumer (a decoder, a file reader, the caps of
// the gpufeatures element) can compare "the features I get" with "the
// features my model was trained on" and refuse a mismatch by name.
//
// Two FeatureOptions that produce the same numbers give the same signature;
// options that do not apply to the kind (PLP settings for MFCC, say) are
// left out. See docs/feature-caps.md.
#pragma once

#include <cstdint>
#include <string>

#include "common/features/feature_options.h"

namespace gpuspeech {

// "key=value" pairs separated by ';', keys in a fixed order, floats printed
// with enough digits to round-trip (%.9g). Example (en-us feat.params):
//   kind=mfcc;flavour=sphinx;rate=16000;frame-length=410;frame-shift=160;...
std::string feature_signature(const FeatureOptions& opts);

// The delta layout's short name: "c" (none), "1s_c_d_dd" (Sphinx),
// "c_d" / "c_d_dd" (regression deltas of order 1 / 2).
std::string feature_layout_name(const DeltaOptions& delta);

// What a decoder would refuse of `offered` features when its model wants
// `wanted` (both feature_signature() strings), as "key: upstream X, model
// Y" items joined by "; " in the wanted signature's key order; empty when
// they decode alike. Two kinds of keys are not compared, as they do not
// change what the model expects:
// - how cepstral means are normalised (cmn-init, cmn-window,
//   cmn-init-frames, cmn-learns; and cmn only as "some" against "none"):
//   live and batch CMN are interchangeable for decoding;
// - noise subtraction and silence removal (remove-noise, remove-silence,
//   vad-*): the front end's choice, as pocketsphinx's -remove_noise does
//   not depend on the model.
std::string feature_signature_mismatch(const std::string& offered, const std::string& wanted);

// 64-bit FNV-1a of the signature, for a short identifier in logs.
uint64_t feature_signature_hash(const std::string& signature);

}  // namespace gpuspeech
