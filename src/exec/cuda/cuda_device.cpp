// SPDX-License-Identifier: Apache-2.0
// The CUDA GPU behind gnio::gpu. Host code compiled by the C++ compiler,
// calling the CUDA runtime; every call is checked.
#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "internal.hpp"

namespace gnio::detail {
namespace {

error cuda_fail(cudaError_t e, std::string_view what) {
  status s = status::driver;
  switch (e) {
    case cudaErrorMemoryAllocation: s = status::no_memory; break;
    case cudaErrorInvalidValue: s = status::invalid_value; break;
    case cudaErrorInvalidDevice:
    case cudaErrorNoDevice: s = status::not_found; break;
    case cudaErrorInsufficientDriver: s = status::unsupported_version; break;
    case cudaErrorNotSupported: s = status::not_supported; break;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable: s = status::device_fatal_error; break;
    default: break;
  }
  return fail(s, "{}: CUDA error {} ({}): {}", what, static_cast<int>(e), cudaGetErrorName(e), cudaGetErrorString(e));
}

#define GNIO_CUDA_TRY(call, what)                                \
  do {                                                           \
    cudaError_t gnio_e_ = (call);                                \
    if (gnio_e_ != cudaSuccess) return cuda_fail(gnio_e_, what); \
  } while (0)

// A stream of its own and a fixed ring of events: mark() records the next
// event after everything queued so far; done() queries it. Tickets are
// polled in order, so a finished ticket means every earlier one finished.
class cuda_copy_queue final : public copy_queue {
 public:
  static constexpr size_t k_events = 64;

  cuda_copy_queue(int ordinal, cudaStream_t stream, std::vector<cudaEvent_t> events)
      : ordinal_(ordinal), stream_(stream), events_(std::move(events)) {}
  ~cuda_copy_queue() override {
    (void)cudaSetDevice(ordinal_);
    // Copies still queued read or write memory about to be freed: finish them.
    (void)cudaStreamSynchronize(stream_);
    for (auto ev : events_) (void)cudaEventDestroy(ev);
    (void)cudaStreamDestroy(stream_);
  }

