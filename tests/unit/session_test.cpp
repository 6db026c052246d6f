// SPDX-License-Identifier: Apache-2.0
// gnio::session on the host executor: a run from start to accounting, a stop
// of an endless source, and a kernel that ignores its exit flag, whose
// session is kept whole (the sanitizer builds show nothing freed early and
// nothing leaked).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <type_traits>

#include <gnio/device/rx.hpp>
#include <gnio/launch.hpp>
#include <gnio/session.hpp>

#include "support/process.hpp"

using namespace std::chrono_literals;

// Every handle owns what it names: none can be copied, all can be moved.
static_assert(!std::is_copy_constructible_v<gnio::gpu> && !std::is_copy_assignable_v<gnio::gpu>);
static_assert(!std::is_copy_constructible_v<gnio::port> && !std::is_copy_assignable_v<gnio::port>);
static_assert(!std::is_copy_constructible_v<gnio::semaphore> && !std::is_copy_assignable_v<gnio::semaphore>);
static_assert(!std::is_copy_constructible_v<gnio::kernel_runner> && !std::is_copy_assignable_v<gnio::kernel_runner>);
static_assert(!std::is_copy_constructible_v<gnio::session> && !std::is_copy_assignable_v<gnio::session>);
static_assert(std::is_nothrow_move_constructible_v<gnio::gpu> && std::is_nothrow_move_constructible_v<gnio::port> &&
              std::is_nothrow_move_constructible_v<gnio::semaphore> &&
              std::is_nothrow_move_constructible_v<gnio::kernel_runner> &&
              std::is_nothrow_move_constructible_v<gnio::session>);

