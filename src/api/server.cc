#include "gpufair/api/server.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "gpufair/common/thread_name.h"

#include "http_session.h"
#include "tls_context.h"

namespace gpufair::api {
namespace {

namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;

constexpr std::chrono::milliseconds kAcceptRetry{100};

Status validate(const ServerOptions& options) {
  if (options.threads < 1) return Status::error("threads must be at least 1");
  if (options.maxBodyBytes == 0) return Status::error("maxBodyBytes must be positive");
  if (options.maxHeaderBytes == 0) return Status::error("maxHeaderBytes must be positive");
  if (options.maxConnections == 0) return Status::error("maxConnections must be positive");
  for (auto timeout : {options.readTimeout, options.idleTimeout, options.writeTimeout}) {
    if (timeout.count() <= 0) return Status::error("timeouts must be positive");
  }
  if (options.tls.enabled() && options.tls.keyFile.empty()) {
    return Status::error("TLS: a certificate needs its private key (key file)");
  }
  if (!options.tls.enabled() &&
      (!options.tls.keyFile.empty() || !options.tls.clientCaFile.empty())) {
    return Status::error("TLS: a key or client CA was given without a certificate");
  }
  if (!options.tls.clientAllowedNames.empty() && options.tls.clientCaFile.empty()) {
    return Status::error("TLS: allowed client names need a client CA (client certificates)");
  }
  if (options.tls.reloadPeriod.count() < 0) {
    return Status::error("reloadPeriod must not be negative");
  }
  return Status::ok();
}

}  // namespace

Result<ListenAddress> parseListenAddress(std::string_view text) {
  using R = Result<ListenAddress>;
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return R::failure("listen address \"" + std::string(text) + "\": expected HOST:PORT");
  }
  ListenAddress address;
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return R::failure("listen address \"" + std::string(text) +
                      "\": write IPv6 hosts in brackets, e.g. [::1]:8888");
  }
  address.host = host.empty() ? "0.0.0.0" : std::string(host);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value > 65535) {
    return R::failure("listen address \"" + std::string(text) + "\": port \"" + std::string(port) +
                      "\" is not a number from 0 to 65535");
  }
  address.port = static_cast<std::uint16_t>(value);
  return address;
}

// One io_context per io thread, each run by that thread alone: a connection is accepted onto the
// contexts in turn, and everything of it (its reads, the handler, its answer, the Binding it sends
// through the binder's sender of the same context) runs on that one thread, with no hand-off to
// another thread and no strand (a context with one thread runs its handlers one at a time).
// Member order matters: the hub outlives the io_contexts, whose destruction releases the last
// sessions, and the sessions unregister from the hub. The acceptor, its retry timer and the TLS
// reload timer live on the first context (one thread), so stop()'s close, posted there, never
// races an accept completion.
class ExtenderServer::Impl {
 public:
  Impl(RequestHandler& handler, ServerOptions options)
      : options_(std::move(options)),
        hub_(handler, options_, stats_),
        contexts_(makeContexts(std::max(1, options_.threads))),
        acceptor_(*contexts_.front()),
        retryTimer_(*contexts_.front()),
        reloadTimer_(*contexts_.front()) {}

