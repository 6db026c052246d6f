// SPDX-License-Identifier: Apache-2.0
#include "out_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace gnio::backend {

status status_from_errno(int e) noexcept {
  switch (e) {
    case ENOENT:
    case ENOTDIR:
    case ENODEV:
    case ENXIO: return status::not_found;
    case EACCES:
    case EPERM:
    case EROFS: return status::not_permitted;
    case ENOMEM:
    case ENOBUFS: return status::no_memory;
    case EBUSY: return status::in_use;
    case EEXIST: return status::already_exist;
    case EINVAL: return status::invalid_value;
    case ENETDOWN: return status::not_connected;
    case ENOTSUP:
#if EOPNOTSUPP != ENOTSUP
    case EOPNOTSUPP:
#endif
    case EAFNOSUPPORT:
    case EPROTONOSUPPORT:
    case ENOPROTOOPT: return status::not_supported;
    default: return status::io_failed;
  }
}

int output_path_errno(const std::string& path) noexcept {
  if (path.empty()) return ENOENT;
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return EISDIR;
    // The effective ids decide, as they will for the open at start.
    return faccessat(AT_FDCWD, path.c_str(), W_OK, AT_EACCESS) == 0 ? 0 : errno;
  }
  if (errno != ENOENT) return errno;  // ENOTDIR, EACCES on the way, ELOOP, ...
  // A file to create: its directory must exist and take new entries.
  std::string dir = ".";
  if (const auto slash = path.find_last_of('/'); slash != std::string::npos)
    dir = slash == 0 ? "/" : path.substr(0, slash);
  if (stat(dir.c_str(), &st) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  return faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0 ? 0 : errno;
}

}  // namespace gnio::backend
