// SPDX-License-Identifier: Apache-2.0
// The gnio command.
#include <csignal>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <gnio/backends.hpp>
#include <gnio/console.hpp>
#include <gnio/gnio.hpp>

#include "cli.hpp"
#include "diag.hpp"
#include "pp_app.hpp"
#include "result_schema.hpp"

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
    const std::string version_text = gnio::cli::version_text("gnio");
    app.set_version_flag("--version", version_text, "print gnio's version and build options (as `gnio version`)");

    auto* version = app.add_subcommand("version", "print gnio's version and build options");
    version->callback([version_text] { gnio::console::out(version_text + "\n"); });

    auto* backends = app.add_subcommand("backends", "list the port backends and their device-string options");
    static bool backends_json = false;
    backends->add_flag("--json", backends_json, "print JSON (schema: docs/schema/backends.schema.json)");
    backends->callback([] {
      if (backends_json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& b : gnio::list_backends())
          list.push_back({{"name", b.name},
                          {"available", b.available},
                          {"summary", b.summary},
                          {"options", b.options},
                          {"why_not", b.why_not}});
        nlohmann::json j{{"backends", list}, {"common_options", gnio::common_backend_options()}};
        gnio::result_schema::stamp(j, gnio::result_schema::backends);
        gnio::console::out(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        return;
      }
      auto lines = [](std::string_view text) {
        while (!text.empty()) {
          auto nl = text.find('\n');
          gnio::console::out(fmt::format("    {}\n", text.substr(0, nl)));
          if (nl == std::string_view::npos) break;
          text.remove_prefix(nl + 1);
        }
      };
      for (const auto& b : gnio::list_backends()) {
        if (!b.available) {
          gnio::console::out(fmt::format("{}: not built: {}\n", b.name, b.why_not));
          continue;
        }
        gnio::console::out(fmt::format("{}: {}\n", b.name, b.summary));
        lines(b.options);
      }
      gnio::console::out("all backends:\n");
      lines(gnio::common_backend_options());
    });

    gnio::pp::add_command(app);
    gnio::tool::add_diag_commands(app, &exit_code);

    // The first word that is not an option names the command: one gnio does
    // not have is named back, with the list (CLI11 would only say that a
    // subcommand is required).
    if (argc < 2) {
      gnio::console::err("gnio: give a command (version, backends, pp, doctor, caps, explain); see gnio --help\n");
      return gnio::console::finish("gnio", 2);
    }
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (!word.empty() && word[0] == '-') continue;
      bool known = false;
      std::string names;
      std::vector<std::string> list;
      for (const CLI::App* sub : std::as_const(app).get_subcommands([](const CLI::App*) { return true; })) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
        list.push_back(sub->get_name());
        known = known || sub->check_name(word);
      }
      if (!known) {
        const std::string near = gnio::cli::nearest_name(word, list);
        gnio::console::err(fmt::format("gnio: '{}' is not a gnio command{} (commands: {}); see gnio --help\n",
                                       gnio::printable(word), near.empty() ? "" : "; did you mean " + near + "?",
                                       names));
        return gnio::console::finish("gnio", 2);
      }
      break;
    }
    // Help and --version exit with 0, usage errors with 2, and a command
    // with its own status (CLI::RuntimeError), printed through the console.
    if (auto rc = gnio::cli::parse(app, argc, argv)) exit_code = *rc;
  } catch (...) {
    gnio::console::err("gnio: unexpected error: " + gnio::console::current_exception_text() + "\n");
    exit_code = 1;
  }
  return gnio::console::finish("gnio", exit_code);
}
