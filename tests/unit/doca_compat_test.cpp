// SPDX-License-Identifier: Apache-2.0
// gnio's DOCA-compatible API (include/gnio/compat/doca, docs/doca-compat.md)
// on the host executor: error codes, PCIe addresses, device discovery,
// queue types, calls out of order, capability answers, argp, the receive
// path of the simple_receive sample on a capture, and the send paths of the
// simple_send and send_wait_time samples into a capture file, and the
// semaphores, buffer arrays and buffer pools of the GPU packet processing
// application.
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <doca_argp.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_eth_rxq.h>
#include <doca_eth_rxq_gpu_data_path.h>
#include <doca_eth_txq.h>
#include <doca_eth_txq_gpu_data_path.h>
#include <doca_buf.h>
#include <doca_buf_array.h>
#include <doca_buf_pool.h>
#include <doca_flow.h>
#include <doca_gpunetio.h>
#include <doca_gpunetio_dev_buf.cuh>
#include <doca_gpunetio_dev_eth_rxq.cuh>
#include <doca_gpunetio_dev_eth_txq.cuh>
#include <doca_gpunetio_dev_sem.cuh>
#include <doca_mmap.h>

#include <gnio/gpu.hpp>
#include <gnio/port.hpp>
#include <gnio/status.hpp>

