#include "common/fmllr/online_fmllr.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "common/fmllr/fmllr_io.h"

namespace gpuspeech {

namespace {

// History frame flags.
constexpr uint8_t kAccumulated = 1;  // its statistics are in (decoder supervision)
constexpr uint8_t kNonFinite = 2;    // NaN or inf somewhere: never accumulated

bool finite_frame(const float* x, int dim) {
  for (int i = 0; i < dim; ++i)
    if (!std::isfinite(x[i])) return false;
  return true;
}

// Largest history we allocate: two copies of 39 floats a frame make this
// about 300 MB, far beyond any alignment delay.
constexpr double kMaxHistoryFrames = 1e6;

// How many parameters each update type estimates: the order of richness.
int richness(FmllrUpdateType t) {
  switch (t) {
    case FmllrUpdateType::kOffset: return 0;
    case FmllrUpdateType::kDiag: return 1;
    case FmllrUpdateType::kBlock: return 2;
    case FmllrUpdateType::kFull: return 3;
  }
  return 3;
}

// Frames of statistics update_type_by_data wants before estimating `t`:
// frames_per_parameter for each of its parameters.
double frames_needed_for(FmllrUpdateType t, int dim, double frames_per_parameter) {
  const double d = dim;
  switch (t) {
    case FmllrUpdateType::kFull: return frames_per_parameter * d * (d + 1.0);
    case FmllrUpdateType::kBlock: return frames_per_parameter * d * (d / kFmllrBlocks + 1.0);
    case FmllrUpdateType::kDiag: return frames_per_parameter * 2.0 * d;
    case FmllrUpdateType::kOffset: return 0.0;
  }
  return 0.0;
}

// An estimate whose objective per frame is below the start's by more than
// rounding is worse on the very statistics it came from. The full update
// cannot lower it (each row update is the row's exact maximum) except by
// rounding in the last digits; this margin keeps such a no-op from being
// reported as a refusal.
constexpr double kObjectiveTolerance = 1e-9;

}  // namespace

const char* to_string(FmllrSupervision s) {
  switch (s) {
    case FmllrSupervision::kAuto: return "auto";
    case FmllrSupervision::kDecoder: return "decoder";
    case FmllrSupervision::kUnsupervised: return "unsupervised";
  }
  return "?";
}

bool parse_fmllr_supervision(const std::string& name, FmllrSupervision* s) {
  for (FmllrSupervision v :
       {FmllrSupervision::kAuto, FmllrSupervision::kDecoder, FmllrSupervision::kUnsupervised})
    if (name == to_string(v)) {
      *s = v;
      return true;
    }
  return false;
}

void OnlineFmllrOptions::validate() const {
  auto positive = [](double v, const char* name) {
    if (!(std::isfinite(v) && v > 0.0))
      throw std::invalid_argument(std::string("online fMLLR: ") + name + " must be positive, got " +
                                  std::to_string(v));
  };
  positive(update_interval_seconds, "update_interval_seconds");
  positive(frames_per_second, "frames_per_second");
  positive(history_seconds, "history_seconds");
  if (history_seconds * frames_per_second > kMaxHistoryFrames)
    throw std::invalid_argument("online fMLLR: history of " + std::to_string(history_seconds) +
                                " s is too long (at most " +
                                std::to_string(kMaxHistoryFrames) + " frames)");
  if (unsupervised_top_n < 1)
    throw std::invalid_argument("online fMLLR: unsupervised_top_n must be at least 1");
  if (!(min_posterior >= 0.0 && min_posterior < 1.0))
    throw std::invalid_argument("online fMLLR: min_posterior must be in [0, 1)");
  if (!(estimation.min_frames >= 0.0))
    throw std::invalid_argument("online fMLLR: min_frames must not be negative");
  if (estimation.iterations < 1)
    throw std::invalid_argument("online fMLLR: iterations must be at least 1");
  positive(frames_per_parameter, "frames_per_parameter");
}

FmllrUpdateType fmllr_update_type_for_frames(double frames, int dim, double frames_per_parameter) {
  for (FmllrUpdateType t : {FmllrUpdateType::kFull, FmllrUpdateType::kDiag})
    if (frames >= frames_needed_for(t, dim, frames_per_parameter)) return t;
  return FmllrUpdateType::kOffset;
}

FmllrUpdateType fmllr_transform_update_type(const FmllrTransform& t) {
  const int size = t.dim % kFmllrBlocks == 0 ? t.dim / kFmllrBlocks : 0;
  bool diagonal = true, unit = true, blocks = size > 0;
  for (int i = 0; i < t.dim; ++i)
    for (int j = 0; j < t.dim; ++j) {
      const double a = t.at(i, j);
      if (i != j && a != 0.0) {
        diagonal = false;
        if (size == 0 || i / size != j / size) blocks = false;
      }
      if (i == j && a != 1.0) unit = false;
    }
  if (!diagonal) return blocks ? FmllrUpdateType::kBlock : FmllrUpdateType::kFull;
  return unit ? FmllrUpdateType::kOffset : FmllrUpdateType::kDiag;
}

std::string fmllr_speaker_file_name(const std::string& speaker) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < speaker.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(speaker[i]);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || (c == '.' && i > 0);
    if (plain) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + ".mat";
}

