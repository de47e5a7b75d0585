// The precompiled header of the k8s, api and app modules when GPUFAIR_PCH is on (the Makefile's
// sanitizer builds; see src/CMakeLists.txt): the standard and third-party headers their sources
// include, parsed once per build instead of once per source. gpufair's own headers stay out.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>
#include <simdjson.h>
#include <spdlog/spdlog.h>
