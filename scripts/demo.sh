#!/usr/bin/env bash
# Set up (idempotent) and run the main job: the saatp demo on the embedded P4 target.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/scripts/setup.sh"
exec "$here/.venv/bin/saatp" demo "$@"
