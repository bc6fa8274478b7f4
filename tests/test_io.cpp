// File input and output: the WAV and raw readers (on files written here,
// byte by byte from the RIFF layout, and on files sox wrote), feat.params
// parsing (Debian's en-us and an4 models, and malformed files), and the
// Sphinx .mfc and HTK writers.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/features/feat_params.h"
#include "common/features/feature_writer.h"
#include "common/features/feature_options.h"
#include "common/features/wav_reader.h"
#include "test_backends.h"

namespace gpuspeech {
namespace {

const std::string kEnUsParams = testing::model_dir() + "/en-us/en-us/feat.params";
const std::string kAn4Params = testing::audio_dir() + "/an4_ci_cont/feat.params";
const std::string kGoforwardMfc = testing::audio_dir() + "/goforward.mfc";

// ------------------------------------------------------------------ helpers

using Bytes = std::vector<uint8_t>;

void put16(Bytes& b, uint16_t v) {
  b.push_back(v & 0xFF);
  b.push_back(v >> 8);
}
void put32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back((v >> (8 * i)) & 0xFF);
}
void put_id(Bytes& b, const char* id) { b.insert(b.end(), id, id + 4); }

void put_chunk(Bytes& b, const char* id, const Bytes& body, bool pad = true) {
  put_id(b, id);
  put32(b, static_cast<uint32_t>(body.size()));
  b.insert(b.end(), body.begin(), body.end());
  if (pad && (body.size() & 1)) b.push_back(0);
}

struct Fmt {
  uint16_t code = 1;
  uint16_t channels = 1;
  uint32_t rate = 16000;
  uint16_t bits = 16;
  bool extensible = false;
  uint16_t sub_code = 1;   // inside EXTENSIBLE
  uint16_t valid_bits = 0;  // inside EXTENSIBLE; 0 = bits
  int block_align = -1;     // -1: computed
};

Bytes fmt_body(const Fmt& f) {
  Bytes b;
  const uint16_t align =
      f.block_align >= 0 ? static_cast<uint16_t>(f.block_align) : f.channels * ((f.bits + 7) / 8);
  put16(b, f.extensible ? 0xFFFE : f.code);
  put16(b, f.channels);
  put32(b, f.rate);
  put32(b, f.rate * align);
  put16(b, align);
  put16(b, f.bits);
  if (f.extensible) {
    put16(b, 22);
    put16(b, f.valid_bits ? f.valid_bits : f.bits);
    put32(b, 0);  // channel mask
    put16(b, f.sub_code);
    const uint8_t tail[14] = {0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80,
                              0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71};
    b.insert(b.end(), tail, tail + 14);
  }
  return b;
}

// A RIFF/WAVE file with the given chunks (already encoded).
Bytes riff(const Bytes& chunks) {
  Bytes b;
  put_id(b, "RIFF");
  put32(b, static_cast<uint32_t>(4 + chunks.size()));
  put_id(b, "WAVE");
  b.insert(b.end(), chunks.begin(), chunks.end());
  return b;
}

Bytes simple_wav(const Fmt& f, const Bytes& data) {
  Bytes chunks;
  put_chunk(chunks, "fmt ", fmt_body(f));
  put_chunk(chunks, "data", data);
  return riff(chunks);
}

AudioData parse(const Bytes& b, const WavReadOptions& o = {}) {
  return parse_wav(b.data(), b.size(), "test.wav", o);
}

// The message of the AudioFileError `f` throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const AudioFileError& e) {
    return e.what();
  } catch (const FeatParamsError& e) {
    return e.what();
  } catch (const FeatureFileError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_ERROR_HAS(expr, text)                                  \
  do {                                                                \
    const std::string msg_ = error_of([&] { (void)(expr); });         \
    EXPECT_NE(msg_, "") << "no error from " #expr;                    \
    EXPECT_NE(msg_.find(text), std::string::npos) << "message: " << msg_; \
  } while (0)

// Random int16 samples with the extremes included.
std::vector<int16_t> test_signal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-32768, 32767);
  std::vector<int16_t> s(n);
  for (auto& v : s) v = static_cast<int16_t>(d(rng));
  if (n > 2) {
    s[0] = -32768;
    s[1] = 32767;
    s[2] = 0;
  }
  return s;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gpuspeech-test-io-XXXXXX";
    const char* d = mkdtemp(tmpl);
    if (!d) throw std::runtime_error("mkdtemp failed");
    path_ = d;
  }
  ~TempDir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  ASSERT_TRUE(out.good()) << path;
}

// ------------------------------------------------------- WAV: every format

