// The `luminal` command-line tool's subcommands. How to add one: write `void add_<name>(CLI::App&)`
// in src/cli/<name>.cpp that registers a subcommand with its options and callback, declare it here
// and list it in kCommands (main.cpp).
#pragma once

#include <CLI/CLI.hpp>

namespace luminal::cli {

/// `luminal inspect MODEL.pt2`: inputs, outputs, parameters and the ATen ops of a .pt2 archive.
void add_inspect(CLI::App& app);
/// `luminal run MODEL.pt2 --inputs X.safetensors`: translate, compile and run (no Python).
void add_run(CLI::App& app);

}  // namespace luminal::cli
