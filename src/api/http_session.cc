#include "http_session.h"

#include <array>
#include <exception>
#include <tuple>
#include <utility>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <spdlog/spdlog.h>

#include "tls_context.h"

namespace gpufair::api::detail {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr std::size_t kReadChunk = std::size_t{16} * 1024;
// Plain HTTP reads up to this much per receive: a /filter naming 2,000 nodes is ~28 kB, 5,000
// nodes ~70 kB; a larger request takes more receives.
constexpr std::size_t kReadBytes = std::size_t{64} * 1024;
// A request body's string is kept for the next request up to this capacity (a /filter's body
// names every feasible node: tens to hundreds of kB at thousands of nodes); a larger one is freed.
constexpr std::size_t kSpareBodyBytes = std::size_t{1} << 20;
constexpr std::chrono::milliseconds kLingerTimeout{1000};
constexpr std::chrono::milliseconds kStoppingLingerTimeout{100};

std::string_view view(boost::beast::string_view text) {
  return {text.data(), text.size()};
}

}  // namespace

HttpSession::HttpSession(Socket&& socket, SessionHub& hub, std::shared_ptr<asio::ssl::context> tls,
                         bool overloaded)
    : socket_(std::move(socket)),
      tlsContext_(std::move(tls)),
      timer_(socket_.get_executor()),
      hub_(hub),
      overloaded_(overloaded) {
  if (!tlsContext_) {
    // send() writes the answer with a synchronous send: non-blocking, it takes what the socket
    // takes now and never waits on this io thread.
    error_code ignored;
    socket_.non_blocking(true, ignored);
    return;
  }
  tls_.emplace(socket_, *tlsContext_);
  if (!hub_.options.tls.clientAllowedNames.empty()) {
    tls_->set_verify_callback([this](bool preverified, asio::ssl::verify_context& context) {
      return verifyClientName(preverified, context);
    });
  }
}

bool HttpSession::verifyClientName(bool preverified, asio::ssl::verify_context& context) {
  X509_STORE_CTX* store = context.native_handle();
  if (!preverified || X509_STORE_CTX_get_error_depth(store) > 0) return preverified;
  X509* certificate = X509_STORE_CTX_get_current_cert(store);
  if (certificate == nullptr) return false;
  if (clientNameAllowed(certificate, hub_.options.tls.clientAllowedNames)) return true;
  refusedClient_ = certificateNames(certificate);
  X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
  return false;
}

HttpSession::~HttpSession() {
  hub_.remove(this);
}

void HttpSession::start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    if (!self->tls_) return self->waitForRequest();
    self->armTimer(self->hub_.options.readTimeout);
    self->tls_->async_handshake(asio::ssl::stream_base::server,
                                [self](error_code ec) { self->onHandshake(ec); });
  });
}

void HttpSession::onHandshake(error_code ec) {
  const bool timedOut = timedOut_;
  disarmTimer();
  if (!refusedClient_.empty()) {
    ++hub_.stats.clientNamesRefused;
    spdlog::warn(
        "TLS: refused {}: its client certificate ({}) is signed by the client CA but "
        "none of its names is an allowed client name",
        remote(), refusedClient_);
    return close();
  }
  if (ec || timedOut) {
    if (!stopRequested_ && !hub_.stopping) {
      ++hub_.stats.tlsHandshakeFailures;
      spdlog::info("TLS handshake with {} failed: {}", remote(),
                   timedOut ? "not done within the read timeout" : ec.message());
    }
    return close();
  }
  waitForRequest();
}

void HttpSession::stop() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->stopRequested_ = true;
    // Idle or still shaking hands: close now. Mid-request: it finishes, then closes.
    if (self->phase_ == Phase::kIdle || self->phase_ == Phase::kHandshake) self->close();
  });
}

void HttpSession::closeSocket() {
  error_code ignored;
  socket_.close(ignored);
}

void HttpSession::armTimer(std::chrono::milliseconds timeout) {
  timedOut_ = false;
  deadline_ = std::chrono::steady_clock::now() + timeout;
  if (!timerWaiting_ || deadline_ < timer_.expiry()) waitTimer(deadline_);
}

