// SPDX-License-Identifier: Apache-2.0
#include <sys/mman.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "internal.hpp"

namespace gnio {

using detail::fail;

std::string_view to_string(mem_type t) noexcept {
  switch (t) {
    case mem_type::automatic: return "auto";
    case mem_type::gpu: return "gpu";
    case mem_type::gpu_cpu: return "gpu_cpu";
    case mem_type::cpu_gpu: return "cpu_gpu";
  }
  return "?";
}

bool parse_mem_type(std::string_view text, mem_type& out) noexcept {
  for (auto t : {mem_type::automatic, mem_type::gpu, mem_type::gpu_cpu, mem_type::cpu_gpu}) {
    if (text == to_string(t)) {
      out = t;
      return true;
    }
  }
  return false;
}

std::string_view to_string(executor_kind k) noexcept { return k == executor_kind::cuda ? "cuda" : "host"; }

// built_with_cuda, list_gpus and query_cuda_env: exec/cuda/cuda_device.cpp,
// or exec/no_cuda.cpp in a build without CUDA.

namespace detail {

result<void*> map_anonymous(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED)
    return fail(status::no_memory, "mapping {} bytes of anonymous memory: {}", bytes, std::strerror(errno));
  return p;
}

void unmap_anonymous(void* p, size_t bytes) noexcept {
  if (p) (void)munmap(p, bytes);
}

namespace {

// Copies on the host are plain memcpy: done when they return.
class host_copy_queue final : public copy_queue {
 public:
  error to_exec(void* d, const void* s, size_t n) override {
    std::memcpy(d, s, n);
    return {};
  }
  error from_exec(void* d, const void* s, size_t n) override {
    std::memcpy(d, s, n);
    return {};
  }
  result<uint64_t> mark() override { return ++ticket_; }
  result<bool> done(uint64_t) override { return true; }
  error wait() override { return {}; }

 private:
  uint64_t ticket_ = 0;
};

// On the host pseudo-device every memory type is ordinary host memory: the
// executor and the backend are both CPU threads. gpu memory still has no
// host_ptr, as on a GPU, so the library reaches it only by copies there too
// and the host executor runs (and tests) the same staging paths.
class host_device final : public device_ops {
 public:
  result<mem_block> alloc(size_t bytes, mem_type type) override {
    if (bytes == 0) return fail(status::invalid_value, "alloc: zero bytes");
    size_t rounded = (bytes + 4095) & ~size_t{4095};
    void* p = std::aligned_alloc(4096, rounded);
    if (!p) return fail(status::no_memory, "host executor: could not allocate {} bytes of host memory", bytes);
    std::memset(p, 0, rounded);
    mem_block b;
    b.type = type == mem_type::automatic ? mem_type::cpu_gpu : type;
    b.exec_ptr = p;
    b.host_ptr = b.type == mem_type::gpu ? nullptr : p;
    b.bytes = bytes;
    return b;
  }
  void release(const mem_block& b) noexcept override { std::free(b.exec_ptr); }
  error copy_to_exec(void* d, const void* s, size_t n) override {
    std::memcpy(d, s, n);
    return {};
  }
  error copy_from_exec(void* d, const void* s, size_t n) override {
    std::memcpy(d, s, n);
    return {};
  }
  error zero_exec(void* d, size_t n) override {
    std::memset(d, 0, n);
    return {};
  }
  result<mem_block> alloc_staging(size_t bytes) override { return alloc(bytes, mem_type::cpu_gpu); }
  error bind_thread() override { return {}; }
  result<std::unique_ptr<copy_queue>> make_copy_queue() override {
    std::unique_ptr<copy_queue> q = std::make_unique<host_copy_queue>();
    return q;
  }
  result<mem_block> alloc_pool(size_t bytes) override {
    auto p = map_anonymous(bytes);
    if (!p) return p.err();
    mem_block b;
    b.exec_ptr = b.host_ptr = *p;
    b.bytes = bytes;
    b.type = mem_type::cpu_gpu;
    return b;
  }
  void release_pool(const mem_block& b) noexcept override { unmap_anonymous(b.host_ptr, b.bytes); }
};

bool is_bus_id(std::string_view s) {
  // [dddd:]bb:dd.f, hex digits
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  size_t colons = 0, dots = 0;
  for (char c : s) {
    if (c == ':') ++colons;
    else if (c == '.') ++dots;
    else if (!hex(c)) return false;
  }
  return (colons == 1 || colons == 2) && dots == 1;
}

}  // namespace

std::unique_ptr<device_ops> make_host_device() { return std::make_unique<host_device>(); }

void keep_until_exit(std::shared_ptr<void> state) noexcept {
  if (!state) return;
  static std::mutex mu;
  // Never destroyed on purpose: what it holds must outlive every kernel.
  static auto* kept = new std::vector<std::shared_ptr<void>>();
  std::lock_guard lk(mu);
  try {
    kept->push_back(std::move(state));
  } catch (...) {
    // No memory for one more pointer: ending the process is safe, freeing
    // memory a kernel may still write is not.
    log(log_level::error, "out of memory keeping a running kernel's memory alive; aborting");
    std::abort();
  }
}

gpu_state::~gpu_state() {
  for (auto& [id, b] : user_blocks) dev->release(b);
}

result<mem_block> gpu_state::alloc(size_t bytes, mem_type type) {
  auto r = dev->alloc(bytes, type);
  if (!r) return r;
  r->id = next_block_id.fetch_add(1);
  return r;
}

}  // namespace detail

