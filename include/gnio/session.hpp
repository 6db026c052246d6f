// SPDX-License-Identifier: Apache-2.0
// gnio::session: one port and the kernels on its GPUs, owned together.
//
// A program configures a port (queues, steering) and hands it to a session
// with the GPUs its kernels run on. The session owns, per GPU, a kernel
// runner, the semaphores and the application memory the kernels use, and
// runs the lifecycle: start (the port, then a runner per GPU), launch (the
// program's body on a runner), wait or stop, account, and teardown in
// reverse. When a stop times out the session keeps everything a kernel may
// touch until the process exits, as a whole (fail closed); the program's
// code needs no leak of its own.
//
//   auto s = gnio::session::create(std::move(gpus), std::move(port)).value();
//   auto tot = s.alloc<totals>(0, queues, gnio::mem_type::gpu).value();
//   if (auto e = s.start()) ...
//   if (auto e = my_launch(s.runner(0), dims, body)) ...   // gnio::launch in a .cu file
//   while (s.wait(50ms).code() == gnio::status::time_out) { if (stop_requested) { (void)s.stop(5s); break; } }
//   auto counts = s.read(0, tot).value();
//   gnio::accounting a = s.account(processed_per_queue);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "gnio/gpu.hpp"
#include "gnio/kernel.hpp"
#include "gnio/port.hpp"
#include "gnio/semaphore.hpp"

namespace gnio {

// Where every frame a port received went, for one RX queue or in total:
//   received = processed + missed + unsteered + pending
// received: frames steered to the queue (in total: the frames the port's
// backend produced); processed: frames the kernels say they handled;
// missed: dropped on a full ring; unsteered: frames with no queue to go to
// (in total only); pending: delivered to the ring but not processed when the
// kernel returned. unaccounted is the difference of the two sides: 0 in a
// run where nothing was lost unseen.
struct queue_accounting {
  uint64_t received = 0;
  uint64_t processed = 0;
  uint64_t missed = 0;
  uint64_t unsteered = 0;
  uint64_t pending = 0;
  int64_t unaccounted = 0;
};

struct accounting {
  std::vector<queue_accounting> queues;  // by the port's queue id
  queue_accounting total;
  [[nodiscard]] bool exact() const noexcept;  // nothing unaccounted, per queue and in total
};

// The identity from a port's counters and what the kernels processed per RX
// queue (processed[i] for queue i; missing entries count as 0).
[[nodiscard]] accounting account(const port_stats& st, std::span<const uint64_t> processed);

namespace detail {
struct session_state;
}

// Memory a session allocated for the application: n objects of T, at
// exec (the kernel's address) and host (the CPU's, null when the memory is
// not host-visible; read it with session::read).
template <class T>
struct session_array {
  T* exec = nullptr;
  T* host = nullptr;
  size_t size = 0;
  size_t gpu = 0;   // the session's GPU index
  mem_block block;  // the allocation, owned by the session
};

class session {
 public:
  session() = default;
  session(session&&) noexcept;
  session& operator=(session&&) noexcept;
  session(const session&) = delete;
  session& operator=(const session&) = delete;
  // Tears down in reverse: runners, semaphores, application memory, the
  // port's queues and the port, then the contexts. A session whose kernel
  // still runs (a stop timed out) is kept whole until the process exits.
  ~session();

  // gpus: the contexts the kernels run on (the port was opened on one of
  // them); port: configured (queues created), not yet started.
  // invalid_value for no GPUs or a port without RX or TX queues.
  [[nodiscard]] static result<session> create(std::vector<gpu> gpus, port p);

  [[nodiscard]] size_t num_gpus() const noexcept;
  [[nodiscard]] gpu& gpu_at(size_t i);
  [[nodiscard]] port& get_port();
  [[nodiscard]] const port& get_port() const;

  // Application memory on GPU i, zeroed, freed with the session.
  [[nodiscard]] result<mem_block> alloc_bytes(size_t gpu, size_t bytes, mem_type type);
  template <class T>
  [[nodiscard]] result<session_array<T>> alloc(size_t gpu, size_t n, mem_type type) {
    static_assert(std::is_trivially_copyable_v<T>, "session memory is copied between host and executor");
    auto b = alloc_bytes(gpu, sizeof(T) * n, type);
    if (!b) return b.err();
    session_array<T> a;
    a.exec = static_cast<T*>(b->exec_ptr);
    a.host = static_cast<T*>(b->host_ptr);
    a.size = n;
    a.gpu = gpu;
    a.block = *b;
    return a;
  }
  // A copy of the array on the host (a DMA for GPU memory).
  template <class T>
  [[nodiscard]] result<std::vector<T>> read(const session_array<T>& a) {
    std::vector<T> v(a.size);
    if (a.size == 0) return v;
    if (auto e = read_bytes(a.gpu, a.block, v.data(), sizeof(T) * a.size); e) return e;
    return v;
  }
  [[nodiscard]] error read_bytes(size_t gpu, const mem_block& b, void* dst, size_t bytes);
  // Overwrites the array's first src.size() objects from the host.
  template <class T>
  [[nodiscard]] error write(session_array<T>& a, std::span<const T> src) {
    if (src.size() > a.size) return error(status::invalid_value, "session::write: more objects than the array holds");
    return write_bytes(a.gpu, a.block, src.data(), sizeof(T) * src.size());
  }
  [[nodiscard]] error write_bytes(size_t gpu, mem_block& b, const void* src, size_t bytes);

  // A GPU -> CPU semaphore on GPU i, owned by the session (kept while a
  // kernel may write it).
  [[nodiscard]] result<semaphore*> add_semaphore(size_t gpu, uint32_t num_items, uint32_t custom_bytes);

  // Starts the port, then creates a runner per GPU for it.
  [[nodiscard]] error start();
  // The runner of GPU i (after start): launch on it with gnio::launch.
  [[nodiscard]] kernel_runner& runner(size_t gpu);
  [[nodiscard]] bool running() const;

  // Waits until every kernel returned by itself. time_out when one still
  // runs at the deadline; the first kernel error otherwise.
  [[nodiscard]] error wait(std::chrono::nanoseconds timeout);
  // Sets every runner's exit flag and waits for all of them until the
  // deadline. On time_out the session is parked: no memory a kernel may
  // touch is freed, now or by the destructor, and the port keeps running (it
  // cannot stop under a kernel). Otherwise the first kernel error, if any.
  [[nodiscard]] error stop(std::chrono::nanoseconds deadline);
  // Stops the port once the kernels have returned (wait or stop): its
  // engine's last frames are counted, and its own error (e.g. a TX capture
  // that could not be written) is returned; the counters stay readable.
  // bad_state while a kernel runs. The destructor does it when not called.
  [[nodiscard]] error stop_port();
  [[nodiscard]] bool parked() const noexcept;

  [[nodiscard]] port_stats stats() const;
  // The identity over the port's counters: exact once the port stopped
  // (stop_port); while its engine runs, the counters move between reads.
  [[nodiscard]] accounting account(std::span<const uint64_t> processed) const;

  [[nodiscard]] bool valid() const noexcept { return state_ != nullptr; }

 private:
  explicit session(std::unique_ptr<detail::session_state> s);
  std::unique_ptr<detail::session_state> state_;
};

}  // namespace gnio
