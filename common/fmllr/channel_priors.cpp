#include "common/fmllr/channel_priors.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

#include "common/fmllr/channel_weights.h"
#include "common/fmllr/fmllr_io.h"
#include "common/fmllr/fmllr_stats_io.h"

namespace gpuspeech {

namespace fs = std::filesystem;

ChannelChoice ChannelPriorSet::choose(const FmllrStats& stream, double min_gain) const {
  ChannelChoice c;
  c.gain = -std::numeric_limits<double>::infinity();
  if (!(stream.beta > 0.0) || channels.empty()) return c;
  const double q_reference = fmllr_objective(stream, reference.transform);
  int best = -1;
  for (size_t i = 0; i < channels.size(); ++i) {
    const double gain = (fmllr_objective(stream, channels[i].transform) - q_reference) / stream.beta;
    if (std::isfinite(gain) && gain > c.gain) {
      c.gain = gain;
      best = static_cast<int>(i);
    }
  }
  if (best >= 0 && c.gain >= min_gain) c.index = best;
  return c;
}

std::string model_file_signature(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ChannelPriorError(path + ": cannot be read");
  // FNV-1a, 64 bits: enough to tell one model's means from another's.
  uint64_t h = 1469598103934665603ull;
  uint64_t bytes = 0;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    const std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ull;
    }
    bytes += static_cast<uint64_t>(n);
  }
  char out[64];
  std::snprintf(out, sizeof out, "means %" PRIu64 " %016" PRIx64, bytes, h);
  return out;
}

namespace {

ChannelPrior load_prior(const fs::path& file, int dim, const FmllrOptions& estimation) {
  ChannelPrior p;
  p.name = file.stem().string();
  FmllrStats s;
  try {
    s = read_fmllr_stats(file.string(), dim);
  } catch (const FmllrFormatError& e) {
    throw ChannelPriorError(e.what());
  }
  if (!(s.beta > 0.0 && std::isfinite(s.beta)))
    throw ChannelPriorError(file.string() + ": statistics with no frames");
  const FmllrEstimate est = estimate_fmllr(s, estimation);
  if (est.outcome != FmllrOutcome::kUpdated || !est.transform.all_finite())
    throw ChannelPriorError(file.string() + ": no transform can be estimated from these statistics (" +
                            est.message + ")");
  p.transform = est.transform;
  p.stats = std::make_shared<const FmllrStats>(std::move(s));
  return p;
}

}  // namespace

ChannelPriorSet load_channel_priors(const std::string& dir, int dim, const std::string& model_means,
                                    const FmllrOptions& estimation) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ChannelPriorError(dir + ": not a directory (a channel prior library: reference.stats and "
                            "one NAME.stats per channel)");
  const fs::path root(dir);
  const fs::path model_file = root / "model";
  if (!model_means.empty() && fs::exists(model_file, ec)) {
    std::ifstream in(model_file);
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.rfind("means ", 0) != 0)
      throw ChannelPriorError(model_file.string() + ": expected \"means BYTES FNV1A64HEX\"");
    const std::string have = model_file_signature(model_means);
    if (have != line)
      throw ChannelPriorModelMismatch(dir + ": made with another acoustic model (its means: " + line.substr(6) +
                                      "; " + model_means + ": " + have.substr(6) + ")");
  }
  const fs::path reference_file = root / "reference.stats";
  if (!fs::exists(reference_file, ec))
    throw ChannelPriorError(reference_file.string() +
                            ": missing (the library's recordings without a channel, against which each "
                            "channel is scored)");
  ChannelPriorSet set;
  set.reference = load_prior(reference_file, dim, estimation);
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec))
    if (e.path().extension() == ".stats" && e.path().filename() != "reference.stats") files.push_back(e.path());
  if (ec) throw ChannelPriorError(dir + ": cannot be listed: " + ec.message());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) set.channels.push_back(load_prior(f, dim, estimation));
  if (set.channels.empty())
    throw ChannelPriorError(dir + ": no channel (NAME.stats beside reference.stats)");
  const fs::path weights_file = root / "weights";
  if (fs::exists(weights_file, ec)) {
    std::ifstream in(weights_file, std::ios::binary);
    if (!in) throw ChannelPriorError(weights_file.string() + ": cannot be read");
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    if (in.bad()) throw ChannelPriorError(weights_file.string() + ": cannot be read");
    for (const ChannelWeight& w : parse_channel_weights(text, weights_file.string())) {
      auto it = std::find_if(set.channels.begin(), set.channels.end(),
                             [&](const ChannelPrior& c) { return c.name == w.name; });
      if (it == set.channels.end())
        throw ChannelPriorError(weights_file.string() + ":" + std::to_string(w.line) + ": no channel " + w.name +
                                " (no " + w.name + ".stats)");
      it->weight = w.weight;
    }
  }
  return set;
}

}  // namespace gpuspeech
