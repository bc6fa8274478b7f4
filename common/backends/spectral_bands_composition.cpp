#include "common/backends/spectral_bands_composition.h"

#include <string>

namespace gpuspeech {

namespace {

void need(const char* backend_name, const DeviceBuffer& buf, size_t floats, const char* what) {
  if (buf.size() < floats)
    throw BackendError(std::string(backend_name) + ": spectral_bands: " + what + " holds " +
                       std::to_string(buf.size()) + " floats, needs " + std::to_string(floats));
}

}  // namespace

void check_spectral_bands_args(const char* backend_name, const FramingSpec& spec,
                               const DeviceBuffer& window, const BandsSpec& b,
                               const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                               const DeviceBuffer& bands, const DeviceBuffer* energy) {
  if (b.num_bands < 1)
    throw BackendError(std::string(backend_name) + ": spectral_bands: num_bands " +
                       std::to_string(b.num_bands) + " < 1");
  if (spec.fft_size < 2 || (spec.fft_size & (spec.fft_size - 1)) != 0)
    throw BackendError(std::string(backend_name) + ": spectral_bands: fft_size " +
                       std::to_string(spec.fft_size) + " is not a power of two");
  if (spec.frame_length < 1 || spec.frame_length > spec.fft_size || spec.frame_shift < 1 ||
      spec.num_utts < 0 || spec.frames_per_utt < 0 || spec.utt_stride < 0 ||
      spec.valid_length < 0)
    throw BackendError(std::string(backend_name) + ": spectral_bands: invalid framing (frame_length " +
                       std::to_string(spec.frame_length) + ", fft_size " +
                       std::to_string(spec.fft_size) + ", frame_shift " +
                       std::to_string(spec.frame_shift) + ")");
  const size_t rows = static_cast<size_t>(spec.rows());
  const size_t bins = static_cast<size_t>(spec.fft_size / 2 + 1);
  need(backend_name, window, static_cast<size_t>(spec.frame_length), "window");
  need(backend_name, filterbank, static_cast<size_t>(b.num_bands) * bins, "filterbank");
  need(backend_name, ranges, 2 * static_cast<size_t>(b.num_bands), "ranges");
  if (b.projection != nullptr) {
    if (b.projection_group < 1 || b.num_bands % b.projection_group != 0 ||
        b.projection_outputs < 1)
      throw BackendError(std::string(backend_name) + ": spectral_bands: projection of " +
                         std::to_string(b.projection_outputs) + " outputs over groups of " +
                         std::to_string(b.projection_group) + " bands does not divide " +
                         std::to_string(b.num_bands) + " bands");
    if (!b.apply_op)
      throw BackendError(std::string(backend_name) +
                         ": spectral_bands: a projection needs apply_op (raw energies are "
                         "never projected)");
    need(backend_name, *b.projection,
         static_cast<size_t>(b.projection_outputs) * b.projection_group, "projection");
  }
  need(backend_name, bands, rows * b.out_columns(), "bands");
  if (energy != nullptr) need(backend_name, *energy, rows, "energy");
}

void spectral_bands_then_projection(Backend& backend, SpectralBandsScratch& scratch,
                                    const DeviceBuffer& signal, const FramingSpec& spec,
                                    const DeviceBuffer& window, const BandsSpec& b,
                                    const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                                    DeviceBuffer& out, DeviceBuffer* energy) {
  const int64_t rows = spec.rows();
  if (rows == 0) return;
  const size_t band_floats = static_cast<size_t>(rows) * b.num_bands;
  if (!scratch.bands || scratch.bands->size() < band_floats) {
    backend.synchronize();  // queued work may still read the old buffer
    scratch.bands.reset();
    scratch.bands = backend.alloc(band_floats);
  }
  BandsSpec plain = b;
  plain.projection = nullptr;
  backend.spectral_bands(signal, spec, window, plain, filterbank, ranges, *scratch.bands, energy);
  // [rows x (groups * group)] is [rows * groups x group] row-major.
  backend.gemm_nt(*scratch.bands, rows * b.groups(), b.projection_group, *b.projection,
                  b.projection_outputs, out);
}

void spectral_bands_by_composition(Backend& backend, SpectralBandsScratch& scratch,
                                   const DeviceBuffer& signal, const FramingSpec& spec,
                                   const DeviceBuffer& window, const BandsSpec& b,
                                   const DeviceBuffer& filterbank, DeviceBuffer& bands,
                                   DeviceBuffer* energy) {
  const int64_t rows = spec.rows();
  if (rows == 0) return;
  const size_t bins = static_cast<size_t>(spec.fft_size / 2 + 1);
  const size_t frame_floats = static_cast<size_t>(rows) * spec.fft_size;
  const size_t spectrum_floats = static_cast<size_t>(rows) * bins;
  // Freed before the larger one is made: a big batch's frames are gigabytes.
  if (!scratch.frames || scratch.frames->size() < frame_floats) {
    backend.synchronize();  // queued work may still read the old buffer
    scratch.frames.reset();
    scratch.frames = backend.alloc(frame_floats);
  }
  if (!scratch.spectrum || scratch.spectrum->size() < spectrum_floats) {
    backend.synchronize();
    scratch.spectrum.reset();
    scratch.spectrum = backend.alloc(spectrum_floats);
  }
  backend.frame_signal(signal, spec, window, *scratch.frames, energy);
  backend.power_spectrum(*scratch.frames, rows, spec.fft_size, b.magnitude, *scratch.spectrum);
  backend.gemm_nt(*scratch.spectrum, rows, static_cast<int>(bins), filterbank, b.num_bands,
                  bands);
  if (b.apply_op)
    backend.apply(b.op, b.op_param, bands, static_cast<size_t>(rows) * b.num_bands);
}

}  // namespace gpuspeech
