#!/usr/bin/env python3
"""Decision and rejection rules of DTW template matching, evaluated offline
on the distances gpuspeech-dtw --dump-distances writes (docs/dtw.md,
"Rules tried offline"). DIR holds tests.dump, oov.dump and templates.dump:
the in-vocabulary tests, the out-of-vocabulary files and the templates
themselves, each matched against the templates of make_speaker_set.sh:

  for x in tests oov templates; do
    gpuspeech-dtw --templates SET/templates [OPTIONS] --dump-distances DIR/$x.dump SET/$x/*.wav > /dev/null
  done
  python3 tests/dtw/score_rules.py DIR

File ids are WORD_VOICE[_VARIANT]. Prints, per rule, the accuracy and the
share of out-of-vocabulary files rejected by the best threshold for this
very set that rejects at most 5 % of the in-vocabulary tests (an oracle,
an upper bound for any threshold a user could derive), and the same
oracle on pseudo-trials made from the templates alone: each template
against the other voices' templates (in vocabulary), and against the
other voices' templates of the other words (out of vocabulary).
"""
import math
import sys


def load(path):
    rows, frames = {}, {}
    with open(path) as f:
        header = f.readline().split()[1:]
        for line in f:
            p = line.split()
            rows.setdefault(p[0], []).append([float(x) for x in p[3:]])
            frames[p[0]] = int(p[2])
    return [h.rsplit(':', 1)[0] for h in header], [int(h.rsplit(':', 1)[1]) for h in header], rows, frames


def word_of(i): return i.split('_')[0]
def voice_of(i): return i.split('_')[1]


def word_lists(d, words, keep):
    by = {}
    for t, x in enumerate(d):
        if keep[t] and math.isfinite(x):
            by.setdefault(words[t], []).append(x)
    for xs in by.values():
        xs.sort()
    return by


def k_mean(xs, k):  # decide_match's rule: k capped at n - 1
    k = min(max(1, len(xs) - 1), k)
    return sum(xs[:k]) / k


WARP_RULES = {
    'best warp per template': lambda w: [min(c) for c in zip(*w)],
    'mean over warps': lambda w: [sum(c) / len(c) for c in zip(*w)],
    'warp 1 only': lambda w: w[len(w) // 2],
    'mean of the 2 best warps': lambda w: [sum(sorted(c)[:2]) / 2 for c in zip(*w)],
}


def rejection_scores(by, best, k):
    s = k_mean(by[best], k)
    others = sorted(k_mean(xs, k) for w, xs in by.items() if w != best)
    other_templates = sorted(x for w, xs in by.items() if w != best for x in xs)
    out = {'raw (k-mean of the word)': s, 'nearest template': by[best][0],
           'median of the word': by[best][(len(by[best]) - 1) // 2],
           'best / runner-up word': s / others[0],
           'best / mean of other words': s / (sum(others) / len(others))}
    for n in (3, 5, 10, 20):
        out['best / mean of %d nearest other-word templates' % n] = s / (sum(other_templates[:n]) / n)
    return out


def run(ids, rows, warp_rule, k, keep_fn):
    words = [word_of(t) for t in ids]
    out = []
    for i in sorted(rows):
        d = WARP_RULES[warp_rule](rows[i])
        keep = keep_fn(i) if keep_fn else [True] * len(ids)
        by = word_lists(d, words, keep)
        best = min(by, key=lambda w: k_mean(by[w], k))
        out.append((word_of(i), best, rejection_scores(by, best, k)))
    return out


def oracle(inv, oov, far=0.05):
    s = sorted(inv)
    thr = s[len(s) - int(far * len(s)) - 1]
    return sum(1 for x in oov if x > thr) / len(oov)


def main():
    d = sys.argv[1]
    ids, _, tests, _ = load(d + '/tests.dump')
    _, _, oov, _ = load(d + '/oov.dump')
    _, _, tpl, _ = load(d + '/templates.dump')
    voices, words = [voice_of(t) for t in ids], [word_of(t) for t in ids]
    other_voice = lambda i: [v != voice_of(i) for v in voices]
    other_voice_word = lambda i: [v != voice_of(i) and w != word_of(i) for v, w in zip(voices, words)]
    print('accuracy (in-vocabulary tests):')
    for rule in WARP_RULES:
        print('  %-26s' % rule + ''.join('  k %d %5.1f %%' % (k, 100 * sum(r == b for r, b, _ in run(ids, tests, rule, k, None)) / len(tests))
                                          for k in (1, 2, 3)))
    k, rule = 2, 'best warp per template'
    ti, to = run(ids, tests, rule, k, None), run(ids, oov, rule, k, None)
    pi, po = run(ids, tpl, rule, k, other_voice), run(ids, tpl, rule, k, other_voice_word)
    print('rejection (%s, k %d): out-of-vocabulary rejected at <= 5 %% of the words rejected,'
          ' best threshold: tests | template pseudo-trials' % (rule, k))
    for name in ti[0][2]:
        print('  %-48s %3.0f %% | %3.0f %%' % (name, 100 * oracle([s[name] for *_, s in ti], [s[name] for *_, s in to]),
                                              100 * oracle([s[name] for *_, s in pi], [s[name] for *_, s in po])))


if __name__ == '__main__':
    main()
