// SPDX-License-Identifier: Apache-2.0
// The gnio command.
#include <csignal>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <gnio/backend/backend.hpp>
#include <gnio/console.hpp>
#include <gnio/gnio.hpp>

#include "diag.hpp"
#include "pp_app.hpp"

int main(int argc, char** argv) {
  // Before any CUDA call: a kernel first launched beside a persistent one must not wait for a lazy load.
  gnio::prefer_eager_module_loading();
  // A closed pipe or a file past RLIMIT_FSIZE is a write error that
  // gnio::console reports at the end, not a death (`gnio pp` also stops on
  // signals through gnio::stop_signals while it runs).
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
  int exit_code = 0;
  try {
    CLI::App app{"gnio: GPU-initiated packet I/O tools"};
    app.require_subcommand(1);

    auto* version = app.add_subcommand("version", "print gnio's version and build options");
    version->callback([] {
      gnio::console::out(
          fmt::format("gnio {}\ncuda: {}\n", GNIO_VERSION_STRING, gnio::built_with_cuda() ? "yes" : "no"));
    });

    auto* backends = app.add_subcommand("backends", "list the port backends and their device-string options");
    backends->callback([] {
      for (const auto* o : gnio::backend::registered()) {
        gnio::console::out(fmt::format("{}: {}\n", o->name, o->summary));
        std::string_view opts = o->options ? o->options : "";
        while (!opts.empty()) {
          auto nl = opts.find('\n');
          gnio::console::out(fmt::format("    {}\n", opts.substr(0, nl)));
          if (nl == std::string_view::npos) break;
          opts.remove_prefix(nl + 1);
        }
      }
      gnio::console::out("all backends: overflow=drop|wait  full RX ring: drop and count (default for live sources) or "
                         "wait (default for files and counted generators)\n");
      gnio::console::out("all backends: tx_pcap=PATH     also write every transmitted frame to this pcap file\n");
    });

    gnio::pp::add_command(app);
    gnio::tool::add_diag_commands(app, &exit_code);

    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      // Help, usage errors, and a subcommand's own exit status
      // (CLI::RuntimeError), printed through the console like the rest.
      std::ostringstream out, err;
      exit_code = app.exit(e, out, err);
      gnio::console::out(out.str());
      gnio::console::err(err.str());
    }
  } catch (...) {
    gnio::console::err("gnio: unexpected error: " + gnio::console::current_exception_text() + "\n");
    exit_code = 1;
  }
  return gnio::console::finish("gnio", exit_code);
}
