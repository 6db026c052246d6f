#!/usr/bin/env bash
# The README's "Using gnio from CMake and pkg-config": install the build into
# a temporary prefix, then build and run a small program against it both
# ways. The program opens the host executor and a pcap port on a bundled
# capture and must see its 43 frames. Both ways, the compile command must
# carry none of DPDK's own compile flags (-include rte_config.h, -march=...):
# a program that includes only gnio's headers is built for the machine and
# configuration its author chose, not DPDK's.
# Then the README's example is built the same way and must print what the
# README says it prints.
#
#   install_test.sh BUILD_DIR DATA_DIR
set -euo pipefail
build=$1
data=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gnio_install_test_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

mkdir -p "$tmp/app"
cat >"$tmp/app/app.cpp" <<'CPP'
#include <gnio/gnio.hpp>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  auto g = gnio::gpu::open("host");
  if (!g) return std::fprintf(stderr, "%s\n", g.err().what()), 1;
  auto p = gnio::port::open(*g, std::string("pcap:file=") + argv[1]);
  if (!p) return std::fprintf(stderr, "%s\n", p.err().what()), 1;
  auto q = p->create_rxq();
  if (!q || p->start()) return 1;
  auto v = *p->rxq(*q);
  uint64_t frames = 0;
  for (;;) {
    uint64_t first = 0;
    uint32_t n = 0;
    const auto s = gnio::device::recv<gnio::device::scope::thread>(v, 64, 1'000'000, &first, &n);
    if (s == gnio::status::shutdown) break;
    if (s != gnio::status::success) continue;
    frames += n;
    gnio::device::release_all(v);
  }
  (void)p->stop();
  (void)p->destroy_rxq(*q);
  (void)p->close();
  std::printf("%llu frames\n", static_cast<unsigned long long>(frames));
  return frames == 43 ? 0 : 1;
}
CPP
cat >"$tmp/app/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(gnio_install_test CXX)
find_package(gnio REQUIRED)
add_executable(app app.cpp)
target_link_libraries(app PRIVATE gnio::gnio)
CMAKE
# Fails, naming the way in, when a compile command has one of DPDK's flags.
no_dpdk_cflags() {
  local how=$1 cmd=$2
  for flag in rte_config.h -march; do
    if [[ $cmd == *"$flag"* ]]; then
      echo "install_test: $how: the compile command of a program that includes only gnio's headers has '$flag'" \
        "(DPDK's compile flags leak from the installed package):" >&2
      echo "$cmd" >&2
      exit 1
    fi
  done
}

cmake -S "$tmp/app" -B "$tmp/app/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
cmake --build "$tmp/app/build" >/dev/null
no_dpdk_cflags "CMake package" "$(cat "$tmp/app/build/compile_commands.json")"
echo "install_test: CMake package: $("$tmp/app/build/app" "$data/http.pcap")"

pc=$(find "$tmp/prefix" -name gnio.pc -printf '%h')
# pkg-config --cflags also prints the Cflags of every Requires.private package.
cflags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags gnio)
no_dpdk_cflags "pkg-config" "g++ -O1 $cflags -c app.cpp"
PKG_CONFIG_PATH="$pc" g++ -O1 "$tmp/app/app.cpp" $cflags $(PKG_CONFIG_PATH="$pc" pkg-config --libs gnio) -o "$tmp/app/app_pc"
echo "install_test: pkg-config: $("$tmp/app/app_pc" "$data/http.pcap")"

# The README's own example ("Example: a persistent kernel"), as printed there,
# built with pkg-config and run from the source tree (it opens
# tests/data/http.pcap): its 2 UDP packets, as tshark counts them.
src=$(cd "$data/../.." && pwd)
awk '/^## Example: a persistent kernel/{f=1} f&&/^```cpp/{c=1;next} c&&/^```/{exit} c' "$src/README.md" >"$tmp/app/readme.cpp"
[[ -s $tmp/app/readme.cpp ]] || { echo "install_test: no C++ example under the README's 'Example: a persistent kernel'" >&2; exit 1; }
PKG_CONFIG_PATH="$pc" g++ -O1 "$tmp/app/readme.cpp" $cflags $(PKG_CONFIG_PATH="$pc" pkg-config --libs gnio) -o "$tmp/app/readme"
out=$(cd "$src" && "$tmp/app/readme")
echo "install_test: README example: $out"
[[ $out == "2 UDP packets (host executor)" ]] || { echo "install_test: the README's example printed '$out'" >&2; exit 1; }
