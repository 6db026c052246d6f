// SPDX-License-Identifier: Apache-2.0
// The metrics text's pieces that need no server: the port label (backend and
// what it opens, never a setting or a path) and the exposition format's
// escaping. Scrapes of the running programs, promtool and a real Prometheus
// are tests/integration/metrics_test.py.
#include <gtest/gtest.h>

#include "metrics.hpp"

namespace metrics = gnio::metrics;

TEST(PortLabel, NamesTheBackendAndWhatItOpens) {
  EXPECT_EQ(metrics::port_label("af_packet:if=eth0,queues=4,blocks=64"), "af_packet:eth0");
  EXPECT_EQ(metrics::port_label("af_xdp:if=veth1,queue=0,mode=skb"), "af_xdp:veth1");
  EXPECT_EQ(metrics::port_label("pcap:file=/data/captures/http.pcap,loop=3"), "pcap:http.pcap");
  EXPECT_EQ(metrics::port_label("pcap:rx=in.pcap,tx=/tmp/out.pcap"), "pcap:in.pcap");
  EXPECT_EQ(metrics::port_label("dpdk:port=0,queues=2"), "dpdk:0");
  EXPECT_EQ(metrics::port_label("dpdk:vdev=net_null0,queues=2"), "dpdk:net_null0");
  EXPECT_EQ(metrics::port_label("pair:name=a"), "pair:a");
  EXPECT_EQ(metrics::port_label("gen:mix=all,flows=64,rate=1Mpps"), "gen");
  EXPECT_EQ(metrics::port_label("gen:"), "gen");
}

TEST(Text, OneHelpAndTypePerFamilyAndEscapedLabelValues) {
  metrics::text t;
  t.family("gnio_x_total", "counter", "A help with a \\ and a\nnewline.")
      .sample({{"port", "pcap:a\"b\\c\nd"}}, uint64_t{3})
      .sample({{"port", "gen"}}, uint64_t{4});
  EXPECT_EQ(t.str(),
            "# HELP gnio_x_total A help with a \\\\ and a\\nnewline.\n"
            "# TYPE gnio_x_total counter\n"
            "gnio_x_total{port=\"pcap:a\\\"b\\\\c\\nd\"} 3\n"
            "gnio_x_total{port=\"gen\"} 4\n");
}