void HttpSession::disarmTimer() {
  deadline_ = std::chrono::steady_clock::time_point::max();
}

void HttpSession::waitTimer(std::chrono::steady_clock::time_point expiry) {
  const std::uint64_t generation = ++timerGeneration_;
  timerWaiting_ = true;
  timer_.expires_at(expiry);  // a pending wait ends with operation_aborted, and is stale
  timer_.async_wait(
      [self = shared_from_this(), generation](error_code ec) { self->onTimer(ec, generation); });
}

void HttpSession::onTimer(error_code ec, std::uint64_t generation) {
  if (generation != timerGeneration_) return;  // replaced by a later wait
  timerWaiting_ = false;
  if (ec || phase_ == Phase::kClosed) return;
  if (deadline_ == std::chrono::steady_clock::time_point::max()) return;  // nothing timed now
  if (std::chrono::steady_clock::now() < deadline_) return waitTimer(deadline_);
  timedOut_ = true;
  error_code ignored;
  socket_.cancel(ignored);
}

void HttpSession::waitForRequest() {
  phase_ = Phase::kIdle;
  if (stopRequested_ || hub_.stopping) return close();
  if (buffer_.size() > 0) return readRequest();  // a pipelined request is already here
  armTimer(hub_.options.idleTimeout);
  auto firstBytes = [self = shared_from_this()](error_code ec, std::size_t bytes) {
    self->onFirstBytes(ec, bytes);
  };
  if (tls_) return tls_->async_read_some(buffer_.prepare(kReadChunk), std::move(firstBytes));
  socket_.async_read_some(buffer_.prepare(kReadBytes), std::move(firstBytes));
}

void HttpSession::onFirstBytes(error_code ec, std::size_t bytes) {
  const bool timedOut = timedOut_;
  disarmTimer();
  if (ec) {  // idle timeout, peer closed, or stop(): nothing to answer
    if (timedOut) ++hub_.stats.idleClosed;
    return close();
  }
  buffer_.commit(bytes);
  readRequest();
}

void HttpSession::readRequest() {
  phase_ = Phase::kReading;
  parser_.reset();
  fieldsMemory_.release();
  parser_.emplace(std::piecewise_construct, std::make_tuple(std::move(spareBody_)),
                  std::make_tuple(std::pmr::polymorphic_allocator<char>(&fieldsMemory_)));
  parser_->body_limit(hub_.options.maxBodyBytes);
  parser_->header_limit(
      static_cast<std::uint32_t>(std::min<std::size_t>(hub_.options.maxHeaderBytes, UINT32_MAX)));
  armTimer(hub_.options.readTimeout);
  if (!tls_) {
    parser_->eager(true);
    return readPlain();
  }
  http::async_read(*tls_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, std::size_t) { self->onRead(ec); });
}

// As Beast's read: what is buffered first, then one receive of up to kReadBytes at a time.
void HttpSession::readPlain() {
  error_code ec;
  while (buffer_.size() > 0 && !parser_->is_done()) {
    const std::size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) break;
    if (ec) return onRead(ec);
    if (used == 0) break;
  }
  if (parser_->is_done()) return onRead({});
  // The rest: a receive now when it is there, else when the socket is readable (asio tries at once
  // and waits only when that found nothing).
  socket_.async_read_some(
      buffer_.prepare(kReadBytes),
      [self = shared_from_this()](error_code ec, std::size_t bytes) { self->onMore(ec, bytes); });
}

void HttpSession::onMore(error_code ec, std::size_t bytes) {
  if (ec == asio::error::eof) {
    // The peer closed: a request cut short is a partial message, none at all the stream's end.
    if (!parser_->got_some()) return onRead(http::error::end_of_stream);
    parser_->put_eof(ec);
    return onRead(ec ? ec : (parser_->is_done() ? error_code{} : http::error::partial_message));
  }
  if (ec) return onRead(ec);  // the read timeout (the timer cancelled the read), or stop()
  buffer_.commit(bytes);
  readPlain();
}