result<gpu> gpu::open(std::string_view selector) {
  auto st = std::make_shared<detail::gpu_state>();
  std::string sel(selector);
  for (auto& c : sel) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto make_host = [&]() {
    st->dev = detail::make_host_device();
    st->info.executor = executor_kind::host;
    st->info.ordinal = -1;
    st->info.name = fmt::format("host executor ({} CPU threads)", std::thread::hardware_concurrency());
    st->info.can_map_host_memory = true;
    st->info.unified_addressing = true;
    st->info.host_native_atomics = true;
    st->info.pageable_memory_access = true;
  };
  if (sel.empty())
    return fail(status::invalid_value, "gpu: empty selector; use host, auto, a CUDA ordinal or a PCIe bus id");
  if (sel == "host" || sel == "cpu") {
    make_host();
    return gpu(std::move(st));
  }
  int ordinal = -1;
  if (sel == "auto") {
    std::string why;
    auto gpus = list_gpus(&why);
    if (gpus.empty()) {
      detail::log(log_level::info, "gpu auto: no CUDA GPU ({}); using the host executor", why);
      make_host();
      return gpu(std::move(st));
    }
    ordinal = gpus.front().ordinal;
  } else if (std::all_of(sel.begin(), sel.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    if (sel.size() > 4) return fail(status::invalid_value, "gpu: '{}' is not a valid CUDA ordinal", selector);
    ordinal = std::atoi(sel.c_str());
  } else if (detail::is_bus_id(sel)) {
#if defined(GNIO_HAVE_CUDA)
    auto o = detail::cuda_ordinal_from_bus_id(sel);
    if (!o) return o.err();
    ordinal = *o;
#else
    return fail(status::not_found, "gpu: no GPU with bus id {}: {}", selector, "gnio was built without CUDA");
#endif
  } else {
    return fail(
        status::invalid_value,
        "gpu: '{}' is not a selector; use host, auto, a CUDA ordinal (0) or a PCIe bus id (0000:ca:00.0 or ca:00.0)",
        selector);
  }
#if defined(GNIO_HAVE_CUDA)
  auto dev = detail::make_cuda_device(ordinal, &st->info);
  if (!dev) return dev.err();
  st->dev = std::move(*dev);
  return gpu(std::move(st));
#else
  return fail(status::not_found, "gpu: no CUDA GPU {}: gnio was built without CUDA; use --gpu host", ordinal);
#endif
}

result<std::vector<gpu>> gpu::open_list(std::string_view selectors) {
  std::vector<gpu> out;  // on a failure, the contexts opened so far end with it
  size_t pos = 0;
  for (;;) {
    const size_t comma = selectors.find(',', pos);
    const std::string_view sel =
        selectors.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    if (sel.empty()) {
      return fail(status::invalid_value, "gpu list '{}': entry {} is empty; give selectors separated by commas (0,1)",
                  selectors, out.size() + 1);
    }
    auto g = open(sel);
    if (!g) {
      return error(g.err().code(), fmt::format("gpu list entry {} ({}): {}", out.size() + 1, sel, g.err().message()));
    }
    out.push_back(std::move(g).value());
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

const gpu_info& gpu::info() const {
  static const gpu_info none{};
  return state_ ? state_->info : none;
}

result<mem_block> gpu::alloc(size_t bytes, mem_type type) {
  if (!state_) return fail(status::bad_state, "gpu::alloc: the gpu was destroyed or never opened");
  auto r = state_->alloc(bytes, type);
  if (!r) return r;
  std::lock_guard lk(state_->mu);
  state_->user_blocks[r->id] = *r;
  return r;
}

error gpu::free(mem_block& block) {
  if (!state_) return fail(status::bad_state, "gpu::free: the gpu was destroyed or never opened");
  std::lock_guard lk(state_->mu);
  auto it = state_->user_blocks.find(block.id);
  if (block.id == 0 || it == state_->user_blocks.end())
    return fail(status::invalid_value, "gpu::free: block was not allocated by this gpu or was already freed");
  state_->dev->release(it->second);
  state_->user_blocks.erase(it);
  block = {};
  return {};
}

error gpu::copy_to_host(void* host_dst, const mem_block& src, size_t offset, size_t bytes) {
  if (!state_) return fail(status::bad_state, "gpu::copy_to_host: the gpu was destroyed or never opened");
  if (src.empty() || offset > src.bytes || bytes > src.bytes - offset)
    return fail(status::invalid_value, "gpu::copy_to_host: range [{}, +{}) outside a block of {} bytes", offset, bytes,
                src.bytes);
  if (src.host_ptr) {
    std::memcpy(host_dst, static_cast<const uint8_t*>(src.host_ptr) + offset, bytes);
    return {};
  }
  if (auto e = state_->dev->bind_thread(); e) return e;
  return state_->dev->copy_from_exec(host_dst, static_cast<const uint8_t*>(src.exec_ptr) + offset, bytes);
}

error gpu::copy_to_block(mem_block& dst, size_t offset, const void* host_src, size_t bytes) {
  if (!state_) return fail(status::bad_state, "gpu::copy_to_block: the gpu was destroyed or never opened");
  if (dst.empty() || offset > dst.bytes || bytes > dst.bytes - offset)
    return fail(status::invalid_value, "gpu::copy_to_block: range [{}, +{}) outside a block of {} bytes", offset, bytes,
                dst.bytes);
  if (dst.host_ptr) {
    std::memcpy(static_cast<uint8_t*>(dst.host_ptr) + offset, host_src, bytes);
    return {};
  }
  if (auto e = state_->dev->bind_thread(); e) return e;
  return state_->dev->copy_to_exec(static_cast<uint8_t*>(dst.exec_ptr) + offset, host_src, bytes);
}

gpu::~gpu() = default;

void gpu::release() noexcept { detail::keep_until_exit(std::move(state_)); }

}  // namespace gnio
