#!/usr/bin/env bash
# One of NVIDIA's DOCA GPUNetIO Ethernet samples (SAMPLE: the receive sample
# by default, gpunetio_simple_send or gpunetio_send_wait_time), unmodified,
# built against gnio's DOCA-compatible API (docs/doca-compat.md): install
# gnio into a temporary prefix, lay the sample out as a DOCA installation
# does (its meson.build.public is the sample folder's meson.build there; here a link
# to it) and run `meson setup` + `ninja` with only PKG_CONFIG_PATH pointing
# at the install. The samples are test input from ../shared/doca-samples
# (BSD-3, SOURCES.md there), never copied into gnio's tree. Then the built
# program must print its usage (it parses options before touching a GPU).
# Running it needs a GPU: docs/doca-compat.md says how.
#
#   GNIO_DOCA_SAMPLES_DIR=<doca-samples checkout> doca_sample_test.sh BUILD_DIR [SAMPLE]
# tests/CMakeLists.txt sets GNIO_DOCA_SAMPLES_DIR (by default the source
# tree's ../shared/doca-samples). Exit 77 (skip) without the samples folder,
# meson or nvcc. With GNIO_DOCA_SAMPLE_OUT=DIR the built program is copied
# there, to run it on a GPU (docs/doca-compat.md); MESON names another meson.
set -euo pipefail
build=$1
sample=${2:-gpunetio_simple_receive}
samples=${GNIO_DOCA_SAMPLES_DIR:-$(dirname "$0")/../../../shared/doca-samples}
src=$samples/samples/doca_gpunetio/$sample
if [[ ! -f $src/meson.build.public ]]; then
  echo "doca_sample_test: no DOCA samples at $samples (set GNIO_DOCA_SAMPLES_DIR); skipping"
  exit 77
fi
meson=${MESON:-meson}
if ! command -v "${meson%% *}" >/dev/null; then
  echo "doca_sample_test: meson is not installed (apt-get install meson); skipping"
  exit 77
fi
if ! command -v nvcc >/dev/null; then
  if [[ -x /usr/local/cuda/bin/nvcc ]]; then
    PATH=/usr/local/cuda/bin:$PATH
  else
    echo "doca_sample_test: no nvcc (the sample has a .cu file); skipping"
    exit 77
  fi
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gnio_doca_sample_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pc=$(find "$tmp/prefix" -name doca-common.pc -printf '%h')

# The layout of an installed DOCA samples tree, by links to the originals.
root=$tmp/doca
abs=$(cd "$samples" && pwd)
mkdir -p "$root/samples/doca_gpunetio/$sample" "$root/applications"
ln -s "$abs/VERSION" "$root/VERSION"
for f in common.c common.h common_utils.h; do ln -s "$abs/samples/$f" "$root/samples/$f"; done
ln -s "$abs/applications/common" "$root/applications/common"
for f in "$abs/samples/doca_gpunetio/$sample"/*; do
  case $(basename "$f") in
    meson.build) ;;
    meson.build.public) ln -s "$f" "$root/samples/doca_gpunetio/$sample/meson.build" ;;
    *) ln -s "$f" "$root/samples/doca_gpunetio/$sample/$(basename "$f")" ;;
  esac
done

cd "$root/samples/doca_gpunetio/$sample"
# meson compiles through ccache when it has one: paths relative to this
# temporary folder let the next run hit the cache (nvcc builds four GPU
# architectures of the kernel).
export CCACHE_BASEDIR=$tmp CCACHE_NOHASHDIR=true
if ! PKG_CONFIG_PATH=$pc $meson setup "$tmp/build" >"$tmp/setup.log" 2>&1; then
  cat "$tmp/setup.log" >&2
  echo "doca_sample_test: meson setup failed" >&2
  exit 1
fi
if ! ninja -C "$tmp/build" >"$tmp/ninja.log" 2>&1; then
  cat "$tmp/ninja.log" >&2
  echo "doca_sample_test: ninja failed" >&2
  exit 1
fi
exe=$tmp/build/doca_$sample
[[ -x $exe ]] || { echo "doca_sample_test: $exe was not built" >&2; exit 1; }
usage=$("$exe" --help 2>&1 || true)
if [[ $usage != *"--nic"* || $usage != *"--gpu"* ]]; then
  echo "doca_sample_test: '$exe --help' printed no usage with --nic and --gpu:" >&2
  echo "$usage" >&2
  exit 1
fi
if [[ -n ${GNIO_DOCA_SAMPLE_OUT:-} ]]; then
  mkdir -p "$GNIO_DOCA_SAMPLE_OUT"
  cp "$exe" "$GNIO_DOCA_SAMPLE_OUT/"
  echo "doca_sample_test: copied to $GNIO_DOCA_SAMPLE_OUT/$(basename "$exe")"
fi
echo "doca_sample_test: built $sample with meson against gnio's DOCA packages; --help lists --gpu and --nic"
