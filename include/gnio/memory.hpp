// SPDX-License-Identifier: Apache-2.0
// Memory a persistent kernel and a backend can both reach.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gnio {

// Where memory lives and who can touch it, as in DOCA GPUNetIO.
enum class mem_type : uint8_t {
  automatic,  // let gnio choose: cpu_gpu on a CUDA GPU, host memory on the host executor
  gpu,        // GPU memory; the CPU reaches it only by copies (the backend stages frames into it)
  gpu_cpu,    // GPU memory the CPU can also map (needs GDRCopy or a CPU-mappable BAR)
  cpu_gpu,    // pinned host memory mapped into the GPU's address space
};

[[nodiscard]] std::string_view to_string(mem_type t) noexcept;
[[nodiscard]] bool parse_mem_type(std::string_view text, mem_type& out) noexcept;

// One allocation. exec_ptr is the address kernels use (a device pointer on a
// CUDA GPU, a host pointer on the host executor); host_ptr is the CPU's
// address of the same bytes, or null when the CPU cannot map them.
struct mem_block {
  void* exec_ptr = nullptr;
  void* host_ptr = nullptr;
  size_t bytes = 0;
  mem_type type = mem_type::automatic;
  uint64_t id = 0;  // unique per allocation, 0 = none

  [[nodiscard]] bool empty() const noexcept { return exec_ptr == nullptr; }
};

}  // namespace gnio
