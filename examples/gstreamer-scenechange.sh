#!/bin/sh
# Shot boundaries from GStreamer's scenechange element (gst-plugins-bad): it sends a
# force-key-unit event before each cut, and vmafcuda (shot-detection=events, the default)
# starts a fresh shot there. Each shot is posted as a VMAF message with type=shot.
#   examples/gstreamer-scenechange.sh REF.y4m DIST.y4m
set -eu
ref=$1 dist=$2
export GST_PLUGIN_PATH="${GST_PLUGIN_PATH:-$(dirname "$0")/../target/release}"
gst-launch-1.0 -m \
  filesrc location="$ref" ! y4mdec ! scenechange ! \
    vmafcuda name=v shot-detection=events ! fakesink \
  filesrc location="$dist" ! y4mdec ! v.dist_sink
