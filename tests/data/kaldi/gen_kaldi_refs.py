#!/usr/bin/env python3
"""Kaldi-flavour MFCC and fbank references from torchaudio.compliance.kaldi.

Reads configs.txt (beside this script) for the configurations, runs each on
each utterance, and writes beside this script:

  <config>__<utterance>.f32  b"GSKR", int32 rows, int32 cols, then
                             rows * cols float32, all little-endian
  manifest.json              torch/torchaudio versions, the exact keyword
                             arguments of every call, shapes, and how far
                             torchaudio's own float32 run is from the
                             float64 one that is stored

The references are computed in float64 from int16 samples converted to
float (Kaldi's scale) and stored as float32. torchaudio is needed, so this
runs on the GPU machine (tests/gpu/device_run.sh); on the CPU there.

usage: gen_kaldi_refs.py AUDIO_DIR [OUT_DIR [DEBUG_DIR]]
  AUDIO_DIR holds goforward.raw and librivox/*.wav (pocketsphinx-testdata's
  test/data folder, or a copy of it). DEBUG_DIR, if given, receives
  torchaudio's intermediate stages for goforward (mel banks, windowed
  frames, log energies), in the same format, to find which stage differs
  when a reference test fails; they are not test data.
"""
import json
import os
import struct
import sys
import wave

import numpy as np
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi

HERE = os.path.dirname(os.path.abspath(__file__))

# name -> path relative to AUDIO_DIR. goforward.raw is headerless 16 kHz
# S16LE; the others are 16 kHz mono 16-bit WAV.
UTTERANCES = {
    "goforward": "goforward.raw",
    "librivox-0880": "librivox/sense_and_sensibility_01_austen_64kb-0880.wav",
    "librivox-0930": "librivox/sense_and_sensibility_01_austen_64kb-0930.wav",
}


def parse_value(text):
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_configs(path):
    configs = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            name, kind = fields[0], fields[1]
            if kind not in ("mfcc", "fbank"):
                raise SystemExit(f"{path}: {name}: unknown kind {kind}")
            kwargs = {}
            for item in fields[2:]:
                key, _, value = item.partition("=")
                kwargs[key] = parse_value(value)
            configs.append((name, kind, kwargs))
    return configs


def read_int16(path):
    if path.endswith(".raw"):
        data = np.fromfile(path, dtype="<i2")
        return data, 16000
    with wave.open(path, "rb") as w:
        if w.getsampwidth() != 2 or w.getnchannels() != 1:
            raise SystemExit(f"{path}: expected mono 16-bit PCM")
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        return data, w.getframerate()


def write_matrix(path, m):
    m = np.ascontiguousarray(m, dtype="<f4")
    with open(path, "wb") as f:
        f.write(b"GSKR")
        f.write(struct.pack("<ii", m.shape[0], m.shape[1]))
        f.write(m.tobytes())


def dump_stages(samples, rate, configs, debug_dir):
    """torchaudio's intermediate stages (private helpers: best effort)."""
    os.makedirs(debug_dir, exist_ok=True)
    wav = torch.from_numpy(samples.astype(np.float64)).unsqueeze(0)
    for name, kind, kwargs in configs:
        a = dict(kwargs)
        a.setdefault("sample_frequency", float(rate))
        get = lambda k, d: a.get(k, d)
        try:
            win_size = int(get("sample_frequency", 16000.0) * get("frame_length", 25.0) * 0.001)
            win_shift = int(get("sample_frequency", 16000.0) * get("frame_shift", 10.0) * 0.001)
            padded = 1 << (win_size - 1).bit_length()
            banks = kaldi.get_mel_banks(get("num_mel_bins", 23), padded, float(rate),
                                        float(get("low_freq", 20.0)), float(get("high_freq", 0.0)),
                                        float(get("vtln_low", 100.0)), float(get("vtln_high", -500.0)),
                                        float(get("vtln_warp", 1.0)))
            banks = banks[0] if isinstance(banks, tuple) else banks
            write_matrix(os.path.join(debug_dir, f"melbanks__{name}.f32"), banks.double().numpy())
            frames, log_energy = kaldi._get_window(
                wav[0] if wav.dim() == 2 else wav, padded, win_size, win_shift,
                get("window_type", "povey"), get("blackman_coeff", 0.42),
                get("snip_edges", True), get("raw_energy", True), get("energy_floor", 1.0),
                0.0, get("remove_dc_offset", True), get("preemphasis_coefficient", 0.97))
            write_matrix(os.path.join(debug_dir, f"frames__{name}.f32"), frames[:100].numpy())
            write_matrix(os.path.join(debug_dir, f"logenergy__{name}.f32"),
                         log_energy[:100].reshape(-1, 1).numpy())
            print(f"debug stages for {name}: banks {tuple(banks.shape)}, frames {tuple(frames.shape)}")
        except Exception as e:  # private API: report, don't fail the run
            print(f"debug stages for {name}: {type(e).__name__}: {e}")


def main():
    if len(sys.argv) not in (2, 3, 4):
        raise SystemExit(__doc__)
    audio_dir = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) >= 3 else HERE
    debug_dir = sys.argv[3] if len(sys.argv) == 4 else None
    os.makedirs(out_dir, exist_ok=True)
    configs = read_configs(os.path.join(HERE, "configs.txt"))
    manifest = {
        "generator": "tests/data/kaldi/gen_kaldi_refs.py",
        "torch": torch.__version__,
        "torchaudio": torchaudio.__version__,
        "numpy": np.__version__,
        "precision": "float64 computation, stored as float32",
        "input_scale": "int16 sample values as float (Kaldi scale)",
        "utterances": UTTERANCES,
        "results": [],
    }
    for utt, rel in UTTERANCES.items():
        samples, rate = read_int16(os.path.join(audio_dir, rel))
        for name, kind, kwargs in configs:
            fn = kaldi.mfcc if kind == "mfcc" else kaldi.fbank
            args = dict(kwargs)
            args.setdefault("sample_frequency", float(rate))
            wav64 = torch.from_numpy(samples.astype(np.float64)).unsqueeze(0)
            ref = fn(wav64, **args).numpy()
            f32 = fn(wav64.float(), **args).double().numpy()
            scale = max(1.0, float(np.abs(ref).max()))
            f32_vs_f64 = float(np.abs(f32 - ref).max()) / scale
            fname = f"{name}__{utt}.f32"
            write_matrix(os.path.join(out_dir, fname), ref)
            manifest["results"].append({
                "file": fname,
                "config": name,
                "kind": kind,
                "utterance": utt,
                "num_samples": int(samples.shape[0]),
                "call": f"torchaudio.compliance.kaldi.{kind}",
                "kwargs": args,
                "rows": int(ref.shape[0]),
                "cols": int(ref.shape[1]),
                "torchaudio_float32_max_err_rel_to_max": f32_vs_f64,
            })
            print(f"{fname}: {ref.shape[0]}x{ref.shape[1]}, torchaudio "
                  f"float32 vs float64 {f32_vs_f64:.2e} (of max |ref|)")
    if debug_dir:
        samples, rate = read_int16(os.path.join(audio_dir, UTTERANCES["goforward"]))
        dump_stages(samples, rate, configs, debug_dir)
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
