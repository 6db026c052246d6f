// SPDX-License-Identifier: Apache-2.0
#include "gnio/caps.hpp"

#include <fmt/format.h>

namespace gnio {

std::vector<feature_verdict> evaluate_caps(const port_caps& port, std::string_view backend, const gpu_info& dev,
                                           bool cuda_built) {
  std::vector<feature_verdict> out;
  auto add = [&](cap_feature feature, std::string why_not) {
    feature_verdict v;
    v.feature = feature;
    if (!why_not.empty()) {
      v.code = status::not_supported;
      v.reason = std::move(why_not);
    }
    out.push_back(std::move(v));
  };
  const bool cuda = dev.executor == executor_kind::cuda;
  const int cc = dev.cc_major * 10 + dev.cc_minor;

  // The executor itself: everything below depends on it.
  std::string exec_no;
  if (cuda && !cuda_built) exec_no = "gnio was built without CUDA, so it cannot launch kernels on this GPU";
  else if (cuda && cc < min_compute_capability)
    exec_no = fmt::format("{} has compute capability {}.{}; this build's kernels need {}.{} or newer", dev.name,
                          dev.cc_major, dev.cc_minor, min_compute_capability / 10, min_compute_capability % 10);
  else if (cuda && !dev.can_map_host_memory)
    exec_no =
        fmt::format("{} cannot map pinned host memory, where gnio keeps completion rings and doorbells", dev.name);
  add(cap_feature::kernels, exec_no);

  auto with_exec = [&](std::string why) { return exec_no.empty() ? why : exec_no; };
  const std::string no_rx = port.rx ? "" : fmt::format("backend {} cannot receive", backend);
  const std::string no_tx = port.tx ? "" : fmt::format("backend {} cannot transmit", backend);
  add(cap_feature::rx, with_exec(no_rx));
  add(cap_feature::tx, with_exec(no_tx));
  for (cap_feature f : {cap_feature::recv_thread, cap_feature::recv_warp, cap_feature::recv_block}) {
    std::string why = no_rx;
    if (why.empty() && cuda && f == cap_feature::recv_block && dev.shared_mem_per_block > 0 &&
        dev.shared_mem_per_block < 1024)
      why = "block-scope recv needs 1 KiB of shared memory per block";
    add(f, with_exec(why));
  }
  for (cap_feature f : {cap_feature::send_thread, cap_feature::send_warp, cap_feature::send_block})
    add(f, with_exec(no_tx));
  // Timed TX (device::tx_prepare_at): every port that sends honours the time,
  // by holding the frame or by writing it as the frame's timestamp.
  add(cap_feature::tx_time, no_tx);

  // Memory types for packet buffers.
  add(cap_feature::mem_cpu_gpu, cuda && !dev.can_map_host_memory ? "the GPU cannot map pinned host memory" : "");
  add(cap_feature::mem_gpu, with_exec(""));
  add(cap_feature::mem_gpu_cpu,
      cuda ? "GPU memory mapped for the CPU needs GDRCopy or a CPU-mappable BAR, which the CUDA runtime "
             "alone does not provide; use gpu (staged copies) or cpu_gpu"
           : "");

  add(cap_feature::rx_timestamps,
      !port.rx ? no_rx
      : port.rx_timestamps
          ? ""
          : fmt::format("backend {} has no source timestamps; gnio stamps frames when they arrive", backend));
  add(cap_feature::gpudirect_rdma,
      !cuda ? "the host executor has no GPU"
      : dev.gpudirect_rdma
          ? ""
          : fmt::format("{} reports no GPUDirect RDMA support (cudaDevAttrGPUDirectRDMASupported = 0)", dev.name));
  return out;
}

error check_receive_kernels(const port_caps& port, std::string_view backend, const gpu_info& dev, bool cuda_built) {
  for (const auto& v : evaluate_caps(port, backend, dev, cuda_built))
    if ((v.feature == cap_feature::kernels || v.feature == cap_feature::recv_block) && v.code != status::success)
      return error(v.code, v.reason);
  return {};
}

}  // namespace gnio
