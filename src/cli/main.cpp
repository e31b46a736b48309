// `luminal`: command-line entry point; each subcommand lives in its own file (commands.h).
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "luminal/environment.h"
#include "luminal/runtime.h"

namespace {

/// Every subcommand's registration function.
constexpr void (*kCommands[])(CLI::App&) = {luminal::cli::add_inspect, luminal::cli::add_run};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"luminal: a search-based deep-learning compiler and runtime"};
  app.require_subcommand(1);
  for (auto add : kCommands) add(app);
  try {
    luminal::apply_process_environment();
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::invalid_argument& e) {  // bad input: files, shapes, dtypes, unsupported ops
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const luminal::BadInputError& e) {  // bad input a kernel found (an index, offsets)
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
