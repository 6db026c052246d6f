// SPDX-License-Identifier: Apache-2.0
// The pcap backend's pcapng reader (draft-ietf-opsawg-pcapng): sections of
// either byte order, interfaces each with their own link type, snap length
// and timestamp resolution, and the three packet blocks (enhanced, simple and
// the obsolete packet block). Other blocks (name resolution, statistics,
// custom, decryption secrets) are skipped, as libpcap skips them.
//
// Where the format leaves a choice, the reader does what tshark does: a
// later interface may have any link type or snap length; a later section of
// a version other than 1.0 ends the file with a read error. tshark also lists
// custom blocks as frames; they hold no packet and are not delivered. A
// damaged block (a length that is not a multiple of 4 or does not
// match its trailer, an interface that was not described, a record longer
// than its block) is a read error: what came before it was delivered, and
// the rest of the file cannot be located reliably.

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "gnio/backend/log.hpp"
#include "pcap_reader.hpp"

namespace gnio::backend::pcap_detail {

namespace {

constexpr uint32_t k_shb = 0x0A0D0D0A;
constexpr uint32_t k_idb = 0x00000001;
constexpr uint32_t k_opb = 0x00000002;  // obsolete packet block
constexpr uint32_t k_spb = 0x00000003;
constexpr uint32_t k_epb = 0x00000006;
constexpr uint32_t k_byte_order_magic = 0x1A2B3C4D;
constexpr uint16_t k_opt_end = 0;
constexpr uint16_t k_if_tsresol = 9;
constexpr uint16_t k_if_tsoffset = 14;

// An interface's link type is a LINKTYPE_ value (the numbers tcpdump.org
// registers for files), where the rest of the backend, and libpcap's names,
// use DLT_ values (the numbers a system's capture API gives). They are equal
// except where a DLT_ value differs between systems (raw IP is 12 on Linux,
// 14 on OpenBSD; loopback 108 or 12), for which files have one value of their
// own. libpcap maps them when it reads a file but exports no function for it,
// so the values that differ are mapped here; any other value is taken as it
// is, as libpcap takes it (old files may hold a DLT_ value).
int dlt_from_linktype(uint16_t linktype) {
  switch (linktype) {
    case 100: return DLT_ATM_RFC1483;  // LINKTYPE_ATM_RFC1483
    case 101: return DLT_RAW;          // LINKTYPE_RAW
    case 102: return DLT_SLIP_BSDOS;   // LINKTYPE_SLIP_BSDOS
    case 103: return DLT_PPP_BSDOS;    // LINKTYPE_PPP_BSDOS
    case 106: return DLT_ATM_CLIP;     // LINKTYPE_ATM_CLIP
    case 108: return DLT_LOOP;         // LINKTYPE_LOOP
    case 246: return DLT_PFSYNC;       // LINKTYPE_PFSYNC
    case 258: return DLT_PKTAP;        // LINKTYPE_PKTAP
    default: return linktype;          // LINKTYPE_NULL 0, ETHERNET 1, IPV4 228, IPV6 229, LINUX_SLL 113, ...
  }
}

struct interface {
  int dlt = 0;  // the DLT_ value of the block's LINKTYPE_
  uint32_t snaplen = 0;
  // A timestamp unit is 1/units_per_s seconds (if_tsresol; microseconds by default).
  uint64_t units_per_s = 1000000;
  int64_t offset_s = 0;  // if_tsoffset
};

}  // namespace

struct pcapng_state {
  FILE* f = nullptr;
  std::string path;
  bool swap = false;  // the section's byte order is not this host's
  uint32_t sections = 0;
  std::vector<interface> ifs;
  std::vector<uint8_t> block;  // the body of the block being read
  pcap_pkthdr h{};
  std::string err;

