// libFuzzer target: model definition (mdef) parsing, text and binary, on
// arbitrary bytes. Every input must either parse or throw ModelError with a
// "fuzz.mdef:" message; a parsed model must answer every lookup within its
// own ranges (no out-of-range phone, senone or tmat ids). Anything else is a
// bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/model/mdef.h"

namespace {

void check(const gpuspeech::ModelDefinition& m) {
  using namespace gpuspeech;
  const int nb = m.num_base_phones(), np = m.num_phones();
  if (nb < 1 || np < nb || m.num_emitting_states() < 1) __builtin_trap();
  for (int p = 0; p < np && p < 4096; ++p) {
    if (m.tmat_of(p) < 0 || m.tmat_of(p) >= m.num_tmats()) __builtin_trap();
    for (int s : m.senones_of(p))
      if (s < 0 || s >= m.num_senones()) __builtin_trap();
    if (p >= nb) {
      // A triphone is found by its own contexts.
      if (m.exact_phone_id(m.base_of(p), m.left_of(p), m.right_of(p), m.position_of(p)) != p)
        __builtin_trap();
    }
    (void)m.phone_name(p);
  }
  for (int s = 0; s < m.num_senones() && s < 4096; ++s)
    if (m.senone_base_phone(s) < -1 || m.senone_base_phone(s) >= nb) __builtin_trap();
  // Lookups with every back-off path on a few context combinations.
  for (int b = 0; b < nb && b < 8; ++b)
    for (int l = -1; l < nb && l < 8; ++l)
      for (int r = 0; r < nb && r < 8; ++r)
        for (int pos = 0; pos < kNumWordPositions; ++pos) {
          const int q = m.nearest_phone_id(b, l, r, static_cast<WordPosition>(pos));
          if (q < 0 || q >= np || m.base_of(q) != b) __builtin_trap();
        }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpuspeech;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    check(ModelDefinition::parse(bytes, "fuzz.mdef"));
  } catch (const ModelError& e) {
    if (std::string(e.what()).rfind("fuzz.mdef:", 0) != 0) __builtin_trap();
  }
  return 0;
}