namespace {

// Counts the frames of one RX queue per block until the stream ends or the exit flag.
struct count_body {
  gnio::device::rxq q[4];
  uint64_t* processed;  // one per block

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx& ctx) const {
    using namespace gnio::device;
    const rxq& rq = q[ctx.block];
    uint64_t n = 0;
    for (;;) {
      if (should_exit<scope::block>(ctx)) break;
      uint64_t first = 0;
      uint32_t num = 0;
      if (recv<scope::block>(ctx, rq, 64, 100'000, &first, &num) == gnio::status::shutdown) break;
      n += num;
    }
    release_all(rq);
    processed[ctx.block] = n;  // read by the host after the runner returned (its wait orders it)
  }
};

// Writes a heartbeat until the test lets it go, whatever the exit flag says.
struct stubborn_body {
  uint64_t* heartbeat;     // session memory
  const uint32_t* let_go;  // the test's

  GNIO_HOST_DEVICE void operator()(const gnio::device::exec_ctx&) const {
    // Pairs with the test's release store of *let_go.
    while (__atomic_load_n(let_go, __ATOMIC_ACQUIRE) == 0) {
      // Relaxed: the test only watches the value grow.
      __atomic_store_n(heartbeat, __atomic_load_n(heartbeat, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
      std::this_thread::sleep_for(1ms);
    }
  }
};

gnio::session make_session(const std::string& dev, uint32_t queues) {
  auto g = gnio::gpu::open("host");
  EXPECT_TRUE(g.ok()) << g.err().what();
  auto p = gnio::port::open(*g, dev);
  EXPECT_TRUE(p.ok()) << p.err().what();
  for (uint32_t i = 0; i < queues; ++i) EXPECT_TRUE(p->create_rxq().ok());
  std::vector<gnio::gpu> gpus;
  gpus.push_back(std::move(g).value());
  auto s = gnio::session::create(std::move(gpus), std::move(p).value());
  EXPECT_TRUE(s.ok()) << s.err().what();
  return std::move(s).value();
}

count_body counting(gnio::session& s, const gnio::session_array<uint64_t>& processed, uint32_t queues) {
  count_body b{};
  for (uint32_t i = 0; i < queues; ++i) b.q[i] = *s.get_port().rxq(i);
  b.processed = processed.exec;
  return b;
}

}  // namespace

TEST(Session, RunsACaptureToItsEndAndAccountsForEveryFrame) {
  // tshark's frame count for the capture (MANIFEST.tsv).
  long frames = -1;
  for (const auto& r : gnio::test::read_manifest(gnio::test::data_path("MANIFEST.tsv")))
    if (r.at("path") == "http.pcap") frames = gnio::test::manifest_num(r, "packets");
  ASSERT_GT(frames, 0);
  auto s = make_session("pcap:file=" + gnio::test::data_path("http.pcap"), 2);
  auto processed = s.alloc<uint64_t>(0, 2, gnio::mem_type::gpu);
  ASSERT_TRUE(processed.ok()) << processed.err().what();
  ASSERT_FALSE(s.start());
  gnio::launch_dims dims;
  dims.blocks = 2;
  ASSERT_FALSE(gnio::launch(s.runner(0), dims, counting(s, *processed, 2)));
  ASSERT_FALSE(s.wait(30s));
  ASSERT_FALSE(s.stop_port());
  auto per_queue = s.read(*processed);
  ASSERT_TRUE(per_queue.ok());
  const gnio::accounting a = s.account(*per_queue);
  EXPECT_TRUE(a.exact());
  EXPECT_EQ(a.total.received, static_cast<uint64_t>(frames));
  EXPECT_EQ(a.total.processed, static_cast<uint64_t>(frames));
  EXPECT_EQ(a.total.pending, 0u);
  ASSERT_EQ(a.queues.size(), 2u);
  EXPECT_EQ(a.queues[0].processed + a.queues[1].processed, static_cast<uint64_t>(frames));
  EXPECT_EQ(a.queues[0].received, (*per_queue)[0]);
}

TEST(Session, StopEndsAnEndlessSourceAndTheIdentityHolds) {
  auto s = make_session("gen:size=64", 1);
  auto processed = s.alloc<uint64_t>(0, 1, gnio::mem_type::gpu);
  ASSERT_TRUE(processed.ok());
  ASSERT_FALSE(s.start());
  gnio::launch_dims dims;
  ASSERT_FALSE(gnio::launch(s.runner(0), dims, counting(s, *processed, 1)));
  EXPECT_EQ(s.wait(200ms).code(), gnio::status::time_out);
  ASSERT_FALSE(s.stop(5s));
  EXPECT_FALSE(s.parked());
  EXPECT_FALSE(s.running());
  // The port's counters are one snapshot only once its engine stopped.
  ASSERT_FALSE(s.stop_port());
  const auto per_queue = s.read(*processed).value();
  EXPECT_GT(per_queue[0], 0u);
  const gnio::accounting a = s.account(per_queue);
  EXPECT_TRUE(a.exact()) << "unaccounted " << a.total.unaccounted;
  EXPECT_EQ(a.total.processed, per_queue[0]);
}

TEST(Session, AKernelIgnoringTheExitFlagParksTheWholeSession) {
  static uint32_t let_go = 0;  // outlives the session: the kernel reads it until the end
  uint64_t* heartbeat = nullptr;
  {
    auto s = make_session("gen:size=64,count=10", 1);
    auto hb = s.alloc<uint64_t>(0, 1, gnio::mem_type::cpu_gpu);
    ASSERT_TRUE(hb.ok());
    ASSERT_NE(hb->host, nullptr);
    heartbeat = hb->host;
    auto sem = s.add_semaphore(0, 16, 0);
    ASSERT_TRUE(sem.ok()) << sem.err().what();
    ASSERT_FALSE(s.start());
    ASSERT_FALSE(gnio::launch(s.runner(0), gnio::launch_dims{}, stubborn_body{hb->exec, &let_go}));
    const auto t0 = std::chrono::steady_clock::now();
    const gnio::error e = s.stop(200ms);
    EXPECT_EQ(e.code(), gnio::status::time_out) << e.what();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s) << "stop returns by its deadline";
    EXPECT_TRUE(s.parked());
    EXPECT_TRUE(s.running());
  }  // the session's handle goes away with the kernel still running
  // The kernel keeps writing memory the session allocated: still allocated
  // (an early free is a heap-use-after-free under AddressSanitizer).
  const uint64_t before = __atomic_load_n(heartbeat, __ATOMIC_RELAXED);
  std::this_thread::sleep_for(50ms);
  EXPECT_GT(__atomic_load_n(heartbeat, __ATOMIC_RELAXED), before);
  // Let the kernel return; the parked session stays reachable until exit, so
  // LeakSanitizer reports nothing.
  __atomic_store_n(&let_go, 1u, __ATOMIC_RELEASE);  // pairs with the kernel's acquire load
  std::this_thread::sleep_for(20ms);
}

TEST(Session, RefusesWhatItCannotRun) {
  auto g = gnio::gpu::open("host");
  ASSERT_TRUE(g.ok());
  auto p = gnio::port::open(*g, "gen:size=64,count=1");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(gnio::session::create({}, std::move(p).value()).err().code(), gnio::status::invalid_value);
  auto p2 = gnio::port::open(*g, "gen:size=64,count=1");
  std::vector<gnio::gpu> gpus;
  gpus.push_back(std::move(g).value());
  const auto noq = gnio::session::create(std::move(gpus), std::move(p2).value());
  EXPECT_EQ(noq.err().code(), gnio::status::invalid_value);
  EXPECT_NE(noq.err().message().find("no queues"), std::string::npos) << noq.err().what();

  auto s = make_session("gen:size=64,count=1", 1);
  EXPECT_EQ(s.alloc<uint64_t>(3, 1, gnio::mem_type::gpu).err().code(), gnio::status::invalid_value);
  EXPECT_EQ(s.alloc<uint64_t>(0, 0, gnio::mem_type::gpu).err().code(), gnio::status::invalid_value);
  ASSERT_FALSE(s.start());
  EXPECT_EQ(s.start().code(), gnio::status::bad_state);
}
