#!/usr/bin/env bash
# Backends build on the public backend SDK alone (include/gnio/backend/*.hpp
# and the rest of include/gnio): no file under src/backends includes one of
# the core's own headers. A quoted include must name a public header
# ("gnio/...") or a file in the backend's own folder.
#   backends_sdk_only.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: backends_sdk_only.sh SOURCE_DIR}
bad=0
while IFS= read -r f; do
  dir=$(dirname "$f")
  while IFS= read -r inc; do
    [[ $inc == gnio/* ]] && continue
    [[ -f $dir/$inc ]] && continue
    echo "backends_sdk_only: $f includes \"$inc\", which is neither public (gnio/...) nor in $(basename "$dir")/"
    bad=1
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(find "$src/src/backends" -name '*.cpp' -o -name '*.hpp' -o -name '*.h')
n=$(find "$src/src/backends" -name '*.cpp' -o -name '*.hpp' -o -name '*.h' | wc -l)
[[ $bad == 0 ]] && echo "backends_sdk_only: $n backend files include only public headers and their own"
exit $bad
