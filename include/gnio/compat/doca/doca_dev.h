/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Devices. A device is a NIC found by its PCIe address: through sysfs (the
 * Linux interface at /sys/bus/pci/devices/<addr>/net/, opened as gnio's
 * af_xdp:if=<name> or, without AF_XDP, af_packet:if=<name>) or through
 * GNIO_DOCA_DEVICES="ca:00.0=pcap:file=x.pcap;3b:00.1=gen:size=64", which
 * maps any address-like name to a gnio device string (docs/doca-compat.md).
 */
#ifndef GNIO_COMPAT_DOCA_DEV_H
#define GNIO_COMPAT_DOCA_DEV_H

#include <stdint.h>
#include <stddef.h>

#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"

GNIO_DOCA_BEGIN_C

/* Buffer sizes, terminating NUL included: "0000:ca:00.0" is 12 characters. */
#define DOCA_DEVINFO_PCI_ADDR_SIZE 13
#define DOCA_DEVINFO_PCI_BDF_SIZE 8
#define DOCA_DEVINFO_IFACE_NAME_SIZE 256
#define DOCA_DEVINFO_IBDEV_NAME_SIZE 64
#define DOCA_DEVINFO_REP_VUID_SIZE 128
#define DOCA_DEVINFO_REP_PCI_ADDR_SIZE 13

struct doca_devinfo;
struct doca_dev;
struct doca_devinfo_rep;
struct doca_dev_rep;

enum doca_devinfo_rep_filter {
  DOCA_DEVINFO_REP_FILTER_ALL = 0,
  DOCA_DEVINFO_REP_FILTER_NET = 1,
  DOCA_DEVINFO_REP_FILTER_EMULATED = 2,
};

doca_error_t doca_devinfo_create_list(struct doca_devinfo*** dev_list, uint32_t* nb_devs);
doca_error_t doca_devinfo_destroy_list(struct doca_devinfo** dev_list);
doca_error_t doca_devinfo_is_equal_pci_addr(const struct doca_devinfo* devinfo, const char* pci_addr,
                                            uint8_t* is_equal);
doca_error_t doca_devinfo_get_pci_addr_str(const struct doca_devinfo* devinfo, char* pci_addr_str);
doca_error_t doca_devinfo_get_iface_name(const struct doca_devinfo* devinfo, char* iface_name, uint32_t size);
doca_error_t doca_devinfo_get_ibdev_name(const struct doca_devinfo* devinfo, char* ibdev_name, uint32_t size);
doca_error_t doca_devinfo_get_pci_func_type(const struct doca_devinfo* devinfo, enum doca_pci_func_type* type);
doca_error_t doca_devinfo_get_sf_index(const struct doca_devinfo* devinfo, uint32_t* sf_index);

doca_error_t doca_dev_open(struct doca_devinfo* devinfo, struct doca_dev** dev);
doca_error_t doca_dev_close(struct doca_dev* dev);
struct doca_devinfo* doca_dev_as_devinfo(const struct doca_dev* dev);

/* Representors: gnio has none; the list is empty. */
doca_error_t doca_devinfo_rep_create_list(struct doca_dev* dev, enum doca_devinfo_rep_filter filter,
                                          struct doca_devinfo_rep*** dev_list_rep, uint32_t* nb_devs_rep);
doca_error_t doca_devinfo_rep_destroy_list(struct doca_devinfo_rep** dev_list_rep);
doca_error_t doca_devinfo_rep_get_vuid(const struct doca_devinfo_rep* devinfo_rep, char* rep_vuid, uint32_t size);
doca_error_t doca_devinfo_rep_is_equal_pci_addr(const struct doca_devinfo_rep* devinfo_rep, const char* pci_addr,
                                                uint8_t* is_equal);
doca_error_t doca_dev_rep_open(struct doca_devinfo_rep* devinfo, struct doca_dev_rep** dev_rep);
doca_error_t doca_dev_rep_close(struct doca_dev_rep* dev);

GNIO_DOCA_END_C

#endif
