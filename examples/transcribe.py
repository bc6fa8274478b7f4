#!/usr/bin/python3
"""Speech to text from Python through GObject introspection: builds
gpufeatures ! gpudecoder for an audio file and prints the partial and final
hypotheses from the bus, with each final word's times.

    /usr/bin/python3 examples/transcribe.py speech.wav [gpudecoder properties...]
    /usr/bin/python3 examples/transcribe.py goforward.wav \
        jsgf=/usr/share/pocketsphinx/test/data/goforward.gram

Needs python3-gi and gir1.2-gstreamer-1.0 (Debian), and the plugin: set
GST_PLUGIN_PATH to a build's gst/ folder (./build/gst is used when it
exists). With no model properties the installed en-us model and language
model are used (the first run compiles its graph: minutes, then cached).
"""
import os
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if "GST_PLUGIN_PATH" not in os.environ and os.path.isdir(os.path.join(here, "build", "gst")):
        os.environ["GST_PLUGIN_PATH"] = os.path.join(here, "build", "gst")
    Gst.init(None)

    pipeline = Gst.parse_launch(
        "filesrc name=src ! decodebin ! audioconvert ! audioresample "
        "! gpufeatures "
        "! gpudecoder name=dec ! fakesink")
    pipeline.get_by_name("src").set_property("location", argv[1])
    dec = pipeline.get_by_name("dec")
    for prop in argv[2:]:
        name, _, value = prop.partition("=")
        Gst.util_set_object_arg(dec, name, value)

    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    status = 0
    last = None
    while True:
        msg = bus.timed_pop_filtered(
            Gst.CLOCK_TIME_NONE,
            Gst.MessageType.ELEMENT | Gst.MessageType.ERROR | Gst.MessageType.EOS)
        if msg.type == Gst.MessageType.EOS:
            break
        if msg.type == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            print(f"error: {err.message}\n  {debug}", file=sys.stderr)
            status = 1
            break
        s = msg.get_structure()
        if s.get_name() != "gpudecoder":
            continue
        hyp = s.get_string("hypothesis")
        _, final = s.get_boolean("final")
        if not final:
            if hyp and hyp != last:
                _, stable = s.get_uint("stable-words")
                words = hyp.split()
                print(f"partial: [{' '.join(words[:stable])}] {' '.join(words[stable:])}")
                last = hyp
            continue
        last = None
        _, confidence = s.get_double("confidence")
        print(f"final:   {hyp}  (confidence {confidence:.2f}, {s.get_string('reason')})")
        # words: a GstValueArray of GstStructures; get_array gives it as a
        # GObject.ValueArray without the gst-python overrides.
        _, words = s.get_array("words")
        for i in range(words.n_values):
            w = words.get_nth(i)
            _, start = w.get_uint64("start")
            _, end = w.get_uint64("end")
            _, conf = w.get_double("confidence")
            print(f"    {start / Gst.SECOND:8.2f} {end / Gst.SECOND:8.2f}  {w.get_string('word')}"
                  f"  ({conf:.2f})")
    pipeline.set_state(Gst.State.NULL)
    return status


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore", DeprecationWarning)  # ValueArray.get_nth
    sys.exit(main(sys.argv))