std::string fmllr_speaker_path(const std::string& dir, const std::string& speaker) {
  return (std::filesystem::path(dir) / fmllr_speaker_file_name(speaker)).string();
}

OnlineFmllr::OnlineFmllr(const GaussianMixtures& mixtures, Backend& backend,
                         OnlineFmllrOptions options)
    : mixtures_(mixtures),
      backend_(backend),
      options_(std::move(options)),
      dim_(mixtures.feature_dim()),
      accumulator_(mixtures, backend),
      applier_(backend, mixtures.feature_dim()) {
  options_.validate();
  fallback_ = options_.initial_transform.empty()
                  ? FmllrTransform::identity(dim_)
                  : read_fmllr_transform(options_.initial_transform, dim_);
  use_transform(fallback_, fmllr_transform_update_type(fallback_));
  resize_history();
}

OnlineFmllr::~OnlineFmllr() = default;

const FmllrStats& OnlineFmllr::stats() const { return accumulator_.stats(); }

FmllrSupervision OnlineFmllr::active_supervision() const {
  if (options_.supervision == FmllrSupervision::kAuto)
    return decoder_seen_ ? FmllrSupervision::kDecoder : FmllrSupervision::kUnsupervised;
  return options_.supervision;
}

void OnlineFmllr::use_transform(const FmllrTransform& t, FmllrUpdateType type) {
  transform_ = t;
  transform_type_ = type;
  identity_ = t.is_identity();
  if (!identity_) applier_.set_transform(t);
}

void OnlineFmllr::resize_history() {
  capacity_ = std::max<int64_t>(1, std::llround(options_.history_seconds * options_.frames_per_second));
  raw_.assign(static_cast<size_t>(capacity_ * dim_), 0.0f);
  adapted_.assign(static_cast<size_t>(capacity_ * dim_), 0.0f);
  time_.assign(static_cast<size_t>(capacity_), 0);
  generation_of_.assign(static_cast<size_t>(capacity_), 0);
  used_.assign(static_cast<size_t>(capacity_), 0);
  clear_history();
}

void OnlineFmllr::clear_history() {
  if (have_last_time_) {
    have_dropped_ = true;
    dropped_until_ = last_time_;
  }
  begin_ = end_ = 0;
}

void OnlineFmllr::set_frames_per_second(double fps) {
  if (fps == options_.frames_per_second) return;
  OnlineFmllrOptions o = options_;
  o.frames_per_second = fps;
  o.validate();
  options_ = o;
  resize_history();
}

std::string OnlineFmllr::transform_path(const std::string& speaker) const {
  if (options_.transform_dir.empty() || speaker.empty()) return "";
  return fmllr_speaker_path(options_.transform_dir, speaker);
}

