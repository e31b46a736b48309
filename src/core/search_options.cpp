// The search's default switch (luminal/search.h): on, unless LUMINAL_SEARCH=0.
#include <cstdlib>
#include <string_view>

#include "luminal/search.h"

namespace luminal {

bool search_enabled_by_default() {
  const char* v = std::getenv("LUMINAL_SEARCH");
  return v == nullptr || std::string_view(v) != "0";
}

}  // namespace luminal
