#!/bin/sh
# Builds the driver and the client programs, each package on its own (a build of several
# packages at once would unify their dependencies' features), then runs the comparison.
# Arguments go to the driver: ./run.sh --runs 5 --only fresh,big
set -eu
cd "$(dirname "$0")"
for package in bench-mcpwire bench-rmcp mcpwire-compare; do
  cargo build --release --locked --quiet -p "$package"
done
# The binding layer's program (compare binding, compare soak): the same package with the
# binding layer, built on its own so bench-mcpwire stays a client-only program.
cargo build --release --locked --quiet -p bench-mcpwire --features bindings --bin bench-caller
exec "${CARGO_TARGET_DIR:-target}/release/compare" "$@"
