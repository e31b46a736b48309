// expect_error: the exception-message check shared by every test binary.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace luminal::test {

/// Runs f, expecting an exception whose message contains every one of `parts`.
inline void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const std::exception& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    return;
  }
  ADD_FAILURE() << "no exception; expected one mentioning '" << (parts.empty() ? "" : parts[0]) << "'";
}

}  // namespace luminal::test
