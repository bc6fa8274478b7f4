#!/usr/bin/env python3
"""WER by a sentence's place in its recording, for tests/bench/live_wer.sh.

live_wer.sh joins each recording's words before scoring; this splits them
again to show where the live chain loses: each final result of a
recording is given to the sentence its time span overlaps most, and a
recording whose final results are not one per sentence (a final spanning
two sentences) is left out. The cut column's words are taken per sentence
from transcribe's output. Errors are word edit distances after lower-casing
and dropping punctuation (close to, not the same as, sclite's scoring).

Usage: live_wer_by_position.py LIVE_WORKDIR CUT_WORKDIR CONDITION...
  LIVE_WORKDIR: a live_wer.sh WORKDIR with the "ours" column (the default
  one, named live); CUT_WORKDIR: one with the cut column (may be the same).
"""
import re
import sys


def words(text):
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


def edits(ref, hyp):
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        diag, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            diag, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, diag + (r != h))
    return row[len(hyp)]


def finals(log):
    out = []
    for line in open(log):
        if "final=(boolean)true" not in line:
            continue
        text = re.search(r'hypothesis=\(string\)("(?:[^"\\]|\\.)*"|[^,]*)', line).group(1)
        text = re.sub(r"\\(.)", r"\1", text.strip('"'))
        start = int(re.search(r"timestamp=\(guint64\)(\d+)", line).group(1)) / 1e9
        length = int(re.search(r"duration=\(guint64\)(\d+)", line).group(1)) / 1e9
        out.append((start, start + length, words(text)))
    return out


def main():
    live_dir, cut_dir, conditions = sys.argv[1], sys.argv[2], sys.argv[3:]
    ref = {}
    for line in open(live_dir + "/ref.trn"):
        m = re.match(r"(.*) \((\S+)\)$", line.strip())
        ref[m.group(2)] = words(m.group(1))
    spans = [line.split() for line in open(live_dir + "/long/spans")]  # voice id start length
    for cond in conditions:
        lead = 0.0 if cond == "clean" else 0.4  # the zeros degrade adds first
        cut = {}
        for line in open(f"{cut_dir}/long/{cond}.cut.hyp"):
            m = re.match(r"(.*?) ?\((\S+)\)$", line.strip())
            cut[m.group(2)] = words(m.group(1))
        errors = {"live": [0] * 5, "cut": [0] * 5}
        total = [0] * 5
        used = []
        for voice in sorted({s[0] for s in spans}):
            sentences = [s for s in spans if s[0] == voice]
            got = finals(f"{live_dir}/long/{cond}.live.{voice}.log")
            if len(got) != len(sentences):
                continue
            used.append(voice)
            live = [[] for _ in sentences]
            for a, b, w in got:
                def overlap(k):
                    t0 = float(sentences[k][2]) + lead
                    return min(b, t0 + float(sentences[k][3])) - max(a, t0)
                live[max(range(len(sentences)), key=overlap)] += w
            for k, s in enumerate(sentences[:5]):
                total[k] += len(ref[s[1]])
                errors["live"][k] += edits(ref[s[1]], live[k])
                errors["cut"][k] += edits(ref[s[1]], cut[s[1]])
        cells = [f"{k + 1}: live {100 * errors['live'][k] / total[k]:.1f}, cut {100 * errors['cut'][k] / total[k]:.1f}"
                 for k in range(5) if total[k]]
        print(f"{cond} ({', '.join(used)}): " + "; ".join(cells))


if __name__ == "__main__":
    main()
