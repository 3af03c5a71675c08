#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite.  Extra arguments go to pytest,
# e.g.  scripts/test.sh -m "not slow"   or   scripts/test.sh tests/frontend -x
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
cd "$here"
set +e
"$here/.venv/bin/python" -m pytest "$@"
rc=$?
set -e
if [[ $rc == 5 ]]; then echo "pytest collected no tests" >&2; fi
exit $rc
