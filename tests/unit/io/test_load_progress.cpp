// The progress line of a checkpoint load.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "io/load_progress.h"

namespace luminal {
namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  return out;
}

TEST(LoadProgress, BarOnlyForLargeLoadsSummaryWheneverEnabled) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    io::LoadProgress p(3000, true, f, /*min_bytes=*/1000);
    p.add(1000);
    p.add(2000);  // the last add always draws (100%)
    p.finish(2, "; tail");
  }
  const std::string big = read_all(f);
  EXPECT_NE(big.find("\r[load] "), std::string::npos) << big;
  EXPECT_NE(big.find("100%"), std::string::npos) << big;
  EXPECT_NE(big.find("[load] 2 tensors, 3000 bytes in "), std::string::npos) << big;
  EXPECT_NE(big.find("; tail\n"), std::string::npos) << big;
  std::fclose(f);

  f = std::tmpfile();
  io::LoadProgress small(500, true, f, 1000);
  small.add(500);
  small.finish(1);
  const std::string s = read_all(f);
  EXPECT_EQ(s.find('\r'), std::string::npos) << s;  // no bar under min_bytes
  EXPECT_NE(s.find("[load] 1 tensors, 500 bytes"), std::string::npos) << s;
  std::fclose(f);

  f = std::tmpfile();
  io::LoadProgress off(1 << 30, false, f, 1);
  off.add(1 << 30);
  off.finish(1);
  EXPECT_EQ(read_all(f), "");
  std::fclose(f);
}

TEST(LoadProgress, SizesInMessages) {
  EXPECT_EQ(io::format_bytes(512), "512 bytes");
  EXPECT_EQ(io::format_bytes(uint64_t{3} << 20), "3.0 MiB");
  EXPECT_EQ(io::format_bytes(uint64_t(96.1 * double(1ull << 30))), "96.1 GiB");
}

}  // namespace
}  // namespace luminal