TEST(WavReader, Pcm16Mono) {
  const auto s = test_signal(1000, 1);
  Bytes data;
  for (int16_t v : s) put16(data, static_cast<uint16_t>(v));
  const AudioData a = parse(simple_wav({}, data));
  EXPECT_EQ(a.sample_rate, 16000);
  EXPECT_EQ(a.channels, 1);
  EXPECT_EQ(a.encoding, SampleEncoding::kSigned16);
  EXPECT_TRUE(a.warnings.empty());
  ASSERT_EQ(a.samples.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(a.samples[i], s[i]) << i;
}

TEST(WavReader, Unsigned8) {
  Bytes data = {0, 1, 127, 128, 129, 255};
  Fmt f;
  f.bits = 8;
  const AudioData a = parse(simple_wav(f, data));
  const float expect[] = {-32768, -32512, -256, 0, 256, 32512};
  ASSERT_EQ(a.samples.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a.samples[i], expect[i]) << i;
}

TEST(WavReader, Signed24And32ScaleTo16BitUnits) {
  // 24-bit: v / 256; 32-bit: v / 65536. Values chosen to test sign
  // extension and fractions.
  const int32_t v24[] = {0, 1, -1, 256, -256, 8388607, -8388608, 12345};
  Bytes d24;
  for (int32_t v : v24) {
    const uint32_t u = static_cast<uint32_t>(v);
    d24.push_back(u & 0xFF);
    d24.push_back((u >> 8) & 0xFF);
    d24.push_back((u >> 16) & 0xFF);
  }
  Fmt f24;
  f24.bits = 24;
  const AudioData a24 = parse(simple_wav(f24, d24));
  ASSERT_EQ(a24.samples.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(a24.samples[i], v24[i] / 256.0f) << i;

  const int32_t v32[] = {0, 1, -1, 65536, -65536, 2147483647, -2147483647 - 1, 98765432};
  Bytes d32;
  for (int32_t v : v32) put32(d32, static_cast<uint32_t>(v));
  Fmt f32;
  f32.bits = 32;
  const AudioData a32 = parse(simple_wav(f32, d32));
  ASSERT_EQ(a32.samples.size(), 8u);
  for (int i = 0; i < 8; ++i)
    EXPECT_FLOAT_EQ(a32.samples[i], static_cast<float>(v32[i] / 65536.0)) << i;
}

TEST(WavReader, FloatScaledBy32768) {
  const float vf[] = {0.0f, 0.5f, -1.0f, 1.0f, 1.5f, -0.25f};
  Bytes d32, d64;
  for (float v : vf) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    put32(d32, u);
    const double dv = v;
    uint64_t u64;
    std::memcpy(&u64, &dv, 8);
    put32(d64, static_cast<uint32_t>(u64));
    put32(d64, static_cast<uint32_t>(u64 >> 32));
  }
  Fmt f;
  f.code = 3;
  f.bits = 32;
  const AudioData a = parse(simple_wav(f, d32));
  EXPECT_EQ(a.encoding, SampleEncoding::kFloat32);
  f.bits = 64;
  const AudioData b = parse(simple_wav(f, d64));
  EXPECT_EQ(b.encoding, SampleEncoding::kFloat64);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(a.samples[i], vf[i] * 32768.0f) << i;
    EXPECT_EQ(b.samples[i], vf[i] * 32768.0f) << i;
  }
}

TEST(WavReader, ExtensibleFormats) {
  Bytes d16;
  for (int16_t v : {100, -200, 300, -400}) put16(d16, static_cast<uint16_t>(v));
  Fmt f;
  f.extensible = true;
  f.channels = 2;
  const AudioData a = parse(simple_wav(f, d16));
  EXPECT_EQ(a.channels, 2);
  ASSERT_EQ(a.samples.size(), 2u);
  EXPECT_EQ(a.samples[0], -50.0f);  // (100 - 200) / 2
  EXPECT_EQ(a.samples[1], -50.0f);

  // 20 valid bits in a 24-bit container: read through the container.
  Fmt f20;
  f20.extensible = true;
  f20.bits = 24;
  f20.valid_bits = 20;
  const Bytes d24 = {0x00, 0x10, 0x00, 0x00, 0xF0, 0xFF};  // 4096, -4096
  const AudioData b = parse(simple_wav(f20, d24));
  EXPECT_EQ(b.valid_bits, 20);
  ASSERT_EQ(b.samples.size(), 2u);
  EXPECT_EQ(b.samples[0], 16.0f);
  EXPECT_EQ(b.samples[1], -16.0f);

  Fmt ff;
  ff.extensible = true;
  ff.sub_code = 3;
  ff.bits = 32;
  Bytes dfl;
  const float half = 0.5f;
  uint32_t u;
  std::memcpy(&u, &half, 4);
  put32(dfl, u);
  const AudioData c = parse(simple_wav(ff, dfl));
  EXPECT_EQ(c.encoding, SampleEncoding::kFloat32);
  EXPECT_EQ(c.samples.at(0), 16384.0f);

  Fmt fbad = f;
  fbad.sub_code = 6;
  EXPECT_ERROR_HAS(parse(simple_wav(fbad, d16)), "A-law");
  Bytes guid_bad = simple_wav(f, d16);
  guid_bad[12 + 8 + 24 + 10] ^= 0xFF;  // a byte of the GUID tail
  EXPECT_ERROR_HAS(parse(guid_bad), "sub-format GUID");
}

TEST(WavReader, StereoMixedOrSelected) {
  Bytes d;
  for (int t = 0; t < 4; ++t) {
    put16(d, static_cast<uint16_t>(static_cast<int16_t>(1000 * t)));
    put16(d, static_cast<uint16_t>(static_cast<int16_t>(-3 * t)));
    put16(d, static_cast<uint16_t>(static_cast<int16_t>(7)));
  }
  Fmt f;
  f.channels = 3;
  const Bytes b = simple_wav(f, d);
  const AudioData mixed = parse(b);
  WavReadOptions o;
  o.channel = 2;
  const AudioData second = parse(b, o);
  ASSERT_EQ(mixed.samples.size(), 4u);
  for (int t = 0; t < 4; ++t) {
    EXPECT_FLOAT_EQ(mixed.samples[t], (1000.0f * t - 3.0f * t + 7.0f) / 3.0f);
    EXPECT_EQ(second.samples[t], -3.0f * t);
  }
  o.channel = 4;
  EXPECT_ERROR_HAS(parse(b, o), "channel 4 requested but the file has 3");
}

TEST(WavReader, ChunksInAnyOrderWithPadding) {
  Bytes data;
  for (int16_t v : {1, 2, 3}) put16(data, static_cast<uint16_t>(v));
  Bytes chunks;
  put_chunk(chunks, "LIST", Bytes{'a', 'b', 'c'});  // odd: one pad byte follows
  put_chunk(chunks, "data", data);
  put_chunk(chunks, "junk", Bytes(7, 0x55));
  put_chunk(chunks, "fmt ", fmt_body({}));
  const AudioData a = parse(riff(chunks));
  ASSERT_EQ(a.samples.size(), 3u);
  EXPECT_EQ(a.samples[2], 3.0f);

  // An odd-sized 8-bit data chunk with its pad byte, then fmt.
  Fmt f8;
  f8.bits = 8;
  Bytes c8;
  put_chunk(c8, "data", Bytes{128, 129, 130});
  put_chunk(c8, "fmt ", fmt_body(f8));
  const AudioData b = parse(riff(c8));
  ASSERT_EQ(b.samples.size(), 3u);
  EXPECT_EQ(b.samples[2], 512.0f);

  // The pad byte of the last chunk may be missing.
  Bytes c9;
  put_chunk(c9, "fmt ", fmt_body(f8));
  put_chunk(c9, "data", Bytes{128, 129, 130}, /*pad=*/false);
  EXPECT_EQ(parse(riff(c9)).samples.size(), 3u);
}

