# SPDX-License-Identifier: Apache-2.0
"""What the integration scripts take from the environment ctest sets."""
import os
import sys


def env(name, kind="file"):
    """The path in environment variable `name`: an executable file, or with
    kind="dir" a directory; anything else ends the script with the reason."""
    v = os.environ.get(name, "")
    ok = os.path.isdir(v) if kind == "dir" else (os.path.isfile(v) and os.access(v, os.X_OK))
    if not ok:
        sys.exit(f"{name} is '{v}', which is not {'a directory' if kind == 'dir' else 'an executable file'} "
                 "(ctest sets it: run the tests with ctest, or set it as tests/CMakeLists.txt does)")
    return v
