#include "wav_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>

#include <sys/stat.h>

namespace gpuspeech {

namespace {

constexpr uint16_t kFormatPcm = 0x0001;
constexpr uint16_t kFormatAdpcm = 0x0002;
constexpr uint16_t kFormatFloat = 0x0003;
constexpr uint16_t kFormatAlaw = 0x0006;
constexpr uint16_t kFormatMulaw = 0x0007;
constexpr uint16_t kFormatImaAdpcm = 0x0011;
constexpr uint16_t kFormatMpeg = 0x0050;
constexpr uint16_t kFormatMp3 = 0x0055;
constexpr uint16_t kFormatExtensible = 0xFFFE;

// Bytes 2..15 of the KSDATAFORMAT_SUBTYPE_* GUIDs; bytes 0..1 hold the
// ordinary format code (1 = PCM, 3 = IEEE float).
constexpr uint8_t kSubformatGuidTail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                                            0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};

// Data sizes that streaming writers leave in the header when they cannot
// seek back to fill in the real one.
constexpr uint32_t kUnknownSizeFfmpeg = 0xFFFFFFFFu;
constexpr uint32_t kUnknownSizeSox = 0x7FFFF000u;

[[noreturn]] void fail(const std::string& name, const std::string& why) {
  throw AudioFileError(name + ": " + why);
}

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// A chunk id for messages: printable characters as they are, others as \xNN.
std::string printable_id(const uint8_t* p) {
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7F) {
      s += static_cast<char>(p[i]);
    } else {
      s += "\\x";
      s += hex[p[i] >> 4];
      s += hex[p[i] & 15];
    }
  }
  return s;
}

