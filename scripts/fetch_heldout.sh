#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A held-out capture set for scripts/tshark_agreement.py: real captures from
# Debian 12 (bookworm) source packages that no test uses.
#
#   scripts/fetch_heldout.sh DIR      (DIR outside the repository, e.g. /tmp/heldout)
#
# Downloads the orig tarballs of the source packages below (apt-get source
# --download-only; a deb-src entry for bookworm is added under
# /etc/apt/sources.list.d when apt has none, which needs root), unpacks only
# their capture folders, and keeps the pcap/pcapng files under 2 MB whose
# link type is Ethernet, raw IP or loopback (capinfos), leaving out those the
# repository already bundles (same sha256). DIR/<package>/ holds
# them under their paths inside the package; DIR/MANIFEST.tsv has tshark's
# counts (scripts/tshark_counts.py). Needs tshark, capinfos, apt-get, tar.
set -euo pipefail

dir=${1:?usage: fetch_heldout.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
# package -> folders inside its source tree that hold captures
declare -A folders=(
  [ndpi]="tests/pcap"
  [tcpdump]="tests"
  [wireshark]="test/captures"
  [libpcap]="tests"
)
max_bytes=$((2 * 1024 * 1024))

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
dl="$dir/.download"
mkdir -p "$dl"
# captures the repository already holds (tests/data, tests/data/corpus) are left out
known="$dl/known-sha256"
cut -f3 "$here/../tests/data/MANIFEST.tsv" "$here/../tests/data/corpus/MANIFEST.tsv" | sort -u > "$known"

if ! grep -rqs '^Types:.*deb-src\|^deb-src ' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  cat > /etc/apt/sources.list.d/bookworm-src.sources <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt-get update -qq
fi

for pkg in "${!folders[@]}"; do
  # an error here can be a missing debian.tar (ndpi 4.2-2 in the archive):
  # the orig tarball, when it came, is all that is needed
  (cd "$dl" && apt-get source --download-only -qq "$pkg" >/dev/null 2>&1) ||
    echo "$pkg: apt-get source reported an error; using what it downloaded" >&2
done

shopt -s nullglob
for tarball in "$dl"/*.orig.tar.*; do
  [[ $tarball == *.asc ]] && continue
  base=$(basename "$tarball")
  pkg=${base%%_*}
  [[ -n ${folders[$pkg]:-} ]] || continue
  top=$(tar -tf "$tarball" 2>/dev/null | head -1 | cut -d/ -f1 || true)
  out="$dir/$pkg"
  rm -rf "$out" && mkdir -p "$out"
  pats=()
  for f in ${folders[$pkg]}; do pats+=("--wildcards" "$top/$f/*"); done
  tar -xf "$tarball" -C "$out" --strip-components=1 "${pats[@]}" 2>/dev/null || true
  # keep pcap/pcapng captures (by magic) under 2 MB with a link type pp reads
  find "$out" -type f | while read -r f; do
    keep=0
    size=$(stat -c %s "$f")
    if (( size > 24 && size <= max_bytes )); then
      magic=$(head -c4 "$f" | od -An -tx1 | tr -d ' \n')
      case $magic in
        d4c3b2a1|a1b2c3d4|4d3cb2a1|a1b23c4d|0a0d0d0a)
          link=$(capinfos -T -r -E "$f" 2>/dev/null | tail -1 | cut -f2 || true)
          case $link in ether|rawip|rawip4|rawip6|null|loop) keep=1 ;; esac ;;
      esac
    fi
    if (( keep )) && grep -qx "$(sha256sum "$f" | cut -c1-16)" "$known"; then keep=0; fi
    (( keep )) || rm -f "$f"
  done
  find "$out" -type l -delete
  find "$out" -type d -empty -delete
done

mapfile -t caps < <(cd "$dir" && find . -path ./.download -prune -o -type f -print |
                     sed 's|^\./||' | grep -v '^MANIFEST.tsv$' | LC_ALL=C sort)
echo "${#caps[@]} captures kept in $dir"
(cd "$dir" && python3 "$here/tshark_counts.py" "${caps[@]}") > "$dir/MANIFEST.tsv"
echo "wrote $dir/MANIFEST.tsv"
