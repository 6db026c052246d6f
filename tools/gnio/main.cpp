// SPDX-License-Identifier: Apache-2.0
// The gnio command.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <gnio/backend/backend.hpp>
#include <gnio/gnio.hpp>

#include "diag.hpp"
#include "pp_app.hpp"

int main(int argc, char** argv) {
  // Before any CUDA call: a kernel first launched beside a persistent one must not wait for a lazy load.
  gnio::prefer_eager_module_loading();
  CLI::App app{"gnio: GPU-initiated packet I/O tools"};
  app.require_subcommand(1);

  auto* version = app.add_subcommand("version", "print gnio's version and build options");
  version->callback([] {
    fmt::print("gnio {}\ncuda: {}\n", GNIO_VERSION_STRING, gnio::built_with_cuda() ? "yes" : "no");
  });

  auto* backends = app.add_subcommand("backends", "list the port backends and their device-string options");
  backends->callback([] {
    for (const auto* o : gnio::backend::registered()) {
      fmt::print("{}: {}\n", o->name, o->summary);
      std::string_view opts = o->options ? o->options : "";
      while (!opts.empty()) {
        auto nl = opts.find('\n');
        fmt::print("    {}\n", opts.substr(0, nl));
        if (nl == std::string_view::npos) break;
        opts.remove_prefix(nl + 1);
      }
    }
    fmt::print("all backends: overflow=drop|wait  full RX ring: drop and count (default for live sources) or wait "
               "(default for files and counted generators)\n");
    fmt::print("all backends: tx_pcap=PATH     also write every transmitted frame to this pcap file\n");
  });

  gnio::pp::add_command(app);
  int exit_code = 0;
  gnio::tool::add_diag_commands(app, &exit_code);

  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
