#!/bin/sh
# The main job of gpuspeech: build, then transcribe a speech recording
# through a GStreamer pipeline,
#
#   filesrc ! decodebin ! audioconvert ! audioresample
#     ! gpufeatures (configures itself from gpudecoder's model: its
#                    feat.params, live CMN)
#     ! gpudecoder  (the installed pocketsphinx en-us model, dictionary and LM)
#
# on the best backend this machine has (backend=auto: CUDA, else an OpenCL
# GPU, else the CPU), printing the partial hypotheses as they change and the
# final one of each utterance.
#
#   sh tools/demo.sh [AUDIO_FILE]
#
# AUDIO_FILE defaults to a LibriVox recording from pocketsphinx-testdata.
set -eu
cd "$(dirname "$0")/.."
audio=${1:-/usr/share/pocketsphinx/test/data/librivox/sense_and_sensibility_01_austen_64kb-0870.wav}

[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

cat >&2 <<EOF
== gst-launch-1.0 filesrc location=$audio ! decodebin ! audioconvert ! audioresample
     ! gpufeatures ! gpudecoder ! fakesink
   The first run compiles the en-us language model's search graph: about 4
   minutes and 6.5 GiB of memory on 2 cores. It is cached (\$GPUSPEECH_CACHE_DIR,
   else ~/.cache/gpuspeech), so later runs start in seconds.
EOF

# gst-launch -m prints every bus message; keep gpudecoder's and show their
# hypotheses (strings in a structure are quoted and backslash-escaped).
show_results=$(cat <<'PY'
import re, sys

def field(line, name, kind):
    m = re.search(name + r'=\(' + kind + r'\)("(?:[^"\\]|\\.)*"|[^,;]*)', line)
    if not m:
        return None
    v = m.group(1)
    if v.startswith('"'):
        v = v[1:-1]
    return re.sub(r'\\(.)', r'\1', v)

last, finals, failed = None, 0, False
for line in sys.stdin:
    if 'gpudecoder-model,' in line:
        print('== model loaded in %.1f s; scoring on %s (%s), search on %s' % (
            float(field(line, 'load-seconds', 'double')), field(line, 'backend', 'string'),
            field(line, 'device', 'string'), field(line, 'search', 'string')))
    elif 'gpudecoder, hypothesis=' in line:
        hyp = field(line, 'hypothesis', 'string') or ''
        if field(line, 'final', 'boolean') == 'true':
            print('final:   %s   [%s]' % (hyp, field(line, 'reason', 'string')))
            finals += 1
            last = None
        elif hyp and hyp != last:
            print('partial: %s' % hyp)
            last = hyp
    elif 'ERROR' in line or 'erroneous' in line or 'error' in line:
        print(line.rstrip(), file=sys.stderr)
        failed = True
    sys.stdout.flush()
sys.exit(1 if failed or finals == 0 else 0)
PY
)

GST_PLUGIN_PATH=$PWD/build/gst gst-launch-1.0 -m \
  filesrc location="$audio" ! decodebin ! audioconvert ! audioresample ! \
  gpufeatures backend=auto ! \
  gpudecoder backend=auto ! fakesink 2>&1 | python3 -c "$show_results"