  uint32_t u32(const uint8_t* p) const {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap32(v) : v;
  }
  uint16_t u16(const uint8_t* p) const {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap16(v) : v;
  }
  uint64_t u64(const uint8_t* p) const {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return swap ? __builtin_bswap64(v) : v;
  }
};

namespace {

// -1 with st.err set, 0 at the clean end of the file, 1 with st.block holding
// the block's body (after type and length, trailer removed) and *type set.
int read_block(pcapng_state& st, uint32_t* type) {
  uint8_t hdr[12];
  const size_t got = std::fread(hdr, 1, 8, st.f);
  if (got == 0 && std::feof(st.f)) return 0;
  if (got < 8) {
    st.err = std::ferror(st.f) ? fmt::format("reading failed: {}", std::strerror(errno))
                               : fmt::format("the file ends {} bytes into a block header", got);
    return -1;
  }
  uint32_t raw_type, raw_len;
  std::memcpy(&raw_type, hdr, 4);
  std::memcpy(&raw_len, hdr + 4, 4);
  size_t consumed = 8;
  if (raw_type == k_shb) {
    // A section header's byte order is in its body: read it before the length.
    if (std::fread(hdr + 8, 1, 4, st.f) != 4) {
      st.err = "the file ends inside a section header block";
      return -1;
    }
    uint32_t magic;
    std::memcpy(&magic, hdr + 8, 4);
    if (magic == k_byte_order_magic) st.swap = false;
    else if (magic == __builtin_bswap32(k_byte_order_magic)) st.swap = true;
    else {
      st.err = fmt::format("a section header block has byte-order magic {:#010x}, which is neither order of {:#010x}",
                           magic, k_byte_order_magic);
      return -1;
    }
    consumed = 12;
  }
  *type = st.swap ? __builtin_bswap32(raw_type) : raw_type;
  const uint32_t len = st.swap ? __builtin_bswap32(raw_len) : raw_len;
  if (len < 12 + (consumed - 8) || len % 4 != 0 || len > max_pcapng_block) {
    st.err = fmt::format(
        "block of type {:#x} has length {}, which is {}", *type, len,
        len > max_pcapng_block ? "more than a block may have (16 MiB)" : "not a multiple of 4 of at least 12 bytes");
    return -1;
  }
  const size_t body = len - consumed;  // what is left to read: the rest of the body and the trailer
  st.block.resize(body + (consumed - 8));
  if (consumed == 12) std::memcpy(st.block.data(), hdr + 8, 4);
  const size_t have = std::fread(st.block.data() + (consumed - 8), 1, body, st.f);
  if (have != body) {
    st.err = std::ferror(st.f)
                 ? fmt::format("reading failed: {}", std::strerror(errno))
                 : fmt::format("the file ends inside a block of type {:#x} of {} bytes ({} of them there)", *type, len,
                               consumed + have);
    return -1;
  }
  const uint32_t trailer = st.u32(st.block.data() + st.block.size() - 4);
  if (trailer != len) {
    st.err = fmt::format("block of type {:#x} has length {} in its header and {} in its trailer", *type, len, trailer);
    return -1;
  }
  st.block.resize(st.block.size() - 4);
  return 1;
}

// Walks a block's options from off: calls fn(code, value, length) for each.
template <class Fn>
bool walk_options(const pcapng_state& st, size_t off, Fn fn) {
  const std::vector<uint8_t>& b = st.block;
  while (off + 4 <= b.size()) {
    const uint16_t code = st.u16(b.data() + off), olen = st.u16(b.data() + off + 2);
    off += 4;
    if (code == k_opt_end) return true;
    if (off + olen > b.size()) return false;
    fn(code, b.data() + off, olen);
    off += (olen + 3u) & ~3u;
  }
  return true;
}

// 1 for a section of the version this reader reads, 0 (and st.err) for
// another version, -1 (and st.err) for a damaged header.
int read_section_header(pcapng_state& st) {
  if (st.block.size() < 16) {
    st.err = fmt::format("a section header block of {} bytes is shorter than its 28", st.block.size() + 12);
    return -1;
  }
  const uint16_t major = st.u16(st.block.data() + 4), minor = st.u16(st.block.data() + 6);
  ++st.sections;
  st.ifs.clear();
  if (!walk_options(st, 16, [](uint16_t, const uint8_t*, uint16_t) {})) {
    st.err = "a section header option is longer than its block";
    return -1;
  }
  if (major == 1 && minor == 0) return 1;
  st.err = fmt::format("pcapng format version {}.{}", major, minor);
  return 0;
}

bool read_interface(pcapng_state& st) {
  if (st.block.size() < 8) {
    st.err = fmt::format("interface description block {} is {} bytes, shorter than its 20", st.ifs.size(),
                         st.block.size() + 12);
    return false;
  }
  interface i;
  i.dlt = dlt_from_linktype(st.u16(st.block.data()));
  i.snaplen = st.u32(st.block.data() + 4);
  bool ok = true;
  const bool walked = walk_options(st, 8, [&](uint16_t code, const uint8_t* v, uint16_t len) {
    if (code == k_if_tsresol && len >= 1) {
      const uint8_t r = v[0];
      const unsigned exp = r & 0x7f;
      // Beyond 10^-19 or 2^-63 a second does not fit 64 bits.
      if ((r & 0x80) ? exp > 63 : exp > 19) ok = false;
      else if (r & 0x80) i.units_per_s = uint64_t{1} << exp;
      else {
        i.units_per_s = 1;
        for (unsigned k = 0; k < exp; ++k) i.units_per_s *= 10;
      }
    } else if (code == k_if_tsoffset && len >= 8) {
      i.offset_s = static_cast<int64_t>(st.u64(v));
    }
  });
  if (!walked || !ok) {
    st.err = fmt::format("interface description block {} has {}", st.ifs.size(),
                         walked ? "a timestamp resolution finer than 64 bits hold" : "an option longer than the block");
    return false;
  }
  st.ifs.push_back(i);
  return true;
}

void set_time(pcapng_state& st, const interface& i, uint64_t units) {
  const uint64_t s = units / i.units_per_s, rem = units % i.units_per_s;
  // rem < units_per_s <= 2^63: the product with 10^9 is done in 128 bits.
  const auto ns = static_cast<uint64_t>(static_cast<unsigned __int128>(rem) * 1000000000u / i.units_per_s);
  const int64_t sec = static_cast<int64_t>(s) + i.offset_s;
  st.h.ts.tv_sec = static_cast<time_t>(sec);
  st.h.ts.tv_usec = static_cast<suseconds_t>(ns);  // nanoseconds, as libpcap's nano precision gives them
}

}  // namespace

// Reads the file's first section header and the blocks up to its first
// interface description; refuses what cannot be read. *first_dlt: that
// interface's link type.
error open_pcapng_stream(FILE* f, const std::string& path, std::unique_ptr<pcapng_state, pcapng_deleter>* out,
                         int* first_dlt) {
  // Until it is handed out, a refusal closes f itself and frees the state.
  auto st = std::make_unique<pcapng_state>();
  st->f = f;
  st->path = path;
  auto refuse = [&](status code, std::string why) {
    std::fclose(f);
    return fail(code, "pcap: cannot read the header of capture '{}' ({})", path, why);
  };
  uint32_t type = 0;
  int rc = read_block(*st, &type);
  if (rc <= 0) return refuse(status::bad_config, rc == 0 ? "the file is empty" : st->err);
  if (type != k_shb) return refuse(status::bad_config, "it does not begin with a section header block");
  rc = read_section_header(*st);
  if (rc < 0) return refuse(status::bad_config, st->err);
  if (rc == 0) {
    std::fclose(f);
    return fail(status::unsupported_version, "pcap: '{}' has an unsupported {} (gnio reads pcap 2.4 and pcapng 1.0)",
                path, st->err);
  }
  // Blocks before the first interface carry no packets (a packet needs an
  // interface): read until it.
  for (;;) {
    rc = read_block(*st, &type);
    if (rc < 0) return refuse(status::bad_config, st->err);
    if (rc == 0 || type == k_shb) return refuse(status::bad_config, "the capture has no interface description block");
    if (type == k_epb || type == k_spb || type == k_opb)
      return refuse(status::bad_config, "a packet block comes before any interface description block");
    if (type == k_idb) {
      if (!read_interface(*st)) return refuse(status::bad_config, st->err);
      break;
    }
  }
  *first_dlt = st->ifs[0].dlt;
  out->reset(st.release());
  return {};
}

const std::string& pcapng_error(const pcapng_state& st) { return st.err; }

void pcapng_deleter::operator()(pcapng_state* st) const {
  if (st && st->f) std::fclose(st->f);
  delete st;
}

int next_pcapng(pcapng_state& st, const pcap_pkthdr** h, const uint8_t** data, int* dlt) {
  for (;;) {
    uint32_t type = 0;
    const int rc = read_block(st, &type);
    if (rc == 0) return -2;
    if (rc < 0) return -1;
    if (type == k_shb) {
      if (read_section_header(st) <= 0) {
        if (st.err.rfind("pcapng format version", 0) == 0)
          st.err = fmt::format("section {} has {}, which this reader does not read", st.sections, st.err);
        return -1;
      }
      continue;
    }
    const std::vector<uint8_t>& b = st.block;
    uint32_t iface = 0, caplen = 0, len = 0;
    size_t data_off = 0;
    uint64_t units = 0;
    bool has_time = true;
    switch (type) {
      case k_idb:
        if (!read_interface(st)) return -1;
        continue;
      case k_epb:
      case k_opb:
        if (b.size() < 20) {
          st.err = fmt::format("packet block of {} bytes is shorter than its header", b.size() + 12);
          return -1;
        }
        iface = type == k_epb ? st.u32(b.data()) : st.u16(b.data());
        units = uint64_t{st.u32(b.data() + 4)} << 32 | st.u32(b.data() + 8);
        caplen = st.u32(b.data() + 12);
        len = st.u32(b.data() + 16);
        data_off = 20;
        if (caplen > b.size() - data_off) {
          st.err = fmt::format("packet block claims {} captured bytes in a block that holds {}", caplen,
                               b.size() - data_off);
          return -1;
        }
        break;
      case k_spb:
        if (b.size() < 4) {
          st.err = "simple packet block shorter than its header";
          return -1;
        }
        len = st.u32(b.data());
        data_off = 4;
        caplen = static_cast<uint32_t>(std::min<uint64_t>(len, b.size() - data_off));
        if (!st.ifs.empty() && st.ifs[0].snaplen != 0) caplen = std::min(caplen, st.ifs[0].snaplen);
        has_time = false;
        break;
      default: continue;  // name resolution, statistics, custom, ...: nothing to deliver
    }
    if (iface >= st.ifs.size()) {
      st.err = fmt::format("packet block names interface {}, but the section describes {}", iface, st.ifs.size());
      return -1;
    }
    const interface& i = st.ifs[iface];
    st.h = pcap_pkthdr{};
    if (has_time) set_time(st, i, units);
    st.h.caplen = caplen;
    st.h.len = len;
    *h = &st.h;
    *data = b.data() + data_off;
    *dlt = i.dlt;
    return 1;
  }
}

}  // namespace gnio::backend::pcap_detail