TEST(WavReader, AnySampleRate) {
  for (uint32_t rate : {8000u, 11025u, 22050u, 44100u, 48000u, 96000u, 7u}) {
    Fmt f;
    f.rate = rate;
    EXPECT_EQ(parse(simple_wav(f, Bytes{0, 0})).sample_rate, static_cast<int>(rate));
  }
}

// ----------------------------------------------------- WAV: malformed input

TEST(WavReader, RejectsMalformedHeaders) {
  Bytes ok_data = {1, 0, 2, 0};
  const Bytes good = simple_wav({}, ok_data);
  EXPECT_ERROR_HAS(parse(Bytes{}), "test.wav: the file is empty");
  EXPECT_ERROR_HAS(parse(Bytes{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd', '!', '!'}),
                   "not a WAV file");
  EXPECT_ERROR_HAS(parse(Bytes(good.begin(), good.begin() + 8)), "truncated RIFF header");
  Bytes avi = good;
  std::memcpy(avi.data() + 8, "AVI ", 4);
  EXPECT_ERROR_HAS(parse(avi), "not WAVE");
  Bytes rifx = good;
  std::memcpy(rifx.data(), "RIFX", 4);
  EXPECT_ERROR_HAS(parse(rifx), "RIFX");
  Bytes rf64 = good;
  std::memcpy(rf64.data(), "RF64", 4);
  EXPECT_ERROR_HAS(parse(rf64), "RF64");

  Bytes no_fmt;
  put_chunk(no_fmt, "data", ok_data);
  EXPECT_ERROR_HAS(parse(riff(no_fmt)), "no fmt chunk");
  Bytes no_data;
  put_chunk(no_data, "fmt ", fmt_body({}));
  EXPECT_ERROR_HAS(parse(riff(no_data)), "no data chunk");
  EXPECT_ERROR_HAS(parse(riff(Bytes{})), "no fmt chunk");

  Bytes short_fmt;
  put_chunk(short_fmt, "fmt ", Bytes(10, 0));
  put_chunk(short_fmt, "data", ok_data);
  EXPECT_ERROR_HAS(parse(riff(short_fmt)), "fmt chunk is 10 bytes");

  Fmt f;
  f.channels = 0;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "zero channels");
  f = {};
  f.channels = 60000;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "60000 channels");
  f = {};
  f.rate = 0;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "sample rate of 0");
  f = {};
  f.rate = 4000000000u;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "corrupt header");
  f = {};
  f.bits = 0;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "0 bits per sample");
  f = {};
  f.bits = 40;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "40 bits per sample");
  f = {};
  f.code = 3;
  f.bits = 16;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "IEEE float WAV with 16 bits");
  f = {};
  f.block_align = 3;
  EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "block align 3");
  for (uint16_t code : {2, 6, 7, 0x11, 0x55, 0x1234}) {
    f = {};
    f.code = code;
    EXPECT_ERROR_HAS(parse(simple_wav(f, ok_data)), "unsupported WAV format code");
  }
  Bytes two_data;
  put_chunk(two_data, "fmt ", fmt_body({}));
  put_chunk(two_data, "data", Bytes{});
  put_chunk(two_data, "data", ok_data);
  // Both found after the first data chunk: reading stops there, so a second
  // one is never looked at; the first one (empty) is the audio.
  EXPECT_EQ(parse(riff(two_data)).samples.size(), 0u);
  Bytes two_data_first;
  put_chunk(two_data_first, "data", Bytes{});
  put_chunk(two_data_first, "data", ok_data);
  put_chunk(two_data_first, "fmt ", fmt_body({}));
  EXPECT_ERROR_HAS(parse(riff(two_data_first)), "more than one data chunk");
}

TEST(WavReader, TruncatedDataIsAnErrorUnlessAllowed) {
  Bytes data(2000, 0x11);
  Bytes file = simple_wav({}, data);
  file.resize(file.size() - 501);  // cut mid-sample
  EXPECT_ERROR_HAS(parse(file), "truncated: the data chunk declares 2000 bytes but only 1499 remain");

  WavReadOptions o;
  o.allow_truncated = true;
  const AudioData a = parse(file, o);
  EXPECT_EQ(a.samples.size(), 749u);
  ASSERT_EQ(a.warnings.size(), 2u);  // truncated, and a partial sample frame
  EXPECT_NE(a.warnings[0].find("truncated"), std::string::npos);
  EXPECT_NE(a.warnings[1].find("partial sample frame"), std::string::npos);

  // A chunk before fmt and data that runs past the end.
  Bytes chunks;
  put_id(chunks, "LIST");
  put32(chunks, 1000);
  chunks.resize(chunks.size() + 10);
  EXPECT_ERROR_HAS(parse(riff(chunks)), "chunk 'LIST' declares 1000 bytes");
  // The header cut inside fmt.
  Bytes cut = simple_wav({}, data);
  cut.resize(30);
  EXPECT_ERROR_HAS(parse(cut), "fmt chunk declares 16 bytes but only 10 remain");
}

