/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Status codes: the numbering follows gnio::status (include/gnio/status.hpp),
 * which uses the order DOCA documents for doca_error_t.
 */
#ifndef GNIO_COMPAT_DOCA_ERROR_H
#define GNIO_COMPAT_DOCA_ERROR_H

#include "doca_compat.h"

GNIO_DOCA_BEGIN_C

typedef enum gnio_doca_error {
  DOCA_SUCCESS = 0,
  DOCA_ERROR_UNKNOWN = 1,
  DOCA_ERROR_NOT_PERMITTED = 2,
  DOCA_ERROR_IN_USE = 3,
  DOCA_ERROR_NOT_SUPPORTED = 4,
  DOCA_ERROR_AGAIN = 5,
  DOCA_ERROR_INVALID_VALUE = 6,
  DOCA_ERROR_NO_MEMORY = 7,
  DOCA_ERROR_INITIALIZATION = 8,
  DOCA_ERROR_TIME_OUT = 9,
  DOCA_ERROR_SHUTDOWN = 10,
  DOCA_ERROR_CONNECTION_RESET = 11,
  DOCA_ERROR_CONNECTION_ABORTED = 12,
  DOCA_ERROR_CONNECTION_INPROGRESS = 13,
  DOCA_ERROR_NOT_CONNECTED = 14,
  DOCA_ERROR_NO_LOCK = 15,
  DOCA_ERROR_NOT_FOUND = 16,
  DOCA_ERROR_IO_FAILED = 17,
  DOCA_ERROR_BAD_STATE = 18,
  DOCA_ERROR_UNSUPPORTED_VERSION = 19,
  DOCA_ERROR_OPERATING_SYSTEM = 20,
  DOCA_ERROR_DRIVER = 21,
  DOCA_ERROR_UNEXPECTED = 22,
  DOCA_ERROR_ALREADY_EXIST = 23,
  DOCA_ERROR_FULL = 24,
  DOCA_ERROR_EMPTY = 25,
  DOCA_ERROR_IN_PROGRESS = 26,
  DOCA_ERROR_TOO_BIG = 27,
  DOCA_ERROR_AUTHENTICATION = 28,
  DOCA_ERROR_BAD_CONFIG = 29,
  DOCA_ERROR_SKIPPED = 30,
  DOCA_ERROR_DEVICE_FATAL_ERROR = 31,
} doca_error_t;

/* "DOCA_ERROR_BAD_STATE"; "DOCA_ERROR_UNKNOWN" for a value outside the list. */
const char* doca_error_get_name(doca_error_t error);
/* One line saying what the code means (gnio's description of the status). */
const char* doca_error_get_descr(doca_error_t error);

#define DOCA_IS_ERROR(r) ((r) != DOCA_SUCCESS)
/* Keeps the first failure: r takes t only while r is still a success. */
#define DOCA_ERROR_PROPAGATE(r, t)      \
  do {                                  \
    if ((r) == DOCA_SUCCESS) (r) = (t); \
  } while (0)

GNIO_DOCA_END_C

#endif