OnlineFmllr::SpeakerChange OnlineFmllr::set_speaker(const std::string& speaker) {
  SpeakerChange out;
  if (speaker == speaker_) return out;
  out.changed = true;
  speaker_ = speaker;
  ++generation_;
  accumulator_.reset();
  pending_frames_ = 0.0;
  FmllrTransform start = fallback_;
  out.path = transform_path(speaker);
  if (!out.path.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(out.path, ec)) {
      try {
        start = read_fmllr_transform(out.path, dim_);
        out.loaded = true;
      } catch (const FmllrFormatError& e) {
        out.error = e.what();
      }
    }
  }
  use_transform(start, fmllr_transform_update_type(start));
  return out;
}

std::optional<OnlineFmllrUpdate> OnlineFmllr::process(const float* in, int64_t frames, float* out,
                                                      int64_t first_time, int64_t frame_duration) {
  if (frames < 0 || frame_duration <= 0)
    throw std::invalid_argument("online fMLLR: frames must be >= 0 and frame_duration > 0");
  if (frames == 0) return std::nullopt;
  const size_t values = static_cast<size_t>(frames * dim_);
  // The raw frames first: `out` may be `in`.
  scratch_raw_.assign(in, in + values);
  if (identity_) {
    if (out != in) std::memcpy(out, in, values * sizeof(float));
  } else {
    applier_.apply(scratch_raw_.data(), frames, out);
  }
  counters_.frames_processed += frames;

  if (have_last_time_ && first_time <= last_time_) clear_history();  // time went back
  std::vector<uint8_t> finite(static_cast<size_t>(frames));
  for (int64_t f = 0; f < frames; ++f) {
    if (end_ - begin_ == capacity_) {
      have_dropped_ = true;
      dropped_until_ = time_[static_cast<size_t>(begin_ % capacity_)];
      ++begin_;
    }
    const size_t slot = static_cast<size_t>(end_ % capacity_);
    const float* r = scratch_raw_.data() + f * dim_;
    const float* a = out + f * dim_;
    std::copy(r, r + dim_, raw_.begin() + static_cast<std::ptrdiff_t>(slot * dim_));
    std::copy(a, a + dim_, adapted_.begin() + static_cast<std::ptrdiff_t>(slot * dim_));
    time_[slot] = first_time + f * frame_duration;
    generation_of_[slot] = generation_;
    finite[static_cast<size_t>(f)] = finite_frame(r, dim_) && finite_frame(a, dim_);
    used_[slot] = finite[static_cast<size_t>(f)] ? 0 : kNonFinite;
    if (!finite[static_cast<size_t>(f)]) ++counters_.frames_non_finite;
    ++end_;
  }
  have_last_time_ = true;
  last_time_ = first_time + (frames - 1) * frame_duration;

  if (active_supervision() != FmllrSupervision::kUnsupervised) return std::nullopt;
  // Unsupervised: posteriors on the adapted frames, statistics on the raw.
  std::vector<float> raw, adapted;
  raw.reserve(values);
  adapted.reserve(values);
  int64_t n = 0;
  for (int64_t f = 0; f < frames; ++f) {
    if (!finite[static_cast<size_t>(f)]) continue;
    raw.insert(raw.end(), scratch_raw_.begin() + f * dim_, scratch_raw_.begin() + (f + 1) * dim_);
    adapted.insert(adapted.end(), out + f * dim_, out + (f + 1) * dim_);
    ++n;
  }
  if (n == 0) return std::nullopt;
  if (!unsupervised_)
    unsupervised_ = std::make_unique<UnsupervisedPosteriors>(mixtures_, backend_,
                                                             options_.unsupervised_top_n);
  const GaussianPosteriors post = unsupervised_->compute(adapted.data(), n);
  const double before = accumulator_.stats().beta;
  accumulator_.accumulate(raw.data(), n, post);
  pending_frames_ += accumulator_.stats().beta - before;
  return maybe_estimate(FmllrSupervision::kUnsupervised);
}