TEST(WavReader, StreamingPlaceholderSizesReadToTheEnd) {
  for (uint32_t placeholder : {0xFFFFFFFFu, 0x7FFFF000u}) {
    Bytes file = simple_wav({}, Bytes{1, 0, 2, 0, 3, 0});
    // data size field: RIFF(12) + "fmt "(8) + 16 + "data" id (4)
    const size_t at = 12 + 8 + 16 + 4;
    for (int i = 0; i < 4; ++i) file[at + i] = (placeholder >> (8 * i)) & 0xFF;
    for (int i = 0; i < 4; ++i) file[4 + i] = 0xFF;  // RIFF size placeholder too
    const AudioData a = parse(file);
    ASSERT_EQ(a.samples.size(), 3u);
    EXPECT_EQ(a.samples[2], 3.0f);
    ASSERT_EQ(a.warnings.size(), 1u);
    EXPECT_NE(a.warnings[0].find("placeholder"), std::string::npos);
  }
}

TEST(WavReader, NonFiniteFloatSamplesAreRejectedWithTheirIndex) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    Bytes d;
    for (int i = 0; i < 100; ++i) {
      const float v = i == 57 ? bad : 0.25f;
      uint32_t u;
      std::memcpy(&u, &v, 4);
      put32(d, u);
    }
    Fmt f;
    f.code = 3;
    f.bits = 32;
    EXPECT_ERROR_HAS(parse(simple_wav(f, d)), std::isnan(bad) ? "sample 57 is NaN" : "sample 57 is infinite");
  }
  // Finite, but beyond float range once scaled to 16-bit units.
  {
    Bytes d;
    const float huge = 1e38f;
    uint32_t u;
    std::memcpy(&u, &huge, 4);
    put32(d, 0);
    put32(d, u);
    Fmt f;
    f.code = 3;
    f.bits = 32;
    EXPECT_ERROR_HAS(parse(simple_wav(f, d)), "sample 1 is out of range");
  }
  // Stereo: the message names the channel.
  Bytes d;
  for (int i = 0; i < 10; ++i) {
    const double l = 0.1, r = i == 3 ? std::nan("") : 0.2;
    uint64_t u;
    std::memcpy(&u, &l, 8);
    put32(d, static_cast<uint32_t>(u));
    put32(d, static_cast<uint32_t>(u >> 32));
    std::memcpy(&u, &r, 8);
    put32(d, static_cast<uint32_t>(u));
    put32(d, static_cast<uint32_t>(u >> 32));
  }
  Fmt f;
  f.code = 3;
  f.bits = 64;
  f.channels = 2;
  EXPECT_ERROR_HAS(parse(simple_wav(f, d)), "sample 3 (channel 2) is NaN");
}

TEST(WavReader, FileErrorsNameTheFile) {
  TempDir dir;
  EXPECT_ERROR_HAS(read_wav_file(dir.file("missing.wav")), "missing.wav: cannot open");
  EXPECT_ERROR_HAS(read_wav_file(dir.file("")), "is a directory");
  write_file(dir.file("empty.wav"), {});
  EXPECT_ERROR_HAS(read_wav_file(dir.file("empty.wav")), "empty.wav: the file is empty");
}

TEST(RawReader, S16leMonoAndStereo) {
  const auto s = test_signal(64, 7);
  Bytes d;
  for (int16_t v : s) put16(d, static_cast<uint16_t>(v));
  const AudioData mono = parse_raw_s16le(d.data(), d.size(), 8000, "x.raw");
  EXPECT_EQ(mono.sample_rate, 8000);
  ASSERT_EQ(mono.samples.size(), 64u);
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(mono.samples[i], s[i]);
  const AudioData stereo = parse_raw_s16le(d.data(), d.size(), 8000, "x.raw", 2);
  ASSERT_EQ(stereo.samples.size(), 32u);
  for (size_t t = 0; t < 32; ++t)
    ASSERT_EQ(stereo.samples[t], (static_cast<float>(s[2 * t]) + s[2 * t + 1]) / 2);
  const AudioData right = parse_raw_s16le(d.data(), d.size(), 8000, "x.raw", 2, 2);
  ASSERT_EQ(right.samples[5], s[11]);

  EXPECT_ERROR_HAS(parse_raw_s16le(d.data(), 63, 8000, "x.raw"), "x.raw: raw 16-bit audio of 63 bytes");
  EXPECT_ERROR_HAS(parse_raw_s16le(d.data(), 0, 8000, "x.raw"), "x.raw: the file is empty");
  EXPECT_ERROR_HAS(parse_raw_s16le(d.data(), 64, 0, "x.raw"), "sample rate");
  EXPECT_ERROR_HAS(parse_raw_s16le(d.data(), 64, 8000, "x.raw", 0), "channels");
}

// ------------------------------------------------------- WAV: files by sox

bool have_sox() { return std::system("sox --version >/dev/null 2>&1") == 0; }

void run(const std::string& cmd) {
  ASSERT_EQ(std::system((cmd + " 2>/dev/null").c_str()), 0) << cmd;
}

std::vector<int16_t> read_raw16(const std::string& path) {
  const Bytes b = read_file_bytes(path);
  std::vector<int16_t> s(b.size() / 2);
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = static_cast<int16_t>(b[2 * i] | (b[2 * i + 1] << 8));
  return s;
}

