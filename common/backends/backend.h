// The backend interface: a handful of tensor operations that every feature
// pipeline is composed of, implemented once per device (cpu, opencl, cuda).
//
// The feature pipeline (feature_pipeline.h) owns the order of operations and
// all the constant matrices (filterbanks, DCTs); a backend only moves data and
// runs the operations below. That keeps the numbers the same everywhere: the
// CPU backend is the reference, and tests run the same work on two backends
// and compare (backend_compare.h).
//
// All buffers hold float32, row-major. Operations are asynchronous where the
// device allows; download() and synchronize() wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace gpuspeech {

class Backend;

// Memory owned by a backend. Only that backend may use it.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  size_t size() const { return size_; }  // in floats
  const Backend* owner() const { return owner_; }

 protected:
  DeviceBuffer(const Backend* owner, size_t size) : owner_(owner), size_(size) {}

 private:
  const Backend* owner_;
  size_t size_;
};
using BufferPtr = std::unique_ptr<DeviceBuffer>;

// Thrown for device failures and misuse (wrong buffer sizes, foreign buffers).
class BackendError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// How frame_signal cuts a batch of utterances into frames.
//
// The signal buffer holds `num_utts` segments of `utt_stride` samples each.
// Inside segment u, sample index p (0-based, relative to the segment start)
// reads signal[u * utt_stride + p] when 0 <= p < valid_length and 0 otherwise.
// Frame t of segment u starts at p = first_frame_offset + t * frame_shift.
// Output row r = u * frames_per_utt + t.
struct FramingSpec {
  int64_t num_utts = 1;
  int64_t utt_stride = 0;
  int64_t valid_length = 0;
  int64_t frames_per_utt = 0;
  int64_t first_frame_offset = 0;
  int frame_shift = 160;
  int frame_length = 400;
  int fft_size = 512;  // output row length; frame_length..fft_size are zero

  // Steps for each frame (x = the frame's samples by the zero rule above):
  //  energy (optional output): sum of squares of x after DC removal (if
  //     remove_dc), before pre-emphasis and window (Kaldi's raw energy).
  //  per-frame mode (Kaldi, HTK):
  //     1. remove_dc: subtract the mean of the frame_length samples;
  //     2. y[0] = x[0] - a x[0], y[i] = x[i] - a x[i-1];
  //     3. multiply by window[i], i < frame_length.
  //  continuous mode (Sphinx):
  //     1. y[i] = x(p) - a * x(p - 1), p = start + i, and y[i] = 0 where
  //        p >= valid_length (Sphinx zero-pads after pre-emphasis);
  //     2. remove_dc: subtract the mean of y over frame_length;
  //     3. multiply by window[i].
  //  a = preemphasis; a == 0 skips the pre-emphasis step.
  float preemphasis = 0.0f;
  bool preemphasis_per_frame = false;
  bool remove_dc = false;

  int64_t rows() const { return num_utts * frames_per_utt; }
};

// Element-wise functions for Backend::apply.
enum class UnaryOp {
  kLogFloor,  // x > 0 ? ln(x) : param
  kLogOffset, // ln(x + param)  (Sphinx: ln(x + 1e-4))
  kLogClamp,  // ln(max(x, param))
  kPow,       // x >= 0 ? x^param : 0  (PLP's cube-root compression)
  kSqrt,      // sqrt(max(x, 0))
};

// What Backend::spectral_bands computes after the power spectrum.
//
// The filterbank is a dense num_bands x (fft_size / 2 + 1) matrix (as
// gemm_nt takes it), plus its support: `ranges` holds 2 * num_bands
// float-stored integers, first[j] = ranges[2j] and count[j] = ranges[2j + 1],
// and row j of the filterbank is zero outside bins [first[j], first[j] +
// count[j]). Mel, PLP and VTLN filters are triangles or short curves, ~2
// non-zero weights per bin over all bands, so a backend that keeps the
// spectrum on the chip can apply them as a sparse product. The support is
// the caller's contract (FeatureExtractor derives it from the matrix):
// backends clamp it into 0..bins, so a wrong one gives wrong numbers, never
// an out-of-bounds access.
struct BandsSpec {
  bool magnitude = false;  // |X| instead of |X|^2, as power_spectrum
  int num_bands = 0;
  // Applied to every band energy when set (a log for MFCC, fbank and TRAPS,
  // the cube root for PLP); off when something must see the raw energies
  // first (Sphinx noise removal).
  bool apply_op = false;
  UnaryOp op = UnaryOp::kLogClamp;
  float op_param = 0.0f;
  // Optional: a linear map applied to the bands after the op (the DCT of
  // MFCC, PLP's inverse DFT), so a backend can keep the bands on the chip
  // too. `projection` is projection_outputs x projection_group, row-major
  // (gemm_nt's B); each row's bands are cut into num_bands /
  // projection_group groups (one per VTLN warp) and each group is mapped:
  // `bands` then receives rows x (groups * projection_outputs), the numbers
  // (within float rounding) of
  //   gemm_nt(bands, rows * groups, projection_group, *projection,
  //           projection_outputs, out).
  // Needs apply_op (the raw energies are never projected).
  const DeviceBuffer* projection = nullptr;
  int projection_group = 0;
  int projection_outputs = 0;

