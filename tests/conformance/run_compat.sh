#!/usr/bin/env bash
# Triton's test_core.py through tessera's own compatibility mode (tessera.compat.install()) instead of
# the conformance harness's name mapping. Takes run.sh's arguments:
#
#   CONFORMANCE=/path/to/shared/conformance TESSERA_REPO=. bash tests/conformance/run_compat.sh [--baseline] ...
#
# It copies the harness to a temporary folder, puts compat_plugin.py in place of its
# conformance_plugin.py (the original stays beside it and does the rest), and runs the copy's run.sh.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SRC="${CONFORMANCE:-$HERE/../../../shared/conformance}"
[ -f "$SRC/run.sh" ] || { echo "run_compat.sh: set CONFORMANCE to the conformance folder (run.sh not in '$SRC')"; exit 2; }
export TESSERA_REPO="$(cd "${TESSERA_REPO:-$HERE/../..}" && pwd)"
COPY="$(mktemp -d "${TMPDIR:-/tmp}/tessera-conformance-compat.XXXXXX")"
cp -r "$SRC"/. "$COPY"/
mv "$COPY/harness/conformance_plugin.py" "$COPY/harness/_conformance_harness.py"
cp "$HERE/compat_plugin.py" "$COPY/harness/conformance_plugin.py"
exec bash "$COPY/run.sh" "$@"
