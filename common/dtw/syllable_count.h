// How many syllables an isolated word has, from the level of its voiced
// band: a syllable's nucleus is a vowel, the loudest stretch of 300-3 000
// Hz, and two nuclei are parted by a dip (a consonant or a closure). An
// unknown word with a syllable count that none of a word's templates has
// is not that word, whatever its DTW distance: measured on the
// cross-speaker benchmark (docs/dtw.md, "A syllable count"), two-syllable
// unknown words were rejected 97 % of the time this way against 60 % by
// the distance threshold alone, and no known word was lost.
//
// The level: the samples through a band-pass (the difference of two
// one-pole low-passes at the band's edges), the mean square per 10 ms
// frame in dB, averaged over `smooth_frames` frames. A nucleus is a local
// maximum within `floor_db` of the word's loudest frame; a maximum counts
// as a new nucleus only after the level has dipped `dip_db` below both it
// and the nucleus before, otherwise it replaces that nucleus if louder.
// Only ratios of levels matter, so the samples' scale does not.
//
// A nucleus must also be voiced: its band level at least `voiced_margin_db`
// above the level of the fricative band (4-8 kHz, where /s/ and /sh/ put
// their noise). The one-pole edges leak, so a fricative reaches the
// counted band too, and flite's voices put enough of their /s/ there to
// make it a nucleus of its own: "six" counted 3, "stop" and "start" 2.
// Measured (docs/dtw.md, "A syllable count"): a vowel lies 21-25 dB above
// the fricative band, an /s/ 7-13 dB; margins from 12 to 15 dB give the
// same counts on every recording of the benchmark, 18 begins to lose
// front vowels. Audio with nothing above 4 kHz (a telephone band
// resampled) leaves every frame voiced.
#pragma once

#include <cstdint>
#include <vector>

namespace gpuspeech {

struct SyllableCountOptions {
  float band_low_hz = 300.0f;
  float band_high_hz = 3000.0f;
  int smooth_frames = 5;    // 50 ms
  float floor_db = 15.0f;   // nuclei lie within this of the loudest frame
  float dip_db = 6.0f;      // between two nuclei, below both by at least this
  float fricative_low_hz = 4000.0f;   // the fricative band (its top: 0.49 x the rate)
  float voiced_margin_db = 15.0f;     // a nucleus lies this far above it; <= 0: off
};

// The band level in dB per 10 ms frame (a partial last frame is dropped).
std::vector<float> syllable_band_level(const float* samples, int64_t n, float sample_rate,
                                       const SyllableCountOptions& opts = {});

// Nuclei in a level contour (dB per frame); 0 for an empty one. With
// `fricative_db` (the fricative band's level, as long), only frames
// opts.voiced_margin_db above it can be nuclei, and the floor is taken
// from the loudest such frame.
int count_nuclei(const std::vector<float>& level_db, const SyllableCountOptions& opts = {},
                 const std::vector<float>* fricative_db = nullptr);

// Both steps: the syllables of the word in samples [0, n).
int count_syllables(const float* samples, int64_t n, float sample_rate,
                    const SyllableCountOptions& opts = {});

}  // namespace gpuspeech