std::string format_code_name(uint16_t code) {
  switch (code) {
    case kFormatAdpcm: return "Microsoft ADPCM";
    case kFormatAlaw: return "A-law";
    case kFormatMulaw: return "mu-law";
    case kFormatImaAdpcm: return "IMA ADPCM";
    case kFormatMpeg: return "MPEG";
    case kFormatMp3: return "MP3";
    default: break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%04X", code);
  return buf;
}

struct WavFormat {
  uint16_t code = 0;  // PCM or float after resolving EXTENSIBLE
  int channels = 0;
  uint32_t sample_rate = 0;
  int block_align = 0;
  int container_bytes = 0;  // bytes per sample of one channel
  int valid_bits = 0;
  SampleEncoding encoding = SampleEncoding::kSigned16;
};

WavFormat parse_fmt_chunk(const uint8_t* p, uint32_t size, const std::string& name) {
  if (size < 16)
    fail(name, "fmt chunk is " + std::to_string(size) + " bytes, needs at least 16");
  WavFormat f;
  uint16_t code = le16(p);
  f.channels = le16(p + 2);
  f.sample_rate = le32(p + 4);
  f.block_align = le16(p + 12);
  const int bits = le16(p + 14);
  f.valid_bits = bits;

  if (code == kFormatExtensible) {
    if (size < 40)
      fail(name, "WAVE_FORMAT_EXTENSIBLE fmt chunk is " + std::to_string(size) +
                     " bytes, needs 40");
    const uint16_t cb_size = le16(p + 16);
    if (cb_size < 22)
      fail(name, "WAVE_FORMAT_EXTENSIBLE extension is " + std::to_string(cb_size) +
                     " bytes, needs 22");
    const int valid = le16(p + 18);
    if (std::memcmp(p + 26, kSubformatGuidTail, sizeof kSubformatGuidTail) != 0)
      fail(name, "WAVE_FORMAT_EXTENSIBLE with a sub-format GUID that is not a "
                 "standard one (only PCM and IEEE float are read)");
    code = le16(p + 24);
    if (valid != 0) {
      if (valid > bits)
        fail(name, "valid bits per sample (" + std::to_string(valid) +
                       ") exceed the container size (" + std::to_string(bits) + ")");
      f.valid_bits = valid;
    }
  }

  if (code != kFormatPcm && code != kFormatFloat)
    fail(name, "unsupported WAV format code " + format_code_name(code) +
                   " (only PCM integer and IEEE float are read; convert with "
                   "e.g. `sox IN -e signed-integer -b 16 OUT.wav`)");
  if (f.channels == 0) fail(name, "the fmt chunk declares zero channels");
  if (f.channels > kMaxWavChannels)
    fail(name, "the fmt chunk declares " + std::to_string(f.channels) +
                   " channels (more than " + std::to_string(kMaxWavChannels) +
                   "; corrupt header?)");
  if (f.sample_rate == 0) fail(name, "the fmt chunk declares a sample rate of 0 Hz");
  if (f.sample_rate > kMaxSampleRate)
    fail(name, "the fmt chunk declares a sample rate of " +
                   std::to_string(f.sample_rate) + " Hz (corrupt header?)");
  if (bits == 0) fail(name, "the fmt chunk declares 0 bits per sample");

  f.code = code;
  f.container_bytes = (bits + 7) / 8;
  if (code == kFormatFloat) {
    if (bits == 32) {
      f.encoding = SampleEncoding::kFloat32;
    } else if (bits == 64) {
      f.encoding = SampleEncoding::kFloat64;
    } else {
      fail(name, "IEEE float WAV with " + std::to_string(bits) +
                     " bits per sample (only 32 and 64 are defined)");
    }
  } else {
    switch (f.container_bytes) {
      case 1: f.encoding = SampleEncoding::kUnsigned8; break;
      case 2: f.encoding = SampleEncoding::kSigned16; break;
      case 3: f.encoding = SampleEncoding::kSigned24; break;
      case 4: f.encoding = SampleEncoding::kSigned32; break;
      default:
        fail(name, "PCM WAV with " + std::to_string(bits) +
                       " bits per sample (8, 16, 24 and 32 are read)");
    }
  }
  if (f.block_align != f.channels * f.container_bytes)
    fail(name, "block align " + std::to_string(f.block_align) + " does not match " +
                   std::to_string(f.channels) + " channel(s) of " +
                   std::to_string(f.container_bytes) + " byte(s)");
  return f;
}

// One sample of one channel, in 16-bit units. Float samples are checked by
// the caller.
double decode_sample(const uint8_t* p, SampleEncoding enc) {
  switch (enc) {
    case SampleEncoding::kUnsigned8:
      return (static_cast<int>(p[0]) - 128) * 256.0;
    case SampleEncoding::kSigned16:
      return static_cast<int16_t>(le16(p));
    case SampleEncoding::kSigned24: {
      // Sign-extend the 24-bit value through the top of a 32-bit word.
      const uint32_t u = (static_cast<uint32_t>(p[0]) << 8) |
                         (static_cast<uint32_t>(p[1]) << 16) |
                         (static_cast<uint32_t>(p[2]) << 24);
      return static_cast<int32_t>(u) / 65536.0;  // (v << 8) / 65536 = v / 256
    }
    case SampleEncoding::kSigned32:
      return static_cast<int32_t>(le32(p)) / 65536.0;
    case SampleEncoding::kFloat32: {
      const uint32_t u = le32(p);
      float v;
      std::memcpy(&v, &u, sizeof v);
      return v * 32768.0;
    }
    case SampleEncoding::kFloat64: {
      const uint64_t u = static_cast<uint64_t>(le32(p)) |
                         (static_cast<uint64_t>(le32(p + 4)) << 32);
      double v;
      std::memcpy(&v, &u, sizeof v);
      return v * 32768.0;
    }
  }
  return 0.0;
}

// Interleaved frames -> one channel in 16-bit units.
std::vector<float> decode_frames(const uint8_t* data, size_t num_frames, int channels,
                                 int container_bytes, SampleEncoding enc, int channel,
                                 const std::string& name) {
  if (channel < 0 || channel > channels)
    fail(name, "channel " + std::to_string(channel) + " requested but the file has " +
                   std::to_string(channels) + " channel(s)");
  const bool is_float =
      enc == SampleEncoding::kFloat32 || enc == SampleEncoding::kFloat64;
  const size_t frame_bytes = static_cast<size_t>(channels) * container_bytes;
  std::vector<float> out(num_frames);
  for (size_t t = 0; t < num_frames; ++t) {
    const uint8_t* frame = data + t * frame_bytes;
    double acc = 0.0;
    for (int c = 0; c < channels; ++c) {
      if (channel != 0 && c != channel - 1) continue;
      const double v = decode_sample(frame + static_cast<size_t>(c) * container_bytes, enc);
      // Finite float audio can still be too large to scale to 16-bit units
      // in a float; such a file is as corrupt as one holding NaN.
      if (is_float && !(std::fabs(v) <= std::numeric_limits<float>::max())) {
        fail(name, std::string("sample ") + std::to_string(t) +
                       (channels > 1 ? " (channel " + std::to_string(c + 1) + ")" : "") +
                       " is " +
                       (std::isnan(v) ? "NaN" : std::isinf(v) ? "infinite" : "out of range") +
                       "; the audio is corrupt");
      }
      acc += v;
    }
    out[t] = static_cast<float>(channel == 0 ? acc / channels : acc);
  }
  return out;
}

}  // namespace