int64_t OnlineFmllr::find_frame(int64_t time, int64_t tolerance, int64_t from) const {
  // First frame in [from, end_) with time >= time - tolerance (times increase).
  int64_t lo = std::max(from, begin_), hi = end_;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (time_[static_cast<size_t>(mid % capacity_)] < time - tolerance)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < end_ && time_[static_cast<size_t>(lo % capacity_)] <= time + tolerance) return lo;
  return -1;
}

std::optional<OnlineFmllrUpdate> OnlineFmllr::add_alignment(int64_t first_time,
                                                            int64_t frame_duration,
                                                            const int32_t* senones,
                                                            int64_t count) {
  if (frame_duration <= 0)
    throw std::invalid_argument("online fMLLR: alignment frame duration must be positive");
  for (int64_t i = 0; i < count; ++i)
    if (senones[i] < -1 || senones[i] >= mixtures_.num_senones)
      throw std::invalid_argument("online fMLLR: alignment senone " + std::to_string(senones[i]) +
                                  " outside [-1, " + std::to_string(mixtures_.num_senones) + ")");
  ++counters_.alignments;
  if (options_.supervision == FmllrSupervision::kUnsupervised) {
    ++counters_.alignments_ignored;
    return std::nullopt;
  }
  if (options_.supervision == FmllrSupervision::kAuto && !decoder_seen_) {
    // From now on the decoder's alignments alone (see the header).
    decoder_seen_ = true;
    accumulator_.reset();
    pending_frames_ = 0.0;
  }

  const int64_t tolerance = frame_duration / 2;
  scratch_raw_.clear();
  scratch_adapted_.clear();
  scratch_senones_.clear();
  int64_t cursor = begin_;
  for (int64_t i = 0; i < count; ++i) {
    if (senones[i] < 0) {
      ++counters_.frames_unaligned;
      continue;
    }
    const int64_t t = first_time + i * frame_duration;
    const int64_t n = find_frame(t, tolerance, cursor);
    if (n < 0) {
      if (have_dropped_ && t <= dropped_until_ + tolerance &&
          (begin_ == end_ || t < time_[static_cast<size_t>(begin_ % capacity_)] - tolerance))
        ++counters_.frames_late;
      else
        ++counters_.frames_unmatched;
      continue;
    }
    cursor = n + 1;
    const size_t slot = static_cast<size_t>(n % capacity_);
    if (generation_of_[slot] != generation_) {
      ++counters_.frames_other_speaker;
      continue;
    }
    if (used_[slot] & kNonFinite) continue;  // counted when it passed
    if (used_[slot] & kAccumulated) {
      ++counters_.frames_repeated;
      continue;
    }
    used_[slot] |= kAccumulated;
    scratch_raw_.insert(scratch_raw_.end(), raw_.begin() + static_cast<std::ptrdiff_t>(slot * dim_),
                        raw_.begin() + static_cast<std::ptrdiff_t>((slot + 1) * dim_));
    scratch_adapted_.insert(scratch_adapted_.end(),
                            adapted_.begin() + static_cast<std::ptrdiff_t>(slot * dim_),
                            adapted_.begin() + static_cast<std::ptrdiff_t>((slot + 1) * dim_));
    scratch_senones_.push_back(senones[i]);
  }
  const int64_t n = static_cast<int64_t>(scratch_senones_.size());
  if (n == 0) return std::nullopt;
  counters_.frames_supervised += n;
  // Posteriors within the aligned senone on what the decoder scored (the
  // adapted frames); statistics on the raw frames, which W maps.
  const GaussianPosteriors post = supervised_posteriors(mixtures_, scratch_adapted_.data(), n,
                                                        scratch_senones_.data(),
                                                        options_.min_posterior);
  const double before = accumulator_.stats().beta;
  accumulator_.accumulate(scratch_raw_.data(), n, post);
  pending_frames_ += accumulator_.stats().beta - before;
  return maybe_estimate(FmllrSupervision::kDecoder);
}

