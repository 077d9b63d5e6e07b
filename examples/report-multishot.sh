#!/usr/bin/env bash
# Regenerates examples/report-multishot.{html,svg,png} from the corpus multi-shot pair.
set -euo pipefail
cd "$(dirname "$0")"
corpus=${VMAFCUDA_CORPUS:-../../shared/corpus}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
zstd -dqf "$corpus/video/s_multishot_576x324.y4m.zst" -o "$tmp/s_multishot_576x324.y4m"
zstd -dqf "$corpus/video/s_multishot_576x324__x264_crf30.y4m.zst" -o "$tmp/s_multishot_576x324__x264_crf30.y4m"
here=$PWD
(cd "$tmp" && cargo run -q --release --manifest-path "$here/../Cargo.toml" -- score \
  -r s_multishot_576x324.y4m -d s_multishot_576x324__x264_crf30.y4m --shots 0,14,36,46 \
  --feature psnr --backend cpu -q --report "$here/report-multishot.html" --plot "$here/report-multishot.svg")
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,820 \
  --screenshot="$here/report-multishot.png" "file://$here/report-multishot.html" 2>/dev/null