  error to_exec(void* d, const void* s, size_t n) override {
    GNIO_CUDA_TRY(cudaMemcpyAsync(d, s, n, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync to GPU");
    return {};
  }
  error from_exec(void* d, const void* s, size_t n) override {
    GNIO_CUDA_TRY(cudaMemcpyAsync(d, s, n, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync from GPU");
    return {};
  }
  result<uint64_t> mark() override {
    if (next_ - finished_ >= k_events) {
      // Every event is in use: the oldest must finish before it is recorded again.
      GNIO_CUDA_TRY(cudaEventSynchronize(events_[(finished_ + 1) % k_events]), "cudaEventSynchronize");
      ++finished_;
    }
    ++next_;
    GNIO_CUDA_TRY(cudaEventRecord(events_[next_ % k_events], stream_), "cudaEventRecord");
    return next_;
  }
  result<bool> done(uint64_t ticket) override {
    if (ticket <= finished_) return true;
    const cudaError_t e = cudaEventQuery(events_[ticket % k_events]);
    if (e == cudaErrorNotReady) return false;
    if (e != cudaSuccess) return cuda_fail(e, "cudaEventQuery");
    finished_ = ticket;
    return true;
  }
  error wait() override {
    GNIO_CUDA_TRY(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    finished_ = next_;
    return {};
  }

 private:
  int ordinal_;
  cudaStream_t stream_;
  std::vector<cudaEvent_t> events_;
  uint64_t next_ = 0;      // last ticket handed out
  uint64_t finished_ = 0;  // every ticket up to this one is known to be done
};

class cuda_device final : public device_ops {
 public:
  explicit cuda_device(int ordinal) : ordinal_(ordinal) {}

  result<mem_block> alloc(size_t bytes, mem_type type) override {
    if (bytes == 0) return fail(status::invalid_value, "alloc: zero bytes");
    GNIO_CUDA_TRY(cudaSetDevice(ordinal_), "cudaSetDevice");
    mem_block b;
    b.bytes = bytes;
    b.type = type == mem_type::automatic ? mem_type::cpu_gpu : type;
    switch (b.type) {
      case mem_type::gpu: {
        GNIO_CUDA_TRY(cudaMalloc(&b.exec_ptr, bytes), "cudaMalloc");
        if (auto e = cudaMemset(b.exec_ptr, 0, bytes); e != cudaSuccess) {
          (void)cudaFree(b.exec_ptr);
          return cuda_fail(e, "cudaMemset");
        }
        return b;
      }
      case mem_type::cpu_gpu: {
        GNIO_CUDA_TRY(cudaHostAlloc(&b.host_ptr, bytes, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
        std::memset(b.host_ptr, 0, bytes);
        if (auto e = cudaHostGetDevicePointer(&b.exec_ptr, b.host_ptr, 0); e != cudaSuccess) {
          (void)cudaFreeHost(b.host_ptr);
          return cuda_fail(e, "cudaHostGetDevicePointer");
        }
        return b;
      }
      case mem_type::gpu_cpu:
        return fail(
            status::not_supported,
            "gpu_cpu memory needs GPU memory mapped for the CPU (GDRCopy or a CPU-mappable BAR), which the CUDA "
            "runtime alone does not provide; use gpu (staged copies) or cpu_gpu (mapped pinned host memory)");
      case mem_type::automatic: break;
    }
    return fail(status::invalid_value, "alloc: unknown memory type");
  }

  void release(const mem_block& b) noexcept override {
    (void)cudaSetDevice(ordinal_);
    // Errors on free cannot be acted on; they are logged.
    cudaError_t e = b.host_ptr ? cudaFreeHost(b.host_ptr) : cudaFree(b.exec_ptr);
    if (e != cudaSuccess)
      log(log_level::warn, "freeing {} bytes of {} memory: {}", b.bytes, to_string(b.type), cudaGetErrorString(e));
  }

  error copy_to_exec(void* d, const void* s, size_t n) override {
    GNIO_CUDA_TRY(cudaMemcpy(d, s, n, cudaMemcpyHostToDevice), "cudaMemcpy to GPU");
    return {};
  }
  error copy_from_exec(void* d, const void* s, size_t n) override {
    GNIO_CUDA_TRY(cudaMemcpy(d, s, n, cudaMemcpyDeviceToHost), "cudaMemcpy from GPU");
    return {};
  }
  error zero_exec(void* d, size_t n) override {
    GNIO_CUDA_TRY(cudaMemset(d, 0, n), "cudaMemset");
    return {};
  }
  result<mem_block> alloc_staging(size_t bytes) override { return alloc(bytes, mem_type::cpu_gpu); }
  error bind_thread() override {
    GNIO_CUDA_TRY(cudaSetDevice(ordinal_), "cudaSetDevice");
    return {};
  }

  result<std::unique_ptr<copy_queue>> make_copy_queue() override {
    GNIO_CUDA_TRY(cudaSetDevice(ordinal_), "cudaSetDevice");
    cudaStream_t stream = nullptr;
    GNIO_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    std::vector<cudaEvent_t> events;
    for (size_t i = 0; i < cuda_copy_queue::k_events; ++i) {
      cudaEvent_t ev = nullptr;
      if (cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming); e != cudaSuccess) {
        for (auto x : events) (void)cudaEventDestroy(x);
        (void)cudaStreamDestroy(stream);
        return cuda_fail(e, "cudaEventCreateWithFlags");
      }
      events.push_back(ev);
    }
    std::unique_ptr<copy_queue> q = std::make_unique<cuda_copy_queue>(ordinal_, stream, std::move(events));
    return q;
  }

  result<mem_block> alloc_pool(size_t bytes) override {
    GNIO_CUDA_TRY(cudaSetDevice(ordinal_), "cudaSetDevice");
    auto p = map_anonymous(bytes);
    if (!p) return p.err();
    // Portable: pinned for every context, so queues on other GPUs reach it
    // (at the same address under unified addressing).
    if (cudaError_t e = cudaHostRegister(*p, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
        e != cudaSuccess) {
      unmap_anonymous(*p, bytes);
      return cuda_fail(e, "cudaHostRegister (RX pool)");
    }
    mem_block b;
    b.host_ptr = *p;
    b.bytes = bytes;
    b.type = mem_type::cpu_gpu;
    if (cudaError_t e = cudaHostGetDevicePointer(&b.exec_ptr, *p, 0); e != cudaSuccess) {
      (void)cudaHostUnregister(*p);
      unmap_anonymous(*p, bytes);
      return cuda_fail(e, "cudaHostGetDevicePointer (RX pool)");
    }
    return b;
  }
  void release_pool(const mem_block& b) noexcept override {
    (void)cudaSetDevice(ordinal_);
    if (cudaError_t e = cudaHostUnregister(b.host_ptr); e != cudaSuccess)
      log(log_level::warn, "unregistering the RX pool: {}", cudaGetErrorString(e));
    unmap_anonymous(b.host_ptr, b.bytes);
  }

 private:
  int ordinal_;
};

error fill_info(int ordinal, gpu_info* info) {
  cudaDeviceProp p{};
  GNIO_CUDA_TRY(cudaGetDeviceProperties(&p, ordinal), "cudaGetDeviceProperties");
  info->executor = executor_kind::cuda;
  info->ordinal = ordinal;
  info->name = p.name;
  char bus[32] = {};
  GNIO_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal), "cudaDeviceGetPCIBusId");
  info->bus_id = bus;
  for (auto& c : info->bus_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  info->cc_major = p.major;
  info->cc_minor = p.minor;
  info->num_sms = p.multiProcessorCount;
  info->total_mem_bytes = p.totalGlobalMem;
  int v = 0;
  GNIO_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrCanMapHostMemory, ordinal), "cudaDeviceGetAttribute");
  info->can_map_host_memory = v != 0;
  GNIO_CUDA_TRY(cudaDeviceGetAttribute(&v, cudaDevAttrUnifiedAddressing, ordinal), "cudaDeviceGetAttribute");
  info->unified_addressing = v != 0;
  info->warp_size = p.warpSize;
  info->max_threads_per_block = p.maxThreadsPerBlock;
  info->shared_mem_per_block = p.sharedMemPerBlock;
  info->l2_cache_bytes = p.l2CacheSize;
  info->integrated = p.integrated != 0;
  auto attr = [&](cudaDeviceAttr a, int* out) -> error {
    GNIO_CUDA_TRY(cudaDeviceGetAttribute(out, a, ordinal), "cudaDeviceGetAttribute");
    return {};
  };
  if (auto e = attr(cudaDevAttrHostNativeAtomicSupported, &v); e) return e;
  info->host_native_atomics = v != 0;
  if (auto e = attr(cudaDevAttrPageableMemoryAccess, &v); e) return e;
  info->pageable_memory_access = v != 0;
  if (auto e = attr(cudaDevAttrConcurrentManagedAccess, &v); e) return e;
  info->concurrent_managed_access = v != 0;
  if (auto e = attr(cudaDevAttrGPUDirectRDMASupported, &v); e) return e;
  info->gpudirect_rdma = v != 0;
  if (auto e = attr(cudaDevAttrGPUDirectRDMAFlushWritesOptions, &info->gpudirect_rdma_flush_writes); e) return e;
  if (auto e = attr(cudaDevAttrGPUDirectRDMAWritesOrdering, &info->gpudirect_rdma_writes_ordering); e) return e;
  // dma-buf support is a driver-API attribute only; reach cuDeviceGetAttribute
  // through the runtime's entry-point lookup rather than linking libcuda.
  using get_attr_fn = int (*)(int*, int, int);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
      q == cudaDriverEntryPointSuccess && fn) {
    int dmabuf = 0;
    constexpr int cu_device_attribute_dma_buf_supported = 124;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED
    // cuDeviceGetAttribute takes a CUdevice, which equals the runtime ordinal here.
    if (reinterpret_cast<get_attr_fn>(fn)(&dmabuf, cu_device_attribute_dma_buf_supported, ordinal) == 0)
      info->dma_buf = dmabuf != 0;
  } else {
    (void)cudaGetLastError();
  }
  return {};
}

}  // namespace

cuda_env cuda_query_env() {
  cuda_env env;
  env.built = true;
  if (cudaError_t e = cudaDriverGetVersion(&env.driver_version); e != cudaSuccess)
    env.error = fmt::format("cudaDriverGetVersion: {}", cudaGetErrorString(e));
  if (cudaError_t e = cudaRuntimeGetVersion(&env.runtime_version); e != cudaSuccess)
    env.error = fmt::format("cudaRuntimeGetVersion: {}", cudaGetErrorString(e));
  return env;
}

std::vector<gpu_info> cuda_list(std::string* why) {
  std::vector<gpu_info> out;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = fmt::format("cudaGetDeviceCount: {}", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return out;
  }
  if (n == 0 && why) *why = "cudaGetDeviceCount found no CUDA device";
  for (int i = 0; i < n; ++i) {
    gpu_info info;
    if (auto err = fill_info(i, &info); err) {
      if (why) *why = err.what();
      continue;
    }
    out.push_back(info);
  }
  return out;
}

result<int> cuda_ordinal_from_bus_id(const std::string& bus_id) {
  std::string why;
  auto gpus = cuda_list(&why);
  std::string want = bus_id;
  if (std::count(want.begin(), want.end(), ':') == 1) want = "0000:" + want;
  std::string seen;
  for (const auto& g : gpus) {
    if (g.bus_id == want) return g.ordinal;
    seen += (seen.empty() ? "" : ", ") + g.bus_id;
  }
  if (gpus.empty()) return fail(status::not_found, "gpu: no GPU with bus id {}: {}", bus_id, why);
  return fail(status::not_found, "gpu: no GPU with bus id {} (present: {})", bus_id, seen);
}

result<std::unique_ptr<device_ops>> make_cuda_device(int ordinal, gpu_info* info) {
  std::string why;
  auto gpus = cuda_list(&why);
  if (ordinal < 0 || ordinal >= static_cast<int>(gpus.size())) {
    if (gpus.empty()) return fail(status::not_found, "gpu {}: no CUDA GPU present ({})", ordinal, why);
    return fail(status::not_found, "gpu {}: only {} CUDA GPU(s) present (ordinals 0..{})", ordinal, gpus.size(),
                gpus.size() - 1);
  }
  if (auto e = fill_info(ordinal, info); e) return e;
  if (!info->can_map_host_memory)
    return fail(status::not_supported, "gpu {} ({}) cannot map host memory, which GPU-visible queues need", ordinal,
                info->name);
  GNIO_CUDA_TRY(cudaSetDevice(ordinal), "cudaSetDevice");
  GNIO_CUDA_TRY(cudaFree(nullptr), "creating the CUDA context");
  std::unique_ptr<device_ops> d = std::make_unique<cuda_device>(ordinal);
  return d;
}

}  // namespace gnio::detail

namespace gnio {

bool built_with_cuda() noexcept { return true; }

std::vector<gpu_info> list_gpus(std::string* why) { return detail::cuda_list(why); }

cuda_env query_cuda_env() { return detail::cuda_query_env(); }

}  // namespace gnio
