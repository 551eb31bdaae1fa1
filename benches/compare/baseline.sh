#!/bin/sh
# Runs the comparison with mcpwire at an earlier revision as one more contender: this tree's
# client program (clients/mcpwire) built against mcpwire at REV, labelled mcpwire@REV, beside
# mcpwire@HEAD (this work tree, uncommitted changes included) and rmcp.
#
# REV is checked out in a git worktree outside the repository ($BASELINE_DIR, default
# /tmp/mcpwire-baseline-REV/tree; kept for the next run), and built from a copy of
# clients/mcpwire whose mcpwire dependency points there, with this workspace's Cargo.lock and
# release profile. Nothing under the repository changes but target/.
# Arguments after REV go to the driver: ./baseline.sh 8842c1d --runs 7 --only big,progress,list
# Remove the worktree: git worktree remove /tmp/mcpwire-baseline-REV/tree
set -eu
cd "$(dirname "$0")"
[ $# -ge 1 ] || { echo "usage: ./baseline.sh REV [compare arguments]" >&2; exit 2; }
rev=$(git rev-parse --short "$1^{commit}")
shift
base=${BASELINE_DIR:-${TMPDIR:-/tmp}/mcpwire-baseline-$rev}
if [ ! -e "$base/tree/.git" ]; then
  git worktree add --detach "$base/tree" "$rev" >&2
fi
[ "$(git -C "$base/tree" rev-parse --short HEAD)" = "$rev" ] ||
  { echo "$base/tree is not at $rev" >&2; exit 1; }

pkg=$base/bench-mcpwire
rm -rf "$pkg/src"
mkdir -p "$pkg"
cp -R clients/mcpwire/src "$pkg/src"
cp Cargo.lock "$pkg/Cargo.lock"
{
  sed "s|path = \"../../../..\"|path = \"$base/tree\"|" clients/mcpwire/Cargo.toml
  printf '\n[workspace]\n\n'
  sed -n '/^\[profile.release\]/,/^$/p' Cargo.toml
} > "$pkg/Cargo.toml"
grep -q "path = \"$base/tree\"" "$pkg/Cargo.toml" ||
  { echo "clients/mcpwire/Cargo.toml: the mcpwire path dependency was not found" >&2; exit 1; }
CARGO_TARGET_DIR=$base/target cargo build --release --quiet --manifest-path "$pkg/Cargo.toml"

echo "mcpwire@$rev: $base/tree; mcpwire@HEAD: this work tree at $(git rev-parse --short HEAD)$(
  git diff --quiet HEAD -- ../../src ../../Cargo.toml || echo ', with uncommitted changes to src/ or Cargo.toml')"
exec ./run.sh --baseline "mcpwire@$rev=$base/target/release/bench-mcpwire" "$@"
