/* SPDX-License-Identifier: Apache-2.0
 *
 * gnio DOCA compatibility layer. gnio is not affiliated with, sponsored or
 * endorsed by NVIDIA. This header implements an API compatible with part of
 * NVIDIA DOCA, written from public documentation and the call sites of
 * public samples (docs/doca-compat.md); it contains no text from NVIDIA SDK
 * headers. DOCA is a trademark of NVIDIA Corporation.
 *
 * Command-line parsing: parameters registered with a short and a long name,
 * each handed to its callback as char*, int* or bool*.
 */
#ifndef GNIO_COMPAT_DOCA_ARGP_H
#define GNIO_COMPAT_DOCA_ARGP_H

#include <stdbool.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"

GNIO_DOCA_BEGIN_C

enum doca_argp_type {
  DOCA_ARGP_TYPE_UNKNOWN = 0,
  DOCA_ARGP_TYPE_STRING,
  DOCA_ARGP_TYPE_INT,
  DOCA_ARGP_TYPE_BOOLEAN,
  DOCA_ARGP_TYPE_JSON_OBJ,
};

struct doca_argp_param;

/* param: char*, int* or bool* by type; config: what doca_argp_init was given. */
typedef doca_error_t (*doca_argp_param_cb_t)(void* param, void* config);
typedef doca_error_t (*doca_argp_validation_cb_t)(void* config);

doca_error_t doca_argp_init(const char* program_name, void* program_config);
doca_error_t doca_argp_param_create(struct doca_argp_param** param);
void doca_argp_param_set_short_name(struct doca_argp_param* param, const char* name);
void doca_argp_param_set_long_name(struct doca_argp_param* param, const char* name);
void doca_argp_param_set_arguments(struct doca_argp_param* param, const char* arguments);
void doca_argp_param_set_description(struct doca_argp_param* param, const char* description);
void doca_argp_param_set_callback(struct doca_argp_param* param, doca_argp_param_cb_t callback);
void doca_argp_param_set_type(struct doca_argp_param* param, enum doca_argp_type type);
void doca_argp_param_set_mandatory(struct doca_argp_param* param);
void doca_argp_param_set_cli_only(struct doca_argp_param* param);
void doca_argp_param_set_multiplicity(struct doca_argp_param* param);
doca_error_t doca_argp_register_param(struct doca_argp_param* param);
doca_error_t doca_argp_register_validation_callback(doca_argp_validation_cb_t callback);
doca_error_t doca_argp_start(int argc, char** argv);
doca_error_t doca_argp_destroy(void);
void doca_argp_usage(void);

GNIO_DOCA_END_C

#endif
