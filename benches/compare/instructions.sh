#!/bin/sh
# Instructions per call of the mcpwire client process, mcpwire at an earlier revision REV
# against this work tree, counted by valgrind's callgrind against one loopback server.
#
#   ./instructions.sh [REV] [--runs N] [--concurrent-runs N] [--only ROW,...]
#
# REV (default 114a643, the client just before the connection machine) is checked out in a
# git worktree outside the repository ($INSTR_BASELINE_DIR, default
# /tmp/mcpwire-instr-REV/tree; kept for the next run) and its own benches/compare client
# programs are built there (its own target dir, $INSTR_BASELINE_DIR/target): each side runs
# the client programs of its own revision, so REV's need not compile against this tree's
# API. This tree's client programs and the driver are built here (CARGO_TARGET_DIR, default
# target/). The server is this tree's `compare --serve` (mcpwire's demo server, dual-era), one
# process for every run of both sides.
#
# A row runs its client program under `valgrind --tool=callgrind` at N calls and at 0 calls
# (the same set-up, nothing called); instr/call = (I(N) - I(0)) / N, where I is callgrind's
# `summary:` (user-space instructions of the whole client process, every thread; not the
# kernel); the programs run with BENCH_LATENCY=off (no per-call latency timing: REV's did
# none). The N-call run is repeated (--runs, default 1, for the sequential rows;
# --concurrent-runs, default 5, for the 256-at-once rows, whose interleaving varies), the
# two sides alternating, and the median taken; the 0-call run is made once per side. The
# callgrind files of the last runs stay in $INSTR_OUT (default /tmp/mcpwire-instr-out) for
# `callgrind_annotate --inclusive=yes FILE`.
#
# Rows (`--only` keys):
#   caller-2026      bench-caller  caller 1000 2026             Caller, 2026-07-28, sequential
#   caller-2025      bench-caller  caller 1000 2025             Caller, 2025 path (fresh session each)
#   client-session   bench-mcpwire session 1000 2025            Client, 2025, one session
#   client-fresh     bench-mcpwire fresh 1000 2025              Client, 2025, fresh session each
#   caller-256       bench-caller  caller-concurrent 256 2026   Caller, 2026, 256 at once
#   client-256       bench-mcpwire concurrent 256 2026          Client, 2026, 256 at once
set -eu
cd "$(dirname "$0")"

rev=114a643
runs=1
concurrent_runs=5
only=
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=$2; shift 2 ;;
    --concurrent-runs) concurrent_runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -*) echo "usage: ./instructions.sh [REV] [--runs N] [--concurrent-runs N] [--only ROW,...]" >&2; exit 2 ;;
    *) rev=$1; shift ;;
  esac
done
command -v valgrind > /dev/null || { echo "valgrind is not installed" >&2; exit 1; }
rev=$(git rev-parse --short "$rev^{commit}")
base=${INSTR_BASELINE_DIR:-${TMPDIR:-/tmp}/mcpwire-instr-$rev}
out=${INSTR_OUT:-${TMPDIR:-/tmp}/mcpwire-instr-out}
mkdir -p "$out"

# REV's client programs, from its own tree.
if [ ! -e "$base/tree/.git" ]; then
  git worktree add --detach "$base/tree" "$rev" >&2
fi
[ "$(git -C "$base/tree" rev-parse --short HEAD)" = "$rev" ] ||
  { echo "$base/tree is not at $rev" >&2; exit 1; }
(
  cd "$base/tree/benches/compare"
  export CARGO_TARGET_DIR="$base/target"
  cargo build --release --locked --quiet -p bench-mcpwire
  cargo build --release --locked --quiet -p bench-mcpwire --features bindings --bin bench-caller
)
# This tree's: the driver (for its server) and the two client programs, each on its own.
for package in mcpwire-compare bench-mcpwire; do
  cargo build --release --locked --quiet -p "$package"
done
cargo build --release --locked --quiet -p bench-mcpwire --features bindings --bin bench-caller
target=${CARGO_TARGET_DIR:-target}/release
old=$base/target/release

