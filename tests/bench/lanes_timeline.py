#!/usr/bin/env python3
"""Reads a lanes timeline (GPUSPEECH_LANES_TIMELINE=PATH; files
PATH.<device>.spans and PATH.<device>.launches, written by the CUDA round
batcher) and says how many lanes ran at once, and how many ran while
launched lanes were still waiting to start.

    lanes_timeline.py PATH.0 [RESIDENT]

RESIDENT: the clusters the device holds at once (the bench prints it), for
the share of time the device ran that many lanes.

Spans are device times (%globaltimer); launches and flags seen host times
(CLOCK_REALTIME). The two clocks drift apart by hundreds of microseconds
within a run, so nothing here puts them on one axis: each figure is read
on one clock, or is a difference of differences (A + D below). Only the busiest stretch
of the run is read (the bench decodes one stream alone first, then loads
the others): stretches are parted by 20 ms with no lane running.
Pure Python (no numpy), so it runs anywhere.
"""
import struct
import sys
from collections import defaultdict

SPAN = struct.Struct("<QQQIIII")    # cuda::TpLaneSpan
LAUNCH = struct.Struct("<QIIqqq")   # CudaRoundBatcher::LaunchStamp
SEEN = struct.Struct("<QIIqqq")     # CudaRoundBatcher::SeenStamp


def read(path, layout):
    data = open(path, "rb").read()
    n = len(data) // layout.size
    return [layout.unpack_from(data, k * layout.size) for k in range(n)]


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(q / 100.0 * (len(sorted_values) - 1)))))
    return sorted_values[k]


def time_weighted(events, t0, t1):
    """events: (time, delta) for one counter; returns {level: ns} over [t0, t1]."""
    events.sort()
    level, last, spent = 0, t0, defaultdict(int)
    for t, d in events:
        t = min(max(t, t0), t1)
        spent[level] += t - last
        last = t
        level += d
    spent[level] += t1 - last
    return spent


def resident_or(resident, fallback):
    return resident if resident else fallback