namespace {

namespace fs = std::filesystem;

// Sets an environment variable for one test and restores it after.
class scoped_env {
 public:
  scoped_env(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~scoped_env() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string data_dir() {
  const char* d = std::getenv("GNIO_TEST_DATA_DIR");
  return d ? d : "tests/data";
}

doca_dev* open_dev(const char* pci) {
  doca_devinfo** list = nullptr;
  uint32_t n = 0;
  if (doca_devinfo_create_list(&list, &n) != DOCA_SUCCESS) return nullptr;
  doca_dev* dev = nullptr;
  for (uint32_t i = 0; i < n && !dev; ++i) {
    uint8_t eq = 0;
    if (doca_devinfo_is_equal_pci_addr(list[i], pci, &eq) == DOCA_SUCCESS && eq)
      EXPECT_EQ(doca_dev_open(list[i], &dev), DOCA_SUCCESS);
  }
  doca_devinfo_destroy_list(list);
  return dev;
}

TEST(DocaCompat, ErrorCodesAreGnioStatuses) {
  EXPECT_EQ(static_cast<int>(DOCA_ERROR_NOT_SUPPORTED), static_cast<int>(gnio::status::not_supported));
  EXPECT_EQ(static_cast<int>(DOCA_ERROR_INVALID_VALUE), static_cast<int>(gnio::status::invalid_value));
  EXPECT_EQ(static_cast<int>(DOCA_ERROR_BAD_STATE), static_cast<int>(gnio::status::bad_state));
  EXPECT_EQ(static_cast<int>(DOCA_ERROR_DEVICE_FATAL_ERROR) + 1, gnio::num_statuses);
  EXPECT_STREQ(doca_error_get_name(DOCA_SUCCESS), "DOCA_SUCCESS");
  EXPECT_STREQ(doca_error_get_name(DOCA_ERROR_BAD_STATE), "DOCA_ERROR_BAD_STATE");
  EXPECT_STREQ(doca_error_get_name(static_cast<doca_error_t>(999)), "DOCA_ERROR_UNKNOWN");
  EXPECT_GT(std::string(doca_error_get_descr(DOCA_ERROR_NOT_SUPPORTED)).size(), 5u);
}

TEST(DocaCompat, GpuCreateChecksTheAddress) {
  doca_gpu* g = nullptr;
  EXPECT_EQ(doca_gpu_create("not-a-bus-id", &g), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_create("ca:00.9", &g),
            DOCA_ERROR_INVALID_VALUE);  // function numbers are 0-7
  EXPECT_EQ(doca_gpu_create(nullptr, &g), DOCA_ERROR_INVALID_VALUE);
  if (!gnio::built_with_cuda()) EXPECT_EQ(doca_gpu_create("ca:00.0", &g), DOCA_ERROR_NOT_FOUND);
  ASSERT_EQ(doca_gpu_create("host", &g), DOCA_SUCCESS);
  void *d = nullptr, *h = nullptr;
  EXPECT_EQ(doca_gpu_mem_alloc(g, 64, 3, DOCA_GPU_MEM_TYPE_GPU, &d, nullptr), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_mem_alloc(g, 64, 64, DOCA_GPU_MEM_TYPE_CPU_GPU, &d, nullptr), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_gpu_mem_alloc(g, 100, 1 << 16, DOCA_GPU_MEM_TYPE_GPU_CPU, &d, &h), DOCA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % (1 << 16), 0u);
  ASSERT_NE(h, nullptr);
  int fd = -1;
  EXPECT_EQ(doca_gpu_dmabuf_fd(g, d, 100, &fd), DOCA_ERROR_NOT_SUPPORTED);
  int x = 0;
  EXPECT_EQ(doca_gpu_mem_free(g, &x), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_mem_free(g, d), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_mem_free(g, d), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_destroy(g), DOCA_SUCCESS);
}

TEST(DocaCompat, DevicesFromTheEnvironmentAndSysfs) {
  const fs::path tmp = fs::temp_directory_path() / ("gnio_doca_sysfs_" + std::to_string(getpid()));
  fs::create_directories(tmp / "bus/pci/devices/0000:3b:00.1/net/eth7");
  fs::create_directories(tmp / "bus/pci/devices/0000:3c:00.0");  // no network interface: not listed
  scoped_env sys("GNIO_DOCA_SYSFS", tmp.string());
  {
    scoped_env bad("GNIO_DOCA_DEVICES", "ca:00.0");  // no '=': malformed
    doca_devinfo** list = nullptr;
    uint32_t n = 0;
    EXPECT_EQ(doca_devinfo_create_list(&list, &n), DOCA_ERROR_INVALID_VALUE);
  }
  scoped_env env("GNIO_DOCA_DEVICES", "CA:00.0=pcap:file=x.pcap;0001:17:00.0=gen:");
  doca_devinfo** list = nullptr;
  uint32_t n = 0;
  ASSERT_EQ(doca_devinfo_create_list(&list, &n), DOCA_SUCCESS);
  ASSERT_EQ(n, 3u);
  uint8_t eq = 0;
  EXPECT_EQ(doca_devinfo_is_equal_pci_addr(list[0], "0000:ca:00.0", &eq), DOCA_SUCCESS);
  EXPECT_EQ(eq, 1);
  EXPECT_EQ(doca_devinfo_is_equal_pci_addr(list[0], "ca:00.0", &eq), DOCA_SUCCESS);
  EXPECT_EQ(eq, 1);
  EXPECT_EQ(doca_devinfo_is_equal_pci_addr(list[1], "17:00.0", &eq), DOCA_SUCCESS);
  EXPECT_EQ(eq, 0);  // domain 0001
  EXPECT_EQ(doca_devinfo_is_equal_pci_addr(list[0], "ca:00", &eq), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_devinfo_is_equal_pci_addr(list[0], "gg:00.0", &eq), DOCA_ERROR_INVALID_VALUE);
  char name[DOCA_DEVINFO_IFACE_NAME_SIZE];
  EXPECT_EQ(doca_devinfo_get_iface_name(list[0], name, sizeof name), DOCA_ERROR_NOT_FOUND);
  ASSERT_EQ(doca_devinfo_get_iface_name(list[2], name, sizeof name), DOCA_SUCCESS);
  EXPECT_STREQ(name, "eth7");
  char pci[DOCA_DEVINFO_PCI_ADDR_SIZE];
  ASSERT_EQ(doca_devinfo_get_pci_addr_str(list[2], pci), DOCA_SUCCESS);
  EXPECT_STREQ(pci, "0000:3b:00.1");
  EXPECT_EQ(doca_devinfo_destroy_list(list), DOCA_SUCCESS);
  fs::remove_all(tmp);
}

TEST(DocaCompat, CapabilitiesAnswerForGnio) {
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:file=x.pcap");
  doca_dev* dev = open_dev("ca:00.0");
  ASSERT_NE(dev, nullptr);
  const doca_devinfo* info = doca_dev_as_devinfo(dev);
  uint8_t ok = 9;
  EXPECT_EQ(doca_eth_rxq_cap_is_type_supported(info, DOCA_ETH_RXQ_TYPE_CYCLIC, DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU, &ok),
            DOCA_SUCCESS);
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(doca_eth_rxq_cap_is_type_supported(info, DOCA_ETH_RXQ_TYPE_REGULAR, DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU, &ok),
            DOCA_SUCCESS);
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(
      doca_eth_rxq_cap_is_type_supported(info, DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL, DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU, &ok),
      DOCA_SUCCESS);
  EXPECT_EQ(ok, 0);
  EXPECT_EQ(doca_eth_rxq_cap_is_type_supported(info, DOCA_ETH_RXQ_TYPE_CYCLIC, DOCA_ETH_RXQ_DATA_PATH_TYPE_CPU, &ok),
            DOCA_SUCCESS);
  EXPECT_EQ(ok, 0);
  EXPECT_EQ(doca_eth_rxq_cap_is_type_supported(info, static_cast<doca_eth_rxq_type>(42),
                                               DOCA_ETH_RXQ_DATA_PATH_TYPE_GPU, &ok),
            DOCA_ERROR_INVALID_VALUE);
  uint32_t bytes = 0;
  EXPECT_EQ(doca_eth_rxq_estimate_packet_buf_size(DOCA_ETH_RXQ_TYPE_CYCLIC, 0, 0, 2048, 1000, 0, 0, 0, &bytes),
            DOCA_SUCCESS);
  EXPECT_EQ(bytes, 1024u * 2048u);  // the ring depth is the next power of two
  EXPECT_EQ(doca_eth_rxq_estimate_packet_buf_size(DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL, 0, 0, 2048, 1000, 0, 0, 0, &bytes),
            DOCA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);
}

TEST(DocaCompat, QueueCallsOutOfOrder) {
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:file=" + data_dir() + "/http.pcap");
  doca_dev* dev = open_dev("ca:00.0");
  ASSERT_NE(dev, nullptr);
  doca_gpu* g = nullptr;
  ASSERT_EQ(doca_gpu_create("host", &g), DOCA_SUCCESS);
  doca_eth_rxq* q = nullptr;
  EXPECT_EQ(doca_eth_rxq_create(dev, 0, 2048, &q), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_eth_rxq_create(dev, 64, 2048, &q), DOCA_SUCCESS);
  EXPECT_EQ(doca_eth_rxq_set_type(q, static_cast<doca_eth_rxq_type>(42)), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_eth_rxq_set_type(q, DOCA_ETH_RXQ_TYPE_MANAGED_MEMPOOL), DOCA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(doca_eth_rxq_set_type(q, DOCA_ETH_RXQ_TYPE_CYCLIC), DOCA_SUCCESS);
  doca_gpu_eth_rxq* h = nullptr;
  EXPECT_EQ(doca_eth_rxq_get_gpu_handle(q, &h),
            DOCA_ERROR_BAD_STATE);  // before doca_ctx_start
  doca_mmap* m = nullptr;
  ASSERT_EQ(doca_mmap_create(&m), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_start(m), DOCA_ERROR_BAD_STATE);  // no memory range yet
  std::vector<uint8_t> mem(1 << 20);
  EXPECT_EQ(doca_mmap_set_memrange(m, mem.data(), mem.size()), DOCA_SUCCESS);
  EXPECT_EQ(doca_eth_rxq_set_pkt_buf(q, m, 0, 1 << 17),
            DOCA_ERROR_BAD_STATE);  // mmap not started
  ASSERT_EQ(doca_mmap_start(m), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_set_memrange(m, mem.data(), mem.size()), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_eth_rxq_set_pkt_buf(q, m, 1 << 20, 1),
            DOCA_ERROR_INVALID_VALUE);  // past the range
  EXPECT_EQ(doca_eth_rxq_set_pkt_buf(q, m, 0, 1 << 17), DOCA_SUCCESS);
  doca_ctx* ctx = doca_eth_rxq_as_doca_ctx(q);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(doca_ctx_stop(ctx), DOCA_ERROR_BAD_STATE);       // not started
  EXPECT_EQ(doca_ctx_start(ctx), DOCA_ERROR_NOT_SUPPORTED);  // CPU data path
  ASSERT_EQ(doca_ctx_set_datapath_on_gpu(ctx, g), DOCA_SUCCESS);
  ASSERT_EQ(doca_ctx_start(ctx), DOCA_SUCCESS);
  doca_ctx_states st;
  EXPECT_EQ(doca_ctx_get_state(ctx, &st), DOCA_SUCCESS);
  EXPECT_EQ(st, DOCA_CTX_STATE_RUNNING);
  EXPECT_EQ(doca_ctx_start(ctx), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_eth_rxq_set_type(q, DOCA_ETH_RXQ_TYPE_REGULAR), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_ctx_set_datapath_on_gpu(ctx, g), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_eth_rxq_get_gpu_handle(q, &h), DOCA_SUCCESS);
  EXPECT_NE(h, nullptr);
  EXPECT_EQ(doca_eth_rxq_destroy(q), DOCA_ERROR_BAD_STATE);  // still running
  EXPECT_EQ(doca_dev_close(dev), DOCA_ERROR_IN_USE);
  EXPECT_EQ(doca_ctx_stop(ctx), DOCA_SUCCESS);
  EXPECT_EQ(doca_eth_rxq_destroy(q), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_destroy(m), DOCA_SUCCESS);
  EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_destroy(g), DOCA_SUCCESS);
}

TEST(DocaCompat, FlowRefusesWhatClassesCannotExpress) {
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:file=x.pcap");
  doca_dev* dev = open_dev("ca:00.0");
  ASSERT_NE(dev, nullptr);
  doca_flow_port_cfg* pc = nullptr;
  doca_flow_port* port = nullptr;
  ASSERT_EQ(doca_flow_port_cfg_create(&pc), DOCA_SUCCESS);
  EXPECT_EQ(doca_flow_port_start(pc, &port),
            DOCA_ERROR_NOT_SUPPORTED);  // no device
  ASSERT_EQ(doca_flow_port_cfg_set_dev(pc, dev), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_port_start(pc, &port), DOCA_SUCCESS);
  doca_flow_port_cfg_destroy(pc);
  doca_flow_pipe_cfg* cfg = nullptr;
  ASSERT_EQ(doca_flow_pipe_cfg_create(&cfg, port), DOCA_SUCCESS);
  EXPECT_EQ(doca_flow_pipe_cfg_set_type(cfg, DOCA_FLOW_PIPE_LPM), DOCA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(doca_flow_pipe_cfg_set_type(cfg, DOCA_FLOW_PIPE_CONTROL), DOCA_SUCCESS);
  doca_flow_fwd to_port{};
  to_port.type = DOCA_FLOW_FWD_PORT;
  doca_flow_pipe* pipe = nullptr;
  EXPECT_EQ(doca_flow_pipe_create(cfg, &to_port, nullptr, &pipe), DOCA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(doca_flow_pipe_create(cfg, nullptr, nullptr, &pipe), DOCA_SUCCESS);
  doca_flow_pipe_cfg_destroy(cfg);
  doca_flow_match by_port{};
  by_port.outer.udp.l4_port.dst_port = htons(53);
  doca_flow_fwd drop{};
  drop.type = DOCA_FLOW_FWD_DROP;
  doca_flow_pipe_entry* e = nullptr;
  EXPECT_EQ(doca_flow_pipe_control_add_entry(0, pipe, &by_port, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0,
                                             &drop, nullptr, &e),
            DOCA_ERROR_NOT_SUPPORTED);
  doca_flow_match esp{};
  esp.parser_meta.outer_l4_type = DOCA_FLOW_L4_META_ESP;
  EXPECT_EQ(doca_flow_pipe_control_add_entry(0, pipe, &esp, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0,
                                             &drop, nullptr, &e),
            DOCA_ERROR_NOT_SUPPORTED);
  doca_flow_pipe_destroy(pipe);
  EXPECT_EQ(doca_flow_port_stop(port), DOCA_SUCCESS);
  EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);
}

// The simple_receive sample's sequence on a capture, with the host executor
// playing the kernel: UDP reaches queue 0 (as many packets as tshark counts,
// 2 in http.pcap), everything else is dropped by the miss.
TEST(DocaCompat, SimpleReceiveSequenceOnACapture) {
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:file=" + data_dir() + "/http.pcap");
  doca_dev* dev = open_dev("0000:ca:00.0");
  ASSERT_NE(dev, nullptr);
  doca_flow_port_cfg* pc = nullptr;
  doca_flow_port* port = nullptr;
  ASSERT_EQ(doca_flow_port_cfg_create(&pc), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_port_cfg_set_dev(pc, dev), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_port_start(pc, &port), DOCA_SUCCESS);
  doca_flow_port_cfg_destroy(pc);
  doca_gpu* g = nullptr;
  ASSERT_EQ(doca_gpu_create("host", &g), DOCA_SUCCESS);
  doca_eth_rxq* q = nullptr;
  ASSERT_EQ(doca_eth_rxq_create(dev, 64, 2048, &q), DOCA_SUCCESS);
  ASSERT_EQ(doca_eth_rxq_set_type(q, DOCA_ETH_RXQ_TYPE_CYCLIC), DOCA_SUCCESS);
  doca_ctx* ctx = doca_eth_rxq_as_doca_ctx(q);
  ASSERT_EQ(doca_ctx_set_datapath_on_gpu(ctx, g), DOCA_SUCCESS);
  ASSERT_EQ(doca_ctx_start(ctx), DOCA_SUCCESS);
  doca_gpu_eth_rxq* h = nullptr;
  ASSERT_EQ(doca_eth_rxq_get_gpu_handle(q, &h), DOCA_SUCCESS);

  // UDP pipe: RSS to queue 0, miss drops.
  doca_flow_match udp{};
  udp.parser_meta.outer_l3_type = DOCA_FLOW_L3_META_IPV4;
  udp.parser_meta.outer_l4_type = DOCA_FLOW_L4_META_UDP;
  ASSERT_EQ(doca_eth_rxq_apply_queue_id(q, 0), DOCA_SUCCESS);
  uint16_t queues[1] = {0};
  doca_flow_fwd rss{};
  rss.type = DOCA_FLOW_FWD_RSS;
  rss.rss.queues_array = queues;
  rss.rss.nr_queues = 1;
  rss.rss.outer_flags = DOCA_FLOW_RSS_IPV4 | DOCA_FLOW_RSS_UDP;
  doca_flow_fwd drop{};
  drop.type = DOCA_FLOW_FWD_DROP;
  doca_flow_pipe_cfg* cfg = nullptr;
  ASSERT_EQ(doca_flow_pipe_cfg_create(&cfg, port), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_pipe_cfg_set_type(cfg, DOCA_FLOW_PIPE_BASIC), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_pipe_cfg_set_match(cfg, &udp, nullptr), DOCA_SUCCESS);
  doca_flow_pipe* udp_pipe = nullptr;
  ASSERT_EQ(doca_flow_pipe_create(cfg, &rss, &drop, &udp_pipe), DOCA_SUCCESS);
  doca_flow_pipe_cfg_destroy(cfg);
  doca_flow_pipe_entry* e = nullptr;
  ASSERT_EQ(doca_flow_pipe_basic_add_entry(0, udp_pipe, &udp, 0, nullptr, nullptr, nullptr,
                                           DOCA_FLOW_ENTRY_FLAGS_NO_WAIT, nullptr, &e),
            DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_entries_process(port, 0, 0, 0),
            DOCA_SUCCESS);  // no root yet: nothing starts

  // Root pipe: IPv4/UDP to the UDP pipe.
  doca_flow_match root_match{};
  root_match.outer.eth.type = htons(DOCA_FLOW_ETHER_TYPE_IPV4);
  root_match.outer.l3_type = DOCA_FLOW_L3_TYPE_IP4;
  root_match.outer.ip4.next_proto = 17;
  doca_flow_fwd to_udp{};
  to_udp.type = DOCA_FLOW_FWD_PIPE;
  to_udp.next_pipe = udp_pipe;
  ASSERT_EQ(doca_flow_pipe_cfg_create(&cfg, port), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_pipe_cfg_set_type(cfg, DOCA_FLOW_PIPE_CONTROL), DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_pipe_cfg_set_is_root(cfg, true), DOCA_SUCCESS);
  doca_flow_pipe* root = nullptr;
  ASSERT_EQ(doca_flow_pipe_create(cfg, nullptr, nullptr, &root), DOCA_SUCCESS);
  doca_flow_pipe_cfg_destroy(cfg);
  ASSERT_EQ(doca_flow_pipe_control_add_entry(0, root, &root_match, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             0, &to_udp, nullptr, &e),
            DOCA_SUCCESS);
  ASSERT_EQ(doca_flow_entries_process(port, 0, 0, 0),
            DOCA_SUCCESS);  // steering set, port started
  EXPECT_EQ(doca_flow_pipe_control_add_entry(0, root, &root_match, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                             0, &to_udp, nullptr, &e),
            DOCA_ERROR_NOT_SUPPORTED);  // steering is fixed once started

  // The kernel's loop, on the host executor.
  uint64_t total = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto quiet_since = std::chrono::steady_clock::now();
  doca_gpu_dev_eth_rxq_attr attr[64];
  while (std::chrono::steady_clock::now() < deadline) {
    uint64_t first = 0;
    uint32_t num = 0;
    const doca_error_t r = doca_gpu_dev_eth_rxq_recv<DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK, DOCA_GPUNETIO_ETH_MCST_AUTO,
                                                     DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, DOCA_GPUNETIO_ETH_RX_ATTR_ALL>(
        h, 64, 1'000'000, &first, &num, attr);
    ASSERT_EQ(r, DOCA_SUCCESS);
    for (uint32_t i = 0; i < num; ++i) {
      const auto* p = reinterpret_cast<const uint8_t*>(doca_gpu_dev_eth_rxq_get_pkt_addr(h, first + i));
      EXPECT_EQ(p[12], 0x08);  // IPv4
      EXPECT_EQ(p[13], 0x00);
      EXPECT_EQ(p[14 + 9], 17);  // UDP
      EXPECT_GT(attr[i].bytes, 42u);
      EXPECT_GT(attr[i].timestamp_ns, 0u);
    }
    total += num;
    if (num) quiet_since = std::chrono::steady_clock::now();
    else if (total && std::chrono::steady_clock::now() - quiet_since > std::chrono::milliseconds(300)) break;
  }
  EXPECT_EQ(total, 2u);

  // The sample's teardown order.
  doca_flow_pipe_destroy(root);
  doca_flow_pipe_destroy(udp_pipe);
  EXPECT_EQ(doca_flow_port_stop(port), DOCA_SUCCESS);
  EXPECT_EQ(doca_ctx_stop(ctx), DOCA_SUCCESS);
  EXPECT_EQ(doca_eth_rxq_destroy(q), DOCA_SUCCESS);
  EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_destroy(g), DOCA_SUCCESS);
}

// --- The send side

// A frame of a capture file: its timestamp (ns) and bytes.
struct captured {
  uint64_t ts_ns = 0;
  std::vector<uint8_t> bytes;
};

// Reads a nanosecond pcap file (what the pcap backend's tx= writes).
std::vector<captured> read_capture(const std::string& path) {
  std::vector<captured> out;
  std::ifstream f(path, std::ios::binary);
  uint32_t global[6] = {};
  if (!f.read(reinterpret_cast<char*>(global), sizeof global)) return out;
  const bool nano = global[0] == 0xa1b23c4du;
  uint32_t rec[4];
  while (f.read(reinterpret_cast<char*>(rec), sizeof rec)) {
    captured c;
    c.ts_ns = uint64_t{rec[0]} * 1'000'000'000ull + (nano ? uint64_t{rec[1]} : uint64_t{rec[1]} * 1000);
    c.bytes.resize(rec[2]);
    if (!f.read(reinterpret_cast<char*>(c.bytes.data()), rec[2])) break;
    out.push_back(std::move(c));
  }
  return out;
}

std::string temp_capture(const char* name) {
  return (fs::temp_directory_path() / (std::string("gnio_doca_") + name + "_" + std::to_string(getpid()) + ".pcap"))
      .string();
}

// The frames the tests send: Ethernet header as the samples write it, then
// a payload that tells the frames apart.
constexpr uint32_t k_frame_bytes = 96;
void fill_frame(uint8_t* p, uint32_t i) {
  for (uint32_t b = 0; b < k_frame_bytes; ++b) p[b] = static_cast<uint8_t>(b * 7 + i);
  const uint8_t hdr[14] = {0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x08, 0x00};
  std::memcpy(p, hdr, sizeof hdr);
}

// The host part of both send samples: a flow port, a TX queue on the GPU
// data path, its handle, and GPU memory for n frames mapped by an mmap.
struct send_setup {
  doca_dev* dev = nullptr;
  doca_flow_port* flow = nullptr;
  doca_gpu* gpu = nullptr;
  doca_eth_txq* txq = nullptr;
  doca_ctx* ctx = nullptr;
  doca_gpu_eth_txq* h = nullptr;
  doca_mmap* mmap = nullptr;
  uint8_t* frames = nullptr;
  uint32_t mkey = 0;

  void open(uint32_t n, bool wait_on_time) {
    dev = open_dev("ca:00.0");
    ASSERT_NE(dev, nullptr);
    doca_flow_port_cfg* pc = nullptr;
    ASSERT_EQ(doca_flow_port_cfg_create(&pc), DOCA_SUCCESS);
    ASSERT_EQ(doca_flow_port_cfg_set_dev(pc, dev), DOCA_SUCCESS);
    ASSERT_EQ(doca_flow_port_start(pc, &flow), DOCA_SUCCESS);
    doca_flow_port_cfg_destroy(pc);
    ASSERT_EQ(doca_gpu_create("host", &gpu), DOCA_SUCCESS);
    ASSERT_EQ(doca_eth_txq_create(dev, 64, &txq), DOCA_SUCCESS);
    ASSERT_EQ(doca_eth_txq_set_l3_chksum_offload(txq, 1), DOCA_SUCCESS);
    ASSERT_EQ(doca_eth_txq_set_l4_chksum_offload(txq, 1), DOCA_SUCCESS);
    ASSERT_EQ(doca_eth_txq_gpu_set_completion_on_gpu(txq), DOCA_SUCCESS);
    ctx = doca_eth_txq_as_doca_ctx(txq);
    ASSERT_NE(ctx, nullptr);
    ASSERT_EQ(doca_ctx_set_datapath_on_gpu(ctx, gpu), DOCA_SUCCESS);
    if (wait_on_time) {
      doca_eth_wait_on_time_type mode = DOCA_ETH_WAIT_ON_TIME_TYPE_NONE;
      ASSERT_EQ(doca_eth_txq_cap_get_wait_on_time_offload_supported(doca_dev_as_devinfo(dev), &mode), DOCA_SUCCESS);
      ASSERT_EQ(mode, DOCA_ETH_WAIT_ON_TIME_TYPE_NATIVE);
      ASSERT_EQ(doca_eth_txq_set_wait_on_time_offload(txq), DOCA_SUCCESS);
    }
    ASSERT_EQ(doca_eth_txq_get_gpu_handle(txq, &h), DOCA_ERROR_BAD_STATE);
    ASSERT_EQ(doca_ctx_start(ctx), DOCA_SUCCESS);
    ASSERT_EQ(doca_eth_txq_apply_queue_id(txq, 0), DOCA_SUCCESS);
    ASSERT_EQ(doca_eth_txq_get_gpu_handle(txq, &h), DOCA_SUCCESS);
    ASSERT_EQ(doca_mmap_create(&mmap), DOCA_SUCCESS);
    ASSERT_EQ(doca_mmap_add_dev(mmap, dev), DOCA_SUCCESS);
    void* p = nullptr;
    ASSERT_EQ(doca_gpu_mem_alloc(gpu, 4096, 4096, DOCA_GPU_MEM_TYPE_GPU, &p, nullptr), DOCA_SUCCESS);
    frames = static_cast<uint8_t*>(p);
    // On the host executor GPU memory is the host's: the test writes it as
    // the sample's cudaMemcpy would.
    for (uint32_t i = 0; i < n; ++i) fill_frame(frames + i * k_frame_bytes, i);
    int fd = -1;
    EXPECT_EQ(doca_gpu_dmabuf_fd(gpu, p, 4096, &fd), DOCA_ERROR_NOT_SUPPORTED);
    ASSERT_EQ(doca_mmap_set_memrange(mmap, p, 4096), DOCA_SUCCESS);
    ASSERT_EQ(doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
    ASSERT_EQ(doca_mmap_get_mkey(mmap, dev, &mkey), DOCA_ERROR_BAD_STATE);
    ASSERT_EQ(doca_mmap_start(mmap), DOCA_SUCCESS);  // the port starts here
    ASSERT_EQ(doca_mmap_get_mkey(mmap, dev, &mkey), DOCA_SUCCESS);
    mkey = htonl(mkey);
  }

  // The samples' teardown order.
  void close() {
    EXPECT_EQ(doca_ctx_stop(ctx), DOCA_SUCCESS);
    EXPECT_EQ(doca_gpu_mem_free(gpu, frames), DOCA_SUCCESS);
    EXPECT_EQ(doca_eth_txq_destroy(txq), DOCA_SUCCESS);
    EXPECT_EQ(doca_flow_port_stop(flow), DOCA_SUCCESS);
    EXPECT_EQ(doca_mmap_destroy(mmap), DOCA_SUCCESS);
    EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);
    EXPECT_EQ(doca_gpu_destroy(gpu), DOCA_SUCCESS);
  }
};

// simple_send on a capture file: block-scope sends (the host executor's
// block is one thread), completions only for NOTIFY sends, the WQE calls,
// then the file holds every frame byte for byte, in order.
TEST(DocaCompat, SimpleSendSequenceWritesACapture) {
  const std::string out = temp_capture("simple_send");
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:tx=" + out);
  send_setup s;
  ASSERT_NO_FATAL_FAILURE(s.open(6, false));

  // Four sends at block scope; frames 1 and 3 ask for a completion.
  for (uint32_t i = 0; i < 4; ++i) {
    doca_gpu_dev_eth_ticket_t t = ~0ull;
    doca_gpu_dev_eth_txq_send<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU, DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
                              DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK>(
        s.h, reinterpret_cast<uint64_t>(s.frames + i * k_frame_bytes), s.mkey, k_frame_bytes,
        i % 2 ? DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY : DOCA_GPUNETIO_ETH_SEND_FLAG_NONE, &t);
    EXPECT_EQ(t, i) << "the ticket is the descriptor's ring index";
  }
  uint32_t done = 0;
  ASSERT_EQ(doca_gpu_dev_eth_txq_poll_completion<DOCA_GPUNETIO_ETH_CQ_POLL_LAST>(s.h, 2, DOCA_GPUNETIO_ETH_WAIT_FLAG_B,
                                                                                 &done),
            DOCA_SUCCESS);
  EXPECT_EQ(done, 2u);
  // Four sends, two completions: nothing is left to poll.
  ASSERT_EQ(doca_gpu_dev_eth_txq_poll_completion(s.h, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB, &done), DOCA_SUCCESS);
  EXPECT_EQ(done, 0u);
  EXPECT_EQ(doca_gpu_dev_eth_txq_poll_completion_at(s.h, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_B), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_dev_eth_txq_poll_completion_at(s.h, 2, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB), DOCA_ERROR_AGAIN);

  // The WQE path, as simple_send without a shared queue: the caller owns
  // the indices; the last WQE asks for the completion it then polls.
  for (uint16_t i = 4; i < 6; ++i) {
    doca_gpu_dev_eth_txq_wqe* w = doca_gpu_dev_eth_txq_get_wqe_ptr(s.h, i);
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(doca_gpu_dev_eth_txq_wqe_prepare_send(
                  s.h, w, i, reinterpret_cast<uint64_t>(s.frames + i * k_frame_bytes), s.mkey, k_frame_bytes,
                  i == 5 ? DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY : DOCA_GPUNETIO_ETH_SEND_FLAG_NONE),
              DOCA_SUCCESS);
  }
  doca_gpu_dev_eth_txq_submit(s.h, 6);
  EXPECT_EQ((doca_gpu_dev_eth_txq_poll_completion_at<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU,
                                                     DOCA_GPUNETIO_ETH_SYNC_SCOPE_CTA>(s.h, 2,
                                                                                       DOCA_GPUNETIO_ETH_WAIT_FLAG_B)),
            DOCA_SUCCESS);

  // Bad arguments.
  doca_gpu_dev_eth_txq_wqe* w = doca_gpu_dev_eth_txq_get_wqe_ptr(s.h, 6);
  EXPECT_EQ(doca_gpu_dev_eth_txq_wqe_prepare_send(s.h, w, 6, reinterpret_cast<uint64_t>(s.frames), s.mkey, 0,
                                                  DOCA_GPUNETIO_ETH_SEND_FLAG_NONE),
            DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_eth_txq_wqe_prepare_send(s.h, nullptr, 6, reinterpret_cast<uint64_t>(s.frames), s.mkey, 64,
                                                  DOCA_GPUNETIO_ETH_SEND_FLAG_NONE),
            DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_eth_txq_poll_completion(s.h, 0, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB, &done),
            DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_eth_txq_poll_completion(s.h, 65, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB, &done),
            DOCA_ERROR_INVALID_VALUE);  // more than the ring holds
  EXPECT_EQ(doca_gpu_dev_eth_txq_poll_completion(nullptr, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB, &done),
            DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_eth_txq_poll_completion_at(nullptr, 0, DOCA_GPUNETIO_ETH_WAIT_FLAG_NB),
            DOCA_ERROR_INVALID_VALUE);
  uint64_t ts = 0;
  EXPECT_EQ(doca_eth_txq_calculate_timestamp(s.txq, gnio::tx_clock_ns(), &ts),
            DOCA_ERROR_BAD_STATE);  // wait on time is off
  EXPECT_EQ(doca_eth_txq_set_l3_chksum_offload(s.txq, 1),
            DOCA_ERROR_BAD_STATE);  // the context runs
  EXPECT_EQ(doca_eth_txq_destroy(s.txq), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_dev_close(s.dev), DOCA_ERROR_IN_USE);
  EXPECT_EQ(doca_eth_txq_gpu_cpu_proxy_progress(s.txq), DOCA_SUCCESS);

  s.close();
  const auto frames = read_capture(out);
  ASSERT_EQ(frames.size(), 6u);
  for (uint32_t i = 0; i < 6; ++i) {
    uint8_t want[k_frame_bytes];
    fill_frame(want, i);
    EXPECT_EQ(frames[i].bytes, std::vector<uint8_t>(want, want + k_frame_bytes)) << "frame " << i;
  }
  fs::remove(out);
}

// send_wait_time on a capture file: the times calculate_timestamp gives are
// the CLOCK_REALTIME nanoseconds asked for, wait_send puts them on the
// frames, and the pcap backend writes them as the frames' timestamps.
TEST(DocaCompat, SendWaitTimeStampsTheCapture) {
  const std::string out = temp_capture("send_wait_time");
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:tx=" + out);
  send_setup s;
  ASSERT_NO_FATAL_FAILURE(s.open(4, true));
  // An hour ahead, nanoseconds apart: the capture takes them as they are.
  const uint64_t base = gnio::tx_clock_ns() + 3'600'000'000'000ull;
  uint64_t times[4];
  for (uint32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(doca_eth_txq_calculate_timestamp(s.txq, base + i * 1'000'003ull, &times[i]), DOCA_SUCCESS);
    EXPECT_EQ(times[i], base + i * 1'000'003ull);
  }
  uint64_t bad = 0;
  EXPECT_EQ(doca_eth_txq_calculate_timestamp(s.txq, 0, &bad), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_eth_txq_calculate_timestamp(s.txq, base, nullptr), DOCA_ERROR_INVALID_VALUE);
  for (uint32_t i = 0; i < 4; ++i) {
    doca_gpu_dev_eth_ticket_t t = 0;
    doca_gpu_dev_eth_txq_wait_send<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_CTA, DOCA_GPUNETIO_ETH_SYNC_SCOPE_CTA,
                                   DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, DOCA_GPUNETIO_ETH_EXEC_SCOPE_BLOCK>(
        s.h, times[i], reinterpret_cast<uint64_t>(s.frames + i * k_frame_bytes), s.mkey, k_frame_bytes,
        i == 3 ? DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY : DOCA_GPUNETIO_ETH_SEND_FLAG_NONE, &t);
  }
  uint32_t done = 0;
  ASSERT_EQ(doca_gpu_dev_eth_txq_poll_completion<DOCA_GPUNETIO_ETH_CQ_POLL_LAST>(s.h, 1, DOCA_GPUNETIO_ETH_WAIT_FLAG_B,
                                                                                 &done),
            DOCA_SUCCESS);
  EXPECT_EQ(done, 1u);
  s.close();
  const auto frames = read_capture(out);
  ASSERT_EQ(frames.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(frames[i].ts_ns, times[i]) << "frame " << i;
    uint8_t want[k_frame_bytes];
    fill_frame(want, i);
    EXPECT_EQ(frames[i].bytes, std::vector<uint8_t>(want, want + k_frame_bytes));
  }
  fs::remove(out);
}

// Sharing mode GPU at thread scope: host threads standing in for GPU threads
// send at once through the queue's producer lock; every frame is written
// once, and every NOTIFY send is counted.
TEST(DocaCompat, ConcurrentThreadScopeSendsShareTheQueue) {
  const std::string out = temp_capture("shared_send");
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:tx=" + out);
  send_setup s;
  ASSERT_NO_FATAL_FAILURE(s.open(2, false));
  constexpr uint32_t k_per_thread = 200;  // more than the ring's 64
  std::vector<std::thread> senders;
  for (uint32_t t = 0; t < 2; ++t)
    senders.emplace_back([&s, t] {
      for (uint32_t i = 0; i < k_per_thread; ++i)
        doca_gpu_dev_eth_txq_send<DOCA_GPUNETIO_ETH_RESOURCE_SHARING_MODE_GPU, DOCA_GPUNETIO_ETH_SYNC_SCOPE_GPU,
                                  DOCA_GPUNETIO_ETH_NIC_HANDLER_AUTO, DOCA_GPUNETIO_ETH_EXEC_SCOPE_THREAD>(
            s.h, reinterpret_cast<uint64_t>(s.frames + t * k_frame_bytes), s.mkey, k_frame_bytes,
            DOCA_GPUNETIO_ETH_SEND_FLAG_NOTIFY, nullptr);
    });
  for (auto& t : senders) t.join();
  uint32_t done = 0, total = 0;
  for (uint32_t i = 0; i < 2 * k_per_thread / 50; ++i) {
    ASSERT_EQ(doca_gpu_dev_eth_txq_poll_completion(s.h, 50, DOCA_GPUNETIO_ETH_WAIT_FLAG_B, &done), DOCA_SUCCESS);
    total += done;
  }
  EXPECT_EQ(total, 2 * k_per_thread);
  s.close();
  const auto frames = read_capture(out);
  ASSERT_EQ(frames.size(), 2 * k_per_thread);
  uint32_t per[2] = {0, 0};
  for (const auto& f : frames) {
    ASSERT_EQ(f.bytes.size(), k_frame_bytes);
    per[f.bytes[k_frame_bytes - 1] == static_cast<uint8_t>((k_frame_bytes - 1) * 7 + 1)]++;
  }
  EXPECT_EQ(per[0], k_per_thread);
  EXPECT_EQ(per[1], k_per_thread);
  fs::remove(out);
}

// Creation arguments, and wait on time where the port has no use for times.
TEST(DocaCompat, TxQueueArgumentsAndWaitOnTimeCapability) {
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:file=x.pcap;cb:00.0=af_packet:if=lo");
  doca_dev* dev = open_dev("ca:00.0");
  ASSERT_NE(dev, nullptr);
  doca_eth_txq* q = nullptr;
  EXPECT_EQ(doca_eth_txq_create(nullptr, 64, &q), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_eth_txq_create(dev, 0, &q), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_eth_txq_create(dev, 65536, &q), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_eth_txq_create(dev, 100, &q), DOCA_SUCCESS);
  doca_eth_wait_on_time_type mode = DOCA_ETH_WAIT_ON_TIME_TYPE_NATIVE;
  ASSERT_EQ(doca_eth_txq_cap_get_wait_on_time_offload_supported(doca_dev_as_devinfo(dev), &mode), DOCA_SUCCESS);
  EXPECT_EQ(mode, DOCA_ETH_WAIT_ON_TIME_TYPE_NONE);  // a capture it only reads
  EXPECT_EQ(doca_eth_txq_set_wait_on_time_offload(q), DOCA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(doca_eth_txq_cap_get_wait_on_time_offload_supported(nullptr, &mode), DOCA_ERROR_INVALID_VALUE);
  doca_gpu_eth_txq* h = nullptr;
  EXPECT_EQ(doca_eth_txq_get_gpu_handle(q, &h), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_ctx_start(doca_eth_txq_as_doca_ctx(q)),
            DOCA_ERROR_NOT_SUPPORTED);  // no GPU data path
  EXPECT_EQ(doca_eth_txq_set_type(q, DOCA_ETH_TXQ_TYPE_REGULAR), DOCA_SUCCESS);
  EXPECT_EQ(doca_eth_txq_gpu_set_uar_on_cpu(q), DOCA_SUCCESS);
  EXPECT_EQ(doca_eth_txq_destroy(q), DOCA_SUCCESS);
  EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);

  doca_dev* live = open_dev("cb:00.0");
  ASSERT_NE(live, nullptr);
  ASSERT_EQ(doca_eth_txq_cap_get_wait_on_time_offload_supported(doca_dev_as_devinfo(live), &mode), DOCA_SUCCESS);
  EXPECT_EQ(mode, DOCA_ETH_WAIT_ON_TIME_TYPE_NATIVE);  // the engine holds frames
  EXPECT_EQ(doca_dev_close(live), DOCA_SUCCESS);
}

struct argp_cfg {
  std::string gpu, nic;
  int scope = -1;
  bool verbose = false;
};

doca_error_t on_gpu(void* p, void* c) {
  static_cast<argp_cfg*>(c)->gpu = static_cast<char*>(p);
  return DOCA_SUCCESS;
}
doca_error_t on_nic(void* p, void* c) {
  static_cast<argp_cfg*>(c)->nic = static_cast<char*>(p);
  return DOCA_SUCCESS;
}
doca_error_t on_scope(void* p, void* c) {
  static_cast<argp_cfg*>(c)->scope = *static_cast<int*>(p);
  return DOCA_SUCCESS;
}
doca_error_t on_verbose(void* p, void* c) {
  static_cast<argp_cfg*>(c)->verbose = *static_cast<bool*>(p);
  return DOCA_SUCCESS;
}

doca_error_t parse(argp_cfg& cfg, std::vector<std::string> args) {
  EXPECT_EQ(doca_argp_init("test", &cfg), DOCA_SUCCESS);
  struct spec {
    const char *s, *l;
    doca_argp_type t;
    doca_argp_param_cb_t cb;
    bool mandatory;
  };
  for (const spec& s :
       {spec{"g", "gpu", DOCA_ARGP_TYPE_STRING, on_gpu, true}, spec{"n", "nic", DOCA_ARGP_TYPE_STRING, on_nic, true},
        spec{"e", "exec-scope", DOCA_ARGP_TYPE_INT, on_scope, false},
        spec{"v", "verbose", DOCA_ARGP_TYPE_BOOLEAN, on_verbose, false}}) {
    doca_argp_param* p = nullptr;
    EXPECT_EQ(doca_argp_param_create(&p), DOCA_SUCCESS);
    doca_argp_param_set_short_name(p, s.s);
    doca_argp_param_set_long_name(p, s.l);
    doca_argp_param_set_type(p, s.t);
    doca_argp_param_set_callback(p, s.cb);
    if (s.mandatory) doca_argp_param_set_mandatory(p);
    EXPECT_EQ(doca_argp_register_param(p), DOCA_SUCCESS);
  }
  std::vector<char*> argv;
  args.insert(args.begin(), "prog");
  for (auto& a : args) argv.push_back(a.data());
  const doca_error_t r = doca_argp_start(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(doca_argp_destroy(), DOCA_SUCCESS);
  return r;
}

TEST(DocaCompat, ArgpParsesTheSamplesOptions) {
  argp_cfg c;
  ASSERT_EQ(parse(c, {"-g", "ca:00.0", "--nic=17:00.1", "-e", "1", "-v"}), DOCA_SUCCESS);
  EXPECT_EQ(c.gpu, "ca:00.0");
  EXPECT_EQ(c.nic, "17:00.1");
  EXPECT_EQ(c.scope, 1);
  EXPECT_TRUE(c.verbose);
  argp_cfg d;
  EXPECT_EQ(parse(d, {"-g", "ca:00.0"}),
            DOCA_ERROR_INVALID_VALUE);  // --nic is mandatory
  argp_cfg e;
  EXPECT_EQ(parse(e, {"-g", "a", "-n", "b", "--bogus"}), DOCA_ERROR_INVALID_VALUE);
  argp_cfg f;
  EXPECT_EQ(parse(f, {"-g", "a", "-n", "b", "-e", "x"}), DOCA_ERROR_INVALID_VALUE);
}

// What the application's receive kernels hand the CPU per item (like its
// UDP statistics): counters, 16-byte aligned records.
struct sem_stats {
  uint64_t seq;
  uint64_t bytes;
  uint32_t packets;
};

// The application's semaphore hand-off, with a host thread playing the
// kernel: it fills the items of a ring of 8 in order through the device
// calls (waiting for FREE, writing the custom info, marking READY), and the
// CPU reads 1000 of them in order with the host calls, checks each one's
// custom info and marks it FREE again.
TEST(DocaCompat, SemaphoreHandsItemsFromKernelToCpu) {
  doca_gpu* g = nullptr;
  ASSERT_EQ(doca_gpu_create("host", &g), DOCA_SUCCESS);
  doca_gpu_semaphore* sem = nullptr;
  EXPECT_EQ(doca_gpu_semaphore_create(nullptr, &sem), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_gpu_semaphore_create(g, &sem), DOCA_SUCCESS);
  doca_gpu_semaphore_gpu* h = nullptr;
  doca_gpu_semaphore_status st = DOCA_GPU_SEMAPHORE_STATUS_ERROR;
  void* custom = nullptr;
  EXPECT_EQ(doca_gpu_semaphore_get_gpu_handle(sem, &h), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_get_status(sem, 0, &st), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_stop(sem), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_start(sem), DOCA_ERROR_BAD_STATE);  // no number of items
  EXPECT_EQ(doca_gpu_semaphore_set_items_num(sem, 0), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_set_items_num(sem, (1u << 20) + 1), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_set_memory_type(sem, static_cast<doca_gpu_mem_type>(7)), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_set_custom_info(sem, 0, DOCA_GPU_MEM_TYPE_CPU_GPU), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_set_custom_info(sem, (1u << 16) + 1, DOCA_GPU_MEM_TYPE_CPU_GPU),
            DOCA_ERROR_INVALID_VALUE);
  constexpr uint32_t k_items = 8;
  ASSERT_EQ(doca_gpu_semaphore_set_memory_type(sem, DOCA_GPU_MEM_TYPE_CPU_GPU), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_set_items_num(sem, k_items), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_set_custom_info(sem, sizeof(sem_stats), DOCA_GPU_MEM_TYPE_CPU_GPU), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_start(sem), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_semaphore_start(sem), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_set_items_num(sem, 4), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_set_memory_type(sem, DOCA_GPU_MEM_TYPE_GPU), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_set_custom_info(sem, 8, DOCA_GPU_MEM_TYPE_CPU_GPU), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_destroy(sem), DOCA_ERROR_BAD_STATE);  // still started
  EXPECT_EQ(doca_gpu_semaphore_get_gpu_handle(sem, nullptr), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_gpu_semaphore_get_gpu_handle(sem, &h), DOCA_SUCCESS);
  ASSERT_NE(h, nullptr);

  // Every item starts FREE with zeroed custom info, on both sides.
  for (uint32_t i = 0; i < k_items; ++i) {
    ASSERT_EQ(doca_gpu_semaphore_get_status(sem, i, &st), DOCA_SUCCESS);
    EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_FREE);
    ASSERT_EQ(doca_gpu_dev_semaphore_get_status(h, i, &st), DOCA_SUCCESS);
    EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_FREE);
    ASSERT_EQ(doca_gpu_semaphore_get_custom_info_addr(sem, i, &custom), DOCA_SUCCESS);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(custom) % 16, 0u);
    EXPECT_EQ(static_cast<const sem_stats*>(custom)->seq, 0u);
  }
  // Bad arguments, host and device.
  EXPECT_EQ(doca_gpu_semaphore_get_status(sem, k_items, &st), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_get_status(sem, 0, nullptr), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_get_status(nullptr, 0, &st), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_set_status(sem, k_items, DOCA_GPU_SEMAPHORE_STATUS_FREE), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_set_status(sem, 0, static_cast<doca_gpu_semaphore_status>(6)), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_get_custom_info_addr(sem, k_items, &custom), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_semaphore_get_status(h, k_items, &st), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_semaphore_get_status(nullptr, 0, &st), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_semaphore_set_status(h, k_items, DOCA_GPU_SEMAPHORE_STATUS_READY), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_semaphore_set_status(h, 0, static_cast<doca_gpu_semaphore_status>(9)),
            DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_semaphore_get_custom_info_addr(h, k_items, &custom), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_semaphore_get_custom_info_addr(nullptr, 0, &custom), DOCA_ERROR_INVALID_VALUE);
  // Nothing above changed an item.
  for (uint32_t i = 0; i < k_items; ++i) {
    ASSERT_EQ(doca_gpu_semaphore_get_status(sem, i, &st), DOCA_SUCCESS);
    EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_FREE);
  }