# The server, kept up for every run. The URL file goes first: the test below must not see the
# last run's URL before the server's shell has truncated it.
rm -f "$out/url"
"$target/compare" --serve > "$out/url" 2> "$out/serve.err" &
server=$!
trap 'kill $server 2> /dev/null || true' EXIT INT TERM
i=0
while [ ! -s "$out/url" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
url=$(head -n 1 "$out/url")
[ -n "$url" ] || { echo "compare --serve gave no URL" >&2; exit 1; }

# callgrind's count of one run: NAME PROGRAM ARGS... (after URL); the file is kept as NAME.
# BENCH_LATENCY=off: this tree's programs time each call (`bench_common::timed!`) for the
# latency percentiles, which REV's programs did not do; off, both sides do the same work
# around the library's calls.
count() {
  name=$1 program=$2; shift 2
  BENCH_LATENCY=off valgrind --tool=callgrind --callgrind-out-file="$out/$name.out" "$program" "$url" "$@" \
    > /dev/null 2> "$out/$name.err" ||
    { echo "valgrind $program $url $*: failed, see $out/$name.err" >&2; exit 1; }
  sed -n 's/^summary: *//p' "$out/$name.out"
}
# The program's arguments after URL with the call count replaced: ARGS N.
with_n() { echo "$1" | sed "s/{n}/$2/"; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
range() { tr ' ' '\n' | grep . | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo ".." hi }'; }

echo "instructions per call of the client process (callgrind, (I(N) - I(0)) / N), mcpwire@$rev against this tree"
echo "mcpwire@$rev: $base/tree; tree: $(git rev-parse --short HEAD)$(
  git diff --quiet HEAD -- ../../src ../../Cargo.toml || echo ', with uncommitted changes to src/ or Cargo.toml')"
echo "server: $target/compare --serve at $url; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-48s %5s %12s %12s %7s   %s\n' row N "@$rev" tree ratio "spread of N-call runs (min..max per call)"

row() {
  key=$1 program=$2 args=$3 n=$4 label=$5 repeat=$6
  if [ -n "$only" ] && ! echo ",$only," | grep -q ",$key,"; then return; fi
  # shellcheck disable=SC2086 # the arguments are words
  zero_old=$(count "$key-rev-0" "$old/$program" $(with_n "$args" 0))
  # shellcheck disable=SC2086
  zero_new=$(count "$key-tree-0" "$target/$program" $(with_n "$args" 0))
  per_old= per_new=
  r=0
  while [ $r -lt "$repeat" ]; do
    # shellcheck disable=SC2086
    a=$(count "$key-rev" "$old/$program" $(with_n "$args" "$n"))
    # shellcheck disable=SC2086
    b=$(count "$key-tree" "$target/$program" $(with_n "$args" "$n"))
    per_old="$per_old $(( (a - zero_old) / n ))"
    per_new="$per_new $(( (b - zero_new) / n ))"
    r=$((r + 1))
  done
  m_old=$(echo "$per_old" | median)
  m_new=$(echo "$per_new" | median)
  spread=
  if [ "$repeat" -gt 1 ]; then
    spread="@$rev $(echo "$per_old" | range); tree $(echo "$per_new" | range) ($repeat runs)"
  fi
  printf '%-48s %5s %12s %12s %7s   %s\n' "$label" "$n" "$m_old" "$m_new" \
    "$(echo "$m_new $m_old" | awk '{ printf "%.3f", $1 / $2 }')" "$spread"
}

row caller-2026 bench-caller "caller {n} 2026" 1000 "Caller, 2026-07-28, sequential" "$runs"
row caller-2025 bench-caller "caller {n} 2025" 1000 "Caller, 2025 path, fresh session each" "$runs"
row client-session bench-mcpwire "session {n} 2025" 1000 "Client, 2025, one session" "$runs"
row client-fresh bench-mcpwire "fresh {n} 2025" 1000 "Client, 2025, fresh session each" "$runs"
row caller-256 bench-caller "caller-concurrent {n} 2026" 256 "Caller, 2026-07-28, 256 at once" "$concurrent_runs"
row client-256 bench-mcpwire "concurrent {n} 2026" 256 "Client, 2026-07-28, 256 at once" "$concurrent_runs"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg); callgrind files: $out/ROW-{rev,tree}[-0].out"
