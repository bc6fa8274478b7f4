// libFuzzer target: feat.params parsing on arbitrary text. Every input must
// either parse or throw FeatParamsError with a "NAME:LINE: " message; the
// parsed options must survive validate() (which may reject them only with
// std::invalid_argument). Anything else is a bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/features/feat_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (FeatureKind kind : {FeatureKind::kMfcc, FeatureKind::kPlp}) {
    try {
      const FeatParams fp = parse_feat_params_string(text, "fuzz.params", kind);
      for (const std::string& w : fp.warnings)
        if (w.rfind("fuzz.params:", 0) != 0) __builtin_trap();
      try {
        fp.options.validate();
        (void)fp.options.output_dim();
      } catch (const std::invalid_argument&) {
      }
    } catch (const FeatParamsError& e) {
      if (std::string(e.what()).rfind("fuzz.params:", 0) != 0) __builtin_trap();
    }
  }
  return 0;
}
