#!/usr/bin/env bash
# The tree's C, C++ and CUDA sources in .clang-format's style.
#
#   bash scripts/format.sh check [FILE...]   exit 1 and name each file that differs (the ctest test format_check)
#   bash scripts/format.sh apply [FILE...]   rewrite them in place
#
# Without FILEs: every tracked .c/.h/.cpp/.hpp/.cu/.cuh file but the bundled
# test data. Needs clang-format-14 (scripts/setup.sh installs it); CLANG_FORMAT
# names another. Exit 77 (skip) when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
shift || true
cf=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$cf" >/dev/null; then
  echo "format.sh: $cf is not installed (apt-get install clang-format-14); skipping"
  exit 77
fi
files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' '*.cu' '*.cuh' | grep -v '^tests/data/')
  else
    mapfile -t files < <(find include src apps examples tools tests bench fuzz \
      \( -name '*.c' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) \
      -not -path 'tests/data/*' | sort)
  fi
fi
case $mode in
  apply)
    "$cf" --style=file -i "${files[@]}"
    echo "format.sh: formatted ${#files[@]} files"
    ;;
  check)
    bad=0
    for f in "${files[@]}"; do
      if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "format.sh: $f is not formatted; bash scripts/format.sh apply $f"
        bad=$((bad + 1))
      fi
    done
    if [[ $bad -ne 0 ]]; then
      echo "format.sh: $bad of ${#files[@]} files differ from .clang-format's style"
      exit 1
    fi
    echo "format.sh: all ${#files[@]} files are formatted"
    ;;
  *)
    echo "usage: bash scripts/format.sh check|apply [FILE...]" >&2
    exit 2
    ;;
esac
