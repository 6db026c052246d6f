#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# scripts/tshark_counts.py reproduces tests/data/MANIFEST.tsv: every cell of
# every row (the counts the tests compare with were made by that script).
# Skipped (exit 77) without tshark and capinfos.
#
#   manifest_test.sh SOURCE_DIR
set -u
src=${1:?usage: manifest_test.sh SOURCE_DIR}
if ! command -v tshark >/dev/null 2>&1 || ! command -v capinfos >/dev/null 2>&1; then
  echo "tshark or capinfos not installed (scripts/setup.sh installs them): skipped"
  exit 77
fi
exec python3 "$src/scripts/tshark_counts.py" --check "$src/tests/data/MANIFEST.tsv"
