#!/bin/sh
# Builds the driver and the two client programs, each package on its own (a build of several
# packages at once would unify their dependencies' features), then runs the comparison.
# Arguments go to the driver: ./run.sh --runs 5 --only fresh,big
set -eu
cd "$(dirname "$0")"
for package in bench-mcpwire bench-rmcp mcpwire-compare; do
  cargo build --release --locked --quiet -p "$package"
done
exec "${CARGO_TARGET_DIR:-target}/release/compare" "$@"
