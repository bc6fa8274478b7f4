#include "common/features/feature_writer.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include "common/features/wav_reader.h"  // read_file_bytes

namespace gpuspeech {

namespace {

[[noreturn]] void fail(const std::string& name, const std::string& why) {
  throw FeatureFileError(name + ": " + why);
}

uint32_t float_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u;
}

void put_le32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_be16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
uint32_t get_le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}
uint32_t get_be32(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | static_cast<uint32_t>(p[3]);
}

void check_shape(const FeatureMatrix& feats) {
  if (feats.rows < 0 || feats.dim < 0 ||
      feats.data.size() != static_cast<size_t>(feats.rows) * static_cast<size_t>(feats.dim))
    throw std::invalid_argument("feature matrix of " + std::to_string(feats.rows) + " x " +
                                std::to_string(feats.dim) + " holds " +
                                std::to_string(feats.data.size()) + " values");
}

// Whether the first coefficient of each block is C0 or log energy, which
// HTK stores last.
bool has_leading_c0(const FeatureOptions& opts) {
  return opts.kind == FeatureKind::kMfcc || opts.kind == FeatureKind::kPlp;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, std::string("cannot create: ") + std::strerror(errno));
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.flush();
  if (!out) fail(path, "write error (disk full?)");
}

}  // namespace

const char* to_string(FeatureFileFormat f) {
  switch (f) {
    case FeatureFileFormat::kSphinx: return "sphinx";
    case FeatureFileFormat::kHtk: return "htk";
    case FeatureFileFormat::kText: return "text";
  }
  return "?";
}

FeatureFileFormat parse_feature_file_format(const std::string& s) {
  if (s == "sphinx") return FeatureFileFormat::kSphinx;
  if (s == "htk") return FeatureFileFormat::kHtk;
  if (s == "text") return FeatureFileFormat::kText;
  throw std::invalid_argument("unknown output format '" + s + "' (expected sphinx|htk|text)");
}

uint16_t htk_parm_kind(const FeatureOptions& opts) {
  uint16_t kind = htk::kUser;
  bool energy = false;
  switch (opts.kind) {
    case FeatureKind::kMfcc:
      kind = htk::kMfcc;
      energy = opts.mfcc.use_energy;
      break;
    case FeatureKind::kFbank: kind = htk::kFbank; break;
    case FeatureKind::kPlp:
      kind = htk::kPlp;
      energy = opts.plp.use_energy;
      break;
    case FeatureKind::kTraps: kind = htk::kUser; break;
  }
  if (has_leading_c0(opts)) kind |= energy ? htk::kEnergy : htk::kC0;
  switch (opts.delta.layout) {
    case DeltaOptions::Layout::kNone: break;
    case DeltaOptions::Layout::kSphinx1sCDDd: kind |= htk::kDelta | htk::kAcceleration; break;
    // Four rearranged streams: no HTK kind or qualifier describes them.
    case DeltaOptions::Layout::kSphinxS2_4x: kind = htk::kUser; break;
    case DeltaOptions::Layout::kRegression:
      kind |= htk::kDelta;
      if (opts.delta.order >= 2) kind |= htk::kAcceleration;
      break;
  }
  return kind;
}

int32_t htk_sample_period(const FeatureOptions& opts) {
  const double period =
      opts.frame.frame_shift_samples() * 1e7 / static_cast<double>(opts.frame.sample_rate);
  return static_cast<int32_t>(std::lround(period));
}

