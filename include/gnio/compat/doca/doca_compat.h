/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Shared by every compat header: C linkage and the attribute macros DOCA
 * programs may put on their own declarations.
 */
#ifndef GNIO_COMPAT_DOCA_COMPAT_H
#define GNIO_COMPAT_DOCA_COMPAT_H

#ifdef __cplusplus
#define GNIO_DOCA_BEGIN_C extern "C" {
#define GNIO_DOCA_END_C }
#else
#define GNIO_DOCA_BEGIN_C
#define GNIO_DOCA_END_C
#endif

/* DOCA marks unstable functions; gnio treats every function alike. */
#ifndef DOCA_EXPERIMENTAL
#define DOCA_EXPERIMENTAL
#endif
#ifndef DOCA_STABLE
#define DOCA_STABLE
#endif

/* Set to 1 so programs can tell gnio's implementation from NVIDIA's. */
#define GNIO_DOCA_COMPAT 1

#endif
