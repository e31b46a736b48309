// Test helpers shared by the core unit tests.
#pragma once

#include <exception>
#include <string>

#include <gtest/gtest.h>

namespace luminal {

/// Runs f, expects an exception whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "expected an exception containing: " << needle;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

/// Runs f and returns the exception message (empty when nothing was thrown).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace luminal