std::vector<uint8_t> encode_sphinx_mfc(const FeatureMatrix& feats) {
  check_shape(feats);
  const size_t count = feats.data.size();
  if (count > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    throw std::invalid_argument("too many values for a Sphinx .mfc file (int32 count)");
  std::vector<uint8_t> out;
  out.reserve(4 + 4 * count);
  put_le32(out, static_cast<uint32_t>(count));
  for (float v : feats.data) put_le32(out, float_bits(v));
  return out;
}

std::vector<uint8_t> encode_htk(const FeatureMatrix& feats, const FeatureOptions& opts) {
  check_shape(feats);
  if (feats.dim != opts.output_dim())
    throw std::invalid_argument("feature matrix has " + std::to_string(feats.dim) +
                                " columns but the options describe " +
                                std::to_string(opts.output_dim()));
  if (static_cast<int64_t>(feats.dim) * 4 > std::numeric_limits<int16_t>::max())
    throw std::invalid_argument("frames of " + std::to_string(feats.dim) +
                                " floats are too wide for HTK (sampSize is int16)");
  if (feats.rows > std::numeric_limits<int32_t>::max())
    throw std::invalid_argument("too many frames for HTK (nSamples is int32)");
  std::vector<uint8_t> out;
  out.reserve(12 + 4 * feats.data.size());
  put_be32(out, static_cast<uint32_t>(feats.rows));
  put_be32(out, static_cast<uint32_t>(htk_sample_period(opts)));
  put_be16(out, static_cast<uint16_t>(feats.dim * 4));
  put_be16(out, htk_parm_kind(opts));

  // Blocks of base_dim columns (static, then delta, then acceleration);
  // in each, HTK wants C0/energy after the other coefficients.
  const int block = opts.base_dim();
  const bool rotate = has_leading_c0(opts) && block > 1 && feats.dim % block == 0;
  for (int64_t r = 0; r < feats.rows; ++r) {
    const float* row = feats.row(r);
    for (int c = 0; c < feats.dim; ++c) {
      int src = c;
      if (rotate) {
        const int start = c - c % block;
        const int k = c % block;
        src = start + (k == block - 1 ? 0 : k + 1);
      }
      put_be32(out, float_bits(row[src]));
    }
  }
  return out;
}

std::vector<uint8_t> encode_text(const FeatureMatrix& feats) {
  check_shape(feats);
  std::string text;
  char buf[32];
  for (int64_t r = 0; r < feats.rows; ++r) {
    const float* row = feats.row(r);
    for (int c = 0; c < feats.dim; ++c) {
      std::snprintf(buf, sizeof buf, c ? " %.9g" : "%.9g", static_cast<double>(row[c]));
      text += buf;
    }
    text += '\n';
  }
  return std::vector<uint8_t>(text.begin(), text.end());
}

HtkHeader decode_htk_header(const uint8_t* bytes, size_t size) {
  if (size < 12) throw FeatureFileError("HTK header needs 12 bytes");
  HtkHeader h;
  h.num_samples = static_cast<int32_t>(get_be32(bytes));
  h.sample_period = static_cast<int32_t>(get_be32(bytes + 4));
  h.sample_size = static_cast<int16_t>((bytes[8] << 8) | bytes[9]);
  h.parm_kind = static_cast<uint16_t>((bytes[10] << 8) | bytes[11]);
  return h;
}

void write_features(const std::string& path, const FeatureMatrix& feats,
                    const FeatureOptions& opts, FeatureFileFormat format) {
  std::vector<uint8_t> bytes;
  try {
    switch (format) {
      case FeatureFileFormat::kSphinx: bytes = encode_sphinx_mfc(feats); break;
      case FeatureFileFormat::kHtk: bytes = encode_htk(feats, opts); break;
      case FeatureFileFormat::kText: bytes = encode_text(feats); break;
    }
  } catch (const std::invalid_argument& e) {
    fail(path, e.what());
  }
  write_bytes(path, bytes);
}

FeatureMatrix decode_sphinx_mfc(const uint8_t* bytes, size_t size, int dim,
                                const std::string& name, bool* big_endian) {
  if (size < 4) fail(name, "too short for a Sphinx feature file (" + std::to_string(size) + " bytes)");
  if ((size - 4) % 4 != 0)
    fail(name, "size " + std::to_string(size) + " is not 4 + 4 * count");
  const uint64_t count = (size - 4) / 4;
  bool swap;
  if (get_le32(bytes) == count) {
    swap = false;
  } else if (get_be32(bytes) == count) {
    swap = true;
  } else {
    fail(name, "the header count (" + std::to_string(get_le32(bytes)) +
                   ") matches the file size in neither byte order");
  }
  if (big_endian) *big_endian = swap;
  FeatureMatrix m;
  if (dim < 0) fail(name, "negative dimension requested");
  if (dim == 0) {
    m.dim = static_cast<int>(std::min<uint64_t>(count, std::numeric_limits<int>::max()));
    m.rows = count == 0 ? 0 : 1;
  } else {
    if (count % static_cast<uint64_t>(dim) != 0)
      fail(name, std::to_string(count) + " values are not whole frames of " +
                     std::to_string(dim));
    m.dim = dim;
    m.rows = static_cast<int64_t>(count / dim);
  }
  m.data.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* p = bytes + 4 + 4 * i;
    const uint32_t u = swap ? get_be32(p) : get_le32(p);
    std::memcpy(&m.data[i], &u, sizeof u);
  }
  return m;
}

FeatureMatrix read_sphinx_mfc(const std::string& path, int dim, bool* big_endian) {
  std::vector<uint8_t> bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const AudioFileError& e) {
    throw FeatureFileError(e.what());
  }
  return decode_sphinx_mfc(bytes.data(), bytes.size(), dim, path, big_endian);
}

}  // namespace gpuspeech
