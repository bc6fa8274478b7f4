#!/usr/bin/env python3
"""torchaudio's batched MFCC on the GPU, for docs/benchmarks.md.

The same batch shape and frame configuration as `gpuspeech-bench features`
with the Sphinx-flavour defaults: 16 kHz, 410-sample (25.625 ms) window,
160-sample hop, 512-point FFT, 25 mel filters from 130 to 6800 Hz, 13
cepstra. The audio is speech-like synthetic (harmonics under a syllable
envelope plus noise, in 16-bit units), made on the GPU, never silence.

Timing: CUDA events around each call after warm-up, median of --reps.
Prints one RESULT line per variant:
  log_mels   MFCC(log_mels=True): ln(mel + 1e-6), the closest to ours
  default    MFCC() as shipped: AmplitudeToDB with top_db=80
"""
import argparse
import math
import statistics

import torch
import torchaudio


def speech_like(utts, n, rate, device, seed):
    g = torch.Generator(device=device).manual_seed(seed)
    t = torch.arange(n, device=device, dtype=torch.float64) / rate
    f0 = 90 + 160 * torch.rand(utts, 1, device=device, generator=g, dtype=torch.float64)
    f0 = f0 * (1 + 0.2 * torch.sin(2 * math.pi * 0.7 * t))
    phase = torch.cumsum(2 * math.pi * f0 / rate, dim=1)
    syll = 3 + 3 * torch.rand(utts, 1, device=device, generator=g, dtype=torch.float64)
    env = 0.5 + 0.5 * torch.sin(2 * math.pi * syll * t)
    v = torch.zeros(utts, n, device=device, dtype=torch.float64)
    for h in range(1, 9):
        v += torch.sin(h * phase) / h
    noise = 30 * torch.randn(utts, n, device=device, generator=g, dtype=torch.float64)
    return (3000 * env * env * v + noise).float()


def time_it(fn, x, warmup, reps):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        y = fn(x)
        stop.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times), min(times), max(times), y


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--utts", type=int, default=512)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=int, default=16000)
    ap.add_argument("--n-mels", type=int, default=25)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()

    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False  # the default; say it
    n = int(round(args.seconds * args.rate))
    x = speech_like(args.utts, n, args.rate, dev, 1)
    print(f"torch {torch.__version__}, torchaudio {torchaudio.__version__}, "
          f"{torch.cuda.get_device_name(0)}; batch {args.utts} x {args.seconds} s")
    melkwargs = dict(n_fft=512, win_length=410, hop_length=160, n_mels=args.n_mels,
                     f_min=130.0, f_max=6800.0, center=False, power=2.0)
    variants = {
        "log_mels": torchaudio.transforms.MFCC(sample_rate=args.rate, n_mfcc=13,
                                               log_mels=True, melkwargs=melkwargs),
        "default": torchaudio.transforms.MFCC(sample_rate=args.rate, n_mfcc=13,
                                              melkwargs=melkwargs),
    }
    with torch.inference_mode():
        for name, mod in variants.items():
            mod = mod.to(dev)
            med, lo, hi, y = time_it(mod, x, args.warmup, args.reps)
            frames = args.utts * y.shape[-1]
            assert torch.isfinite(y).all(), "non-finite MFCC"
            fps = frames / med
            print(f"torchaudio MFCC ({name}): output {tuple(y.shape)}, {frames} frames, "
                  f"median {med * 1e3:.3f} ms (min {lo * 1e3:.3f}, max {hi * 1e3:.3f}), "
                  f"{fps:.3e} frames/s")
            print(f"RESULT torchaudio variant={name} utts={args.utts} seconds={args.seconds} "
                  f"frames={frames} median_ms={med * 1e3:.4f} frames_per_s={fps:.4e}")
            del y
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
