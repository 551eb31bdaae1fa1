#!/bin/sh
# Footprint of the two minimal programs (minimal/mcpwire, minimal/rmcp): crates in the normal
# dependency tree, stripped release size, and the release build time from an empty target
# directory (each side in its own fresh CARGO_TARGET_DIR, one after the other, not niced).
# Usage: ./footprint.sh [--no-build]   (run from benches/compare)
set -eu
cd "$(dirname "$0")"
count() { cargo tree "$@" -e normal --prefix none --no-dedupe | sed 's/ (\*)//' | sort -u | wc -l; }

echo "== crates (cargo tree -e normal --prefix none --no-dedupe | sed 's/ (\*)//' | sort -u | wc -l)"
echo "minimal-mcpwire (mcpwire features = [client])  $(count -p minimal-mcpwire)"
echo "minimal-rmcp (rmcp client + streamable HTTP + reqwest/rustls)  $(count -p minimal-rmcp)"
echo "mcpwire library, --no-default-features --features client    $(cd ../.. && count -p mcpwire --no-default-features --features client)"
echo "mcpwire library, --no-default-features --features bindings  $(cd ../.. && count -p mcpwire --no-default-features --features bindings)"
echo "mcpwire library, default features (client)                  $(cd ../.. && count -p mcpwire)"
echo "mcpwire library, --all-features                             $(cd ../.. && count -p mcpwire --all-features)"
[ "${1:-}" = "--no-build" ] && exit 0

echo "== clean release builds ($(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg))"
for side in mcpwire rmcp; do
  dir=$(mktemp -d "${TMPDIR:-/tmp}/compare-clean-$side.XXXXXX")
  # Wall time, and the CPU time of cargo and everything it ran (less sensitive to other load).
  CARGO_TARGET_DIR=$dir /usr/bin/time -f '%e %U %S' -o "$dir/time" \
    cargo build --release --locked --quiet -p minimal-$side
  read -r wall user sys < "$dir/time"
  cp "$dir/release/minimal-$side" "$dir/stripped"
  strip "$dir/stripped"
  printf 'minimal-%-8s build %6.1f s wall, %6.1f s CPU   binary %9d B   stripped %9d B (%.2f MiB)   load after: %s\n' \
    "$side" "$wall" "$(echo "$user + $sys" | bc)" "$(stat -c %s "$dir/release/minimal-$side")" \
    "$(stat -c %s "$dir/stripped")" "$(echo "$(stat -c %s "$dir/stripped") / 1048576" | bc -l)" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
  rm -rf "$dir"
done
