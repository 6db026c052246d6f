// SPDX-License-Identifier: Apache-2.0
// Types shared by capacity.cpp (host side) and capacity_launch.cpp (the
// kernels, compiled by nvcc where CUDA is built).
#pragma once

#include <cstdint>
#include <string>

#include <gnio/device/ring.hpp>
#include <gnio/kernel.hpp>

#include "flow_count.hpp"
#include "pp.hpp"

// A frame the completions refer to.
struct frame_ref {
  uint32_t off;  // in the frame area
  uint32_t len;
  uint32_t hash;
  uint16_t cls;
  uint16_t flags;
};

// The producer's side of one ring (executor or host addresses).
struct ring_prod {
  gnio::device::rx_cqe* cq;
  const uint64_t* cons;
  uint32_t* eos;
  uint32_t num_descs;
  uint32_t log2;
};

gnio::error launch_flow_count(gnio::kernel_runner& r, const gnio::launch_dims& d, const flow_count::body& b);
gnio::error launch_pp(gnio::kernel_runner& r, const gnio::launch_dims& d, const gnio::pp::body& b);

// The GPU producer: one warp per ring writes `count` completions by
// reference to the frames, then ends the stream.
struct gpu_producer;
// Loads the producer kernel (before any persistent kernel spins) and copies
// its tables to the GPU; null with *why set when CUDA is not built or a call
// failed.
gpu_producer* producer_prepare(const ring_prod* rings, uint32_t nrings, const frame_ref* frames, uint32_t nframes,
                               std::string* why);
bool producer_start(gpu_producer* p, uint64_t count, std::string* why);
void producer_free(gpu_producer* p);

// Host-to-device copy bandwidth from pinned memory (cudaMemcpyAsync of
// `bytes`, `reps` times, timed by events): the PCIe ceiling a receive path
// from host memory is measured against. gbps is 0 with why set on failure.
struct h2d_result {
  double gbps = 0;
  std::string why;
};
h2d_result h2d_bandwidth(int ordinal, size_t bytes, int reps);
