#!/bin/sh
# Installs everything gpuspeech needs to build and test on Debian 12.
# Run as root (or with sudo available). CUDA is optional: when nvcc is at
# /usr/local/cuda/bin (or on PATH) the CUDA backend is built as well.
set -eu
if [ "$(id -u)" -eq 0 ]; then as_root=""; else as_root="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update
$as_root apt-get install -y --no-install-recommends \
  g++ clang libclang-rt-14-dev meson ninja-build pkg-config python3 \
  googletest libgtest-dev \
  libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev \
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good \
  libfst-dev ocl-icd-opencl-dev opencl-headers libclfft-dev pocl-opencl-icd \
  pocketsphinx pocketsphinx-en-us pocketsphinx-testdata sphinxbase-utils \
  sctk sox flite espeak-ng gstreamer1.0-pocketsphinx
