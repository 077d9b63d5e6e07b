#!/usr/bin/env python3
"""Live QC from Python (PyGObject): run a pipeline with a `vmafcuda` element and print each of
its `VMAF` bus messages as one JSON line (frame scores, shot results, gaps, alerts, align, and
the pooled result at EOS), plus GStreamer warnings as {"type": "warning", ...}.

    sudo apt-get install python3-gi gir1.2-gstreamer-1.0     # Debian 12
    cargo build -p gst-vmafcuda && export GST_PLUGIN_PATH=$PWD/target/debug
    python3 examples/qc_messages.py                          # a built-in test pipeline
    python3 examples/qc_messages.py 'filesrc location=ref.y4m ! y4mdec ! \
        vmafcuda name=v frame-message=true alert-threshold=60 ! fakesink \
        filesrc location=dist.y4m ! y4mdec ! v.dist_sink'

Field names and types are the element's (see `gst-inspect-1.0 vmafcuda`); times are
nanoseconds (GST_CLOCK_TIME_NONE, 2^64-1, becomes null). Exit status 1 on a pipeline error.
"""

import json
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

DEMO_PIPELINE = (
    "videotestsrc num-buffers=20 pattern=ball ! "
    "video/x-raw,format=I420,width=160,height=90,framerate=25/1 ! tee name=t "
    "t. ! queue ! v.ref_sink "
    "t. ! queue ! videobalance contrast=0.6 ! v.dist_sink "
    "vmafcuda name=v frame-message=true shot-boundaries=10 alert-threshold=99 ! fakesink"
)

CLOCK_TIME_NONE = 2**64 - 1


def structure_to_dict(s):
    """Every field of a Gst.Structure as a plain Python value."""
    out = {}
    for i in range(s.n_fields()):
        name = s.nth_field_name(i)
        value = s.get_value(name)
        if isinstance(value, int) and value == CLOCK_TIME_NONE:
            value = None
        out[name] = value
    return out


def watch(description, emit):
    """Runs `description` to EOS, calling `emit(dict)` per VMAF message; returns an exit code."""
    Gst.init(None)
    pipeline = Gst.parse_launch(description)
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)
    code = 0
    wanted = (
        Gst.MessageType.ELEMENT
        | Gst.MessageType.EOS
        | Gst.MessageType.ERROR
        | Gst.MessageType.WARNING
    )
    while True:
        msg = bus.timed_pop_filtered(Gst.CLOCK_TIME_NONE, wanted)
        if msg is None or msg.type == Gst.MessageType.EOS:
            break
        if msg.type == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            print(f"qc_messages: {err.message} ({debug})", file=sys.stderr)
            code = 1
            break
        if msg.type == Gst.MessageType.WARNING:
            err, _ = msg.parse_warning()
            emit({"type": "warning", "message": err.message})
            continue
        s = msg.get_structure()
        if s is not None and s.get_name() == "VMAF":
            emit(structure_to_dict(s))
    pipeline.set_state(Gst.State.NULL)
    return code


def main():
    description = sys.argv[1] if len(sys.argv) > 1 else DEMO_PIPELINE
    return watch(description, lambda d: print(json.dumps(d), flush=True))


if __name__ == "__main__":
    sys.exit(main())