void HttpSession::onRead(error_code ec) {
  const bool timedOut = timedOut_;
  disarmTimer();
  if (timedOut) {
    ++hub_.stats.readTimeouts;
    spdlog::info("request not complete after {} ms; answering 408",
                 hub_.options.readTimeout.count());
    return sendError(408, "request not received completely within " +
                              std::to_string(hub_.options.readTimeout.count()) + " ms");
  }
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return close();
  if (ec == http::error::body_limit) {
    ++hub_.stats.bodyTooLarge;
    spdlog::info("request body over {} bytes; answering 413", hub_.options.maxBodyBytes);
    return sendError(
        413, "request body larger than " + std::to_string(hub_.options.maxBodyBytes) + " bytes");
  }
  if (ec == http::error::header_limit) {
    ++hub_.stats.headerTooLarge;
    spdlog::info("request header over {} bytes; answering 431", hub_.options.maxHeaderBytes);
    return sendError(431, "request header larger than " +
                              std::to_string(hub_.options.maxHeaderBytes) + " bytes");
  }
  if (ec && ec.category() == http::make_error_code(http::error::bad_target).category()) {
    ++hub_.stats.malformedRequests;
    spdlog::info("malformed HTTP request: {}", ec.message());
    return sendError(400, "malformed HTTP request: " + ec.message());
  }
  if (ec) return close();  // reset by peer, stop(): no one to answer
  handleRequest();
}

void HttpSession::handleRequest() {
  const auto& request = parser_->get();
  const unsigned version = request.version();
  const bool keepAlive = request.keep_alive() && !overloaded_;
  if (overloaded_) {
    spdlog::warn("over {} open connections; answering 503", hub_.options.maxConnections);
    auto response =
        errorResponse(503, "server busy: over " + std::to_string(hub_.options.maxConnections) +
                               " open connections; retry later");
    return send(std::move(response), version, false);
  }
  phase_ = Phase::kHandling;
  requestVersion_ = version;
  requestKeepAlive_ = keepAlive;
  // The session lives until the answer comes, however late; the reply itself holds only a plain
  // pointer, which std::function keeps without a heap allocation.
  handling_ = shared_from_this();
  try {
    hub_.handler.handleAsync(
        Request{view(request.method_string()), view(request.target()), request.body()},
        [this](Response response) { onReply(std::move(response)); });
  } catch (const std::exception& e) {
    ++hub_.stats.handlerErrors;
    if (phase_ != Phase::kHandling) {  // it answered, then threw: the request is gone
      spdlog::error("handler failed after answering: {}", e.what());
      return;
    }
    spdlog::error("{} {}: handler failed: {}", view(request.method_string()),
                  view(request.target()), e.what());
    answer(errorResponse(500, std::string("internal error: ") + e.what()));
  }
}

void HttpSession::onReply(Response response) {
  if (socket_.get_executor().running_in_this_thread()) return answer(std::move(response));
  asio::post(socket_.get_executor(), [this, response = std::move(response)]() mutable {
    answer(std::move(response));  // handling_ holds the session until then
  });
}

void HttpSession::answer(Response response) {
  if (phase_ != Phase::kHandling) return;  // answered already (the handler threw after replying)
  const std::shared_ptr<HttpSession> self = std::move(handling_);
  send(std::move(response), requestVersion_, requestKeepAlive_);
}

void HttpSession::sendError(int status, std::string_view message) {
  const unsigned version = parser_ && parser_->is_header_done() ? parser_->get().version() : 11;
  send(errorResponse(status, message), version, false);
}

