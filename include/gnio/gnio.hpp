// SPDX-License-Identifier: Apache-2.0
// Umbrella header for gnio's host API.
#pragma once

#include "gnio/atomic_file.hpp"
#include "gnio/backends.hpp"
#include "gnio/caps.hpp"
#include "gnio/console.hpp"
#include "gnio/device/pkt.hpp"
#include "gnio/device/rx.hpp"
#include "gnio/device/sem.hpp"
#include "gnio/device/tx.hpp"
#include "gnio/gpu.hpp"
#include "gnio/kernel.hpp"
#include "gnio/launch.hpp"
#include "gnio/log.hpp"
#include "gnio/memory.hpp"
#include "gnio/port.hpp"
#include "gnio/printable.hpp"
#include "gnio/semaphore.hpp"
#include "gnio/session.hpp"
#include "gnio/signals.hpp"
#include "gnio/status.hpp"
