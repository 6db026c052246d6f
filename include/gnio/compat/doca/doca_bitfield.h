/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Included by the send_wait_time sample, which uses nothing from it; empty
 * on gnio.
 */
#ifndef GNIO_COMPAT_DOCA_BITFIELD_H
#define GNIO_COMPAT_DOCA_BITFIELD_H

#include "doca_compat.h"

#endif
