/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Logging: messages go to stderr (standard backend) through gnio's logger
 * levels; a program's DOCA_LOG_REGISTER names the source printed with them.
 */
#ifndef GNIO_COMPAT_DOCA_LOG_H
#define GNIO_COMPAT_DOCA_LOG_H

#include <stdint.h>
#include <stdio.h>

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

enum doca_log_level {
  DOCA_LOG_LEVEL_DISABLE = 10,
  DOCA_LOG_LEVEL_CRIT = 20,
  DOCA_LOG_LEVEL_ERROR = 30,
  DOCA_LOG_LEVEL_WARNING = 40,
  DOCA_LOG_LEVEL_INFO = 50,
  DOCA_LOG_LEVEL_DEBUG = 60,
  DOCA_LOG_LEVEL_TRACE = 70,
};

struct doca_log_backend;

doca_error_t doca_log_backend_create_standard(void);
doca_error_t doca_log_backend_create_with_file(FILE* fptr, struct doca_log_backend** backend);
doca_error_t doca_log_backend_create_with_file_sdk(FILE* fptr, struct doca_log_backend** backend);
doca_error_t doca_log_backend_set_sdk_level(struct doca_log_backend* backend, uint32_t level);
doca_error_t doca_log_backend_set_level_lower_limit(struct doca_log_backend* backend, uint32_t level);
doca_error_t doca_log_level_set_global_lower_limit(uint32_t level);
uint32_t doca_log_level_get_global_lower_limit(void);

/* gnio's entry point behind the DOCA_LOG_* macros. */
void gnio_doca_log(uint32_t level, const char* source, int line, const char* func, const char* format, ...)
    __attribute__((format(printf, 5, 6)));

GNIO_DOCA_END_C

/* One name per translation unit, printed with its messages. */
#define DOCA_LOG_REGISTER(SOURCE) static const char* const gnio_doca_log_source __attribute__((unused)) = #SOURCE

#define GNIO_DOCA_LOG_AT(level, format, ...) \
  gnio_doca_log((level), gnio_doca_log_source, __LINE__, __func__, format, ##__VA_ARGS__)
#define DOCA_LOG_CRIT(format, ...) GNIO_DOCA_LOG_AT(DOCA_LOG_LEVEL_CRIT, format, ##__VA_ARGS__)
#define DOCA_LOG_ERR(format, ...) GNIO_DOCA_LOG_AT(DOCA_LOG_LEVEL_ERROR, format, ##__VA_ARGS__)
#define DOCA_LOG_WARN(format, ...) GNIO_DOCA_LOG_AT(DOCA_LOG_LEVEL_WARNING, format, ##__VA_ARGS__)
#define DOCA_LOG_INFO(format, ...) GNIO_DOCA_LOG_AT(DOCA_LOG_LEVEL_INFO, format, ##__VA_ARGS__)
#define DOCA_LOG_DBG(format, ...) GNIO_DOCA_LOG_AT(DOCA_LOG_LEVEL_DEBUG, format, ##__VA_ARGS__)
#define DOCA_LOG_TRC(format, ...) GNIO_DOCA_LOG_AT(DOCA_LOG_LEVEL_TRACE, format, ##__VA_ARGS__)

#endif