const char* to_string(SampleEncoding e) {
  switch (e) {
    case SampleEncoding::kUnsigned8: return "unsigned 8-bit PCM";
    case SampleEncoding::kSigned16: return "signed 16-bit PCM";
    case SampleEncoding::kSigned24: return "signed 24-bit PCM";
    case SampleEncoding::kSigned32: return "signed 32-bit PCM";
    case SampleEncoding::kFloat32: return "32-bit float";
    case SampleEncoding::kFloat64: return "64-bit float";
  }
  return "?";
}

bool looks_like_wav(const uint8_t* bytes, size_t size) {
  return size >= 12 && std::memcmp(bytes, "RIFF", 4) == 0 &&
         std::memcmp(bytes + 8, "WAVE", 4) == 0;
}

AudioData parse_wav(const uint8_t* bytes, size_t size, const std::string& name,
                    const WavReadOptions& opts) {
  if (size == 0) fail(name, "the file is empty");
  if (size >= 4 && std::memcmp(bytes, "RIFX", 4) == 0)
    fail(name, "big-endian RIFX files are not supported; convert with sox");
  if (size >= 4 && std::memcmp(bytes, "RF64", 4) == 0)
    fail(name, "RF64 files are not supported; convert with sox");
  if (size < 12 || std::memcmp(bytes, "RIFF", 4) != 0)
    fail(name, size < 12 && size >= 4 && std::memcmp(bytes, "RIFF", 4) == 0
                   ? "truncated RIFF header (" + std::to_string(size) + " bytes)"
                   : "not a WAV file (no RIFF header)");
  if (std::memcmp(bytes + 8, "WAVE", 4) != 0)
    fail(name, "a RIFF file but not WAVE (form type '" + printable_id(bytes + 8) + "')");

  AudioData audio;
  auto warn = [&](const std::string& what) { audio.warnings.push_back(name + ": " + what); };

  // The RIFF size is often wrong (streaming writers leave placeholders,
  // some tools append tags after it), so chunks are walked up to the end of
  // the file and the walk stops once fmt and data are both found.
  const size_t end = size;

  bool have_fmt = false;
  WavFormat fmt;
  const uint8_t* data = nullptr;
  size_t data_bytes = 0;
  bool have_data = false;

  size_t pos = 12;
  while (!(have_fmt && have_data)) {
    if (pos >= end) break;
    if (end - pos < 8) {
      warn("ignored " + std::to_string(end - pos) + " trailing byte(s) after the last chunk");
      break;
    }
    const uint8_t* id = bytes + pos;
    const uint32_t chunk_size = le32(bytes + pos + 4);
    const size_t body = pos + 8;
    const size_t available = size - body;  // to the end of the file
    if (std::memcmp(id, "data", 4) == 0) {
      if (have_data) fail(name, "more than one data chunk");
      have_data = true;
      data = bytes + body;
      if (chunk_size <= available) {
        data_bytes = chunk_size;
      } else if (chunk_size == kUnknownSizeFfmpeg || chunk_size == kUnknownSizeSox) {
        data_bytes = available;
        warn("the data chunk size is a placeholder (" + std::to_string(chunk_size) +
             ", written by a streaming encoder); reading to the end of the file");
      } else if (opts.allow_truncated) {
        data_bytes = available;
        warn("truncated: the data chunk declares " + std::to_string(chunk_size) +
             " bytes but only " + std::to_string(available) + " remain; reading those");
      } else {
        fail(name, "truncated: the data chunk declares " + std::to_string(chunk_size) +
                       " bytes but only " + std::to_string(available) + " remain");
      }
      // Placeholder or truncated data runs to the end: nothing follows it.
      if (data_bytes != chunk_size) break;
    } else if (std::memcmp(id, "fmt ", 4) == 0) {
      if (have_fmt) fail(name, "more than one fmt chunk");
      if (chunk_size > available)
        fail(name, "truncated: the fmt chunk declares " + std::to_string(chunk_size) +
                       " bytes but only " + std::to_string(available) + " remain");
      fmt = parse_fmt_chunk(bytes + body, chunk_size, name);
      have_fmt = true;
    } else if (chunk_size > available) {
      // An unknown chunk running past the end: without fmt and data before
      // it there is nothing to read.
      fail(name, "truncated: chunk '" + printable_id(id) + "' declares " +
                     std::to_string(chunk_size) + " bytes but only " +
                     std::to_string(available) + " remain" +
                     (have_data ? "" : " (no data chunk before it)"));
    }
    // Chunks are padded to an even length; the pad byte may be missing at
    // the very end of a file.
    const uint64_t next = static_cast<uint64_t>(body) + chunk_size + (chunk_size & 1u);
    if (next > size) break;
    pos = static_cast<size_t>(next);
  }

  if (!have_fmt) fail(name, "no fmt chunk");
  if (!have_data) fail(name, "no data chunk");

  const size_t frame_bytes = static_cast<size_t>(fmt.block_align);
  const size_t num_frames = data_bytes / frame_bytes;
  if (data_bytes % frame_bytes != 0)
    warn("ignored a partial sample frame of " + std::to_string(data_bytes % frame_bytes) +
         " byte(s) at the end of the data");

  audio.sample_rate = static_cast<int>(fmt.sample_rate);
  audio.channels = fmt.channels;
  audio.encoding = fmt.encoding;
  audio.valid_bits = fmt.valid_bits;
  audio.samples = decode_frames(data, num_frames, fmt.channels, fmt.container_bytes,
                                fmt.encoding, opts.channel, name);
  return audio;
}

