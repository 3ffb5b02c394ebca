#!/usr/bin/env bash
# The README's screenshot of a case page (docs/site-case.png), from a real history of the CPU
# example: NIGHTS runs of examples/cpu-decode on this host (the last SLOW of them with every
# step made 10% slower through UTILGATE_EXAMPLE_SLOWDOWN), then `utilgate site`, then a
# headless Chromium screenshot of the b1/c512 case's page. About 45 s a night on 2 cores (7.5 min for the defaults).
#   scripts/site-screenshot.sh [NIGHTS] [SLOW]      (defaults: 10 nights, the last 4 slow)
set -euo pipefail
cd "$(dirname "$0")/.."
nights=${1:-10}
slow=${2:-4}
cargo build --release --locked --quiet
bin=$PWD/target/release/utilgate
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp examples/cpu-decode/utilgate.toml "$work/"
for n in $(seq 1 "$nights"); do
    factor=1.0
    [ "$n" -gt $((nights - slow)) ] && factor=1.1
    sha=$(printf '%02d%038d' "$n" 0)
    UTILGATE_EXAMPLE_SLOWDOWN=$factor "$bin" run --config "$work/utilgate.toml" \
        --branch main --trigger schedule --git-sha "$sha" >/dev/null || true
    echo "night $n of $nights (slowdown $factor)"
done
"$bin" site --config "$work/utilgate.toml" --out "$work/site" --title "utilgate: the CPU example"
page=$(ls "$work"/site/cases/*b1_c512*.html)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,900 \
    --screenshot="$PWD/docs/site-case.png" "file://$page" 2>/dev/null
echo "wrote docs/site-case.png from $page"
