/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 */
#ifndef GNIO_COMPAT_DOCA_VERSION_H
#define GNIO_COMPAT_DOCA_VERSION_H

#include "doca_compat.h"

GNIO_DOCA_BEGIN_C

/* The DOCA API level gnio's compatibility layer follows, and gnio's own version. */
#define DOCA_VER_MAJOR 3
#define DOCA_VER_MINOR 3
#define DOCA_VER_PATCH 0
#define DOCA_VER_STRING "3.3.0"

/* "3.3.0 (gnio 0.1.0)": the API level this build was compiled against. */
const char* doca_version(void);
/* The same for the library loaded at run time. */
const char* doca_version_runtime(void);

GNIO_DOCA_END_C

#endif
