// The precompiled header of every test binary when GPUFAIR_PCH is on (the Makefile's sanitizer
// builds; see tests/CMakeLists.txt): the standard and third-party headers most tests include,
// parsed once per build instead of once per test source. gpufair's own headers stay out, so a
// test still has to include what it uses (the gcc build, without a PCH, checks that).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>
