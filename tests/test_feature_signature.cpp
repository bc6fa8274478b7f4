// feature_signature: the text consumers compare to refuse features they
// cannot use. Equal numbers -> equal text; any option that changes the
// numbers -> different text; options that do not apply -> no difference.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/features/feature_signature.h"
#include "common/features/feature_options.h"

namespace gpuspeech {
namespace {

FeatureOptions sphinx() { return FeatureOptions::for_flavour(Flavour::kSphinx, FeatureKind::kMfcc); }

TEST(FeatureSignature, EqualOptionsGiveEqualText) {
  EXPECT_EQ(feature_signature(sphinx()), feature_signature(sphinx()));
  const std::string s = feature_signature(sphinx());
  EXPECT_EQ(s.rfind("kind=mfcc;flavour=sphinx;rate=16000;", 0), 0u) << s;
  EXPECT_NE(s.find("frame-length=410;frame-shift=160;fft=512"), std::string::npos) << s;
}

TEST(FeatureSignature, EveryRelevantOptionChangesIt) {
  const std::string base = feature_signature(sphinx());
  const std::vector<std::pair<const char*, std::function<void(FeatureOptions&)>>> changes = {
      {"rate", [](FeatureOptions& o) { o.frame.sample_rate = 8000; }},
      {"frame length", [](FeatureOptions& o) { o.frame.frame_length_ms = 25.0f; }},
      {"shift", [](FeatureOptions& o) { o.frame.frame_shift_ms = 12.0f; }},
      {"fft", [](FeatureOptions& o) { o.frame.fft_size = 1024; }},
      {"preemphasis", [](FeatureOptions& o) { o.frame.preemphasis = 0.95f; }},
      {"preemphasis mode", [](FeatureOptions& o) { o.frame.preemphasis_mode = PreemphasisMode::kPerFrame; }},
      {"window", [](FeatureOptions& o) { o.frame.window = WindowType::kPovey; }},
      {"dc", [](FeatureOptions& o) { o.frame.remove_dc = true; }},
      {"snip", [](FeatureOptions& o) { o.frame.snip_edges = true; }},
      {"dither", [](FeatureOptions& o) { o.frame.dither = 1.0f; }},
      {"filters", [](FeatureOptions& o) { o.mel.num_filters = 40; }},
      {"low", [](FeatureOptions& o) { o.mel.low_freq = 133.0f; }},
      {"high", [](FeatureOptions& o) { o.mel.high_freq = 6855.0f; }},
      {"scale", [](FeatureOptions& o) { o.mel.scale = MelScale::kHtk; }},
      {"power", [](FeatureOptions& o) { o.mel.use_power = false; }},
      {"warp", [](FeatureOptions& o) { o.mel.vtln.warp = 1.1f; }},
      {"log", [](FeatureOptions& o) { o.log.mode = LogFloorMode::kClamp; }},
      {"log floor", [](FeatureOptions& o) { o.log.floor_value = 1.0f; }},
      {"ceps", [](FeatureOptions& o) { o.mfcc.num_ceps = 12; }},
      {"transform", [](FeatureOptions& o) { o.mfcc.transform = CepstralTransform::kHtkDct; }},
      {"lifter", [](FeatureOptions& o) { o.mfcc.lifter = 0; }},
      {"energy", [](FeatureOptions& o) { o.mfcc.use_energy = true; }},
      {"cmn", [](FeatureOptions& o) { o.norm.cmn = NormOptions::Cmn::kBatch; }},
      {"cvn", [](FeatureOptions& o) { o.norm.cvn = true; }},
      {"minmax", [](FeatureOptions& o) { o.norm.min_max = true; }},
      {"deltas", [](FeatureOptions& o) { o.delta.layout = DeltaOptions::Layout::kSphinx1sCDDd; }},
      {"kind", [](FeatureOptions& o) { o.kind = FeatureKind::kFbank; }},
      {"flavour", [](FeatureOptions& o) { o.flavour = Flavour::kKaldi; }},
      {"remove noise", [](FeatureOptions& o) { o.noise.remove_noise = true; }},
      {"remove silence", [](FeatureOptions& o) { o.noise.remove_silence = true; }},
      {"declip", [](FeatureOptions& o) { o.declip.enabled = true; }},
  };
  for (const auto& c : changes) {
    FeatureOptions o = sphinx();
    c.second(o);
    EXPECT_NE(feature_signature(o), base) << c.first;
  }
  // Live CMN: its start and window matter.
  FeatureOptions live = sphinx();
  live.norm.cmn = NormOptions::Cmn::kLive;
  FeatureOptions live_init = live;
  live_init.norm.cmn_init.assign(13, 1.0f);
  FeatureOptions live_window = live;
  live_window.norm.live_window = 100;
  EXPECT_NE(feature_signature(live), feature_signature(live_init));
  EXPECT_NE(feature_signature(live), feature_signature(live_window));
  // ...and so do the start's weight and what the mean learns from.
  FeatureOptions live_light = live;
  live_light.norm.live_init_frames = 30;
  FeatureOptions live_every = live;
  live_every.norm.live_from_speech = false;
  EXPECT_NE(feature_signature(live), feature_signature(live_light));
  EXPECT_NE(feature_signature(live), feature_signature(live_every));
  EXPECT_NE(feature_signature(live).find("cmn-learns=speech"), std::string::npos);
  EXPECT_NE(feature_signature(live_every).find("cmn-learns=every-frame"), std::string::npos);
  FeatureOptions plp_live = FeatureOptions::for_flavour(Flavour::kHtk, FeatureKind::kPlp);
  plp_live.norm.cmn = NormOptions::Cmn::kLive;
  EXPECT_NE(feature_signature(plp_live).find("cmn-learns=every-frame"), std::string::npos);
  // A mean that skips frames with a negative c0 (Sphinx's rule) is another
  // stream; the default (every frame) is not named, so older signatures
  // still match.
  FeatureOptions live_skip = live;
  live_skip.norm.skip_negative_c0 = true;
  EXPECT_NE(feature_signature(live), feature_signature(live_skip));
  EXPECT_EQ(feature_signature(live).find("cmn-mean-of"), std::string::npos);
  EXPECT_NE(feature_signature(live_skip).find("cmn-mean-of=nonnegative-c0"), std::string::npos);
  // Where the noise estimate starts, with noise removal: the default is not
  // named (older signatures still match), the other start is.
  FeatureOptions nr = sphinx();
  nr.noise.remove_noise = true;
  FeatureOptions nr_first_sound = nr;
  nr_first_sound.noise.start_at_first_sound = true;
  EXPECT_NE(feature_signature(nr), feature_signature(nr_first_sound));
  EXPECT_EQ(feature_signature(nr).find("noise-start"), std::string::npos);
  EXPECT_NE(feature_signature(nr_first_sound).find("noise-start=first-sound"), std::string::npos);
}

TEST(FeatureSignature, IrrelevantOptionsDoNotChangeIt) {
  const std::string base = feature_signature(sphinx());
  FeatureOptions o = sphinx();
  o.plp.order = 8;           // PLP only
  o.traps.context = 10;      // TRAPS only
  o.norm.cmn_init.assign(13, 3.0f);  // only with live CMN
  o.norm.live_window = 77;
  o.delta.window = 5;        // only with regression deltas
  o.mel.vtln.low_cutoff = 300.0f;  // only with a warp
  o.noise.vad_threshold = 3.0f;    // only with noise or silence removal
  o.noise.start_at_first_sound = true;  // idem
  EXPECT_EQ(feature_signature(o), base);
  // "offset from Nyquist" and the same edge in Hz are the same filterbank.
  FeatureOptions a = sphinx(), b = sphinx();
  a.mel.high_freq = 0.0f;
  b.mel.high_freq = 8000.0f;
  EXPECT_EQ(feature_signature(a), feature_signature(b));
}

TEST(FeatureSignature, LayoutNames) {
  DeltaOptions d;
  EXPECT_EQ(feature_layout_name(d), "c");
  d.layout = DeltaOptions::Layout::kSphinx1sCDDd;
  EXPECT_EQ(feature_layout_name(d), "1s_c_d_dd");
  d.layout = DeltaOptions::Layout::kRegression;
  d.order = 1;
  EXPECT_EQ(feature_layout_name(d), "c_d");
  d.order = 2;
  EXPECT_EQ(feature_layout_name(d), "c_d_dd");
}

TEST(FeatureSignature, HashIsFnv1a) {
  // FNV-1a 64 test vectors (Fowler/Noll/Vo reference values).
  EXPECT_EQ(feature_signature_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(feature_signature_hash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(feature_signature_hash("foobar"), 0x85944171f73967e8ull);
}

}  // namespace
}  // namespace gpuspeech

namespace gpuspeech {
namespace {

// What gpudecoder refuses of upstream features: real differences by name,
// in the model's key order; not how CMN runs or whether noise was removed.
TEST(FeatureSignatureMismatch, NamesRealDifferencesOnly) {
  FeatureOptions model;
  const std::string wanted = feature_signature(model);
  EXPECT_EQ(feature_signature_mismatch(wanted, wanted), "");

  FeatureOptions other = model;
  other.frame.sample_rate = 8000;
  const std::string diff = feature_signature_mismatch(feature_signature(other), wanted);
  EXPECT_NE(diff.find("rate: upstream 8000, model 16000"), std::string::npos) << diff;

  // Hand-made signatures: CMN details and noise stages are not compared,
  // but CMN against none is; a key only upstream has is named too.
  const std::string base = "kind=mfcc;rate=16000;cmn=batch;cmn-init=40,3";
  EXPECT_EQ(feature_signature_mismatch(
                "kind=mfcc;rate=16000;cmn=live;cmn-window=500;cmn-init-frames=30;"
                "cmn-learns=speech;remove-noise=yes;vad-threshold=2",
                base),
            "");
  // Nor is what the mean is taken over (gpufeatures cmn-skip-negative-c0
  // feeding a gpudecoder whose model asks for plain batch CMN).
  FeatureOptions skip = model;
  skip.norm.cmn = NormOptions::Cmn::kLive;
  skip.norm.skip_negative_c0 = true;
  FeatureOptions batch = model;
  batch.norm.cmn = NormOptions::Cmn::kBatch;
  EXPECT_NE(feature_signature(skip).find("cmn-mean-of="), std::string::npos);
  EXPECT_EQ(feature_signature_mismatch(feature_signature(skip), feature_signature(batch)), "");
  // Nor whether clipped peaks were restored (gpufeatures' choice).
  FeatureOptions declipped = model;
  declipped.declip.enabled = true;
  EXPECT_NE(feature_signature(declipped).find("declip-max-run-ms="), std::string::npos);
  EXPECT_EQ(feature_signature(model).find("declip"), std::string::npos);
  EXPECT_EQ(feature_signature_mismatch(feature_signature(declipped), wanted), "");
  // Nor where the noise estimate started (gpufeatures noise-start).
  FeatureOptions first_sound = model;
  first_sound.noise.remove_noise = true;
  first_sound.noise.start_at_first_sound = true;
  EXPECT_NE(feature_signature(first_sound).find("noise-start=first-sound"), std::string::npos);
  EXPECT_EQ(feature_signature_mismatch(feature_signature(first_sound), wanted), "");
  EXPECT_EQ(feature_signature_mismatch("kind=mfcc;rate=16000;cmn=none", base),
            "cmn: upstream none, model batch");
  EXPECT_EQ(feature_signature_mismatch("kind=plp;rate=16000;cmn=batch;extra=1", base),
            "kind: upstream plp, model mfcc; extra: upstream 1, model (absent)");
}

}  // namespace
}  // namespace gpuspeech
