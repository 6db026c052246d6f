# SPDX-License-Identifier: Apache-2.0
"""Reading a classic pcap file's records in the test scripts, without libpcap
(the GPU machine runs some of them where no capture tool is installed)."""
import struct

LINKTYPE_ETHERNET = 1


def parse_header(head, what="file"):
    """(byte order for struct, nanosecond times, link type) of a 24-byte pcap
    file header; ValueError when it is none."""
    if len(head) < 24:
        raise ValueError(f"{what}: no pcap file header")
    magic = head[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        order = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        order = ">"
    else:
        raise ValueError(f"{what}: not a pcap file (magic {magic.hex()})")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    return order, nano, struct.unpack(order + "I", head[20:24])[0]


def records(path, ethernet=False):
    """(time in ns, original length, bytes) of each record, in file order.
    Microsecond and nanosecond files of either byte order; ethernet=True also
    requires link type Ethernet. A file that is not pcap, or whose last record
    is cut short, raises ValueError."""
    with open(path, "rb") as f:
        data = f.read()
    order, nano, link = parse_header(data[:24], path)
    if ethernet and link != LINKTYPE_ETHERNET:
        raise ValueError(f"{path}: link type is not Ethernet")
    out, off = [], 24
    while off < len(data):
        if off + 16 > len(data):
            raise ValueError(f"{path}: record {len(out)} has a cut header")
        sec, sub, caplen, wire = struct.unpack(order + "IIII", data[off:off + 16])
        if off + 16 + caplen > len(data):
            raise ValueError(f"{path}: record {len(out)} is cut short")
        out.append((sec * 1_000_000_000 + (sub if nano else sub * 1000), wire, data[off + 16:off + 16 + caplen]))
        off += 16 + caplen
    return out