  int groups() const { return projection ? num_bands / projection_group : 1; }
  // Floats a row of spectral_bands' output holds.
  int out_columns() const { return projection ? groups() * projection_outputs : num_bands; }
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu", "opencl" or "cuda".
  virtual const char* name() const = 0;
  // Human-readable device, e.g. "NVIDIA H100 80GB HBM3" or "pthread-cpu (pocl)".
  virtual std::string device_name() const = 0;

  virtual BufferPtr alloc(size_t n_floats) = 0;
  virtual void upload(DeviceBuffer& dst, const float* src, size_t n,
                      size_t dst_offset = 0) = 0;
  virtual void download(const DeviceBuffer& src, float* dst, size_t n,
                        size_t src_offset = 0) = 0;
  // Waits for all queued work.
  virtual void synchronize() = 0;

  // Cuts, cleans and windows frames (see FramingSpec). `window` holds
  // spec.frame_length floats. `frames` receives rows x fft_size floats.
  // If `energy` is non-null it receives one float per row (raw sum of
  // squares, see FramingSpec step 1).
  virtual void frame_signal(const DeviceBuffer& signal, const FramingSpec& spec,
                            const DeviceBuffer& window, DeviceBuffer& frames,
                            DeviceBuffer* energy) = 0;

  // Real FFT of each row of `frames` (rows x fft_size, fft_size a power of
  // two) and |X_k|^2 (or |X_k| if magnitude) for k = 0..fft_size/2, written
  // to `spectrum` as rows x (fft_size/2 + 1).
  virtual void power_spectrum(const DeviceBuffer& frames, int64_t rows,
                              int fft_size, bool magnitude,
                              DeviceBuffer& spectrum) = 0;

  // The spectral front end in one operation: the numbers (within float
  // rounding) of
  //   frame_signal(signal, spec, window, frames, energy);
  //   power_spectrum(frames, rows, spec.fft_size, b.magnitude, spectrum);
  //   gemm_nt(spectrum, rows, bins, filterbank, b.num_bands, bands);
  //   if (b.apply_op) apply(b.op, b.op_param, bands, rows * b.num_bands);
  // then the projection when BandsSpec has one,
  // with bins = fft_size / 2 + 1, `bands` rows x b.out_columns(). A backend that
  // can keeps the frames and spectra on the chip (they are 3 KB a frame
  // against 0.1 KB of bands for Sphinx's 25 filters); the others run that
  // composition (spectral_bands_composition.h). The CPU backend computes it
  // row by row, bit for bit the composition's numbers.
  virtual void spectral_bands(const DeviceBuffer& signal, const FramingSpec& spec,
                              const DeviceBuffer& window, const BandsSpec& b,
                              const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                              DeviceBuffer& bands, DeviceBuffer* energy) = 0;

  // C[rows x m] = A[rows x k] * B[m x k]^T. A and C may be row blocks of a
  // larger buffer: rows start at a_offset / c_offset floats.
  virtual void gemm_nt(const DeviceBuffer& a, int64_t rows, int k,
                       const DeviceBuffer& b, int m, DeviceBuffer& c,
                       size_t a_offset = 0, size_t c_offset = 0) = 0;

  // x[i] = op(x[i], param) for i < n.
  virtual void apply(UnaryOp op, float param, DeviceBuffer& x, size_t n) = 0;

  // The products of each row's extended vector xi = [x; 1] (dim + 1
  // values): out[pair * rows + r] = xi_p * xi_q (one float multiply) for
  // p <= q <= dim, the pairs numbered row by row over the upper triangle,
  // pair(p, q) = p (dim + 1) - p (p - 1) / 2 + (q - p), so there are
  // (dim + 1)(dim + 2) / 2 of them and the last, (dim, dim), is 1.
  // x: rows x dim; out: pairs x rows. These are the second-order terms of
  // the constrained-MLLR statistics (fmllr_stats.h), built where the GEMM
  // that weights them runs. 1 <= dim <= kMaxExtendedDim.
  static constexpr int kMaxExtendedDim = 1024;
  virtual void extended_outer_products(const DeviceBuffer& x, int64_t rows, int dim,
                                       DeviceBuffer& out) = 0;

