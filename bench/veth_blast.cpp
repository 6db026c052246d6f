// SPDX-License-Identifier: Apache-2.0
// veth_blast: sends Ethernet/IPv4/UDP frames as fast as one thread can, through
// a packet socket with sendmmsg(), for a fixed time; the load generator of
// bench/veth_rx.sh (Debian has no pktgen userland, and tcpreplay's per-packet
// pacing tops out far below what a veth takes).
//
//   veth_blast IFNAME SIZE SECONDS [FLOWS]
//
// Prints one JSON object: frames sent, send errors, seconds, packets/s.
// Frames go only to IFNAME, which the caller owns (a veth end in a namespace).
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif

namespace {

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

uint16_t ip_checksum(const uint8_t* h, size_t n) {
  uint32_t s = 0;
  for (size_t i = 0; i + 1 < n; i += 2) s += static_cast<uint32_t>(h[i] << 8 | h[i + 1]);
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return static_cast<uint16_t>(~s);
}

// A frame of `size` bytes (without FCS) for flow f: the source address and
// port vary with f so receivers that steer by flow see many flows.
std::vector<uint8_t> make_frame(uint32_t size, uint32_t f) {
  std::vector<uint8_t> b(size, 0);
  const uint8_t dst[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01}, src[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  std::memcpy(b.data(), dst, 6);
  std::memcpy(b.data() + 6, src, 6);
  b[12] = 0x08;
  const uint32_t ip_len = size - 14;
  uint8_t* ip = b.data() + 14;
  ip[0] = 0x45;
  ip[2] = static_cast<uint8_t>(ip_len >> 8);
  ip[3] = static_cast<uint8_t>(ip_len);
  ip[6] = 0x40;
  ip[8] = 64;
  ip[9] = 17;
  ip[12] = 198, ip[13] = 18, ip[14] = static_cast<uint8_t>(f >> 8), ip[15] = static_cast<uint8_t>(f);
  ip[16] = 198, ip[17] = 19, ip[18] = 0, ip[19] = 1;
  const uint16_t c = ip_checksum(ip, 20);
  ip[10] = static_cast<uint8_t>(c >> 8);
  ip[11] = static_cast<uint8_t>(c);
  uint8_t* udp = ip + 20;
  const uint16_t sport = static_cast<uint16_t>(1024 + f), ulen = static_cast<uint16_t>(ip_len - 20);
  udp[0] = static_cast<uint8_t>(sport >> 8), udp[1] = static_cast<uint8_t>(sport);
  udp[2] = 0x30, udp[3] = 0x39;
  udp[4] = static_cast<uint8_t>(ulen >> 8), udp[5] = static_cast<uint8_t>(ulen);
  for (uint32_t i = 42; i < size; ++i) b[i] = static_cast<uint8_t>(i);
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s IFNAME SIZE SECONDS [FLOWS]\n", argv[0]);
    return 2;
  }
  const char* ifname = argv[1];
  const long size = std::strtol(argv[2], nullptr, 10);
  const double seconds = std::strtod(argv[3], nullptr);
  const long flows = argc > 4 ? std::strtol(argv[4], nullptr, 10) : 64;
  if (size < 60 || size > 1514 || !(seconds > 0 && seconds <= 600) || flows < 1 || flows > 65536) {
    std::fprintf(stderr, "veth_blast: SIZE must be 60..1514, SECONDS 0..600, FLOWS 1..65536\n");
    return 2;
  }
  const unsigned idx = if_nametoindex(ifname);
  if (idx == 0) {
    std::fprintf(stderr, "veth_blast: no interface %s: %s\n", ifname, std::strerror(errno));
    return 1;
  }
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);  // protocol 0: send only
  if (fd < 0) {
    std::fprintf(stderr, "veth_blast: socket(AF_PACKET): %s (needs CAP_NET_RAW)\n", std::strerror(errno));
    return 1;
  }
  const int one = 1;
  if (setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one) != 0)
    std::fprintf(stderr, "veth_blast: PACKET_QDISC_BYPASS: %s (sending through the qdisc)\n", std::strerror(errno));
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_ifindex = static_cast<int>(idx);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::fprintf(stderr, "veth_blast: bind to %s: %s\n", ifname, std::strerror(errno));
    return 1;
  }

  constexpr unsigned batch = 256;
  std::vector<std::vector<uint8_t>> frames;
  for (long f = 0; f < flows; ++f) frames.push_back(make_frame(static_cast<uint32_t>(size), static_cast<uint32_t>(f)));
  std::vector<iovec> iov(batch);
  std::vector<mmsghdr> msgs(batch);
  for (unsigned i = 0; i < batch; ++i) {
    auto& fr = frames[i % frames.size()];
    iov[i] = {fr.data(), fr.size()};
    msgs[i] = {};
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  uint64_t sent = 0, errors = 0;
  int last_errno = 0;
  const double t0 = now_s();
  double t = t0;
  // Bounded by time; the clock is read once per batch.
  while (t - t0 < seconds) {
    const int r = sendmmsg(fd, msgs.data(), batch, 0);
    if (r > 0) {
      sent += static_cast<uint64_t>(r);
    } else if (errno != EINTR) {
      ++errors;
      last_errno = errno;
      if (errno != ENOBUFS && errno != EAGAIN) break;
    }
    t = now_s();
  }
  close(fd);
  const double dt = t - t0;
  std::printf(
      "{\"interface\": \"%s\", \"size\": %ld, \"flows\": %ld, \"sent\": %llu, \"send_errors\": %llu, "
      "\"last_error\": \"%s\", \"seconds\": %.6f, \"pps\": %.1f}\n",
      ifname, size, flows, static_cast<unsigned long long>(sent), static_cast<unsigned long long>(errors),
      last_errno ? std::strerror(last_errno) : "", dt, dt > 0 ? static_cast<double>(sent) / dt : 0.0);
  return errors && last_errno != ENOBUFS && last_errno != EAGAIN ? 1 : 0;
}