  constexpr uint32_t k_total = 1000;
  std::atomic<bool> kernel_failed{false};
  std::thread kernel([h, &kernel_failed] {
    for (uint32_t n = 0; n < k_total; ++n) {
      const uint32_t idx = n % k_items;
      doca_gpu_semaphore_status s = DOCA_GPU_SEMAPHORE_STATUS_READY;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      do {
        if (doca_gpu_dev_semaphore_get_status(h, idx, &s) != DOCA_SUCCESS ||
            std::chrono::steady_clock::now() > deadline) {
          kernel_failed = true;
          return;
        }
      } while (s != DOCA_GPU_SEMAPHORE_STATUS_FREE);
      void* addr = nullptr;
      if (doca_gpu_dev_semaphore_get_custom_info_addr(h, idx, &addr) != DOCA_SUCCESS) {
        kernel_failed = true;
        return;
      }
      auto* stats = static_cast<sem_stats*>(addr);
      stats->seq = n + 1;
      stats->bytes = uint64_t{n} * 60;
      stats->packets = n % 32;
      if (doca_gpu_dev_semaphore_set_status(h, idx, DOCA_GPU_SEMAPHORE_STATUS_READY) != DOCA_SUCCESS) {
        kernel_failed = true;
        return;
      }
    }
  });
  uint32_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (got < k_total && std::chrono::steady_clock::now() < deadline && !kernel_failed) {
    const uint32_t idx = got % k_items;
    ASSERT_EQ(doca_gpu_semaphore_get_status(sem, idx, &st), DOCA_SUCCESS);
    if (st != DOCA_GPU_SEMAPHORE_STATUS_READY) {
      EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_FREE) << "item " << got;
      continue;
    }
    ASSERT_EQ(doca_gpu_semaphore_get_custom_info_addr(sem, idx, &custom), DOCA_SUCCESS);
    const auto* stats = static_cast<const sem_stats*>(custom);
    EXPECT_EQ(stats->seq, got + 1u) << "items arrive in order, each with its own custom info";
    EXPECT_EQ(stats->bytes, uint64_t{got} * 60);
    EXPECT_EQ(stats->packets, got % 32);
    ASSERT_EQ(doca_gpu_semaphore_set_status(sem, idx, DOCA_GPU_SEMAPHORE_STATUS_FREE), DOCA_SUCCESS);
    ++got;
  }
  kernel.join();
  EXPECT_FALSE(kernel_failed.load());
  EXPECT_EQ(got, k_total);

  // The other statuses pass both ways: the CPU marks DONE and EXIT, a
  // kernel reads them; a kernel marks HOLD, the CPU reads it.
  ASSERT_EQ(doca_gpu_semaphore_set_status(sem, 3, DOCA_GPU_SEMAPHORE_STATUS_DONE), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_set_status(sem, 4, DOCA_GPU_SEMAPHORE_STATUS_EXIT), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_dev_semaphore_get_status(h, 3, &st), DOCA_SUCCESS);
  EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_DONE);
  ASSERT_EQ(doca_gpu_dev_semaphore_get_status(h, 4, &st), DOCA_SUCCESS);
  EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_EXIT);
  ASSERT_EQ(doca_gpu_dev_semaphore_set_status(h, 5, DOCA_GPU_SEMAPHORE_STATUS_HOLD), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_get_status(sem, 5, &st), DOCA_SUCCESS);
  EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_HOLD);

  EXPECT_EQ(doca_gpu_semaphore_stop(sem), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_semaphore_stop(sem), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_get_status(sem, 0, &st), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_gpu_semaphore_get_gpu_handle(sem, &h), DOCA_ERROR_BAD_STATE);
  // Restarted, it starts over: every item FREE.
  ASSERT_EQ(doca_gpu_semaphore_start(sem), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_get_status(sem, 5, &st), DOCA_SUCCESS);
  EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_FREE);
  EXPECT_EQ(doca_gpu_semaphore_stop(sem), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_semaphore_destroy(sem), DOCA_SUCCESS);

  // GPU memory (the application's HTTP hand-off between kernels), no custom
  // info: statuses pass from one kernel to another; asking for custom info
  // is an error on both sides.
  ASSERT_EQ(doca_gpu_semaphore_create(g, &sem), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_set_memory_type(sem, DOCA_GPU_MEM_TYPE_GPU), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_set_items_num(sem, 2), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_start(sem), DOCA_SUCCESS);
  ASSERT_EQ(doca_gpu_semaphore_get_gpu_handle(sem, &h), DOCA_SUCCESS);
  std::thread producer([h] { (void)doca_gpu_dev_semaphore_set_status(h, 1, DOCA_GPU_SEMAPHORE_STATUS_READY); });
  producer.join();
  ASSERT_EQ(doca_gpu_dev_semaphore_get_status(h, 1, &st), DOCA_SUCCESS);
  EXPECT_EQ(st, DOCA_GPU_SEMAPHORE_STATUS_READY);
  EXPECT_EQ(doca_gpu_dev_semaphore_get_custom_info_addr(h, 0, &custom), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_get_custom_info_addr(sem, 0, &custom), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_semaphore_stop(sem), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_semaphore_destroy(sem), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_destroy(g), DOCA_SUCCESS);
}

