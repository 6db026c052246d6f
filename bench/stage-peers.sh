#!/usr/bin/env bash
# Copies what bench/peers.py needs onto a machine without DPDK (e.g. a GPU
# machine with no package manager): dpdk-testpmd, the shared libraries it and
# gnio's apps load, and the drivers for the virtual devices, into one folder.
#
#   bench/stage-peers.sh BUILD_DIR OUT_DIR
#
# Then, on the other machine:
#   LD_LIBRARY_PATH=OUT_DIR/lib python3 bench/peers.py --testpmd OUT_DIR/dpdk-testpmd \
#       --pmd-dir OUT_DIR/pmds --gnio-bin OUT_DIR/flow_count --l2fwd-bin OUT_DIR/l2fwd
set -euo pipefail
if [[ $# -ne 2 ]]; then
  sed -n '2,11s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
build=$1 out=$2
testpmd=$(command -v dpdk-testpmd || true)
[[ -n "$testpmd" ]] || { echo "stage-peers: dpdk-testpmd not found (apt-get install dpdk-dev)" >&2; exit 1; }
pmds=$(pkg-config --variable=pmdsdir libdpdk 2>/dev/null || true)
[[ -d "$pmds" ]] || pmds=$(ls -d /usr/lib/*/dpdk/pmds-* 2>/dev/null | head -1)
[[ -d "$pmds" ]] || { echo "stage-peers: DPDK's driver directory not found" >&2; exit 1; }
mkdir -p "$out/lib" "$out/pmds"
cp "$testpmd" "$out/dpdk-testpmd"
cp "$build/examples/flow_count/flow_count" "$build/examples/l2fwd/l2fwd" "$out/"
for bin in "$out/dpdk-testpmd" "$out/flow_count" "$out/l2fwd"; do
  ldd "$bin" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    xargs -r -I{} cp -L {} "$out/lib/"
done
# The drivers the virtual devices need, loaded with EAL -d. One that
# dpdk-testpmd links itself (the vdev bus) goes to pmds/linked/, which only
# gnio loads: a second copy of a loaded driver would register it twice.
mkdir -p "$out/pmds/linked"
for d in net_null net_ring mempool_ring mempool_stack bus_vdev; do
  dst="$out/pmds"
  if ldd "$testpmd" | grep -q "librte_$d\.so"; then dst="$out/pmds/linked"; fi
  cp -L "$pmds/librte_$d.so" "$dst/" 2>/dev/null || echo "stage-peers: no librte_$d.so in $pmds" >&2
done
# What those drivers load in turn (librte_stack for the stack mempool).
for so in "$out"/pmds/*.so "$out"/pmds/linked/*.so; do
  ldd "$so" | awk '/=> \//{print $3}' | grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    xargs -r -I{} cp -nL {} "$out/lib/"
done
echo "stage-peers: staged into $out ($(du -sh "$out" | cut -f1))"