  // dst[r * dst_cols + dst_col] = op(src[r]) for r < rows, where op is
  // kLogClamp with `param` (log energy into a cepstral column).
  virtual void log_into_column(const DeviceBuffer& src, int64_t rows,
                               float param, DeviceBuffer& dst, int dst_cols,
                               int dst_col) = 0;

  // Splices context: dst row t (of rows_per_utt in each of num_utts
  // utterances) is [x[t-left], ..., x[t+right]], each `cols` wide, with the
  // frame index clamped to the utterance (edge frames repeat).
  // dst is (num_utts * rows_per_utt) x ((left + right + 1) * cols).
  virtual void splice(const DeviceBuffer& src, int64_t num_utts,
                      int64_t rows_per_utt, int cols, int left, int right,
                      DeviceBuffer& dst) = 0;

  // PLP's linear prediction: each row of `autocorr` holds r[0..order].
  // Levinson-Durbin gives the predictor A(z) = 1 + sum_{i=1..p} a_i z^-i and
  // the residual energy E; the cepstrum of the all-pole model E / |A|^2 is
  //   c_0 = ln(E),
  //   c_n = -a_n - sum_{k=1..n-1} (k/n) c_k a_{n-k}   (a_j = 0 for j > p),
  // written as rows x num_ceps (c_0..c_{num_ceps-1}). A row with r[0] <= 0 or
  // a non-positive residual yields all zeros. Computed in double internally.
  virtual void lpc_to_cepstrum(const DeviceBuffer& autocorr, int64_t rows,
                               int order, int num_ceps,
                               DeviceBuffer& ceps) = 0;

  // Acoustic scoring's second stage: senone log-likelihoods from Gaussian
  // log densities (common/scoring/gaussian_scoring.h runs the first stage as GEMMs).
  //
  // densities: num_gaussians (>= 1) x frames, gaussian-major: densities[g * frames
  //   + f] is Gaussian g's log density at frame f of the block.
  // The mixtures are a sparse matrix of senones * streams rows in CSR form:
  //   row r = s * streams + t (senone s, stream t) holds the entries
  //   j in [offsets[r], offsets[r + 1]), each a Gaussian index gaussian[j]
  //   (a row of `densities`) and a natural-log weight logw[j].
  //   offsets holds senones * streams + 1 non-decreasing values from
  //   offsets[0] = 0; gaussian and logw hold at least offsets[last] values.
  // Result, for f < frames and s < senones:
  //   out[out_offset + f * senones + s] =
  //       sum over t < streams of LSE_j (logw[j] + densities[gaussian[j] * frames + f]),
  //   LSE_j(v_j) = m + ln sum_j exp(v_j - m) with m = max_j v_j (two passes
  //   over the row's entries, the sum in CSR order). -inf terms add zero (so
  //   -inf weights are harmless); a row that is empty or all -inf gives -inf,
  //   and so does the senone's sum. NaN propagates.
  // Indices (offsets, gaussian) are stored as float32 values, which hold
  // integers exactly below 2^24 = 16777216; callers keep num_gaussians and
  // the entry count below that. Their contents are the caller's contract
  // (GaussianScorer builds them): indices are clamped into the buffers, so a
  // bad CSR gives wrong numbers, never an out-of-bounds access (the CPU
  // backend also checks the offsets and throws BackendError).
  virtual void senone_scores(const DeviceBuffer& densities, int num_gaussians,
                             int64_t frames, const DeviceBuffer& offsets,
                             const DeviceBuffer& gaussian, const DeviceBuffer& logw,
                             int senones, int streams, DeviceBuffer& out,
                             size_t out_offset = 0) = 0;