// The application's HTTP reply buffers: a buffer array over a started mmap
// of GPU memory, addressed element by element by a kernel (a host thread
// here), with the calls out of order and the application's teardown order
// (the mmap destroyed before the array stops).
TEST(DocaCompat, BufferArrayAddressesTheMmapsElements) {
  scoped_env env("GNIO_DOCA_DEVICES", "ca:00.0=pcap:file=" + data_dir() + "/http.pcap");
  doca_dev* dev = open_dev("ca:00.0");
  ASSERT_NE(dev, nullptr);
  doca_gpu* g = nullptr;
  ASSERT_EQ(doca_gpu_create("host", &g), DOCA_SUCCESS);
  constexpr size_t k_bytes = 16384, k_elem = 1024, k_offset = 512, k_num = 15;
  void *gpu_ptr = nullptr, *cpu_ptr = nullptr;
  ASSERT_EQ(doca_gpu_mem_alloc(g, k_bytes, 4096, DOCA_GPU_MEM_TYPE_GPU_CPU, &gpu_ptr, &cpu_ptr), DOCA_SUCCESS);
  doca_mmap* mmap = nullptr;
  ASSERT_EQ(doca_mmap_create(&mmap), DOCA_SUCCESS);
  ASSERT_EQ(doca_mmap_add_dev(mmap, dev), DOCA_SUCCESS);
  ASSERT_EQ(doca_mmap_set_memrange(mmap, gpu_ptr, k_bytes), DOCA_SUCCESS);
  ASSERT_EQ(doca_mmap_set_permissions(mmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING),
            DOCA_SUCCESS);

  doca_buf_arr* arr = nullptr;
  doca_gpu_buf_arr* h = nullptr;
  EXPECT_EQ(doca_buf_arr_create(0, &arr), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_arr_create(k_num, nullptr), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_buf_arr_create(k_num, &arr), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_get_gpu_handle(arr, &h), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_arr_stop(arr), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_arr_start(arr), DOCA_ERROR_BAD_STATE);  // no mmap
  EXPECT_EQ(doca_buf_arr_set_params(arr, nullptr, k_elem, 0), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_arr_set_params(arr, mmap, 0, 0), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_arr_set_target_gpu(arr, nullptr), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_buf_arr_set_params(arr, mmap, k_elem, k_offset), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_start(arr), DOCA_ERROR_BAD_STATE);  // no target GPU
  ASSERT_EQ(doca_buf_arr_set_target_gpu(arr, g), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_start(arr), DOCA_ERROR_BAD_STATE);  // the mmap is not started
  ASSERT_EQ(doca_mmap_start(mmap), DOCA_SUCCESS);
  uint32_t mkey = 0;
  ASSERT_EQ(doca_mmap_get_mkey(mmap, dev, &mkey), DOCA_SUCCESS);

  // One element more than the range holds after the offset.
  doca_buf_arr* big = nullptr;
  ASSERT_EQ(doca_buf_arr_create(k_num + 1, &big), DOCA_SUCCESS);
  ASSERT_EQ(doca_buf_arr_set_params(big, mmap, k_elem, k_offset), DOCA_SUCCESS);
  ASSERT_EQ(doca_buf_arr_set_target_gpu(big, g), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_start(big), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_buf_arr_set_params(big, mmap, k_elem, k_bytes + 1), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_start(big), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_arr_destroy(big), DOCA_SUCCESS);

  ASSERT_EQ(doca_buf_arr_start(arr), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_start(arr), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_arr_set_params(arr, mmap, 64, 0), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_arr_set_target_gpu(arr, g), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_arr_destroy(arr), DOCA_ERROR_BAD_STATE);  // still started
  ASSERT_EQ(doca_buf_arr_get_gpu_handle(arr, &h), DOCA_SUCCESS);
  ASSERT_NE(h, nullptr);

  // The kernel writes each element's index into its first and last byte
  // through the address the device calls give.
  std::atomic<int> kernel_errors{0};
  std::thread kernel([h, &kernel_errors, mkey] {
    for (uint64_t i = 0; i < k_num; ++i) {
      doca_gpu_buf* buf = nullptr;
      uintptr_t addr = 0;
      uint32_t key = 0;
      if (doca_gpu_dev_buf_get_buf(h, i, &buf) != DOCA_SUCCESS ||
          doca_gpu_dev_buf_get_addr(buf, &addr) != DOCA_SUCCESS ||
          doca_gpu_dev_buf_get_mkey(buf, &key) != DOCA_SUCCESS || key != htonl(mkey)) {
        ++kernel_errors;
        continue;
      }
      auto* p = reinterpret_cast<uint8_t*>(addr);
      p[0] = static_cast<uint8_t>(i + 1);
      p[k_elem - 1] = static_cast<uint8_t>(0x80 + i);
    }
  });
  kernel.join();
  EXPECT_EQ(kernel_errors.load(), 0);
  const auto base = reinterpret_cast<uintptr_t>(gpu_ptr);
  for (uint64_t i = 0; i < k_num; ++i) {
    doca_gpu_buf* buf = nullptr;
    uintptr_t addr = 0;
    uint32_t key = 0;
    ASSERT_EQ(doca_gpu_dev_buf_get_buf(h, i, &buf), DOCA_SUCCESS);
    ASSERT_EQ(doca_gpu_dev_buf_get_addr(buf, &addr), DOCA_SUCCESS);
    ASSERT_EQ(doca_gpu_dev_buf_get_mkey(buf, &key), DOCA_SUCCESS);
    EXPECT_EQ(addr, base + k_offset + i * k_elem) << "element " << i;
    EXPECT_LE(addr + k_elem, base + k_bytes);
    EXPECT_EQ(key, htonl(mkey)) << "the mmap's key, in the byte order the send calls take";
    const auto* c = static_cast<const uint8_t*>(cpu_ptr) + k_offset + i * k_elem;
    EXPECT_EQ(c[0], i + 1) << "the CPU sees what the kernel wrote at element " << i;
    EXPECT_EQ(c[k_elem - 1], 0x80 + i);
  }
  EXPECT_EQ(static_cast<const uint8_t*>(cpu_ptr)[0], 0) << "nothing before the offset was written";
  doca_gpu_buf* buf = nullptr;
  uintptr_t addr = 0;
  uint32_t key = 0;
  EXPECT_EQ(doca_gpu_dev_buf_get_buf(h, k_num, &buf), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_buf_get_buf(nullptr, 0, &buf), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_buf_get_buf(h, 0, nullptr), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_buf_get_addr(nullptr, &addr), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_gpu_dev_buf_get_mkey(nullptr, &key), DOCA_ERROR_INVALID_VALUE);

  // The application's teardown: the mmap goes first.
  EXPECT_EQ(doca_mmap_stop(mmap), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_rm_dev(mmap, dev), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_destroy(mmap), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_stop(arr), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_arr_get_gpu_handle(arr, &h), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_arr_destroy(arr), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_mem_free(g, gpu_ptr), DOCA_SUCCESS);
  EXPECT_EQ(doca_dev_close(dev), DOCA_SUCCESS);
  EXPECT_EQ(doca_gpu_destroy(g), DOCA_SUCCESS);
}

