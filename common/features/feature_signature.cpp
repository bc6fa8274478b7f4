#include "common/features/feature_signature.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "common/features/mel_filterbank.h"

namespace gpuspeech {

namespace {

// Collects "key=value;" pairs in call order.
class SignatureWriter {
 public:
  void put(const char* key, const std::string& value) {
    if (!first_) out_ << ';';
    first_ = false;
    out_ << key << '=' << value;
  }
  void put(const char* key, const char* value) { put(key, std::string(value)); }
  void put(const char* key, int value) { put(key, std::to_string(value)); }
  void put(const char* key, bool value) { put(key, value ? "1" : "0"); }
  void put(const char* key, float value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(value));
    put(key, std::string(buf));
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  bool first_ = true;
};

const char* preemphasis_mode_name(PreemphasisMode m) {
  return m == PreemphasisMode::kContinuous ? "continuous" : "per-frame";
}

const char* mel_scale_name(MelScale s) {
  return s == MelScale::kSphinx ? "sphinx" : "htk";
}

const char* log_mode_name(LogFloorMode m) {
  switch (m) {
    case LogFloorMode::kConstant: return "constant";
    case LogFloorMode::kClamp: return "clamp";
    case LogFloorMode::kOffset: return "offset";
  }
  return "?";
}

const char* transform_name(CepstralTransform t) {
  switch (t) {
    case CepstralTransform::kSphinxDct: return "sphinx-dct";
    case CepstralTransform::kSphinxLegacy: return "sphinx-legacy";
    case CepstralTransform::kHtkDct: return "htk-dct";
    case CepstralTransform::kKaldiDct: return "kaldi-dct";
  }
  return "?";
}

const char* cmn_name(NormOptions::Cmn c) {
  switch (c) {
    case NormOptions::Cmn::kNone: return "none";
    case NormOptions::Cmn::kBatch: return "batch";
    case NormOptions::Cmn::kLive: return "live";
  }
  return "?";
}

}  // namespace

std::string feature_layout_name(const DeltaOptions& delta) {
  switch (delta.layout) {
    case DeltaOptions::Layout::kNone: return "c";
    case DeltaOptions::Layout::kSphinx1sCDDd: return "1s_c_d_dd";
    case DeltaOptions::Layout::kSphinxS2_4x: return "s2_4x";
    case DeltaOptions::Layout::kRegression:
      return delta.order == 1 ? "c_d" : "c_d_dd";
  }
  return "?";
}

std::string feature_signature(const FeatureOptions& o) {
  SignatureWriter w;
  const FrameOptions& f = o.frame;
  w.put("kind", to_string(o.kind));
  w.put("flavour", to_string(o.flavour));
  w.put("rate", f.sample_rate);
  // Frames in samples: what the numbers depend on, whatever ms rounding
  // produced them.
  w.put("frame-length", f.frame_length_samples());
  w.put("frame-shift", f.frame_shift_samples());
  w.put("fft", f.padded_fft_size());
  w.put("preemphasis", f.preemphasis);
  if (f.preemphasis != 0.0f)
    w.put("preemphasis-mode", preemphasis_mode_name(f.preemphasis_mode));
  w.put("window", to_string(f.window));
  w.put("remove-dc", f.remove_dc);
  w.put("snip-edges", f.snip_edges);
  w.put("dither", f.dither);
  if (f.dither > 0.0f) w.put("dither-seed", static_cast<int>(f.dither_seed));

  w.put("low-freq", o.mel.low_freq);
  // "<= 0: offset from Nyquist" resolved, so equal filterbanks compare equal.
  w.put("high-freq", static_cast<float>(resolve_high_freq(o.mel.high_freq, f.sample_rate)));
  w.put("vtln-warp", o.mel.vtln.warp);
  if (o.mel.vtln.warp != 1.0f) {
    w.put("vtln-low", o.mel.vtln.low_cutoff);
    w.put("vtln-high",
          o.mel.vtln.high_cutoff > 0.0f
              ? o.mel.vtln.high_cutoff
              : static_cast<float>(f.sample_rate / 2.0 + o.mel.vtln.high_cutoff));
  }
  if (o.kind == FeatureKind::kPlp) {
    w.put("filters", o.plp.num_filters);
    w.put("order", o.plp.order);
    w.put("ceps", o.plp.num_ceps);
    w.put("compress", o.plp.compress);
    w.put("lifter", o.plp.lifter);
    w.put("energy", o.plp.use_energy);
  } else {
    w.put("filters", o.mel.num_filters);
    w.put("mel", mel_scale_name(o.mel.scale));
    w.put("power", o.mel.use_power);
    // Only when off, so the signatures of rounded filterbanks stay as they were.
    if (o.mel.scale == MelScale::kSphinx && !o.mel.round_filters)
      w.put("round-filters", false);
    w.put("log", log_mode_name(o.log.mode));
    w.put("log-floor", o.log.floor_value);
    if (o.kind == FeatureKind::kMfcc) {
      w.put("ceps", o.mfcc.num_ceps);
      w.put("transform", transform_name(o.mfcc.transform));
      w.put("lifter", o.mfcc.lifter);
      w.put("energy", o.mfcc.use_energy);
    } else if (o.kind == FeatureKind::kTraps) {
      w.put("traps-context", o.traps.context);
      w.put("traps-coeffs", o.traps.num_coeffs);
    }
  }
  if ((o.kind == FeatureKind::kMfcc && o.mfcc.use_energy) ||
      (o.kind == FeatureKind::kPlp && o.plp.use_energy))
    w.put("energy-floor", o.mfcc.energy_floor);

  // Named only when on, so that streams made before it existed read the
  // same.
  if (o.declip.enabled) {
    w.put("declip-max-run-ms", o.declip.max_run_ms);
    w.put("declip-peak-fraction", o.declip.peak_fraction);
    w.put("declip-min-level", o.declip.min_level);
    w.put("declip-max-gain", o.declip.max_gain);
    w.put("declip-level-tolerance", o.declip.level_tolerance);
    w.put("declip-min-plateau-runs", o.declip.min_plateau_runs);
  }
  // Live CMN from speech follows the VAD's decisions and hangover too.
  const bool cmn_vad = o.live_cmn_from_speech();
  if (o.noise.remove_noise || o.noise.remove_silence || cmn_vad) {
    w.put("remove-noise", o.noise.remove_noise);
    w.put("remove-silence", o.noise.remove_silence);
    w.put("vad-threshold", o.noise.vad_threshold);
    // Only when set, so that every signature made before it stays valid.
    if (o.noise.start_at_first_sound) w.put("noise-start", noise_start_name(true));
    if (o.noise.remove_silence || cmn_vad) {
      w.put("vad-prespeech", o.noise.vad_prespeech);
      w.put("vad-postspeech", o.noise.vad_postspeech);
      w.put("vad-startspeech", o.noise.vad_startspeech);
    }
  }
  w.put("cmn", cmn_name(o.norm.cmn));
  if (o.norm.cmn == NormOptions::Cmn::kLive) {
    std::string init;
    for (size_t i = 0; i < o.norm.cmn_init.size(); ++i) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%s%.9g", i ? "," : "",
                    static_cast<double>(o.norm.cmn_init[i]));
      init += buf;
    }
    w.put("cmn-init", init.empty() ? std::string("first-frame") : init);
    w.put("cmn-window", o.norm.live_window);
    w.put("cmn-init-frames", o.norm.live_init_frames);
    // What the running mean learns from.
    w.put("cmn-learns", std::string(o.live_cmn_from_speech() ? "speech" : "every-frame"));
  }
  // Named only where it applies and is on (not the default), so that the
  // signatures of streams made before it existed still read the same.
  if (o.cmn_skips_negative_c0()) w.put("cmn-mean-of", std::string("nonnegative-c0"));
  w.put("cvn", o.norm.cvn);
  w.put("min-max", o.norm.min_max);
  w.put("deltas", feature_layout_name(o.delta));
  if (o.delta.layout == DeltaOptions::Layout::kRegression)
    w.put("delta-window", o.delta.window);
  return w.str();
}

