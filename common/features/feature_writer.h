// Writing feature matrices to files, in the formats the toolkits read:
//
//  sphinx  Sphinx cepstrum (.mfc): int32 count of floats, then the float32
//          values frame after frame, little-endian (what sphinx_fe writes on
//          x86; sphinx's readers detect the byte order from the count).
//  htk     HTK parameter file: 12-byte big-endian header (nSamples int32,
//          sampPeriod int32 in 100 ns, sampSize int16 bytes per frame,
//          parmKind int16), then big-endian float32 frames. parmKind is MFCC,
//          FBANK, PLP or USER (TRAPS) with _0 or _E for MFCC/PLP and _D/_A
//          for deltas. HTK keeps C0 or energy as the LAST coefficient of each
//          block, our matrices keep it first: the writer moves it (for each
//          of the static, delta and acceleration blocks).
//  text    one frame per line, values separated by spaces, printed with
//          enough digits (%.9g) to read back the same float32.
//
// Errors (cannot create, write failure, a frame too wide for HTK) are
// FeatureFileError with the file name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/features/feature_pipeline.h"
#include "common/features/feature_options.h"

namespace gpuspeech {

class FeatureFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class FeatureFileFormat { kSphinx, kHtk, kText };
const char* to_string(FeatureFileFormat);
// "sphinx", "htk" or "text"; std::invalid_argument otherwise.
FeatureFileFormat parse_feature_file_format(const std::string&);

// HTK parameter kinds and qualifiers (HTK book, "Parameter Kinds").
namespace htk {
constexpr uint16_t kLpc = 1;
constexpr uint16_t kMfcc = 6;
constexpr uint16_t kFbank = 7;
constexpr uint16_t kUser = 9;
constexpr uint16_t kPlp = 11;
constexpr uint16_t kEnergy = 0x0040;        // _E
constexpr uint16_t kDelta = 0x0100;         // _D
constexpr uint16_t kAcceleration = 0x0200;  // _A
constexpr uint16_t kZeroMean = 0x0800;      // _Z
constexpr uint16_t kC0 = 0x2000;            // _0
}  // namespace htk

struct HtkHeader {
  int32_t num_samples = 0;
  int32_t sample_period = 0;  // 100 ns units
  int16_t sample_size = 0;    // bytes per frame
  uint16_t parm_kind = 0;
};

// The parmKind that describes features computed with `opts`.
uint16_t htk_parm_kind(const FeatureOptions& opts);
// The frame shift in HTK's 100 ns units.
int32_t htk_sample_period(const FeatureOptions& opts);

// File images, for tests and for writing.
std::vector<uint8_t> encode_sphinx_mfc(const FeatureMatrix& feats);
// `feats` must be laid out as opts describes (output_dim columns).
std::vector<uint8_t> encode_htk(const FeatureMatrix& feats, const FeatureOptions& opts);
std::vector<uint8_t> encode_text(const FeatureMatrix& feats);
HtkHeader decode_htk_header(const uint8_t* bytes, size_t size);

void write_features(const std::string& path, const FeatureMatrix& feats,
                    const FeatureOptions& opts, FeatureFileFormat format);

// Reads a Sphinx .mfc of either byte order: the order is the one in which
// the count matches the file size. dim > 0 reshapes into rows of dim floats
// (the count must divide); dim == 0 gives one row of all values.
// FeatureFileError if the count fits neither order.
FeatureMatrix read_sphinx_mfc(const std::string& path, int dim = 0,
                              bool* big_endian = nullptr);
FeatureMatrix decode_sphinx_mfc(const uint8_t* bytes, size_t size, int dim,
                                const std::string& name, bool* big_endian = nullptr);

}  // namespace gpuspeech