std::optional<OnlineFmllrUpdate> OnlineFmllr::maybe_estimate(FmllrSupervision source) {
  const double needed = options_.update_interval_seconds * options_.frames_per_second;
  // Posteriors sum to 1 a frame only up to float rounding.
  if (pending_frames_ < needed * (1.0 - 1e-6)) return std::nullopt;
  pending_frames_ = 0.0;
  ++counters_.estimations;

  const FmllrStats& st = accumulator_.stats();
  OnlineFmllrUpdate u;
  u.speaker = speaker_;
  u.source = source;
  u.frames = st.beta;
  // The transform in use, scored on the same statistics: what "kept" reports.
  auto report_kept = [&]() {
    double q = 0.0;
    if (st.beta > 0.0) {
      q = fmllr_objective(st, transform_) / st.beta;
      if (!std::isfinite(q)) q = 0.0;
    }
    u.objective_before = u.objective_after = q;
  };
  FmllrOptions estimation = options_.estimation;
  if (options_.update_type_by_data) {
    estimation.update = fmllr_update_type_for_frames(st.beta, dim_, options_.frames_per_parameter);
    if (richness(estimation.update) < richness(transform_type_)) {
      // Too little for an estimate as rich as the transform in use: a
      // poorer one would throw away what it knows (and overwrite its file).
      std::ostringstream msg;
      msg << "fMLLR: keeping the " << to_string(transform_type_) << " transform in use: "
          << st.beta << " frames of statistics support only a " << to_string(estimation.update)
          << " estimate (a " << to_string(transform_type_) << " one needs "
          << frames_needed_for(transform_type_, dim_, options_.frames_per_parameter) << ")";
      u.update_type = transform_type_;
      u.outcome = FmllrOutcome::kTooFewFrames;
      u.message = msg.str();
      report_kept();
      u.log_det = transform_.log_abs_det();
      if (!std::isfinite(u.log_det)) u.log_det = 0.0;
      return u;
    }
  }
  u.update_type = estimation.update;
  const FmllrEstimate est = estimate_fmllr(st, estimation, &transform_);
  u.outcome = est.outcome;
  u.message = est.message;
  if (!est.objective.empty()) {
    u.objective_before = est.objective.front();
    u.objective_after = est.objective.back();
  } else {
    report_kept();
  }
  if (est.outcome == FmllrOutcome::kUpdated &&
      u.objective_after <
          u.objective_before - kObjectiveTolerance * (1.0 + std::fabs(u.objective_before))) {
    // Both on the same (regularised) statistics: the estimate explains the
    // speaker's data worse than the transform in use.
    std::ostringstream msg;
    msg << "fMLLR: the " << to_string(estimation.update) << " estimate's objective per frame "
        << u.objective_after << " is below the " << to_string(transform_type_)
        << " transform in use's " << u.objective_before << " on the same statistics; keeping it";
    if (!u.message.empty()) msg << " (" << u.message << ")";
    u.outcome = FmllrOutcome::kRefused;
    u.message = msg.str();
    u.objective_after = u.objective_before;
  }
  if (u.outcome == FmllrOutcome::kUpdated) {
    use_transform(est.transform, estimation.update);
    ++counters_.updates;
    u.saved_path = transform_path(speaker_);
    if (!u.saved_path.empty()) {
      try {
        std::error_code ec;
        std::filesystem::create_directories(options_.transform_dir, ec);
        if (ec)
          throw FmllrFormatError(options_.transform_dir + ": cannot create the directory: " +
                                 ec.message());
        write_fmllr_transform(u.saved_path, transform_);
      } catch (const FmllrFormatError& e) {
        u.save_error = e.what();
        u.saved_path.clear();
      }
    }
  }
  u.log_det = transform_.log_abs_det();
  if (!std::isfinite(u.log_det)) u.log_det = 0.0;  // cannot happen for a kept transform
  return u;
}

}  // namespace gpuspeech
