// SPDX-License-Identifier: Apache-2.0
// The kernels of bench/capacity: the consumers (the flow_count and gnio pp
// bodies, started through gnio::launch) and the GPU producer. Compiled by
// nvcc when CUDA is built, by the C++ compiler otherwise (host executor only,
// no GPU producer).
#include <gnio/launch.hpp>

#include "capacity.hpp"
#include "pp_device.hpp"

#if defined(__CUDACC__)
#include <cuda_runtime_api.h>
#endif

gnio::error launch_flow_count(gnio::kernel_runner& r, const gnio::launch_dims& d, const flow_count::body& b) {
  return gnio::launch(r, d, b);
}

gnio::error launch_pp(gnio::kernel_runner& r, const gnio::launch_dims& d, const gnio::pp::body& b) {
  return gnio::launch(r, d, b);
}

#if defined(__CUDACC__)

namespace {

// One warp per ring, as a NIC that costs nothing per frame: entry slot s
// always names frame (s + skew) % nframes, so the fields are written once, on
// the first lap, and each later lap only flips owner words. Lane 0 waits for
// room; each lane owns one entry of 32.
__global__ void produce(const ring_prod* rings, uint64_t count, const frame_ref* frames, uint32_t nframes) {
  if (threadIdx.x >= 32) return;
  const ring_prod r = rings[blockIdx.x];
  const uint32_t lane = threadIdx.x;
  uint64_t cons = 0;
  const uint64_t skew = uint64_t{blockIdx.x} * 977u;  // rings do not walk the frames in step
  for (uint64_t base = 0; base < count; base += 32) {
    if (lane == 0) {
      // Pairs with the consumer's release store of its index at the start of
      // recv: the entries below it were read.
      while (base + 32 > cons + r.num_descs)
        cons = gnio::device::sys_atomic_ref<const uint64_t>(*r.cons).load(cuda::std::memory_order_acquire);
    }
    cons = __shfl_sync(0xffffffffu, cons, 0);
    const uint64_t i = base + lane;
    if (i < count) {
      gnio::device::rx_cqe& c = r.cq[i & (r.num_descs - 1)];
      if (i < r.num_descs) {
        const frame_ref& f = frames[((i & (r.num_descs - 1)) + skew) % nframes];
        c.len = f.len;
        c.wire_len = f.len;
        c.ts_ns = 0;
        c.buf = f.off;
        c.rss_hash = f.hash;
        c.cls = f.cls;
        c.flags = f.flags;
        // Pairs with the acquire fence in device::detail::poll(): the entry is
        // written before its owner flips. Later laps leave the fields as they
        // are, so their owner stores need no fence.
        cuda::atomic_thread_fence(cuda::std::memory_order_release, cuda::thread_scope_system);
      }
      gnio::device::sys_atomic_ref<uint32_t>(c.owner).store(gnio::device::rx_phase(i, r.log2),
                                                            cuda::std::memory_order_relaxed);
    }
  }
  __syncwarp();
  if (lane == 0) {
    // Pairs with the acquire load in device::detail::eos_set(); the warp
    // barrier above put every lane's owner store before it.
    gnio::device::sys_atomic_ref<uint32_t>(*r.eos).store(1u, cuda::std::memory_order_release);
  }
}

}  // namespace

struct gpu_producer {
  ring_prod* rings = nullptr;
  frame_ref* frames = nullptr;
  uint32_t nrings = 0, nframes = 0;
  cudaStream_t stream = nullptr;
};

gpu_producer* producer_prepare(const ring_prod* rings, uint32_t nrings, const frame_ref* frames, uint32_t nframes,
                               std::string* why) {
  auto* p = new gpu_producer{nullptr, nullptr, nrings, nframes, nullptr};
  cudaFuncAttributes fa{};
  cudaError_t e;
  if ((e = cudaFuncGetAttributes(&fa, produce)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking)) != cudaSuccess ||
      (e = cudaMalloc(&p->rings, sizeof(ring_prod) * nrings)) != cudaSuccess ||
      (e = cudaMemcpy(p->rings, rings, sizeof(ring_prod) * nrings, cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMalloc(&p->frames, sizeof(frame_ref) * nframes)) != cudaSuccess ||
      (e = cudaMemcpy(p->frames, frames, sizeof(frame_ref) * nframes, cudaMemcpyHostToDevice)) != cudaSuccess) {
    *why = cudaGetErrorString(e);
    producer_free(p);
    return nullptr;
  }
  return p;
}

bool producer_start(gpu_producer* p, uint64_t count, std::string* why) {
  produce<<<p->nrings, 32, 0, p->stream>>>(p->rings, count, p->frames, p->nframes);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    *why = cudaGetErrorString(e);
    return false;
  }
  return true;
}

void producer_free(gpu_producer* p) {
  if (!p) return;
  if (p->stream) (void)cudaStreamSynchronize(p->stream);  // the producer may still read its tables
  if (p->rings) (void)cudaFree(p->rings);
  if (p->frames) (void)cudaFree(p->frames);
  if (p->stream) (void)cudaStreamDestroy(p->stream);
  delete p;
}

h2d_result h2d_bandwidth(int ordinal, size_t bytes, int reps) {
  h2d_result r;
  void* host = nullptr;
  void* dev = nullptr;
  cudaStream_t st = nullptr;
  cudaEvent_t ev[2] = {nullptr, nullptr};
  cudaError_t e;
  float ms = 0;
  if ((e = cudaSetDevice(ordinal)) != cudaSuccess || (e = cudaMallocHost(&host, bytes)) != cudaSuccess ||
      (e = cudaMalloc(&dev, bytes)) != cudaSuccess ||
      (e = cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking)) != cudaSuccess ||
      (e = cudaEventCreate(&ev[0])) != cudaSuccess || (e = cudaEventCreate(&ev[1])) != cudaSuccess ||
      (e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st)) != cudaSuccess ||  // warm-up
      (e = cudaEventRecord(ev[0], st)) != cudaSuccess) {
    r.why = cudaGetErrorString(e);
  } else {
    for (int i = 0; i < reps && e == cudaSuccess; ++i)
      e = cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, st);
    if (e == cudaSuccess && (e = cudaEventRecord(ev[1], st)) == cudaSuccess &&
        (e = cudaEventSynchronize(ev[1])) == cudaSuccess &&
        (e = cudaEventElapsedTime(&ms, ev[0], ev[1])) == cudaSuccess)
      r.gbps = ms > 0 ? double(bytes) * reps * 8 / (ms * 1e-3) / 1e9 : 0;
    else r.why = cudaGetErrorString(e);
  }
  for (cudaEvent_t x : ev)
    if (x) (void)cudaEventDestroy(x);
  if (st) (void)cudaStreamDestroy(st);
  if (dev) (void)cudaFree(dev);
  if (host) (void)cudaFreeHost(host);
  return r;
}

#else

struct gpu_producer {};

gpu_producer* producer_prepare(const ring_prod*, uint32_t, const frame_ref*, uint32_t, std::string* why) {
  *why = "this build has no CUDA: the GPU producer needs it";
  return nullptr;
}
bool producer_start(gpu_producer*, uint64_t, std::string* why) {
  *why = "this build has no CUDA";
  return false;
}
void producer_free(gpu_producer*) {}

h2d_result h2d_bandwidth(int, size_t, int) { return {0, "this build has no CUDA"}; }

#endif
