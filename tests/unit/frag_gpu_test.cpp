// SPDX-License-Identifier: Apache-2.0
// Fragment reassembly (gnio/device/pkt/frag.hpp) on a GPU thread against the
// same code on the host, over tests/data/frag/frag.pcap: per frame the same
// result, the same reassembled length and bytes (compared by hash), and the
// same counters. Built as CUDA; exits 77 (skipped) without a GPU.
#include <gnio/device/pkt/frag.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace gnio::device;

namespace {

struct frame_result {
  uint32_t result;
  uint32_t out_len;
  uint64_t hash;  // FNV-1a of the reassembled bytes
};

struct run_out {
  frag_stats st;
  uint32_t pending;
};

// What a kernel body would do: parse, then hand fragments to the table, one
// second apart.
GNIO_HOST_DEVICE void run_all(frag_table t, const uint8_t* buf, const uint32_t* offs, const uint32_t* lens, uint32_t n,
                              frame_result* res, run_out* ro) {
  for (uint32_t i = 0; i < n; ++i) {
    parsed_pkt p;
    (void)parse(buf + offs[i], lens[i], p);
    const uint8_t* out;
    uint32_t out_len;
    const frag_result r = frag_input(t, buf + offs[i], lens[i], p, (i + 1) * 1'000'000'000ull, ro->st, &out, &out_len);
    uint64_t h = 1469598103934665603ull;
    for (uint32_t j = 0; j < out_len; ++j) h = (h ^ out[j]) * 1099511628211ull;
    res[i] = frame_result{static_cast<uint32_t>(r), out_len, h};
  }
  ro->pending = frag_pending(t);
  frag_expire(t, ~0ull, ro->st);
}

__global__ void run_kernel(frag_table t, const uint8_t* buf, const uint32_t* offs, const uint32_t* lens, uint32_t n,
                           frame_result* res, run_out* ro) {
  if (blockIdx.x == 0 && threadIdx.x == 0) run_all(t, buf, offs, lens, n, res, ro);
}

template <class T>
T* managed(size_t count) {
  void* p = nullptr;
  if (cudaMallocManaged(&p, count * sizeof(T) + 8) != cudaSuccess) return nullptr;
  return static_cast<T*>(p);
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("frag_gpu_test: no GPU, skipped\n");
    return 77;
  }
  const char* dir = std::getenv("GNIO_TEST_DATA_DIR");
  if (!dir) {
    std::fprintf(stderr, "frag_gpu_test: GNIO_TEST_DATA_DIR is not set (tests/data)\n");
    return 1;
  }
  const std::string path = std::string(dir) + "/frag/frag.pcap";
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    std::fprintf(stderr, "frag_gpu_test: cannot open %s\n", path.c_str());
    return 1;
  }
  std::vector<uint8_t> file;
  uint8_t chunk[4096];
  for (size_t m; (m = std::fread(chunk, 1, sizeof chunk, f)) > 0;) file.insert(file.end(), chunk, chunk + m);
  std::fclose(f);
  // A little-endian microsecond pcap, as make_frag.py writes it.
  std::vector<uint32_t> offs, lens;
  for (size_t pos = 24; pos + 16 <= file.size();) {
    uint32_t caplen;
    std::memcpy(&caplen, &file[pos + 8], 4);
    if (pos + 16 + caplen > file.size()) break;
    offs.push_back(static_cast<uint32_t>(pos + 16));
    lens.push_back(caplen);
    pos += 16 + caplen;
  }
  const uint32_t n = static_cast<uint32_t>(offs.size());
  const uint32_t capacity = 64, max_datagram = 2048;
  const uint64_t timeout_ns = 1'000'000'000'000ull;
  const uint64_t bytes = frag_table_bytes(capacity, max_datagram);

  std::vector<uint64_t> host_mem(bytes / 8 + 1);
  frag_table ht{};
  if (!frag_table_init(host_mem.data(), host_mem.size() * 8, capacity, max_datagram, timeout_ns, ht)) return 1;
  std::vector<frame_result> host_res(n);
  run_out host_out{};
  run_all(ht, file.data(), offs.data(), lens.data(), n, host_res.data(), &host_out);

  // The device's table in managed memory, laid out by the host helper.
  auto* dev_mem = managed<uint8_t>(bytes);
  auto* dev_buf = managed<uint8_t>(file.size());
  auto* dev_offs = managed<uint32_t>(n);
  auto* dev_lens = managed<uint32_t>(n);
  auto* dev_res = managed<frame_result>(n);
  auto* dev_out = managed<run_out>(1);
  if (!dev_mem || !dev_buf || !dev_offs || !dev_lens || !dev_res || !dev_out) {
    std::fprintf(stderr, "frag_gpu_test: cudaMallocManaged failed\n");
    return 1;
  }
  frag_table dt{};
  if (!frag_table_init(dev_mem, bytes, capacity, max_datagram, timeout_ns, dt)) return 1;
  std::memcpy(dev_buf, file.data(), file.size());
  std::memcpy(dev_offs, offs.data(), n * sizeof(uint32_t));
  std::memcpy(dev_lens, lens.data(), n * sizeof(uint32_t));
  *dev_out = run_out{};
  run_kernel<<<1, 32>>>(dt, dev_buf, dev_offs, dev_lens, n, dev_res, dev_out);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::fprintf(stderr, "frag_gpu_test: kernel: %s\n", cudaGetErrorString(e));
    return 1;
  }

  int failures = 0;
  uint32_t complete = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const frame_result& a = host_res[i];
    const frame_result& b = dev_res[i];
    if (a.result != b.result || a.out_len != b.out_len || a.hash != b.hash) {
      std::fprintf(stderr, "frame %u: host result %u len %u hash %016llx, device %u len %u hash %016llx\n", i + 1,
                   a.result, a.out_len, static_cast<unsigned long long>(a.hash), b.result, b.out_len,
                   static_cast<unsigned long long>(b.hash));
      ++failures;
    }
    complete += b.result == static_cast<uint32_t>(frag_result::complete);
  }
  if (std::memcmp(&host_out, dev_out, sizeof host_out) != 0) {
    std::fprintf(stderr, "counters differ between host and device\n");
    ++failures;
  }
  // As frag_test finds on the host: 12 datagrams from 68 frames.
  if (n != 68 || complete != 12) {
    std::fprintf(stderr, "frag_gpu_test: %u frames, %u completed (want 68 and 12)\n", n, complete);
    ++failures;
  }
  std::printf(
      "frag_gpu_test: %u frames, %u completed, reassembled %llu, duplicates %llu, overlapping %llu, "
      "timed out %llu; host and device %s\n",
      n, complete, static_cast<unsigned long long>(dev_out->st.reassembled),
      static_cast<unsigned long long>(dev_out->st.duplicates), static_cast<unsigned long long>(dev_out->st.overlapping),
      static_cast<unsigned long long>(dev_out->st.timed_out), failures ? "DIFFER" : "agree");
  return failures ? 1 : 0;
}
