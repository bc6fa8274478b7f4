// Reading audio files into samples in 16-bit units (the unit every feature
// pipeline here takes): RIFF/WAVE and headerless 16-bit little-endian PCM.
//
// WAV formats read: PCM integer 8 (unsigned), 16, 24 and 32 bits; IEEE float
// 32 and 64 bits; the same inside WAVE_FORMAT_EXTENSIBLE. Any sample rate,
// any number of channels, chunks in any order, odd-sized chunks padded to an
// even length as the RIFF rules say. Conversion to 16-bit units:
//   8-bit unsigned  (v - 128) * 256
//   16-bit          v
//   24-bit          v / 256
//   32-bit integer  v / 65536
//   float           v * 32768   (NaN, Inf, or beyond float range after
//                               scaling: an error naming the sample)
// Several channels are averaged into one unless `channel` picks one
// (1-based, like sphinx_fe -whichchan).
//
// Malformed input is always an AudioFileError naming the file and the
// reason; nothing is guessed. In particular a data chunk that declares more
// bytes than the file holds is an error ("truncated"), except when its size
// is one of the placeholders streaming writers leave when they cannot seek
// back (0xFFFFFFFF, as ffmpeg writes to a pipe; 0x7FFFF000, as sox does):
// then the data runs to the end of the file and a warning says so. With
// WavReadOptions::allow_truncated a truncated data chunk is read up to the
// end of the file, also with a warning. A trailing partial sample frame is
// dropped with a warning.
//
// Not read (each a clear error): RIFX (big-endian), RF64, A-law, mu-law,
// ADPCM and other compressed codes; convert those with sox first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpuspeech {

// Every failure to read or understand an audio file. what() is
// "<file>: <reason>".
class AudioFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The sample encodings understood.
enum class SampleEncoding { kUnsigned8, kSigned16, kSigned24, kSigned32, kFloat32, kFloat64 };
const char* to_string(SampleEncoding);

struct AudioData {
  std::vector<float> samples;  // mono, 16-bit units
  int sample_rate = 0;
  int channels = 0;  // in the file, before mixing or selection
  SampleEncoding encoding = SampleEncoding::kSigned16;
  int valid_bits = 16;  // bits of precision the file declares
  std::vector<std::string> warnings;  // each "<file>: <what>"
};

struct WavReadOptions {
  // 0 averages all channels; k (1-based) takes channel k only.
  int channel = 0;
  // Read a data chunk cut short by the end of the file (with a warning)
  // instead of rejecting the file.
  bool allow_truncated = false;
};

// Limits beyond which a header is taken as corrupt rather than exotic.
constexpr int kMaxWavChannels = 1024;
constexpr uint32_t kMaxSampleRate = 1000000;

// True if `bytes` start like a RIFF/WAVE file ("RIFF" .... "WAVE").
bool looks_like_wav(const uint8_t* bytes, size_t size);

// Parses a whole WAV file held in memory; `name` is used in messages.
AudioData parse_wav(const uint8_t* bytes, size_t size, const std::string& name,
                    const WavReadOptions& opts = {});

// Reads and parses a WAV file.
AudioData read_wav_file(const std::string& path, const WavReadOptions& opts = {});

// Headerless interleaved signed 16-bit little-endian PCM at `sample_rate`
// with `channels` channels (mixed or selected as for WAV). A size that is not
// a whole number of sample frames is an error.
AudioData parse_raw_s16le(const uint8_t* bytes, size_t size, int sample_rate,
                          const std::string& name, int channels = 1,
                          int channel = 0);
AudioData read_raw_s16le_file(const std::string& path, int sample_rate,
                              int channels = 1, int channel = 0);

// A WAV file (by its RIFF header, whatever its name) or else headerless
// mono S16LE at `raw_sample_rate`: what the command-line tools accept.
AudioData read_audio_file(const std::string& path, int raw_sample_rate);

// Reads a whole file into memory; AudioFileError if it cannot be opened or
// read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace gpuspeech