uint64_t feature_signature_hash(const std::string& signature) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : signature) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

namespace {

// "key=value;..." as a map, and (if `order`) the keys in order.
std::map<std::string, std::string> parse_signature(const std::string& sig,
                                                   std::vector<std::string>* order) {
  std::map<std::string, std::string> out;
  std::istringstream in(sig);
  std::string item;
  while (std::getline(in, item, ';')) {
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    out[key] = eq == std::string::npos ? "" : item.substr(eq + 1);
    if (order != nullptr) order->push_back(key);
  }
  return out;
}

bool is_cmn_detail(const std::string& key) {
  return key == "cmn" || key == "cmn-init" || key == "cmn-window" ||
         key == "cmn-init-frames" || key == "cmn-learns" || key == "cmn-mean-of";
}

// The stages that clean the signal up (noise subtraction, the VAD,
// declipping) are the feature producer's choice: a model is not trained
// for one setting of them.
bool is_noise_stage_detail(const std::string& key) {
  return key == "remove-noise" || key == "remove-silence" || key == "noise-start" ||
         key.rfind("vad-", 0) == 0 || key.rfind("declip-", 0) == 0;
}

}  // namespace

std::string feature_signature_mismatch(const std::string& offered, const std::string& wanted) {
  std::vector<std::string> order;
  const auto a = parse_signature(offered, nullptr);
  const auto b = parse_signature(wanted, &order);
  for (const auto& kv : a)
    if (b.count(kv.first) == 0) order.push_back(kv.first);
  std::string diff;
  for (const std::string& key : order) {
    const auto ia = a.find(key);
    const auto ib = b.find(key);
    const std::string va = ia == a.end() ? "(absent)" : ia->second;
    const std::string vb = ib == b.end() ? "(absent)" : ib->second;
    if (is_noise_stage_detail(key)) continue;
    if (is_cmn_detail(key)) {
      if (key != "cmn") continue;
      const bool a_none = va == "none" || va == "(absent)";
      const bool b_none = vb == "none" || vb == "(absent)";
      if (a_none == b_none) continue;
    } else if (va == vb) {
      continue;
    }
    diff += (diff.empty() ? "" : "; ") + key + ": upstream " + va + ", model " + vb;
  }
  return diff;
}

}  // namespace gpuspeech