  // The second stage with Gaussian selection (pocketsphinx's -topn;
  // ScorerOptions::top_n): each senone's mixture in a stream sums only the
  // n = min(top_n, density) Gaussians of its codebook that have the highest
  // densities at that frame, each with the senone's own weight. The
  // selection is per codebook, shared by all its senones, and so are the
  // exps: a senone costs n multiply-adds and a log. An approximation of the
  // full mixture that pocketsphinx makes too.
  //
  // densities: as for senone_scores, streams * codebooks * density rows;
  //   codebook c of stream t is the `density` consecutive rows from
  //   (t * codebooks + c) * density.
  // codebook: `senones` float-stored indices, senone s's codebook (clamped
  //   into 0..codebooks-1 like the CSR indices above).
  // weights: senones * streams * density LINEAR mixture weights (>= 0),
  //   dense: weights[(s * streams + t) * density + k] for Gaussian k of s's
  //   codebook in stream t.
  // Selection, per frame, stream and codebook: Gaussians k = 0..density-1 in
  //   order, each entering the ranked list if it is not full or its density
  //   is strictly greater than the last one's, placed after the entries with
  //   a density >= its own: highest densities first, equal ones by lower k.
  //   Ranked k_1..k_n with densities d_1 >= ... >= d_n, and
  //   e_i = exp(d_i - d_1) (0 <= e_i <= 1, e_1 = 1).
  // Result, for f < frames and s < senones, the sum over t < streams of
  //   d_1 + ln S,  S = w(k_1) e_1 + w(k_2) e_2 + ... + w(k_n) e_n, products
  //                then sums in rank order (no fused multiply-add);
  //   but where S < 2^-60 (the weights on the selected Gaussians all tiny,
  //   where S would lose precision to underflow) the same sum in the log
  //   domain: m + ln sum_i exp(ln w(k_i) + d_i - m), m = max_i (ln w(k_i) + d_i),
  //   -inf if all those weights are 0;
  //   -inf where d_1 is -inf; NaN where any density of the codebook at the
  //   frame is NaN. Every backend computes this; exps and logs may differ in
  //   the last bits (the CPU's exp is within about an ulp and returns no less
  //   than e^-87, invisible in a sum S >= 2^-60).
  // 1 <= top_n <= kMaxTopN.
  static constexpr int kMaxTopN = 16;
  static constexpr float kTopNUnderflow = 8.67361738e-19f;  // 2^-60
  // How the device backends run it where senones share codebooks (a PTM or
  // semi-continuous model; en-us has 5126 senones on 42 codebooks): each
  // (stream, codebook, frame) ranked once into a scratch of
  // top_n_ranked_floats(...) <= kTopNRankedScratchFloats floats, then each
  // senone summed from it, `chunk` frames at a time. top_n_ranked_chunk
  // gives the chunk, or 0 where ranking per senone is as cheap (a codebook
  // a senone) or the codebooks are too many for the scratch.
  static constexpr int64_t kTopNRankedScratchFloats = int64_t{1} << 19;  // 2 MiB
  static int64_t top_n_ranked_chunk(int codebooks, int density, int64_t frames, int top_n,
                                    int senones, int streams) {
    const int64_t n = top_n < density ? top_n : density;
    if (senones < 2 * static_cast<int64_t>(codebooks) || n < 1) return 0;
    const int64_t chunk = kTopNRankedScratchFloats / top_n_ranked_floats(codebooks, density,
                                                                         top_n, streams, 1);
    if (chunk < 32) return 0;
    return chunk < frames ? chunk : frames;
  }
  static int64_t top_n_ranked_floats(int codebooks, int density, int top_n, int streams,
                                     int64_t chunk) {
    const int64_t n = top_n < density ? top_n : density;
    return static_cast<int64_t>(streams) * codebooks * (2 * n + 1) * chunk;
  }
  virtual void senone_scores_top_n(const DeviceBuffer& densities, int codebooks,
                                   int density, int64_t frames, int top_n,
                                   const DeviceBuffer& codebook, const DeviceBuffer& weights,
                                   int senones, int streams, DeviceBuffer& out,
                                   size_t out_offset = 0) = 0;

  // The density floor (ScorerOptions::density_floor, pocketsphinx's bound
  // on a density's deficit), in place, between the two stages.
  // densities: streams * rows_per_stream rows of `frames` floats (the
  //   GEMM's Gaussian-major layout), stream t's rows the rows_per_stream
  //   from t * rows_per_stream.
  // For each stream t and frame f: m = the largest of the stream's
  //   densities at f (a NaN never counts; -inf when there is none),
  //   lo = m - floor, and every d < lo becomes
  //   lo + kDensityFloorSlope * (d - lo), each operation rounded once (no
  //   fused multiply-add). The deficit is then bounded (to within a
  //   thousandth of the excess) while the order of the densities, and so
  //   the top-N selection, stays what the exact densities give
  //   (pocketsphinx ranks first and clamps after). -inf stays -inf (m -inf
  //   leaves the frame alone), NaN stays NaN. Only a maximum and three
  //   rounded operations: every backend gives the same bits.
  // floor finite and > 0; frames >= 0; rows_per_stream, streams >= 1.
  static constexpr float kDensityFloorSlope = 1e-3f;
  virtual void floor_densities(DeviceBuffer& densities, int64_t frames, int rows_per_stream,
                               int streams, float floor) = 0;
};

using BackendPtr = std::unique_ptr<Backend>;

}  // namespace gpuspeech
