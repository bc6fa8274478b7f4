// libFuzzer target: the Sphinx-3 parameter readers (means/variances,
// mixture_weights, transition_matrices), the sendump reader and -svspec
// parsing, on arbitrary bytes. Each input goes to every reader; each must
// return data whose size matches its own counts or throw ModelError with a
// "fuzz.s3:" message (std::invalid_argument for svspec). Anything else is a
// bug.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/model/s3_params.h"
#include "common/model/sendump.h"
#include "common/model/svspec.h"

namespace {

const char* const kName = "fuzz.s3";

void expect_named(const gpuspeech::ModelError& e) {
  if (std::string(e.what()).rfind(std::string(kName) + ":", 0) != 0) __builtin_trap();
}

template <typename Fn>
void guarded(Fn fn) {
  try {
    fn();
  } catch (const gpuspeech::ModelError& e) {
    expect_named(e);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  guarded([&] {
    const GaussianParams g = parse_gaussian_params(bytes, kName);
    size_t dims = 0;
    for (int d : g.stream_dims) dims += size_t(d);
    if (g.values.size() != size_t(g.num_codebooks) * g.density * dims) __builtin_trap();
    if (g.num_codebooks > 0 &&
        g.index(g.num_codebooks - 1, g.num_streams - 1, g.density - 1) + g.stream_dims.back() !=
            g.values.size())
      __builtin_trap();
  });
  guarded([&] {
    const MixtureWeightParams w = parse_mixture_weights(bytes, kName);
    if (w.values.size() != size_t(w.num_senones) * w.num_streams * w.density) __builtin_trap();
  });
  guarded([&] {
    const TransitionMatrixParams t = parse_transition_matrices(bytes, kName);
    if (t.num_to != t.num_from + 1 ||
        t.values.size() != size_t(t.num_tmats) * t.num_from * t.num_to)
      __builtin_trap();
  });
  for (const SendumpShape& shape :
       {SendumpShape{}, SendumpShape{3, 128, 50}, SendumpShape{1, 4, 3}})
    guarded([&] {
      const SendumpWeights w = parse_sendump(bytes, kName, shape);
      if (w.quantized.size() != size_t(w.num_streams) * w.density * w.num_senones) __builtin_trap();
      if (!w.quantized.empty())
        (void)w.log_weight(w.num_senones - 1, w.num_streams - 1, w.density - 1);
    });
  if (size < 256) {
    try {
      for (const auto& stream : parse_svspec(bytes))
        if (stream.empty()) __builtin_trap();
    } catch (const std::invalid_argument&) {
    }
  }
  return 0;
}