TEST(WavReader, FilesWrittenBySox) {
  if (!have_sox()) GTEST_SKIP() << "sox not installed";
  TempDir dir;
  const std::string src = dir.file("src.raw");
  const std::string a = dir.file("a.wav"), b = dir.file("b.wav");
  // Two different 16-bit signals (noise, so every bit pattern is exercised).
  {
    const auto s1 = test_signal(4000, 11), s2 = test_signal(4000, 12);
    Bytes d1, d2;
    for (int16_t v : s1) put16(d1, static_cast<uint16_t>(v));
    for (int16_t v : s2) put16(d2, static_cast<uint16_t>(v));
    write_file(src, d1);
    write_file(dir.file("src2.raw"), d2);
  }
  const std::string raw_in = "sox -t raw -r 16000 -e signed -b 16 -c 1 ";
  run(raw_in + src + " " + a);
  run(raw_in + dir.file("src2.raw") + " " + b);
  const std::vector<int16_t> s = read_raw16(src);
  const std::vector<int16_t> s2 = read_raw16(dir.file("src2.raw"));

  struct Conv {
    const char* args;  // sox output options
    SampleEncoding enc;
    double tolerance;  // in 16-bit units
  };
  // -D: no dither, so the 8-bit case is a plain requantisation.
  const Conv convs[] = {
      {"-b 16", SampleEncoding::kSigned16, 0},
      {"-b 24", SampleEncoding::kSigned24, 0},
      {"-b 32", SampleEncoding::kSigned32, 0},
      {"-e floating-point -b 32", SampleEncoding::kFloat32, 0},
      {"-e floating-point -b 64", SampleEncoding::kFloat64, 0},
      {"-D -e unsigned -b 8", SampleEncoding::kUnsigned8, 256},  // one 8-bit step
  };
  for (const Conv& c : convs) {
    SCOPED_TRACE(c.args);
    const std::string out = dir.file("conv.wav");
    run(std::string("sox ") + a + " " + c.args + " " + out);
    const AudioData d = read_wav_file(out);
    EXPECT_EQ(d.encoding, c.enc);
    EXPECT_EQ(d.sample_rate, 16000);
    ASSERT_EQ(d.samples.size(), s.size());
    double worst = 0;
    for (size_t i = 0; i < s.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(d.samples[i]) - s[i]));
    EXPECT_LE(worst, c.tolerance);
  }

  // Stereo (sox writes 24-bit stereo as WAVE_FORMAT_EXTENSIBLE): the mix is
  // the average, channel 2 is the second file.
  const std::string st = dir.file("st.wav");
  run("sox -M " + a + " " + b + " -b 24 " + st);
  const Bytes st_bytes = read_file_bytes(st);
  EXPECT_EQ(st_bytes[20] | (st_bytes[21] << 8), 0xFFFE) << "expected an EXTENSIBLE header";
  const AudioData mixed = read_wav_file(st);
  WavReadOptions o;
  o.channel = 2;
  const AudioData right = read_wav_file(st, o);
  EXPECT_EQ(mixed.channels, 2);
  ASSERT_EQ(mixed.samples.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    ASSERT_EQ(mixed.samples[i], (static_cast<float>(s[i]) + s2[i]) / 2) << i;
    ASSERT_EQ(right.samples[i], s2[i]) << i;
  }

  // A resampled file keeps its rate (the CLI, not the reader, checks it).
  const std::string r8 = dir.file("r8.wav");
  run("sox " + a + " -r 8000 " + r8);
  const AudioData d8 = read_wav_file(r8);
  EXPECT_EQ(d8.sample_rate, 8000);
  EXPECT_EQ(d8.samples.size(), s.size() / 2);

  // sox reading and writing pipes does not know the length: it leaves a
  // placeholder size in the header.
  const std::string piped = dir.file("piped.wav");
  run("cat " + src + " | sox -t raw -r 16000 -e signed -b 16 -c 1 - -t wav - | cat > " + piped);
  const AudioData p = read_wav_file(piped);
  ASSERT_EQ(p.samples.size(), s.size());
  EXPECT_EQ(p.samples[100], s[100]);
  EXPECT_EQ(p.warnings.size(), 1u);
}

// ------------------------------------------------------------- feat.params

TEST(FeatParams, DebianEnUsModel) {
  const FeatParams fp = parse_feat_params_file(kEnUsParams);
  const FeatureOptions& o = fp.options;
  EXPECT_TRUE(fp.warnings.empty()) << fp.warnings.at(0);
  EXPECT_EQ(o.flavour, Flavour::kSphinx);
  EXPECT_EQ(o.kind, FeatureKind::kMfcc);
  EXPECT_EQ(o.frame.sample_rate, 16000.0f);
  EXPECT_FLOAT_EQ(o.frame.frame_length_ms, 25.625f);
  EXPECT_EQ(o.frame.frame_length_samples(), 410);
  EXPECT_EQ(o.frame.frame_shift_samples(), 160);
  EXPECT_EQ(o.frame.fft_size, 512);
  EXPECT_FLOAT_EQ(o.frame.preemphasis, 0.97f);
  EXPECT_EQ(o.mel.num_filters, 25);
  EXPECT_EQ(o.mel.low_freq, 130.0f);
  EXPECT_EQ(o.mel.high_freq, 6800.0f);
  EXPECT_EQ(o.mfcc.transform, CepstralTransform::kSphinxDct);
  EXPECT_EQ(o.mfcc.lifter, 22);
  EXPECT_EQ(o.mfcc.num_ceps, 13);
  EXPECT_EQ(o.delta.layout, DeltaOptions::Layout::kSphinx1sCDDd);
  EXPECT_EQ(o.norm.cmn, NormOptions::Cmn::kBatch);
  EXPECT_FALSE(o.norm.cvn);
  const std::vector<float> cmninit = {41.00f, -5.29f, -0.12f, 5.09f,  2.48f,  -4.07f, -1.37f,
                                      -1.78f, -5.08f, -2.05f, -6.45f, -1.42f, 1.17f};
  EXPECT_EQ(o.norm.cmn_init, cmninit);
  EXPECT_EQ(o.mel.vtln.warp, 1.0f);
  EXPECT_FALSE(o.noise.remove_noise);  // off unless the file says otherwise
  EXPECT_FALSE(o.noise.remove_silence);
  EXPECT_EQ(o.output_dim(), 39);
  EXPECT_NO_THROW(o.validate());
  // The struct defaults are this model (options.h says so): the parse
  // agrees with them on every front-end field.
  const FeatureOptions d = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  EXPECT_EQ(d.mel.num_filters, o.mel.num_filters);
  EXPECT_EQ(d.mel.low_freq, o.mel.low_freq);
  EXPECT_EQ(d.mel.high_freq, o.mel.high_freq);
  EXPECT_EQ(d.mfcc.transform, o.mfcc.transform);
  EXPECT_EQ(d.mfcc.lifter, o.mfcc.lifter);
  EXPECT_EQ(fp.entries.size(), 12u);
  EXPECT_EQ(fp.entries.front().first, "lowerf");
}