def main():
    base = sys.argv[1]
    resident = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    spans = read(base + ".spans", SPAN)
    launches = read(base + ".launches", LAUNCH)
    seen = read(base + ".seen", SEEN)
    if not spans:
        print("no spans")
        return 1
    # The busiest stretch.
    spans.sort()
    stretches, first, reach = [], 0, spans[0][1]
    for k in range(1, len(spans)):
        if spans[k][0] > reach + 20000000:
            stretches.append((first, k))
            first = k
        reach = max(reach, spans[k][1])
    stretches.append((first, len(spans)))
    a, b = max(stretches, key=lambda r: r[1] - r[0])
    print("%d stretches of lanes; read the busiest: %d of %d spans" % (len(stretches), b - a, len(spans)))
    spans = spans[a:b]
    t0 = min(s[0] for s in spans)
    t1 = max(s[1] for s in spans)
    total = t1 - t0
    durations = sorted(s[1] - s[0] for s in spans)
    print("spans %d, launches %d, %.3f s from the first lane's start to the last lane's end"
          % (len(spans), len(launches), total * 1e-9))
    print("lane span (start to flag): mean %.1f us, p50 %.1f, p90 %.1f, p99 %.1f"
          % (sum(durations) / len(durations) * 1e-3, percentile(durations, 50) * 1e-3,
             percentile(durations, 90) * 1e-3, percentile(durations, 99) * 1e-3))

    # Lanes running at once, weighted by time.
    running = time_weighted([(s[0], 1) for s in spans] + [(s[1], -1) for s in spans], t0, t1)
    mean = sum(k * v for k, v in running.items()) / total
    busy = total - running.get(0, 0)
    peak = max(k for k, v in running.items() if v > 0)
    print("lanes running at once: mean %.1f over the whole span, %.1f while any ran; peak %d; none %.1f %% of the time"
          % (mean, sum(k * v for k, v in running.items()) / max(busy, 1), peak,
             100.0 * running.get(0, 0) / total))
    if resident:
        at_least = sum(v for k, v in running.items() if k >= resident)
        print("  at the resident count (%d) or more: %.1f %% of the time" % (resident, 100.0 * at_least / total))
    width = max(1, (peak + 9) // 10)
    line = []
    for lo in range(0, peak + 1, width):
        ns = sum(v for k, v in running.items() if lo <= k < lo + width)
        line.append("%d-%d %.1f%%" % (lo, lo + width - 1, 100.0 * ns / total))
    print("  time by lanes running: " + ", ".join(line))

    # Launches: host time of the call against the device time of their lanes' starts.
    by_launch = defaultdict(list)
    for s in spans:
        by_launch[(s[2], s[3])].append(s)
    stamps, twice = {}, set()
    for l in launches:
        key = (l[0], l[1])
        if key in stamps:
            twice.add(key)  # a slot's descriptors reallocated at an address used before: ambiguous
        stamps[key] = l
    for key in twice:
        del stamps[key]
    print("launches matched to their lanes: %d (%d ambiguous, left out)"
          % (sum(1 for k in by_launch if k in stamps), len(twice)))
    matched = [stamps[k] for k in by_launch if k in stamps]
    took = sorted(l[4] - l[3] for l in matched)
    call = sorted(l[5] - l[4] for l in matched)
    print("host: rounds taken to the descriptor copy p50 %.1f us, mean %.1f; copy and launch calls p50 %.1f us, mean %.1f, p99 %.1f"
          % (percentile(took, 50) * 1e-3, sum(took) / len(took) * 1e-3, percentile(call, 50) * 1e-3,
             sum(call) / len(call) * 1e-3, percentile(call, 99) * 1e-3))
    # Clock-free: the host's time from a launch's descriptor copy to a lane's
    # flag seen, less what the device's clock accounts for (the lane's start
    # after its launch's first lane, and its span), leaves A + D: the delay
    # from the copy to the launch's first lane start (launch latency and any
    # wait for room) plus the delay from the lane's end to its flag seen.
    first_start = {k: min(s[0] for s in v) for k, v in by_launch.items()}
    lane = {(s[2], s[3], s[4]): s for s in spans}
    running_at = {}
    ev = sorted([(s[0], 1, (s[2], s[3], s[4])) for s in spans] + [(s[1], -1, None) for s in spans])
    level = 0
    for t, d, key in ev:
        if d > 0:
            running_at[key] = level
        level += d
    a_d, a_d_free = [], []
    for x in seen:
        key = (x[0], x[1])
        s = lane.get((x[0], x[1], x[2]))
        if key not in stamps or s is None:
            continue
        v = (x[3] - stamps[key][4]) - (s[0] - first_start[key]) - (s[1] - s[0])
        a_d.append(v)
        # The launch's first lane started with room to spare: no wait for room.
        k0 = min(by_launch[key])
        if running_at.get((k0[2], k0[3], k0[4]), 999) < resident_or(resident, 92) * 2 // 3:
            a_d_free.append(v)
    # D's bound on the host's clock: the flag appeared after the slot's
    # previous scan, and was seen (its thread about to be woken) at seen.
    d_max = sorted(x[3] - x[5] for x in seen if x[5] > 0)
    gap = sorted(x[4] - x[5] for x in seen if x[5] > 0)
    wake_order = sorted(x[3] - x[4] for x in seen)
    if d_max:
        print("D at most (flag seen less the slot's scan before), mean %.1f us, p50 %.1f, p90 %.1f, p99 %.1f; "
              "scans of a slot apart when one found a flag: mean %.1f us, p50 %.1f, p90 %.1f; "
              "scan start to the lane's wake: mean %.1f us, p90 %.1f"
              % (sum(d_max) / len(d_max) * 1e-3, percentile(d_max, 50) * 1e-3, percentile(d_max, 90) * 1e-3,
                 percentile(d_max, 99) * 1e-3, sum(gap) / len(gap) * 1e-3, percentile(gap, 50) * 1e-3,
                 percentile(gap, 90) * 1e-3, sum(wake_order) / len(wake_order) * 1e-3,
                 percentile(wake_order, 90) * 1e-3))
    for name, v in (("every lane", a_d), ("lanes of launches that started with room to spare", a_d_free)):
        v.sort()
        if v:
            print("host copy to flag seen, less the device's share (A + D), %s (%d): mean %.1f us, p10 %.1f, p50 %.1f, p90 %.1f, p99 %.1f"
                  % (name, len(v), sum(v) / len(v) * 1e-3, percentile(v, 10) * 1e-3, percentile(v, 50) * 1e-3,
                     percentile(v, 90) * 1e-3, percentile(v, 99) * 1e-3))
    spread = sorted(max(s[0] for s in v) - min(s[0] for s in v) for v in by_launch.values() if len(v) > 1)
    widths = sorted(len(v) for v in by_launch.values())
    print("lanes a launch: mean %.1f, p50 %d, p90 %d; first to last lane start within a launch: p50 %.1f us, p90 %.1f, p99 %.1f"
          % (sum(widths) / len(widths), percentile(widths, 50), percentile(widths, 90),
             percentile(spread, 50) * 1e-3, percentile(spread, 90) * 1e-3, percentile(spread, 99) * 1e-3))

    # Do lanes slow each other? Span by how many ran when it started.
    starts = sorted((s[0], 1) for s in spans)
    ends = sorted(s[1] for s in spans)
    by_level = defaultdict(list)
    e = 0
    for k, s in enumerate(sorted(spans)):
        while e < len(ends) and ends[e] <= s[0]:
            e += 1
        by_level[(k - e) // width].append(s[1] - s[0])
    line = []
    for b in sorted(by_level):
        v = by_level[b]
        line.append("%d-%d: %.0f us (%d)" % (b * width, b * width + width - 1, sum(v) / len(v) * 1e-3, len(v)))
    print("lane span by lanes already running at its start: " + ", ".join(line))
    sms = defaultdict(int)
    for s in spans:
        sms[s[6]] += 1
    print("first blocks on %d SMs; lanes an SM: min %d, max %d" % (len(sms), min(sms.values()), max(sms.values())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
