// SPDX-License-Identifier: Apache-2.0
// The pcap backend: plays a pcap/pcapng file as the receive side of a port and
// records transmitted frames into a pcap file. pcap files are read and
// written through libpcap; pcapng files are read by pcapng.cpp, which gives
// every interface of the file its own link type (libpcap's handle has one,
// and libpcap 1.10 refuses a later interface whose link type or snap length
// differs from the first one's).

#include <fcntl.h>
#include <pcap/pcap.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gnio/atomic_file.hpp"
#include "gnio/backend/backend.hpp"
#include "gnio/device/pkt/load.hpp"
#include "gnio/backend/log.hpp"
#include "pcap_reader.hpp"

namespace gnio::backend {

namespace {

constexpr uint32_t kMaxFrame = pcap_detail::max_frame_bytes;
constexpr uint32_t kEthHdr = 14;
constexpr uint16_t kEtherIPv4 = 0x0800;
constexpr uint16_t kEtherIPv6 = 0x86DD;
// Pacing may run ahead of a slow poller by at most this much, so a late poll
// catches up without releasing an unbounded burst.
constexpr double kBucketDepthS = 0.010;
// No link carries a frame this long (Linux's largest GSO packet, BIG TCP, is
// 512 KiB): a record claiming more has a damaged or forged length field.
constexpr uint32_t kImplausibleWireLen = 1u << 20;

// The link types this backend can turn into Ethernet frames.
bool supported_linktype(int dlt) {
  switch (dlt) {
    case DLT_EN10MB:
    case DLT_NULL:
    case DLT_LOOP:
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2: return true;
    default: return false;
  }
}

// "RAW (Raw IP, DLT 12)"; a number libpcap has no name for is named by the
// number alone.
std::string linktype_name(int dlt) {
  const char* name = pcap_datalink_val_to_name(dlt);
  if (!name) return fmt::format("{} (a number libpcap has no name for)", dlt);
  const char* desc = pcap_datalink_val_to_description(dlt);
  return desc ? fmt::format("{} ({}, DLT {})", name, desc, dlt) : fmt::format("{} (DLT {})", name, dlt);
}

// The device parser's unchecked loads; every caller has checked caplen.
using device::detail::rd16;
using device::detail::rd32;

uint32_t load_host32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Compressed captures are common (wireshark's test captures, rotated logs) and
// libpcap only says "unknown file format" for them, which sends users looking
// in the wrong place. Reading through a pipe needs no temporary file.
std::string compression_hint(const uint8_t* m, size_t n, const std::string& path) {
  struct format {
    const char *kind, *tool, *cat;
  };
  const format* f = nullptr;
  static constexpr format gzip{"gzip", "gunzip", "zcat"}, zstd{"zstd", "unzstd", "zstdcat"}, xz{"xz", "unxz", "xzcat"},
      bzip2{"bzip2", "bunzip2", "bzcat"};
  if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) f = &gzip;
  else if (n >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) f = &zstd;
  else if (n >= 4 && m[0] == 0xfd && m[1] == '7' && m[2] == 'z' && m[3] == 'X') f = &xz;
  else if (n >= 3 && m[0] == 'B' && m[1] == 'Z' && m[2] == 'h') f = &bzip2;
  if (!f) return {};
  const auto [kind, tool, cat] = *f;
  return fmt::format(
      "{}-compressed: {} it first, or read it through a pipe: file=<({} '{}') (bash), or {} it into "
      "file=/dev/stdin",
      kind, tool, cat, path, cat);
}

// A stream that cannot seek (a pipe, a FIFO, a terminal): the bytes read to
// recognise it are handed to libpcap first, then the rest of the stream, so
// nothing needs to be read twice.
struct peeked_stream {
  int fd = -1;
  uint8_t head[4] = {};
  size_t len = 0, pos = 0;
};

ssize_t peeked_read(void* cookie, char* buf, size_t size) {
  auto* s = static_cast<peeked_stream*>(cookie);
  if (s->pos < s->len) {
    const size_t n = std::min(size, s->len - s->pos);
    std::memcpy(buf, s->head + s->pos, n);
    s->pos += n;
    return static_cast<ssize_t>(n);
  }
  // EINTR is passed on: a stop signal must end a read that blocks.
  return ::read(s->fd, buf, size);
}

int peeked_close(void* cookie) {
  auto* s = static_cast<peeked_stream*>(cookie);
  const int rc = ::close(s->fd);
  delete s;
  return rc;
}

// Up to n bytes from the start of fd, fewer only at the end of the stream;
// -1 with errno on a read error (EINTR included).
ssize_t read_head(int fd, uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out + got, n - got);
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

const char* stream_kind(mode_t m) {
  if (S_ISFIFO(m)) return "a pipe or FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// Opens a capture for reading with nanosecond timestamps and checks that its
// link type can be delivered as Ethernet. Regular files and streams that
// cannot seek (pipes, FIFOs, process substitution) alike: nothing is read
// twice. loops: the loop= value; a stream can be read only once (*replayable
// false), so it must be 1.
error open_capture(const std::string& path, uint64_t loops, std::unique_ptr<pcap_detail::capture>* out,
                   bool* replayable) {
  out->reset();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return fail(status_from_errno(e), "pcap: cannot open capture '{}': {}", path, std::strerror(e));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return fail(status_from_errno(e), "pcap: cannot stat capture '{}': {}", path, std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail(status::bad_config, "pcap: file={} is a directory, not a capture", path);
  }
  const bool regular = S_ISREG(st.st_mode) || S_ISBLK(st.st_mode);
  if (replayable) *replayable = regular;
  if (!regular && loops != 1) {
    ::close(fd);
    return fail(status::bad_config,
                "pcap: loop={} replays the capture, but '{}' is {}, which can be read only once; save it to a file "
                "first, or leave loop= out",
                loops, path, stream_kind(st.st_mode));
  }
  uint8_t magic[4] = {};
  // A file is read at an offset, leaving its position at the start; a stream
  // is read, and what was read is fed back below.
  const ssize_t got = regular ? pread(fd, magic, sizeof magic, 0) : read_head(fd, magic, sizeof magic);
  if (got < 0) {
    const int e = errno;
    ::close(fd);
    return fail(status_from_errno(e), "pcap: cannot read capture '{}': {}", path, std::strerror(e));
  }
  const std::string hint = compression_hint(magic, static_cast<size_t>(got), path);
  if (!hint.empty()) {
    ::close(fd);
    return fail(status::not_supported, "pcap: '{}' is {}", path, hint);
  }
  if (got == 0) {
    ::close(fd);
    return fail(status::bad_config, "pcap: '{}' is empty (0 bytes), not a capture", path);
  }
  FILE* f = nullptr;
  if (regular) {
    f = fdopen(fd, "rb");
  } else {
    auto* s = new peeked_stream;
    s->fd = fd;
    std::memcpy(s->head, magic, static_cast<size_t>(got));
    s->len = static_cast<size_t>(got);
    f = fopencookie(s, "rb", cookie_io_functions_t{peeked_read, nullptr, nullptr, peeked_close});
    if (!f) delete s;
  }
  if (!f) {
    const int e = errno;
    ::close(fd);
    return fail(status::no_memory, "pcap: cannot open capture '{}': {}", path, std::strerror(e));
  }

  return pcap_detail::open_capture_stream(f, magic, static_cast<size_t>(got), path, out);
}

}  // namespace

namespace pcap_detail {

capture::~capture() {
  if (lp_) pcap_close(lp_);
}

int capture::next(const pcap_pkthdr** h, const uint8_t** data, int* dlt) {
  if (ng_) return next_pcapng(*ng_, h, data, dlt);
  pcap_pkthdr* ph = nullptr;
  const u_char* d = nullptr;
  const int rc = pcap_next_ex(lp_, &ph, &d);
  *h = ph;
  *data = d;
  *dlt = dlt_;
  return rc;
}

std::string capture::error_text() const {
  if (ng_) return pcapng_error(*ng_);
  return std::string("libpcap: ") + pcap_geterr(lp_);
}

error open_capture_stream(FILE* f, const uint8_t* head, size_t head_len, const std::string& path,
                          std::unique_ptr<capture>* out) {
  out->reset();
  auto refuse_linktype = [&](int dlt) {
    return fail(status::not_supported,
                "pcap: '{}' has link type {}; this backend delivers Ethernet and can convert only from EN10MB, NULL, "
                "LOOP, RAW, IPV4, IPV6, LINUX_SLL and LINUX_SLL2",
                path, linktype_name(dlt));
  };
  if (head_len >= 4 && load_host32(head) == 0x0A0D0D0A) {  // a pcapng section header, in either byte order
    auto c = std::make_unique<capture>();
    if (error e = open_pcapng_stream(f, path, &c->ng_, &c->dlt_)) return e;
    if (!supported_linktype(c->dlt_)) return refuse_linktype(c->dlt_);  // c closes f
    *out = std::move(c);
    return {};
  }
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  pcap_t* p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!p) {
    // On success the handle owns f (pcap_close closes it); on failure libpcap
    // leaves it open, and with it the descriptor of the refused capture.
    std::fclose(f);
    std::string why = errbuf;
    // libpcap has no error codes for this; its messages for a recognised
    // format of an unknown version say "version" (or "archaic" for pre-2.0).
    if (why.find("version") != std::string::npos || why.find("archaic") != std::string::npos) {
      // "libpcap version 1.10.3 (with TPACKET_V3)" -> "1.10.3".
      std::string lib = pcap_lib_version();
      lib = lib.substr(0, lib.find(" ("));
      if (lib.rfind("libpcap version ", 0) == 0) lib = lib.substr(16);
      // "unsupported pcap savefile version 9.4" -> "9.4".
      std::string ver;
      if (const size_t at = why.rfind("version "); at != std::string::npos) {
        ver = why.substr(at + 8);
        ver = ver.substr(0, ver.find_first_not_of("0123456789."));
      }
      const char* format = why.find("pcapng") != std::string::npos ? "pcapng" : "pcap";
      if (!ver.empty())
        return fail(status::unsupported_version,
                    "pcap: '{}' has an unsupported {} format version {} (libpcap {} reads pcap 2.4 and pcapng 1.0)",
                    path, format, ver, lib);
      return fail(status::unsupported_version,
                  "pcap: '{}' has a {} format version that libpcap {} does not read (it reads pcap 2.4 and pcapng "
                  "1.0; libpcap: {})",
                  path, format, lib, why);
    }
    if (why.find("unknown file format") != std::string::npos)
      return fail(status::bad_config, "pcap: '{}' is not a pcap or pcapng capture (libpcap: {})", path, why);
    return fail(status::bad_config, "pcap: cannot read the header of capture '{}' (libpcap: {})", path, why);
  }
  int dlt = pcap_datalink(p);
  if (!supported_linktype(dlt)) {
    pcap_close(p);
    return refuse_linktype(dlt);
  }
  auto c = std::make_unique<capture>();
  c->lp_ = p;
  c->dlt_ = dlt;
  *out = std::move(c);
  return {};
}

// Builds an Ethernet header in front of the payload in buf. The caller has
// already checked that hdr_len <= caplen <= len.
static converted synthesize(uint8_t* buf, const pcap_pkthdr* h, const uint8_t* data, uint32_t hdr_len,
                            const uint8_t dst[6], const uint8_t src[6], uint16_t type_or_len) {
  uint8_t* b = buf;
  std::memcpy(b, dst, 6);
  std::memcpy(b + 6, src, 6);
  b[12] = static_cast<uint8_t>(type_or_len >> 8);
  b[13] = static_cast<uint8_t>(type_or_len);
  uint32_t payload = std::min(h->caplen - hdr_len, kMaxFrame - kEthHdr);
  std::memcpy(b + kEthHdr, data + hdr_len, payload);
  converted c;
  c.data = b;
  c.len = kEthHdr + payload;
  uint64_t wire = uint64_t{std::max(h->len, h->caplen)} - hdr_len + kEthHdr;
  c.wire_len = static_cast<uint32_t>(std::min<uint64_t>(wire, std::numeric_limits<uint32_t>::max()));
  return c;
}

// EtherType from the IP version nibble, 0 when it is neither 4 nor 6.
static uint16_t ethertype_from_ip(const uint8_t* ip, uint32_t caplen) {
  if (caplen == 0) return 0;
  switch (ip[0] >> 4) {
    case 4: return kEtherIPv4;
    case 6: return kEtherIPv6;
    default: return 0;
  }
}

converted to_ethernet(int dlt, uint8_t* buf, const pcap_pkthdr* h, const uint8_t* data) {
  static constexpr uint8_t zero_mac[6] = {};
  static constexpr uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  converted c;
  if (h->caplen == 0) {
    c.problem = "empty record (0 bytes captured)";
    return c;
  }
  switch (dlt) {
    case DLT_EN10MB:
      // Runts and records cut inside the Ethernet header go through as they
      // are: malformed input is what downstream parsers must be tested with.
      // Frames above max_pkt_bytes (a 256 KiB snaplen of offloaded
      // super-frames) are cut like a short snaplen would; wire_len keeps the
      // true size. A damaged header with caplen > len still carried caplen
      // bytes, so wire_len never claims less than that.
      c.data = data;
      c.len = std::min(h->caplen, kMaxFrame);
      c.wire_len = std::max(h->len, h->caplen);
      return c;

    case DLT_NULL:
    case DLT_LOOP: {
      if (h->caplen < 4) {
        c.problem = "record shorter than its 4-byte address family";
        return c;
      }
      uint32_t family;
      if (dlt == DLT_LOOP) {
        family = rd32(data);
      } else {
        // DLT_NULL stores the family in the capturing host's byte order, which
        // libpcap does not fix up for files from the other endianness; families
        // are small, so a value with high bits set is a swapped one.
        family = load_host32(data);
        if (family & 0xFFFF0000u) family = __builtin_bswap32(family);
      }
      uint16_t type = 0;
      if (family == 2) type = kEtherIPv4;
      else if (family == 24 || family == 28 || family == 30)
        type = kEtherIPv6;                                     // AF_INET6 on Net/OpenBSD, FreeBSD, Darwin
      else type = ethertype_from_ip(data + 4, h->caplen - 4);  // e.g. Linux's AF_INET6 (10)
      if (type == 0) {
        c.problem = "address family is neither IPv4 nor IPv6";
        return c;
      }
      return synthesize(buf, h, data, 4, zero_mac, zero_mac, type);
    }

    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6: {
      uint16_t type = dlt == DLT_IPV4 ? kEtherIPv4 : dlt == DLT_IPV6 ? kEtherIPv6 : ethertype_from_ip(data, h->caplen);
      if (type == 0) {
        c.problem = "raw IP record whose version is neither 4 nor 6";
        return c;
      }
      return synthesize(buf, h, data, 0, zero_mac, zero_mac, type);
    }

    case DLT_LINUX_SLL:
    case DLT_LINUX_SLL2: {
      const bool v2 = dlt == DLT_LINUX_SLL2;
      const uint32_t hdr = v2 ? 20 : 16;
      if (h->caplen < hdr) {
        c.problem = "record shorter than its Linux cooked header";
        return c;
      }
      uint16_t protocol = v2 ? rd16(data) : rd16(data + 14);
      uint16_t hatype = v2 ? rd16(data + 8) : rd16(data + 2);
      uint8_t pkttype = v2 ? data[10] : static_cast<uint8_t>(rd16(data));
      uint16_t halen = v2 ? data[11] : rd16(data + 4);
      const uint8_t* addr = v2 ? data + 12 : data + 6;
      if (hatype == 824) {  // ARPHRD_NETLINK: protocol is a netlink family, not an EtherType
        c.problem = "netlink record in a Linux cooked capture";
        return c;
      }
      uint16_t type_or_len = protocol;
      if (protocol < 0x0600) {
        // 0x0001 (Novell raw 802.3) and 0x0004 (802.2 LLC) carry the frame
        // after where the Ethernet header was, which an 802.3 length field
        // describes; anything else below 0x0600 (CAN, ...) is not Ethernet.
        uint64_t payload = uint64_t{std::max(h->len, h->caplen)} - hdr;
        if ((protocol != 0x0001 && protocol != 0x0004) || payload > 1500) {
          c.problem = "Linux cooked record whose protocol is not an EtherType";
          return c;
        }
        type_or_len = static_cast<uint16_t>(payload);
      }
      // The cooked header keeps the sender's address but not the destination;
      // broadcast is the one destination its packet type tells us.
      const uint8_t* src = halen == 6 ? addr : zero_mac;
      const uint8_t* dst = pkttype == 1 ? bcast_mac : zero_mac;
      return synthesize(buf, h, data, hdr, dst, src, type_or_len);
    }

    default: c.problem = "unsupported link type"; return c;
  }
}

}  // namespace pcap_detail

namespace {

using pcap_detail::converted;

struct port {
  // options
  std::string rx_path;
  std::string tx_path;
  uint64_t loops = 1;  // 0 = forever
  double rate_pps = 0;
  double rate_bps = 0;