TEST(FeatParams, PocketsphinxAn4Model) {
  // This file leaves -transform, -lifter and -cmninit out, so pocketsphinx's
  // own defaults apply: legacy transform, no lifter, cmninit 40,3,-1.
  const FeatParams fp = parse_feat_params_file(kAn4Params);
  const FeatureOptions& o = fp.options;
  EXPECT_TRUE(fp.warnings.empty());
  EXPECT_EQ(o.mel.num_filters, 40);
  EXPECT_FLOAT_EQ(o.mel.low_freq, 133.3334f);
  EXPECT_FLOAT_EQ(o.mel.high_freq, 6855.4976f);
  EXPECT_EQ(o.mfcc.transform, CepstralTransform::kSphinxLegacy);
  EXPECT_EQ(o.mfcc.lifter, 0);
  EXPECT_EQ(o.delta.layout, DeltaOptions::Layout::kSphinx1sCDDd);
  EXPECT_EQ(o.norm.cmn, NormOptions::Cmn::kBatch);  // "current"
  EXPECT_FALSE(o.norm.cvn);
  std::vector<float> init(13, 0.0f);
  init[0] = 40;
  init[1] = 3;
  init[2] = -1;
  EXPECT_EQ(o.norm.cmn_init, init);
  EXPECT_EQ(o.frame.sample_rate, 16000.0f);
  EXPECT_NO_THROW(o.validate());
}

TEST(FeatParams, SyntaxCommentsQuotesAndEveryOption) {
  const std::string text =
      "# a comment line\n"
      "\n"
      "  -samprate 8000   # trailing comment\n"
      "-lowerf 200 -upperf 3500\n"
      "-nfilt 31\r\n"
      "-wlen 0.0256\n"
      "-frate 50\n"
      "-nfft 256\n"
      "-alpha 0.95\n"
      "-dither yes\n"
      "-seed 42\n"
      "-transform htk\n"
      "-lifter 0\n"
      "-ncep 12\n"
      "-remove_dc yes\n"
      "-round_filters yes\n"
      "-unit_area yes\n"
      "-doublebw no\n"
      "-feat 1s_c\n"
      "-cmn prior\n"
      "-cmninit \"10,-1.5\"\n"
      "-varnorm no\n"
      "-agc none\n"
      "-warp_type piecewise_linear\n"
      "-warp_params '0.8 3000'\n"
      "-svspec 0-11/12-23/24-35\n"
      "-model ptm\n"
      "-ceplen 12\n"
      "-remove_noise yes\n"
      "-remove_silence yes\n"
      "-vad_threshold 3.0\n"
      "-vad_prespeech 5 -vad_postspeech 40 -vad_startspeech 8\n";
  const FeatParams fp = parse_feat_params_string(text, "t.params");
  const FeatureOptions& o = fp.options;
  EXPECT_TRUE(fp.warnings.empty()) << fp.warnings.at(0);
  EXPECT_EQ(o.frame.sample_rate, 8000.0f);
  EXPECT_EQ(o.mel.low_freq, 200.0f);
  EXPECT_EQ(o.mel.high_freq, 3500.0f);
  EXPECT_EQ(o.mel.num_filters, 31);
  EXPECT_FLOAT_EQ(o.frame.frame_length_ms, 25.6f);
  EXPECT_EQ(o.frame.frame_shift_ms, 20.0f);
  EXPECT_EQ(o.frame.fft_size, 256);
  EXPECT_FLOAT_EQ(o.frame.preemphasis, 0.95f);
  EXPECT_GT(o.frame.dither, 0.0f);
  EXPECT_EQ(o.frame.dither_seed, 42u);
  EXPECT_EQ(o.mfcc.transform, CepstralTransform::kHtkDct);
  EXPECT_EQ(o.mfcc.lifter, 0);
  EXPECT_EQ(o.mfcc.num_ceps, 12);
  EXPECT_TRUE(o.frame.remove_dc);
  EXPECT_EQ(o.delta.layout, DeltaOptions::Layout::kNone);
  EXPECT_EQ(o.norm.cmn, NormOptions::Cmn::kLive);
  ASSERT_EQ(o.norm.cmn_init.size(), 12u);
  EXPECT_EQ(o.norm.cmn_init[0], 10.0f);
  EXPECT_EQ(o.norm.cmn_init[1], -1.5f);
  EXPECT_EQ(o.norm.cmn_init[2], 0.0f);
  EXPECT_FLOAT_EQ(o.mel.vtln.warp, 1.0f / 0.8f);
  EXPECT_EQ(o.mel.vtln.high_cutoff, 3000.0f);
  EXPECT_TRUE(o.noise.remove_noise);
  EXPECT_TRUE(o.noise.remove_silence);
  EXPECT_EQ(o.noise.vad_threshold, 3.0f);
  EXPECT_EQ(o.noise.vad_prespeech, 5);
  EXPECT_EQ(o.noise.vad_postspeech, 40);
  EXPECT_EQ(o.noise.vad_startspeech, 8);
  EXPECT_NO_THROW(o.validate());
  EXPECT_EQ(fp.entries.size(), 33u);
}

TEST(FeatParams, WarningsForUnknownIgnoredAndRepeatedOptions) {
  const FeatParams fp = parse_feat_params_string(
      "-nfilt 30\n-frobnicate 7\n-agc max\n-nfilt 20\n-model ptm\n", "w.params");
  ASSERT_EQ(fp.warnings.size(), 3u);
  EXPECT_EQ(fp.warnings[0], "w.params:4: -nfilt given more than once; the last value wins");
  EXPECT_EQ(fp.warnings[1], "w.params:2: unknown option -frobnicate ignored");
  EXPECT_NE(fp.warnings[2].find("w.params:3: -agc max is not implemented"), std::string::npos);
  EXPECT_EQ(fp.options.mel.num_filters, 20);
}

