// SPDX-License-Identifier: Apache-2.0
// gnio::gpu: the per-GPU context (or the host pseudo-device) everything else hangs off.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gnio/memory.hpp"
#include "gnio/status.hpp"

namespace gnio {

enum class executor_kind : uint8_t { host, cuda };
[[nodiscard]] std::string_view to_string(executor_kind k) noexcept;

namespace detail {
struct gpu_state;
}

struct gpu_info {
  executor_kind executor = executor_kind::host;
  int ordinal = -1;    // CUDA ordinal, -1 for the host
  std::string name;    // "NVIDIA H200" or "host executor (N CPU threads)"
  std::string bus_id;  // "0000:ca:00.0", empty for the host
  int cc_major = 0, cc_minor = 0;
  int num_sms = 0;
  size_t total_mem_bytes = 0;
  bool can_map_host_memory = false;
  bool unified_addressing = false;
  // More of cudaGetDeviceProperties / cudaDeviceGetAttribute, for `gnio caps`.
  int warp_size = 0;
  int max_threads_per_block = 0;
  size_t shared_mem_per_block = 0;
  int l2_cache_bytes = 0;
  bool integrated = false;
  bool host_native_atomics = false;
  bool pageable_memory_access = false;
  bool concurrent_managed_access = false;
  bool gpudirect_rdma = false;             // cudaDevAttrGPUDirectRDMASupported
  int gpudirect_rdma_flush_writes = 0;     // cudaDevAttrGPUDirectRDMAFlushWritesOptions bitmask
  int gpudirect_rdma_writes_ordering = 0;  // cudaDevAttrGPUDirectRDMAWritesOrdering
  bool dma_buf = false;                    // cudaDevAttrDmaBufSupported
};

// CUDA driver and runtime versions (e.g. 13000 for 13.0); 0 where unknown,
// with the reason in error.
struct cuda_env {
  bool built = false;       // gnio built with CUDA
  int driver_version = 0;   // cudaDriverGetVersion: the newest CUDA the driver supports
  int runtime_version = 0;  // cudaRuntimeGetVersion: the runtime gnio links
  std::string error;
};
[[nodiscard]] cuda_env query_cuda_env();

// True when this build can launch CUDA kernels (compiled with CUDA support).
[[nodiscard]] bool built_with_cuda() noexcept;
// CUDA GPUs visible now (empty without CUDA support or without a GPU), with
// the reason in *why when there are none.
[[nodiscard]] std::vector<gpu_info> list_gpus(std::string* why = nullptr);

// Owns a context: move-only, ended by its destructor once the last object
// made from it (a port, a queue, a semaphore, a runner) is gone too.
class gpu {
 public:
  gpu() = default;
  gpu(gpu&&) noexcept = default;
  gpu& operator=(gpu&&) noexcept = default;
  gpu(const gpu&) = delete;
  gpu& operator=(const gpu&) = delete;
  ~gpu();
  // selector: "host"; "auto" (the first CUDA GPU, else the host); a CUDA
  // ordinal ("0"); or a PCIe bus id ("0000:ca:00.0" or "ca:00.0").
  [[nodiscard]] static result<gpu> open(std::string_view selector);
  // A comma-separated list of selectors ("0,1", two bus ids, "host,host"):
  // one context each, in order. invalid_value for an empty list or an empty
  // entry; otherwise the first failing entry's error, naming the entry.
  [[nodiscard]] static result<std::vector<gpu>> open_list(std::string_view selectors);

  [[nodiscard]] const gpu_info& info() const;
  [[nodiscard]] executor_kind executor() const { return info().executor; }

  // Allocates zeroed memory of the given type; a type this device cannot provide
  // returns not_supported with the reason.
  [[nodiscard]] result<mem_block> alloc(size_t bytes, mem_type type);
  [[nodiscard]] error free(mem_block& block);

  // Copies between host memory and a block of any type (a DMA for GPU memory).
  [[nodiscard]] error copy_to_host(void* host_dst, const mem_block& src, size_t offset, size_t bytes);
  [[nodiscard]] error copy_to_block(mem_block& dst, size_t offset, const void* host_src, size_t bytes);

  // Gives up this handle without ending the context: it stays, with every
  // block allocated from it, until the process exits. For memory a kernel
  // that ignored its exit flag may still use (fail closed); the handle is
  // empty afterwards. gnio::session does this for a whole run.
  void release() noexcept;
  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

  [[nodiscard]] const std::shared_ptr<detail::gpu_state>& state() const noexcept { return state_; }

 private:
  explicit gpu(std::shared_ptr<detail::gpu_state> s) : state_(std::move(s)) {}
  std::shared_ptr<detail::gpu_state> state_;
};

}  // namespace gnio