  // rx
  std::unique_ptr<pcap_detail::capture> rx;
  int dlt = DLT_EN10MB;    // the first interface's link type, to tell a file replaced between passes
  bool replayable = true;  // a file that can be opened again for the next pass (not a pipe)
  uint64_t passes_done = 0;
  uint64_t pass_records = 0;    // records read in the current pass, for messages
  uint64_t pass_delivered = 0;  // frames delivered in the current pass
  uint64_t first_pass_delivered = 0;
  bool rx_ended = false;
  // Why the stream ended early (a later pass could not be read): returned by
  // the rx_burst after the one that delivered the last frames, and kept for
  // the last_error op.
  status rx_fail = status::success;
  std::string rx_fail_text;
  bool warned_read = false;
  bool warned_convert = false;
  bool warned_wire_len = false;
  std::vector<uint8_t> buf = std::vector<uint8_t>(kMaxFrame);

  // pacing
  bool pacing_primed = false;
  double tokens = 0;
  std::chrono::steady_clock::time_point last_refill;

  // tx
  pcap_t* tx_dead = nullptr;
  pcap_dumper_t* dumper = nullptr;
  bool tx_written_once = false;
  // errno of the first failed write to the tx file, kept because stdio's
  // error flag stays set while errno moves on.
  int tx_errno = 0;