AudioData parse_raw_s16le(const uint8_t* bytes, size_t size, int sample_rate,
                          const std::string& name, int channels, int channel) {
  if (sample_rate <= 0 || static_cast<uint32_t>(sample_rate) > kMaxSampleRate)
    fail(name, "raw audio needs a sample rate in 1.." + std::to_string(kMaxSampleRate) +
                   " Hz, got " + std::to_string(sample_rate));
  if (channels < 1 || channels > kMaxWavChannels)
    fail(name, "raw audio needs 1.." + std::to_string(kMaxWavChannels) +
                   " channels, got " + std::to_string(channels));
  if (size == 0) fail(name, "the file is empty");
  const size_t frame_bytes = 2 * static_cast<size_t>(channels);
  if (size % frame_bytes != 0)
    fail(name, "raw 16-bit audio of " + std::to_string(size) +
                   " bytes is not a whole number of " + std::to_string(channels) +
                   "-channel sample frames");
  AudioData audio;
  audio.sample_rate = sample_rate;
  audio.channels = channels;
  audio.encoding = SampleEncoding::kSigned16;
  audio.valid_bits = 16;
  audio.samples = decode_frames(bytes, size / frame_bytes, channels, 2,
                                SampleEncoding::kSigned16, channel, name);
  return audio;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff len = in.tellg();
  if (len < 0) fail(path, "cannot determine the file size (not a regular file?)");
  in.seekg(0, std::ios::beg);
  std::vector<uint8_t> bytes(static_cast<size_t>(len));
  if (len > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), len))
    fail(path, "read error");
  return bytes;
}

AudioData read_wav_file(const std::string& path, const WavReadOptions& opts) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_wav(bytes.data(), bytes.size(), path, opts);
}

AudioData read_audio_file(const std::string& path, int raw_sample_rate) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  if (looks_like_wav(bytes.data(), bytes.size())) return parse_wav(bytes.data(), bytes.size(), path);
  return parse_raw_s16le(bytes.data(), bytes.size(), raw_sample_rate, path);
}

AudioData read_raw_s16le_file(const std::string& path, int sample_rate, int channels,
                              int channel) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  return parse_raw_s16le(bytes.data(), bytes.size(), sample_rate, path, channels,
                         channel);
}

}  // namespace gpuspeech