  Status start() {
    if (started_) return Status::error("server already started");
    if (auto status = validate(options_); !status.isOk()) return status;
    auto address = parseListenAddress(options_.listen);
    if (!address) return Status::error(address.error());
    error_code ec;
    tcp::resolver resolver(*contexts_.front());
    auto endpoints =
        resolver.resolve(address->host, std::to_string(address->port), tcp::resolver::passive, ec);
    if (ec || endpoints.empty()) {
      return Status::error("listen address " + options_.listen + ": " + ec.message());
    }
    const tcp::endpoint endpoint = endpoints.begin()->endpoint();
    if (!options_.tls.enabled() && !options_.allowInsecureHttp &&
        !endpoint.address().is_loopback()) {
      return Status::error("refusing to serve plain HTTP on " + options_.listen + " (" +
                           endpoint.address().to_string() +
                           " is not a loopback address): configure TLS (--tls-cert, --tls-key) "
                           "or allow it explicitly (--allow-insecure-http)");
    }
    if (options_.tls.enabled()) {
      tls_ = std::make_unique<detail::TlsContextStore>(options_.tls);
      if (Status loaded = tls_->load(); !loaded.isOk()) {
        tls_.reset();
        return loaded;
      }
    }
    if (acceptor_.open(endpoint.protocol(), ec); ec) return listenError("open", ec);
    if (acceptor_.set_option(asio::socket_base::reuse_address(true), ec); ec) {
      return listenError("set SO_REUSEADDR", ec);
    }
    if (acceptor_.bind(endpoint, ec); ec) return listenError("bind", ec);
    if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
      return listenError("listen", ec);
    }
    port_ = acceptor_.local_endpoint(ec).port();
    started_ = true;
    accept();
    watchTlsFiles();
    threads_.reserve(contexts_.size());
    for (auto& context : contexts_) {
      // A context without connections yet has no work: the guard keeps its thread in run().
      guards_.emplace_back(context->get_executor());
      threads_.emplace_back([&context = *context] {
        nameThisThread("gpufair-io");
        context.run();
      });
    }
    spdlog::info("extender listening on {}:{} ({}) with {} io threads", address->host, port_.load(),
                 describeTls(), options_.threads);
    return Status::ok();
  }

  Status reloadTls() {
    if (!tls_) return Status::ok();
    return tls_->reload(false);
  }

  TlsState tlsState() const { return tls_ ? tls_->state() : TlsState{}; }
  std::vector<asio::io_context*> contexts() {
    std::vector<asio::io_context*> out;
    for (auto& context : contexts_) out.push_back(context.get());
    return out;
  }

  void stop() {
    if (!started_ || stopped_) return;
    stopped_ = true;
    hub_.stopping = true;
    asio::post(*contexts_.front(), [this] {
      error_code ignored;
      acceptor_.close(ignored);
      retryTimer_.cancel();
      reloadTimer_.cancel();
    });
    const std::size_t open = hub_.stopAll();
    if (!hub_.waitEmpty(options_.drainTimeout)) {
      spdlog::warn("stopping with {} of {} connections still busy after {} ms", hub_.open(), open,
                   options_.drainTimeout.count());
    }
    for (auto& context : contexts_) context->stop();
    for (auto& thread : threads_) thread.join();
    threads_.clear();
    hub_.closeAll();
    spdlog::info("extender on port {} stopped", port_.load());
  }

  std::uint16_t port() const { return port_; }
  bool tls() const { return tls_ != nullptr; }
  const ServerStats& stats() const { return stats_; }

 private:
  using Contexts = std::vector<std::unique_ptr<asio::io_context>>;
  static Contexts makeContexts(int count) {
    Contexts contexts;
    for (int i = 0; i < count; ++i) contexts.push_back(std::make_unique<asio::io_context>(1));
    return contexts;
  }

  Status listenError(const char* what, const error_code& ec) {
    error_code ignored;
    acceptor_.close(ignored);
    return Status::error("listen on " + options_.listen + ": " + what + ": " + ec.message());
  }

  std::string describeTls() const {
    if (!tls_) return "plain HTTP";
    const TlsState state = tls_->state();
    std::string text = "TLS, certificate serial " + state.serial + " (" + state.subject +
                       ") valid until " + detail::isoTime(state.notAfter);
    if (!options_.tls.clientCaFile.empty()) text += ", client certificates required";
    if (!options_.tls.clientAllowedNames.empty()) {
      std::string names;
      for (const auto& name : options_.tls.clientAllowedNames) {
        names += (names.empty() ? "" : ", ") + name;
      }
      text += " (names: " + names + ")";
    }
    if (options_.tls.reloadPeriod.count() > 0) {
      text += "; files re-read every " + std::to_string(options_.tls.reloadPeriod.count()) + " ms";
    }
    return text;
  }

  // Every reloadPeriod: the TLS files again (on the acceptor's context, so stop() cancels it).
  void watchTlsFiles() {
    if (!tls_ || options_.tls.reloadPeriod.count() == 0) return;
    reloadTimer_.expires_after(options_.tls.reloadPeriod);
    reloadTimer_.async_wait([this](error_code ec) {
      if (ec || !acceptor_.is_open()) return;
      tls_->reload(true);
      watchTlsFiles();
    });
  }

  void accept() {
    // The next connection goes to the next context in turn.
    asio::io_context& target = *contexts_[nextContext_++ % contexts_.size()];
    acceptor_.async_accept(target.get_executor(), [this](error_code ec,
                                                         detail::HttpSession::Socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      if (ec) {
        // Out of file descriptors and the like: back off instead of spinning.
        spdlog::warn("accept failed: {}; retrying in {} ms", ec.message(), kAcceptRetry.count());
        retryTimer_.expires_after(kAcceptRetry);
        retryTimer_.async_wait([this](error_code timerEc) {
          if (!timerEc && acceptor_.is_open()) accept();
        });
        return;
      }
      admit(std::move(socket));
      accept();
    });
  }

  void admit(detail::HttpSession::Socket socket) {
    const std::size_t open = hub_.open();
    ++stats_.connectionsAccepted;
    if (open >= options_.maxConnections) ++stats_.connectionsRefused;
    if (open >= 2 * options_.maxConnections) {
      // Far over the limit: even the 503 would cost too much.
      error_code ignored;
      socket.close(ignored);
      return;
    }
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<detail::HttpSession>(
        std::move(socket), hub_, tls_ ? tls_->current() : nullptr, open >= options_.maxConnections);
    hub_.add(session);
    session->start();
  }

  ServerOptions options_;
  ServerStats stats_;
  detail::SessionHub hub_;
  std::unique_ptr<detail::TlsContextStore> tls_;  // null: plain HTTP
  Contexts contexts_;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
  std::size_t nextContext_ = 0;  // on the first context's thread
  tcp::acceptor acceptor_;
  asio::steady_timer retryTimer_;
  asio::steady_timer reloadTimer_;
  std::vector<std::thread> threads_;
  std::atomic<std::uint16_t> port_{0};
  bool started_ = false;
  bool stopped_ = false;
};

ExtenderServer::ExtenderServer(RequestHandler& handler, ServerOptions options)
    : impl_(std::make_unique<Impl>(handler, std::move(options))) {}

ExtenderServer::~ExtenderServer() {
  impl_->stop();
}

Status ExtenderServer::start() {
  return impl_->start();
}
void ExtenderServer::stop() {
  impl_->stop();
}
std::uint16_t ExtenderServer::port() const {
  return impl_->port();
}
bool ExtenderServer::tls() const {
  return impl_->tls();
}
const ServerStats& ExtenderServer::stats() const {
  return impl_->stats();
}
Status ExtenderServer::reloadTls() {
  return impl_->reloadTls();
}
TlsState ExtenderServer::tlsState() const {
  return impl_->tlsState();
}
std::vector<boost::asio::io_context*> ExtenderServer::contexts() {
  return impl_->contexts();
}

}  // namespace gpufair::api