  // The engine thread updates these while another thread may read them.
  std::atomic<uint64_t> rx_frames{0}, rx_bytes{0}, rx_errors{0};
  std::atomic<uint64_t> tx_frames{0}, tx_bytes{0}, tx_errors{0};

  [[nodiscard]] bool has_rx() const { return !rx_path.empty(); }
  [[nodiscard]] bool has_tx() const { return !tx_path.empty(); }
  [[nodiscard]] bool paced() const { return rate_pps > 0 || rate_bps > 0; }
};

void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

uint64_t ts_ns(const pcap_pkthdr* h) {
  // With PCAP_TSTAMP_PRECISION_NANO libpcap puts nanoseconds in tv_usec.
  if (h->ts.tv_sec < 0) return 0;
  return static_cast<uint64_t>(h->ts.tv_sec) * 1000000000u + static_cast<uint64_t>(h->ts.tv_usec);
}

void close_rx(port* p) { p->rx.reset(); }

// Flushes and closes the tx file so other tools can read a complete capture.
// A write that failed earlier (a full disk) is reported with its own errno.
error close_tx(port* p) {
  if (!p->dumper) return {};
  error e;
  FILE* f = pcap_dump_file(p->dumper);
  int err = p->tx_errno;
  if (pcap_dump_flush(p->dumper) != 0 && err == 0) err = errno;
  if (err == 0 && std::ferror(f)) err = EIO;  // a failed write whose errno was not seen
  if (err != 0) {
    if (p->tx_errno == 0) bump(p->tx_errors);
    e = fail(status::io_failed, "pcap: writing tx file '{}' failed: {}", p->tx_path, std::strerror(err));
  }
  pcap_dump_close(p->dumper);
  p->dumper = nullptr;
  p->tx_errno = 0;
  return e;
}

// Creates the tx file (the first start) or opens it to append (a restart
// after stop(), so frames sent before the stop stay).
error open_tx(port* p) {
  if (p->dumper) return {};
  if (!p->tx_written_once) {
    // Opening with fopen ourselves keeps errno for the status; pcap_dump_open
    // would only give text.
    FILE* f = std::fopen(p->tx_path.c_str(), "wb");
    if (!f) {
      int e = errno;
      return fail(status_from_errno(e), "pcap: cannot create tx file '{}': {}", p->tx_path, std::strerror(e));
    }
    // On failure libpcap has already closed f (it can only fail writing the
    // header; DLT_EN10MB always maps to a linktype).
    p->dumper = pcap_dump_fopen(p->tx_dead, f);
  } else {
    p->dumper = pcap_dump_open_append(p->tx_dead, p->tx_path.c_str());
  }
  if (!p->dumper)
    return fail(status::io_failed, "pcap: cannot write tx file '{}' (libpcap: {})", p->tx_path,
                pcap_geterr(p->tx_dead));
  p->tx_written_once = true;
  p->tx_errno = 0;
  return {};
}

void destroy(port* p) {
  if (!p) return;
  close_rx(p);
  (void)close_tx(p);
  if (p->tx_dead) pcap_close(p->tx_dead);
  delete p;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (stat(a.c_str(), &sa) != 0 || stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

error pcap_open(const devargs& args, void** priv) {
  *priv = nullptr;
  if (error e = check_keys(args, {"file", "rx", "tx", "loop", "rate"})) return e;
  auto* p = new port;
  auto bail = [&](error e) {
    destroy(p);
    return e;
  };
  std::string file, rx_alias;
  if (error e = get_string(args, "file", &file)) return bail(e);
  if (error e = get_string(args, "rx", &rx_alias)) return bail(e);
  if (!file.empty() && !rx_alias.empty() && file != rx_alias)
    return bail(
        fail(status::bad_config, "pcap: rx= is another name for file=; give one of them, not both ('{}')", args.text));
  p->rx_path = file.empty() ? rx_alias : file;
  if (error e = get_string(args, "tx", &p->tx_path)) return bail(e);
  if (error e = get_u64(args, "loop", 0, std::numeric_limits<uint64_t>::max(), &p->loops)) return bail(e);
  if (error e = get_rate(args, "rate", &p->rate_pps, &p->rate_bps)) return bail(e);

  if (!p->has_rx() && !p->has_tx())
    return bail(fail(status::bad_config,
                     "pcap: '{}' names no file; give file=PATH (or rx=PATH) to read a capture and/or tx=PATH to write "
                     "transmitted frames",
                     args.text));
  // Silently ignoring these would make a typo'd device string look like it works.
  if (!p->has_rx() && (args.find("loop") || args.find("rate")))
    return bail(
        fail(status::bad_config, "pcap: loop= and rate= apply to reading a capture; '{}' has no file=", args.text));

  if (p->has_rx()) {
    if (error e = open_capture(p->rx_path, p->loops, &p->rx, &p->replayable)) return bail(e);
    p->dlt = p->rx->linktype();
  }
  if (p->has_tx()) {
    if (p->has_rx() && same_file(p->rx_path, p->tx_path))
      return bail(
          fail(status::bad_config, "pcap: tx={} is the capture being read; writing it would destroy it", p->tx_path));
    p->tx_dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kMaxFrame, PCAP_TSTAMP_PRECISION_NANO);
    if (!p->tx_dead) return bail(fail(status::no_memory, "pcap: pcap_open_dead failed"));
    // Checked now, so a bad tx path fails at open; created at start, so a
    // port that never starts (gnio caps, a run refused before it starts)
    // leaves an existing file as it was and creates none.
    if (std::string why = fifo_output_refusal(p->tx_path); !why.empty())
      return bail(fail(status::invalid_value, "pcap: tx={}: {}", p->tx_path, why));
    if (int e = output_path_errno(p->tx_path); e != 0)
      return bail(fail(status_from_errno(e), "pcap: cannot create tx file '{}': {}", p->tx_path, std::strerror(e)));
  }
  *priv = p;
  return {};
}

void pcap_get_caps(void* priv, port_caps* caps) {
  auto* p = static_cast<port*>(priv);
  *caps = port_caps{};
  caps->rx = p->has_rx();
  caps->tx = p->has_tx();
  caps->max_rx_queues = 64;
  caps->max_tx_queues = 64;
  caps->max_pkt_bytes = kMaxFrame;
  caps->min_ring_descs = 2;
  caps->max_ring_descs = 1u << 20;
  caps->rx_timestamps = true;
  caps->finite = p->has_rx() && p->loops != 0;
  caps->tx_time = p->has_tx() ? tx_time_mode::timestamp : tx_time_mode::none;
}

error pcap_start(void* priv) {
  auto* p = static_cast<port*>(priv);
  p->pacing_primed = false;
  if (p->has_tx()) return open_tx(p);
  return {};
}

error pcap_stop(void* priv) {
  auto* p = static_cast<port*>(priv);
  return close_tx(p);
}

void pcap_close_port(void* priv) { destroy(static_cast<port*>(priv)); }

// Ends the stream early: the frames delivered so far count, and the
// rx_burst after the one that delivered them returns the failure (the
// engine then reports it as the port's engine_error).
status fail_rx(port* p, status code, std::string why) {
  close_rx(p);
  p->rx_ended = true;
  if (p->rx_fail == status::success) {
    p->rx_fail = code;
    p->rx_fail_text = std::move(why);
  }
  return code;
}

// Ends one pass over the file and, when more are due, starts the next.
status end_pass(port* p) {
  ++p->passes_done;
  if (p->passes_done == 1) p->first_pass_delivered = p->pass_delivered;
  bool last = p->loops != 0 && p->passes_done >= p->loops;
  // A file with nothing to deliver would deliver nothing again; looping on it
  // forever (loop=0) would spin without ever ending.
  if (last || (p->passes_done == 1 && p->pass_delivered == 0)) {
    close_rx(p);
    p->rx_ended = true;
    return status::shutdown;
  }
  // A later pass over the same file that delivered nothing means the file
  // changed under the replay (emptied, or cut to its header).
  if (p->pass_delivered == 0)
    return fail_rx(p, status::io_failed,
                   fmt::format("pcap: pass {} over '{}' delivered no frames where pass 1 delivered {}: the file was "
                               "emptied or truncated while it was replayed",
                               p->passes_done, p->rx_path, p->first_pass_delivered));
  close_rx(p);
  p->pass_records = 0;
  p->pass_delivered = 0;
  if (error e = open_capture(p->rx_path, 1, &p->rx, nullptr))
    return fail_rx(
        p, status::io_failed,
        fmt::format("pcap: reopening '{}' for pass {} failed: {}", p->rx_path, p->passes_done + 1, e.what()));
  if (p->rx->linktype() != p->dlt)
    return fail_rx(p, status::io_failed,
                   fmt::format("pcap: '{}' changed link type between passes ({} -> {}): it was replaced while it "
                               "was replayed",
                               p->rx_path, linktype_name(p->dlt), linktype_name(p->rx->linktype())));
  return status::success;
}

// Token bucket with debt: a frame may go whenever the balance is not negative,
// and its cost is charged after, so frames of any size pace correctly.
bool may_send(port* p) {
  if (!p->paced()) return true;
  auto now = std::chrono::steady_clock::now();
  if (!p->pacing_primed) {
    // Primed at the first poll rather than at start so a slow first poll does
    // not turn into a burst.
    p->pacing_primed = true;
    p->tokens = 0;
    p->last_refill = now;
  }
  double rate = p->rate_pps > 0 ? p->rate_pps : p->rate_bps;
  double elapsed = std::chrono::duration<double>(now - p->last_refill).count();
  p->last_refill = now;
  p->tokens = std::min(p->tokens + elapsed * rate, rate * kBucketDepthS);
  return p->tokens >= 0;
}

void charge(port* p, uint32_t wire_len) {
  if (p->rate_pps > 0) p->tokens -= 1;
  else if (p->rate_bps > 0) p->tokens -= 8.0 * wire_len;
}

status pcap_rx_burst(void* priv, rx_lane& lane, uint32_t budget, uint32_t* produced) {
  auto* p = static_cast<port*>(priv);
  uint32_t n = 0;
  *produced = 0;
  while (n < budget) {
    if (p->rx_ended || !p->rx) {
      if (n > 0) return status::success;
      return p->rx_fail != status::success ? p->rx_fail : status::shutdown;
    }
    if (!may_send(p)) break;
    const pcap_pkthdr* h = nullptr;
    const uint8_t* data = nullptr;
    int dlt = p->dlt;
    int rc = p->rx->next(&h, &data, &dlt);
    if (rc == 1) {
      converted c = pcap_detail::to_ethernet(dlt, p->buf.data(), h, data);
      ++p->pass_records;
      if (c.problem) {
        bump(p->rx_errors);
        auto level = p->warned_convert ? log_level::debug : log_level::warn;
        p->warned_convert = true;
        log(level, "pcap: '{}' packet {}: {}; skipped", p->rx_path, p->pass_records, c.problem);
        continue;
      }
      if (h->len > kImplausibleWireLen && !p->warned_wire_len) {
        // Counted as it claims, as tshark counts it, but not silently.
        p->warned_wire_len = true;
        log(log_level::warn,
            "pcap: '{}' packet {} claims a wire length of {} bytes (captured {}), more than any link carries; "
            "it is counted with that length, as tshark counts it",
            p->rx_path, p->pass_records, h->len, h->caplen);
      }
      // One copy, from the reader's buffer (libpcap's or the pcapng reader's) into the RX buffer the frame steers to.
      lane.deliver(c.data, c.len, c.wire_len, ts_ns(h));
      charge(p, c.wire_len);
      bump(p->rx_frames);
      bump(p->rx_bytes, c.len);
      ++p->pass_delivered;
      ++n;
      *produced = n;
      continue;
    }
    if (rc == -1) {
      // Damaged or truncated record: what came before it is good, the rest of
      // the file cannot be located reliably, so this pass ends here.
      bump(p->rx_errors);
      auto level = p->warned_read ? log_level::debug : log_level::warn;
      p->warned_read = true;
      log(level, "pcap: '{}': read error at packet {} ({}); ending this pass over the file", p->rx_path,
          p->pass_records + 1, p->rx->error_text());
    }
    // rc == -2 is the end of the file; 0 (timeout) only happens on live captures.
    status s = end_pass(p);
    // A failure after frames of this burst is returned by the next call.
    if (s != status::success) return n > 0 ? status::success : s;
  }
  if (n == 0 && budget > 0) return status::again;
  return status::success;
}

// Writes n frames, frame i stamped not_before[i] when given and non-zero,
// else the time of the call.
error pcap_write_frames(port* p, const tx_frame* frames, const uint64_t* not_before, uint32_t n, uint32_t* sent) {
  *sent = 0;
  if (!p->has_tx()) return fail(status::not_supported, "pcap: this port has no tx= file");
  if (!p->dumper) return fail(status::bad_state, "pcap: tx file '{}' is closed; start the port first", p->tx_path);
  if (p->tx_errno != 0) {
    // The stream is broken (stdio keeps its error flag): nothing more is written.
    bump(p->tx_errors, n);
    return fail(status::io_failed, "pcap: writing tx file '{}' failed: {}", p->tx_path, std::strerror(p->tx_errno));
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  FILE* f = pcap_dump_file(p->dumper);
  for (uint32_t i = 0; i < n; ++i) {
    pcap_pkthdr h{};
    const uint64_t t = not_before != nullptr ? not_before[i] : 0;
    // Nanoseconds in tv_usec: the dumper was opened with nano precision.
    h.ts.tv_sec = t != 0 ? static_cast<time_t>(t / 1'000'000'000u) : now.tv_sec;
    h.ts.tv_usec = t != 0 ? static_cast<suseconds_t>(t % 1'000'000'000u) : now.tv_nsec;
    h.caplen = frames[i].len;
    h.len = frames[i].len;
    errno = 0;
    pcap_dump(reinterpret_cast<u_char*>(p->dumper), &h, frames[i].data);
    if (std::ferror(f)) {
      // errno now is the failed write's (pcap_dump only calls fwrite).
      p->tx_errno = errno != 0 ? errno : EIO;
      bump(p->tx_errors, n - i);
      return fail(status::io_failed, "pcap: writing tx file '{}' failed: {}", p->tx_path, std::strerror(p->tx_errno));
    }
    bump(p->tx_frames);
    bump(p->tx_bytes, frames[i].len);
    *sent = i + 1;
  }
  return {};
}

error pcap_tx_burst(void* priv, const tx_frame* frames, uint32_t n, uint32_t* sent) {
  return pcap_write_frames(static_cast<port*>(priv), frames, nullptr, n, sent);
}

error pcap_tx_burst_at(void* priv, const tx_frame* frames, const uint64_t* not_before, uint32_t n, uint32_t* sent) {
  return pcap_write_frames(static_cast<port*>(priv), frames, not_before, n, sent);
}

const char* pcap_last_error(void* priv) {
  auto* p = static_cast<port*>(priv);
  return p->rx_fail_text.empty() ? nullptr : p->rx_fail_text.c_str();
}

void pcap_get_counters(void* priv, counters* c) {
  auto* p = static_cast<port*>(priv);
  c->rx_frames = p->rx_frames.load(std::memory_order_relaxed);
  c->rx_bytes = p->rx_bytes.load(std::memory_order_relaxed);
  c->rx_errors = p->rx_errors.load(std::memory_order_relaxed);
  c->tx_frames = p->tx_frames.load(std::memory_order_relaxed);
  c->tx_bytes = p->tx_bytes.load(std::memory_order_relaxed);
  c->tx_errors = p->tx_errors.load(std::memory_order_relaxed);
}

}  // namespace

extern const ops pcap_ops;
const ops pcap_ops = {
    .size = sizeof(ops),
    .name = "pcap",
    .summary = "replays a pcap/pcapng file as received traffic and records transmitted frames to a pcap file (libpcap)",
    .options =
        "file=PATH  capture to read: pcap or pcapng, not compressed; Ethernet, BSD loopback, raw IP and Linux cooked\n"
        "           link types, all delivered as Ethernet frames; a pipe or FIFO is read once (file=/dev/stdin,\n"
        "           file=<(zcat x.pcap.gz))\n"
        "rx=PATH    same as file=\n"
        "tx=PATH    write every transmitted frame to this pcap file (Ethernet, nanosecond timestamps: the frame's\n"
        "           not-before time when it has one, else the time it was written); checked at open, created\n"
        "           when the port starts\n"
        "loop=N     play the file N times (default 1; 0 = forever; a pipe only once); a later pass that cannot be\n"
        "           read ends the stream with io_failed\n"
        "rate=R     pace reading, in packets or bits per second: 1000pps, 2Mpps, 100Mbps (default: unpaced)\n",
    .open = pcap_open,
    .get_caps = pcap_get_caps,
    .start = pcap_start,
    .rx_burst = pcap_rx_burst,
    .tx_burst = pcap_tx_burst,
    .stop = pcap_stop,
    .close = pcap_close_port,
    .get_counters = pcap_get_counters,
    .last_error = pcap_last_error,
    .tx_burst_at = pcap_tx_burst_at,
};

}  // namespace gnio::backend