TEST(FeatParams, MalformedInputNamesFileAndLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"-nfilt 25\n-lowerf abc\n", "m.params:2: -lowerf: 'abc' is not a number"},
      {"-nfilt\n", "m.params:1: option -nfilt has no value"},
      {"-nfilt 25 -lowerf\n", "m.params:1: option -lowerf has no value"},
      {"\n\nnfilt 25\n", "m.params:3: expected an option name starting with '-', found 'nfilt'"},
      {"-nfilt 25.5\n", "m.params:1: -nfilt: '25.5' is not an integer"},
      {"-nfilt 99999999999999999999\n", "m.params:1: -nfilt must be in"},
      {"-nfilt -3\n", "m.params:1: -nfilt must be in 1..100000, got -3"},
      {"-alpha nan\n", "m.params:1: -alpha: 'nan' is out of range"},
      {"-upperf 1e999\n", "m.params:1: -upperf: '1e999' is out of range"},
      {"-samprate 0\n", "m.params:1: -samprate must be positive"},
      {"-wlen -0.025\n", "m.params:1: -wlen must be positive"},
      {"-remove_dc maybe\n", "m.params:1: -remove_dc: 'maybe' is not yes or no"},
      {"-transform fft\n", "m.params:1: -transform 'fft' is not one of dct, legacy, htk"},
      {"-feat s3_1x39\n", "m.params:1: -feat 's3_1x39' is not supported"},
      {"-feat 1s_c_d\n", "m.params:1: -feat '1s_c_d' is not supported"},
      {"-cmn sometimes\n", "m.params:1: -cmn 'sometimes' is not one of"},
      {"-cmninit 1,,2\n", "m.params:1: -cmninit: '' is not a number"},
      {"-cmninit 1,2,3,4,5,6,7,8,9,10,11,12,13,14\n",
       "m.params:1: -cmninit has 14 values but the features have 13"},
      {"-round_filters perhaps\n", "m.params:1: -round_filters: 'perhaps' is not yes or no"},
      {"-unit_area no\n", "m.params:1: -unit_area no is not supported"},
      {"-doublebw yes\n", "m.params:1: -doublebw yes is not supported"},
      {"-agc loud\n", "m.params:1: -agc 'loud' is not one of"},
      {"-warp_type wobbly\n", "m.params:1: -warp_type 'wobbly' is not one of"},
      {"-warp_type affine\n-warp_params 1.1\n", "m.params:1: -warp_type affine is not supported"},
      {"-warp_params 1.1\n", "m.params:1: -warp_type inverse_linear is not supported"},
      {"-warp_type piecewise_linear\n-warp_params \"1 2 3\"\n",
       "m.params:2: -warp_params takes at most two values"},
      {"-warp_type piecewise_linear\n-warp_params 0\n", "m.params:2: -warp_params must be positive"},
      {"-lowerf \"130\n-upperf 6800\n", "m.params:1: unterminated \" quote"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_ERROR_HAS(parse_feat_params_string(c.text, "m.params"), c.message);
  }
  const std::string with_nul("-nfilt 25\n-a\0b 1\n", 16);
  EXPECT_ERROR_HAS(parse_feat_params_string(with_nul, "m.params"), "m.params:2: NUL byte");
}

TEST(FeatParams, FileErrors) {
  TempDir dir;
  EXPECT_ERROR_HAS(parse_feat_params_file(dir.file("nope.params")),
                   "nope.params: cannot open feat.params");
  EXPECT_ERROR_HAS(parse_feat_params_file(dir.file("")), "is a directory");
  const std::string bad = dir.file("bad.params");
  write_file(bad, Bytes{'-', 'n', 'f', 'i', 'l', 't', ' ', '2', '5', '\n', '-', 'x', '\n'});
  EXPECT_ERROR_HAS(parse_feat_params_file(bad), bad + ":2: option -x has no value");
}

// ----------------------------------------------------------- feature files

FeatureMatrix random_matrix(int64_t rows, int dim, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 10.0f);
  FeatureMatrix m;
  m.rows = rows;
  m.dim = dim;
  m.data.resize(static_cast<size_t>(rows) * dim);
  for (float& v : m.data) v = d(rng);
  return m;
}

TEST(FeatureWriter, SphinxMfcRoundTripBothByteOrders) {
  const FeatureMatrix m = random_matrix(17, 13, 3);
  const Bytes le = encode_sphinx_mfc(m);
  ASSERT_EQ(le.size(), 4u + 4u * 17 * 13);
  EXPECT_EQ(le[0] | (le[1] << 8) | (le[2] << 16) | (le[3] << 24), 17 * 13);
  bool big = true;
  const FeatureMatrix back = decode_sphinx_mfc(le.data(), le.size(), 13, "x.mfc", &big);
  EXPECT_FALSE(big);
  EXPECT_EQ(back.rows, 17);
  EXPECT_EQ(back.data, m.data);

  Bytes be = le;
  for (size_t i = 0; i < be.size(); i += 4) std::swap(be[i], be[i + 3]), std::swap(be[i + 1], be[i + 2]);
  const FeatureMatrix back_be = decode_sphinx_mfc(be.data(), be.size(), 13, "x.mfc", &big);
  EXPECT_TRUE(big);
  EXPECT_EQ(back_be.data, m.data);

  Bytes wrong = le;
  wrong[0] ^= 1;
  EXPECT_ERROR_HAS(decode_sphinx_mfc(wrong.data(), wrong.size(), 13, "x.mfc"),
                   "x.mfc: the header count");
  EXPECT_ERROR_HAS(decode_sphinx_mfc(le.data(), le.size(), 12, "x.mfc"), "not whole frames of 12");
  EXPECT_ERROR_HAS(decode_sphinx_mfc(le.data(), 2, 13, "x.mfc"), "too short");

  const FeatureMatrix empty{0, 13, {}};
  const Bytes e = encode_sphinx_mfc(empty);
  EXPECT_EQ(e, Bytes(4, 0));
}