// The application's CPU buffer pool (its TCP ACK packets): buffers laid out
// over a started mmap of host memory, handed out lowest first, data length
// set within the element, given back at refcount 0.
TEST(DocaCompat, BufferPoolHandsOutTheMmapsElements) {
  constexpr size_t k_num = 4, k_elem = 256;
  std::vector<uint8_t> mem(k_num * k_elem + 100);
  doca_mmap* mmap = nullptr;
  ASSERT_EQ(doca_mmap_create(&mmap), DOCA_SUCCESS);
  ASSERT_EQ(doca_mmap_set_memrange(mmap, mem.data(), mem.size()), DOCA_SUCCESS);
  doca_buf_pool* pool = nullptr;
  doca_buf* buf = nullptr;
  EXPECT_EQ(doca_buf_pool_create(0, k_elem, mmap, &pool), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_pool_create(k_num, 0, mmap, &pool), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_pool_create(k_num, k_elem, nullptr, &pool), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_buf_pool_create(k_num, k_elem, mmap, &pool), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_pool_buf_alloc(pool, &buf), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_pool_stop(pool), DOCA_ERROR_BAD_STATE);
  EXPECT_EQ(doca_buf_pool_start(pool), DOCA_ERROR_BAD_STATE);  // the mmap is not started
  ASSERT_EQ(doca_mmap_start(mmap), DOCA_SUCCESS);
  doca_buf_pool* big = nullptr;
  ASSERT_EQ(doca_buf_pool_create(k_num + 1, k_elem, mmap, &big), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_pool_start(big), DOCA_ERROR_INVALID_VALUE);  // more than the range holds
  EXPECT_EQ(doca_buf_pool_destroy(big), DOCA_SUCCESS);
  ASSERT_EQ(doca_buf_pool_start(pool), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_pool_start(pool), DOCA_ERROR_BAD_STATE);

  doca_buf* bufs[k_num] = {};
  for (size_t i = 0; i < k_num; ++i) {
    ASSERT_EQ(doca_buf_pool_buf_alloc(pool, &bufs[i]), DOCA_SUCCESS);
    void* data = nullptr;
    size_t len = 1;
    ASSERT_EQ(doca_buf_get_data(bufs[i], &data), DOCA_SUCCESS);
    ASSERT_EQ(doca_buf_get_data_len(bufs[i], &len), DOCA_SUCCESS);
    EXPECT_EQ(data, mem.data() + i * k_elem) << "buffer " << i;
    EXPECT_EQ(len, 0u);
  }
  EXPECT_EQ(doca_buf_pool_buf_alloc(pool, &buf), DOCA_ERROR_EMPTY);

  // The data length stays within the element; set_data moves the start.
  size_t len = 0;
  EXPECT_EQ(doca_buf_set_data_len(bufs[1], k_elem + 1), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_buf_set_data_len(bufs[1], 54), DOCA_SUCCESS);
  ASSERT_EQ(doca_buf_get_data_len(bufs[1], &len), DOCA_SUCCESS);
  EXPECT_EQ(len, 54u);
  uint8_t* head1 = mem.data() + k_elem;
  EXPECT_EQ(doca_buf_set_data(bufs[1], head1 + 16, k_elem - 15), DOCA_ERROR_INVALID_VALUE);
  EXPECT_EQ(doca_buf_set_data(bufs[1], head1 - 1, 1), DOCA_ERROR_INVALID_VALUE);
  ASSERT_EQ(doca_buf_set_data(bufs[1], head1 + 16, k_elem - 16), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_set_data_len(bufs[1], k_elem - 15), DOCA_ERROR_INVALID_VALUE);
  void* data = nullptr;
  ASSERT_EQ(doca_buf_get_data(bufs[1], &data), DOCA_SUCCESS);
  EXPECT_EQ(data, head1 + 16);
  EXPECT_EQ(doca_buf_chain_list(bufs[0], bufs[1]), DOCA_ERROR_NOT_SUPPORTED);

  EXPECT_EQ(doca_buf_pool_stop(pool), DOCA_ERROR_IN_USE);  // buffers are out
  EXPECT_EQ(doca_buf_pool_destroy(pool), DOCA_ERROR_BAD_STATE);
  uint16_t refs = 9;
  ASSERT_EQ(doca_buf_dec_refcount(bufs[1], &refs), DOCA_SUCCESS);
  EXPECT_EQ(refs, 0u);
  EXPECT_EQ(doca_buf_dec_refcount(bufs[1], nullptr), DOCA_ERROR_BAD_STATE);  // already back
  // The buffer given back comes out again, reset.
  ASSERT_EQ(doca_buf_pool_buf_alloc(pool, &buf), DOCA_SUCCESS);
  EXPECT_EQ(buf, bufs[1]);
  ASSERT_EQ(doca_buf_get_data(buf, &data), DOCA_SUCCESS);
  ASSERT_EQ(doca_buf_get_data_len(buf, &len), DOCA_SUCCESS);
  EXPECT_EQ(data, head1);
  EXPECT_EQ(len, 0u);
  for (auto* b : bufs) EXPECT_EQ(doca_buf_dec_refcount(b, nullptr), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_pool_stop(pool), DOCA_SUCCESS);
  EXPECT_EQ(doca_buf_pool_destroy(pool), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_stop(mmap), DOCA_SUCCESS);
  EXPECT_EQ(doca_mmap_destroy(mmap), DOCA_SUCCESS);
}

}  // namespace
