#!/bin/sh
# Builds the driver and the client programs, each package on its own (a build of several
# packages at once would unify their dependencies' features), then runs the comparison.
# Arguments go to the driver: ./run.sh --runs 5 --only fresh,big
#
#   ./run.sh all [suite arguments]   every contender, both eras, targets and SVG charts
#                                    (compare suite --instructions --out charts), then a short
#                                    soak (compare soak --calls 20000). Installs the peers it
#                                    needs first (scripts/install-peers node22 ts2client python
#                                    into ${MCPWIRE_PEERS_DIR:-<repo>/target/peers}).
set -eu
cd "$(dirname "$0")"
for package in bench-mcpwire bench-rmcp bench-floor mcpwire-compare; do
  cargo build --release --locked --quiet -p "$package"
done
# The binding layer's program (compare binding, compare soak): the same package with the
# binding layer, built on its own so bench-mcpwire stays a client-only program.
cargo build --release --locked --quiet -p bench-mcpwire --features bindings --bin bench-caller
compare="${CARGO_TARGET_DIR:-target}/release/compare"
if [ "${1:-}" = all ]; then
  shift
  MCPWIRE_PEERS_DIR=${MCPWIRE_PEERS_DIR:-$(cd ../.. && pwd)/target/peers}
  export MCPWIRE_PEERS_DIR
  ../../scripts/install-peers node22 ts2client python >&2
  "$compare" suite --instructions --out charts "$@"
  exec "$compare" soak --calls 20000 --every 5000 --warmup 5000
fi
exec "$compare" "$@"