TEST(FeatureWriter, SphinxMfcMatchesWhatSphinxFeWrote) {
  // goforward.mfc was written by sphinx_fe: reading it and writing it back
  // must reproduce the file byte for byte.
  bool big = true;
  const FeatureMatrix m = read_sphinx_mfc(kGoforwardMfc, 13, &big);
  EXPECT_FALSE(big);
  EXPECT_EQ(m.rows, 264);
  EXPECT_EQ(encode_sphinx_mfc(m), read_file_bytes(kGoforwardMfc));
}

TEST(FeatureWriter, HtkHeaderAndLayout) {
  FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  FeatureMatrix m = random_matrix(3, 13, 5);
  const Bytes b = encode_htk(m, o);
  ASSERT_EQ(b.size(), 12u + 3 * 13 * 4);
  // nSamples 3, sampPeriod 100000 (10 ms), sampSize 52, parmKind MFCC_0.
  const Bytes header = {0, 0, 0, 3, 0x00, 0x01, 0x86, 0xA0, 0x00, 52, 0x20, 0x06};
  EXPECT_EQ(Bytes(b.begin(), b.begin() + 12), header);
  const HtkHeader h = decode_htk_header(b.data(), b.size());
  EXPECT_EQ(h.num_samples, 3);
  EXPECT_EQ(h.sample_period, 100000);
  EXPECT_EQ(h.sample_size, 52);
  EXPECT_EQ(h.parm_kind, htk::kMfcc | htk::kC0);
  // Big-endian floats, C0 moved to the end: file order c1..c12, c0.
  auto be_float = [&](size_t at) {
    const uint32_t u = (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) |
                       (uint32_t{b[at + 2]} << 8) | b[at + 3];
    float v;
    std::memcpy(&v, &u, 4);
    return v;
  };
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 12; ++c) EXPECT_EQ(be_float(12 + 4 * (13 * r + c)), m.row(r)[c + 1]);
    EXPECT_EQ(be_float(12 + 4 * (13 * r + 12)), m.row(r)[0]);
  }

  // 39-dim Sphinx deltas: MFCC_0_D_A, each block rotated.
  o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  const FeatureMatrix m39 = random_matrix(2, 39, 6);
  const Bytes b39 = encode_htk(m39, o);
  EXPECT_EQ(decode_htk_header(b39.data(), b39.size()).parm_kind, 0x2306);
  EXPECT_EQ(decode_htk_header(b39.data(), b39.size()).sample_size, 156);
  // File column 25, the last of the delta block, holds d0 (our column 13).
  const uint32_t u = (uint32_t{b39[12 + 4 * 25]} << 24) | (uint32_t{b39[12 + 4 * 25 + 1]} << 16) |
                     (uint32_t{b39[12 + 4 * 25 + 2]} << 8) | b39[12 + 4 * 25 + 3];
  float d0;
  std::memcpy(&d0, &u, 4);
  EXPECT_EQ(d0, m39.row(0)[13]);

  // Other kinds and qualifiers.
  FeatureOptions k = FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kMfcc);
  k.mfcc.use_energy = true;
  EXPECT_EQ(htk_parm_kind(k), htk::kMfcc | htk::kEnergy);
  k.delta.layout = DeltaOptions::Layout::kRegression;
  k.delta.order = 1;
  EXPECT_EQ(htk_parm_kind(k), htk::kMfcc | htk::kEnergy | htk::kDelta);
  EXPECT_EQ(htk_sample_period(k), 100000);
  EXPECT_EQ(htk_parm_kind(FeatureOptions::for_flavour(Flavour::kKaldi, FeatureKind::kFbank)),
            htk::kFbank);
  EXPECT_EQ(htk_parm_kind(FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kPlp)),
            htk::kPlp | htk::kC0);
  EXPECT_EQ(htk_parm_kind(FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kTraps)),
            htk::kUser);
  FeatureOptions r8 = o;
  r8.frame.sample_rate = 8000;
  r8.frame.frame_shift_ms = 12.5f;
  EXPECT_EQ(htk_sample_period(r8), 125000);

  // A matrix that does not match the options is refused.
  EXPECT_THROW(encode_htk(m, o), std::invalid_argument);
}

TEST(FeatureWriter, TextAndFiles) {
  FeatureMatrix m{2, 3, {1.0f, -0.5f, 3.14159274f, 1e-20f, 0.0f, 123456.789f}};
  const Bytes t = encode_text(m);
  EXPECT_EQ(std::string(t.begin(), t.end()), "1 -0.5 3.14159274\n9.99999968e-21 0 123456.789\n");

  TempDir dir;
  const FeatureOptions o = FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc);
  const FeatureMatrix f = random_matrix(4, 13, 9);
  write_features(dir.file("x.mfc"), f, o, FeatureFileFormat::kSphinx);
  EXPECT_EQ(read_sphinx_mfc(dir.file("x.mfc"), 13).data, f.data);
  EXPECT_ERROR_HAS(write_features(dir.file("no/such/dir/x.mfc"), f, o, FeatureFileFormat::kSphinx),
                   "x.mfc: cannot create");
  EXPECT_ERROR_HAS(write_features(dir.file("y.htk"), m, o, FeatureFileFormat::kHtk),
                   "y.htk: feature matrix has 3 columns");
  EXPECT_EQ(parse_feature_file_format("htk"), FeatureFileFormat::kHtk);
  EXPECT_THROW(parse_feature_file_format("arff"), std::invalid_argument);
}

}  // namespace
}  // namespace gpuspeech
