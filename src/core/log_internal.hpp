// SPDX-License-Identifier: Apache-2.0
// The core's logging and errors: the backend SDK's (gnio/backend/log.hpp),
// by the names the core uses.
#pragma once

#include "gnio/backend/log.hpp"

namespace gnio::detail {

using backend::fail;
using backend::log;

}  // namespace gnio::detail