void HttpSession::send(Response response, unsigned version, bool keepAlive) {
  if (parser_) {
    std::string& body = parser_->get().body();
    if (body.capacity() <= kSpareBodyBytes) {
      body.clear();
      spareBody_ = std::move(body);
    }
    parser_.reset();
  }
  keepAlive = keepAlive && !stopRequested_ && !hub_.stopping;
  closeAfterWrite_ = !keepAlive;
  body_ = std::move(response.body);
  // As Beast's response with keep_alive() and prepare_payload() wrote it: HTTP/1.1 says only
  // "close", HTTP/1.0 only "keep-alive".
  const auto status = static_cast<unsigned>(response.status);
  head_.clear();
  head_ += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  head_ += std::to_string(status);
  head_ += ' ';
  head_ += view(http::obsolete_reason(http::int_to_status(status)));
  head_ += "\r\nContent-Type: ";
  head_ += response.contentType;
  for (const auto& [name, value] : response.headers) {
    head_ += "\r\n";
    head_ += name;
    head_ += ": ";
    head_ += value;
  }
  head_ += "\r\nContent-Length: ";
  head_ += std::to_string(body_.size());
  if (version == 10 && keepAlive) head_ += "\r\nConnection: keep-alive";
  if (version != 10 && !keepAlive) head_ += "\r\nConnection: close";
  head_ += "\r\n\r\n";
  phase_ = Phase::kWriting;
  std::size_t written = 0;
  if (!tls_) {
    // Plain HTTP: the answer mostly fits the socket's send buffer, and is written here at once;
    // through async_write its completion went through the io_context's queue first (an epoll_wait
    // and a handler per answer). Whatever the socket does not take now is written by async_write.
    const std::array<asio::const_buffer, 2> answer{asio::buffer(head_), asio::buffer(body_)};
    error_code ec;
    written = socket_.send(answer, asio::socket_base::message_flags{0}, ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) return onWrite(ec);
    if (ec) written = 0;
    if (written == head_.size() + body_.size()) return onWrite({});
  }
  armTimer(hub_.options.writeTimeout);
  auto done = [self = shared_from_this()](error_code ec, std::size_t) { self->onWrite(ec); };
  if (tls_) {
    head_ += body_;  // asio's TLS stream writes one buffer per record: one record, not two
    return asio::async_write(*tls_, asio::buffer(head_), std::move(done));
  }
  const std::size_t fromHead = std::min(written, head_.size());
  const std::array<asio::const_buffer, 2> rest{asio::buffer(head_) + fromHead,
                                               asio::buffer(body_) + (written - fromHead)};
  asio::async_write(socket_, rest, std::move(done));
}

void HttpSession::onWrite(error_code ec) {
  const bool timedOut = timedOut_;
  disarmTimer();
  if (ec) {
    if (timedOut) {
      ++hub_.stats.writeTimeouts;
      spdlog::info("{}: answer not taken within {} ms; closing", remote(),
                   hub_.options.writeTimeout.count());
    }
    return close();
  }
  if (closeAfterWrite_) return lingerClose();
  waitForRequest();
}

void HttpSession::lingerClose() {
  phase_ = Phase::kLingering;
  if (!tls_) return drainAndClose();
  // TLS: say close_notify first. A client that answers it, or closes, ends this at once; one that
  // goes on sending is cut off by the timer.
  armTimer(hub_.stopping ? kStoppingLingerTimeout : kLingerTimeout);
  tls_->async_shutdown([self = shared_from_this()](error_code) {
    self->disarmTimer();
    self->close();
  });
}

void HttpSession::drainAndClose() {
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  buffer_.clear();
  armTimer(hub_.stopping ? kStoppingLingerTimeout : kLingerTimeout);
  socket_.async_read_some(
      buffer_.prepare(kReadChunk),
      [self = shared_from_this()](error_code ec, std::size_t bytes) { self->onLinger(ec, bytes); });
}

void HttpSession::onLinger(error_code ec, std::size_t) {
  if (ec) return close();  // the client closed, or the linger time is over
  socket_.async_read_some(
      buffer_.prepare(kReadChunk),
      [self = shared_from_this()](error_code ec, std::size_t bytes) { self->onLinger(ec, bytes); });
}

std::string HttpSession::remote() const {
  error_code ec;
  const auto endpoint = socket_.remote_endpoint(ec);
  if (ec) return "client";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

void HttpSession::close() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  disarmTimer();
  timer_.cancel();  // its pending wait holds the session
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace gpufair::api::detail
