// Restoring clipped peaks (declipper.h).
#include "common/features/declipper.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpuspeech {

Declipper::Declipper(const DeclipOptions& options, float sample_rate) : options_(options) {
  options.validate();
  if (!(sample_rate > 0.0f) || !std::isfinite(sample_rate))
    throw std::invalid_argument("declipper: the sample rate must be positive");
  max_run_ = options.max_run_samples(sample_rate);
}

void Declipper::reset() {
  held_.clear();
  next_ = 0;
  num_before_ = 0;
  peak_ = 0.0f;
  in_long_run_ = false;
  plateau_level_[0] = plateau_level_[1] = 0.0f;
  plateau_runs_[0] = plateau_runs_[1] = 0;
}

void Declipper::accept(const float* samples, size_t n, std::vector<float>& out) {
  held_.insert(held_.end(), samples, samples + n);
  process(/*at_end=*/false, out);
}

void Declipper::flush(std::vector<float>& out) {
  process(/*at_end=*/true, out);
  reset();
}

void Declipper::release(float original, float value, std::vector<float>& out) {
  out.push_back(value);
  before_[0] = before_[1];
  before_[1] = original;
  num_before_ = std::min(num_before_ + 1, 2);
  peak_ = std::max(peak_, std::fabs(original));
  ++next_;
}

bool Declipper::in_run(float x, float first) const {
  return (x > 0.0f) == (first > 0.0f) &&
         std::fabs(std::fabs(x) - std::fabs(first)) <= options_.level_tolerance;
}

void Declipper::process(bool at_end, std::vector<float>& out) {
  while (next_ < held_.size()) {
    const float v = held_[next_];
    if (in_long_run_) {
      if (in_run(v, long_run_value_)) {
        release(v, v, out);
        continue;
      }
      in_long_run_ = false;
    }
    const float level = std::fabs(v);
    if (!(level > 0.0f && level >= options_.min_level && level >= options_.peak_fraction * peak_)) {
      release(v, v, out);
      continue;
    }
    // The run of v from next_: its last sample j, at most max_run_ long.
    size_t j = next_;
    while (j + 1 < held_.size() && in_run(held_[j + 1], v) &&
           static_cast<int>(j + 1 - next_) < max_run_)
      ++j;
    const size_t length = j - next_ + 1;
    auto keep_run = [&] {
      for (size_t k = 0; k < length; ++k) release(held_[next_], held_[next_], out);
    };
    if (j + 1 >= held_.size()) {  // its end is not known yet
      if (!at_end) break;
      keep_run();  // it reaches the end: kept
      continue;
    }
    if (in_run(held_[j + 1], v)) {  // longer than max_run_: kept, and the rest of it
      in_long_run_ = true;
      long_run_value_ = v;
      keep_run();
      continue;
    }
    if (length == 1) {
      release(v, v, out);
      continue;
    }
    if (j + 2 >= held_.size() && !at_end) break;  // the second sample after it
    // The run is decided here, once: does its plateau recur?
    const int side = v > 0.0f ? 0 : 1;
    if (plateau_runs_[side] > 0 &&
        std::fabs(level - plateau_level_[side]) <= options_.level_tolerance) {
      ++plateau_runs_[side];
    } else {
      plateau_level_[side] = level;
      plateau_runs_[side] = 1;
    }
    if (plateau_runs_[side] < options_.min_plateau_runs || num_before_ < 2 ||
        j + 2 >= held_.size()) {
      keep_run();
      continue;
    }
    // The floor of the restored samples: the run's largest magnitude.
    float run_level = level;
    for (size_t k = next_; k <= j; ++k) run_level = std::max(run_level, std::fabs(held_[k]));
    // The cubic through (-2, b0), (-1, b1), (L, a0), (L + 1, a1), the run
    // at 0..L-1, in Lagrange's form (double: L is small but the products
    // of four differences are not).
    const double L = static_cast<double>(length);
    const double xs[4] = {-2.0, -1.0, L, L + 1.0};
    const double ys[4] = {before_[0], before_[1], held_[j + 1], held_[j + 2]};
    const double sign = v > 0.0f ? 1.0 : -1.0;
    const double floor = run_level;
    const double ceiling = options_.max_gain * run_level;
    for (size_t k = 0; k < length; ++k) {
      const double t = static_cast<double>(k);
      double y = 0.0;
      for (int a = 0; a < 4; ++a) {
        double w = ys[a];
        for (int b = 0; b < 4; ++b)
          if (b != a) w *= (t - xs[b]) / (xs[a] - xs[b]);
        y += w;
      }
      const double magnitude = std::min(std::max(sign * y, floor), ceiling);
      release(held_[next_], static_cast<float>(sign * magnitude), out);
    }
    ++runs_restored_;
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(next_));
  next_ = 0;
}

std::vector<float> declip(const DeclipOptions& options, float sample_rate, const float* samples,
                          int64_t n) {
  Declipper d(options, sample_rate);
  std::vector<float> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  d.accept(samples, static_cast<size_t>(std::max<int64_t>(n, 0)), out);
  d.flush(out);
  return out;
}

}  // namespace gpuspeech
