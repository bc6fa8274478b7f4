// Backend::spectral_bands as the composition of the backend's own
// operations (frame_signal, power_spectrum, gemm_nt, apply), for backends
// without a fused kernel (OpenCL) and for the CUDA backend's sizes that its
// fused kernel does not cover. The frames and spectra go through device
// memory, in scratch buffers the backend keeps between calls.
#pragma once

#include <cstdint>

#include "common/backends/backend.h"

namespace gpuspeech {

// Device scratch for the composition, grown on demand, owned by the
// backend that runs it.
struct SpectralBandsScratch {
  BufferPtr frames;    // rows x fft_size
  BufferPtr spectrum;  // rows x (fft_size / 2 + 1)
  // rows x num_bands, for spectral_bands_then_projection. That function
  // calls spectral_bands, which may compose: a backend gives it a scratch
  // of its own, not the one its composition uses.
  BufferPtr bands;
};

// Checks the arguments of spectral_bands that every backend checks the same
// way (sizes of window, filterbank, ranges, bands, energy; the framing
// geometry is checked by frame_signal or the backend's own kernel).
// Throws BackendError naming `backend_name`.
void check_spectral_bands_args(const char* backend_name, const FramingSpec& spec,
                               const DeviceBuffer& window, const BandsSpec& b,
                               const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                               const DeviceBuffer& bands, const DeviceBuffer* energy);

// spectral_bands with a BandsSpec projection, for a backend that does not
// apply it on the chip: the bands (`b` without the projection, through the
// backend's own spectral_bands, fused or composed) go to scratch.bands,
// then gemm_nt maps each group into `out` (rows x b.out_columns()).
void spectral_bands_then_projection(Backend& backend, SpectralBandsScratch& scratch,
                                    const DeviceBuffer& signal, const FramingSpec& spec,
                                    const DeviceBuffer& window, const BandsSpec& b,
                                    const DeviceBuffer& filterbank, const DeviceBuffer& ranges,
                                    DeviceBuffer& out, DeviceBuffer* energy);

// b must have no projection (see spectral_bands_then_projection).
void spectral_bands_by_composition(Backend& backend, SpectralBandsScratch& scratch,
                                   const DeviceBuffer& signal, const FramingSpec& spec,
                                   const DeviceBuffer& window, const BandsSpec& b,
                                   const DeviceBuffer& filterbank, DeviceBuffer& bands,
                                   DeviceBuffer* energy);

}  // namespace gpuspeech
