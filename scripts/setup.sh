#!/usr/bin/env bash
# Sets up a Debian 12 machine for gnio and builds it into build/.
#
#   bash scripts/setup.sh [--no-build] [--build-type TYPE] [--build-dir DIR]
#
# Idempotent: installs only the Debian packages that are missing (running
# `apt-get update` first only then), as root or through sudo, and re-running
# it on a configured tree just rebuilds what changed. The build uses
# -DGNIO_BUILD_CUDA=AUTO: CUDA kernels and the CUDA executor when nvcc is
# found (/usr/local/cuda), otherwise the host executor only.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=1
build_type="${GNIO_BUILD_TYPE:-RelWithDebInfo}"
build_dir="${GNIO_BUILD_DIR:-build}"

usage() {
  sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --no-build) build=0 ;;
    --build-type) build_type="${2:?--build-type needs a value}"; shift ;;
    --build-type=*) build_type="${1#*=}" ;;
    --build-dir) build_dir="${2:?--build-dir needs a value}"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

say() { echo "setup: $*"; }

# --- Debian packages ---------------------------------------------------------
packages=(build-essential ccache cmake ninja-build pkg-config libpcap-dev libcli11-dev prometheus
          nlohmann-json3-dev libfmt-dev libspdlog-dev libgtest-dev libbenchmark-dev
          tshark python3 python3-jsonschema python3-matplotlib iproute2 iputils-ping dnsutils curl tcpreplay
          libxdp-dev libbpf-dev libdpdk-dev)
# IPFIX: nfcapd/nfdump collect in tests; softflowd is the reference exporter in bench/ipfix_vs_softflowd.py.
packages+=(nfdump softflowd)
# tcpdump: tests/integration/filter_test.py checks --filter's counts against it.
packages+=(tcpdump)
# meson: tests/integration/doca_sample_test.sh builds the DOCA samples with their own meson.build.
packages+=(meson)
# clang-format-14: the format check (scripts/format.sh, ctest format_check).
packages+=(clang-format-14)
# libcu++ (cuda/atomic) comes with the CUDA toolkit; without it, Debian's copy.
if [[ ! -e /usr/local/cuda/include/cccl/cuda/atomic ]]; then
  packages+=(libcu++-dev)
fi

installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]]
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  say "all ${#packages[@]} Debian packages already installed"
else
  if [[ $(id -u) -eq 0 ]]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "setup: missing packages (${missing[*]}) and not root, and sudo is not installed; run as root" >&2
    exit 1
  fi
  say "installing: ${missing[*]}"
  # tshark asks whether non-root users may capture; answer no, without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | "${as_root[@]}" debconf-set-selections
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  say "installed ${#missing[@]} package(s)"
fi

# --- Configure and build -------------------------------------------------------
if [[ $build -eq 0 ]]; then
  say "--no-build: not building"
  exit 0
fi

cd "$repo"
if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  say "CUDA toolkit found ($(/usr/local/cuda/bin/nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')): building the CUDA executor too"
else
  say "no CUDA toolkit at /usr/local/cuda: building the host executor only"
fi
say "configuring $build_dir/ ($build_type, GNIO_BUILD_CUDA=AUTO)"
cmake -G Ninja -S "$repo" -B "$build_dir" \
  -DCMAKE_BUILD_TYPE="$build_type" \
  -DGNIO_BUILD_CUDA=AUTO \
  -DGNIO_BUILD_TESTS=ON \
  -DGNIO_BUILD_EXAMPLES=ON
jobs="$(nproc 2>/dev/null || echo 2)"
say "building $build_dir/ with $jobs job(s)"
cmake --build "$build_dir" -j "$jobs"
say "built: $build_dir/examples/flow_count/flow_count, $build_dir/tools/gnio/gnio"
