/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Buffer arrays. The samples include this header but call none of it; the
 * types are declared so programs that name them build. gnio's buffer
 * arrays come with the application part (docs/doca-compat.md).
 */
#ifndef GNIO_COMPAT_DOCA_BUF_ARRAY_H
#define GNIO_COMPAT_DOCA_BUF_ARRAY_H

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

struct doca_buf_arr;
struct doca_gpu_buf_arr;

GNIO_DOCA_END_C

#endif
