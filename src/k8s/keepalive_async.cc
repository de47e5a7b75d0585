#include "keepalive_async.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "keepalive_connection.h"

namespace gpufair::k8s::detail {

using Strand = asio::strand<asio::io_context::executor_type>;

// A connection given back this recently is taken again without the peek (a system call per
// request): an API server closes an idle keep-alive connection after tens of seconds, not within
// one; the rare one closed meanwhile fails before any byte of the answer and the request is sent
// once more on a new connection (Exchange::failed).
constexpr std::chrono::milliseconds kTrustedIdle{1'000};

class AsyncKeepAlive::Connection {
 public:
  Connection(asio::io_context& context, std::shared_ptr<ssl::context> tlsContext)
      : strand_(asio::make_strand(context)), timer(strand_), context_(std::move(tlsContext)) {
    if (context_) {
      tls_.emplace(strand_, *context_);
    } else {
      plain_.emplace(strand_);
    }
    buffer.reserve(kReadChunk);
  }

  const Strand& strand() const { return strand_; }
  beast::tcp_stream& tcpStream() { return tls_ ? tls_->next_layer() : *plain_; }
  ssl::stream<beast::tcp_stream>* tls() { return tls_ ? &*tls_ : nullptr; }
  // Calls f with the stream requests travel on (TLS or plain).
  template <typename F>
  void withStream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(*plain_);
    }
  }
  bool stillOpen() {
    if (SteadyClock::now() - idleSince < kTrustedIdle) return true;
    return quietWhileIdle(tcpStream().socket().native_handle());
  }

 private:
  Strand strand_;  // first: what follows runs its handlers on it

 public:
  // The deadline of the exchange under way (while busy), watched by one wait on `timer` that is
  // not cancelled when the exchange ends: a cancel per exchange queued a handler, and each queued
  // handler made the io thread poll epoll once more. The wait closes the connection only when an
  // exchange is under way past its deadline; else it waits again for the deadline of the exchange
  // under way, or ends when the connection is idle (watchDeadline).
  asio::steady_timer timer;
  SteadyClock::time_point deadline = SteadyClock::time_point::max();
  SteadyClock::time_point waitingUntil = SteadyClock::time_point::max();  // max: no wait pending
  std::uint64_t waits = 0;  // numbers the waits: the handler of a replaced one is stale
  bool busy = false;        // an exchange is under way
  bool expired = false;     // the timer closed the connection
  bool reused = false;
  SteadyClock::time_point idleSince;  // when it was last given back to the pool
  beast::flat_buffer buffer;
  std::optional<tcp::resolver> resolver;  // while a host name is looked up

 private:
  std::shared_ptr<ssl::context> context_;  // shared with the other connections
  std::optional<ssl::stream<beast::tcp_stream>> tls_;
  std::optional<beast::tcp_stream> plain_;
};

namespace {

// Waits on the connection's timer until its `deadline` (on its strand); see Connection::timer. The
// handler holds the connection weakly: a pooled connection's wait does not keep it alive.
void watchDeadline(const AsyncKeepAlive::ConnectionPtr& connection) {
  AsyncKeepAlive::Connection& c = *connection;
  c.waitingUntil = c.deadline;
  const std::uint64_t wait = ++c.waits;
  c.timer.expires_at(c.deadline);  // a wait still pending ends with operation_aborted, stale
  c.timer.async_wait(
      [weak = std::weak_ptr<AsyncKeepAlive::Connection>(connection), wait](error_code ec) {
        const AsyncKeepAlive::ConnectionPtr connection = weak.lock();
        if (!connection || connection->waits != wait) return;  // destroyed, or waited again since
        connection->waitingUntil = SteadyClock::time_point::max();
        if (ec || !connection->busy) return;
        // An exchange begun since, with a later deadline (or none).
        if (SteadyClock::now() < connection->deadline) {
          if (connection->deadline != SteadyClock::time_point::max()) watchDeadline(connection);
          return;
        }
        connection->expired = true;
        // The operation under way ends with an error.
        if (connection->resolver) connection->resolver->cancel();
        connection->tcpStream().close();
      });
}

}  // namespace

// One request: a connection (pooled or new), then write and read on its strand; at most one more
// attempt on a new connection when a reused one turns out closed.
class AsyncKeepAlive::Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  Exchange(std::shared_ptr<AsyncKeepAlive> owner, const ApiRequest& request,
           const std::string& authorization, Done done)
      : owner_(std::move(owner)),
        outgoing_(formatRequest(request, owner_->target_.basePath_ + request.path,
                                owner_->target_.hostHeader_, authorization)),
        timeout_(request.timeout),
        deadline_(deadlineAfter(request.timeout)),
        done_(std::move(done)) {}

  // From any thread.
  void attempt(bool mayReuse) {
    connection_ = mayReuse ? owner_->take() : nullptr;
    fresh_ = connection_ == nullptr;
    if (fresh_) {
      std::string error;
      connection_ = owner_->create(error);
      if (!connection_) {
        asio::post(owner_->context_, [self = shared_from_this(), error = std::move(error)] {
          self->done_(transportError(error));
        });
        return;
      }
    }
    asio::dispatch(connection_->strand(), [self = shared_from_this()] { self->begin(); });
  }

 private:
  // On the connection's strand from here on.
  void begin() {
    Connection& connection = *connection_;
    connection.expired = false;
    connection.busy = true;
    connection.deadline = deadline_;
    if (deadline_ < connection.waitingUntil) watchDeadline(connection_);
    if (fresh_) {
      connect();
    } else {
      exchange();
    }
  }

  void connect() {
    const KeepAliveTransport& target = owner_->target_;
    if (isIpLiteral(target.host_)) {  // numeric: resolved at once, without a lookup
      error_code ec;
      tcp::resolver resolver(connection_->strand());
      const auto endpoints =
          resolver.resolve(target.host_, target.port_, tcp::resolver::numeric_host, ec);
      if (ec) return finish(transportError("cannot resolve " + target.host_ + ": " + ec.message()));
      return connectTo(endpoints);
    }
    connection_->resolver.emplace(connection_->strand());
    connection_->resolver->async_resolve(
        target.host_, target.port_,
        [self = shared_from_this()](error_code ec, tcp::resolver::results_type endpoints) {
          if (self->connection_->expired) return self->failed(ec, "");
          if (ec) {
            return self->finish(transportError("cannot resolve " + self->owner_->target_.host_ +
                                               ": " + ec.message()));
          }
          self->connectTo(endpoints);
        });
  }

  void connectTo(const tcp::resolver::results_type& endpoints) {
    connection_->tcpStream().async_connect(
        endpoints, [self = shared_from_this()](error_code ec, const tcp::endpoint&) {
          if (ec) return self->failed(ec, "cannot connect: ");
          error_code ignored;
          self->connection_->tcpStream().socket().set_option(tcp::no_delay(true), ignored);
          if (auto* tls = self->connection_->tls()) {
            return tls->async_handshake(ssl::stream_base::client, [self](error_code e) {
              if (e) return self->failed(e, "TLS handshake failed: ");
              self->exchange();
            });
          }
          self->exchange();
        });
  }

  void exchange() {
    parser_.emplace();
    parser_->body_limit(kNoBodyLimit);
    parser_->header_limit(kHeaderLimit);
    // Plain TCP: the request goes out with one send here when the socket takes all of it, as it
    // does (its buffer is empty between exchanges); async_write's completion was a queued handler,
    // and each queued handler made the io thread poll epoll once more. What it does not take
    // (and TLS) goes through async_write.
    std::size_t sent = 0;
    if (connection_->tls() == nullptr) {
      const int fd = connection_->tcpStream().socket().native_handle();
      if (error_code ec = sendWhatFits(fd, outgoing_, sent)) return failed(ec, "");
      if (sent == outgoing_.size()) return readAnswer();
    }
    connection_->withStream([this, sent](auto& stream) {
      asio::async_write(stream, asio::buffer(outgoing_.data() + sent, outgoing_.size() - sent),
                        [self = shared_from_this()](error_code ec, std::size_t) {
                          if (ec) return self->failed(ec, "");
                          self->readAnswer();
                        });
    });
  }

  void readAnswer() {
    connection_->withStream([this](auto& stream) {
      http::async_read(stream, connection_->buffer, *parser_,
                       [self = shared_from_this()](error_code r, std::size_t) { self->read(r); });
    });
  }

  void read(error_code ec) {
    if (ec) return failed(ec, "");
    auto response = parser_->release();
    ApiResponse out;
    out.status = static_cast<int>(response.result_int());
    out.body = std::move(response.body());
    finish(std::move(out), response.keep_alive() && connection_->buffer.size() == 0);
  }

  void failed(error_code ec, const char* what) {
    if (connection_->expired) return finish({});  // finish() says it was the timeout
    if (!fresh_ && !retried_ && (!parser_ || !parser_->got_some()) && closedWhileIdle(ec)) {
      retried_ = true;
      release(false);
      return attempt(false);
    }
    finish(transportError(what + ec.message()));
  }

  // Ends the connection's part in this exchange: pooled again when `keep`.
  void release(bool keep) {
    connection_->busy = false;  // its deadline's wait, if pending, ends without closing it
    if (keep && !connection_->expired) owner_->giveBack(std::move(connection_));
    connection_.reset();
  }

  void finish(ApiResponse response, bool keep = false) {
    const bool expired = connection_->expired;
    release(keep);
    if (expired) {
      response = transportError("no answer within " + std::to_string(timeout_.count()) + " ms");
    }
    Done done = std::move(done_);
    done(std::move(response));
  }

  std::shared_ptr<AsyncKeepAlive> owner_;
  const std::string outgoing_;
  const std::chrono::milliseconds timeout_;
  const SteadyClock::time_point deadline_;
  Done done_;
  ConnectionPtr connection_;
  bool fresh_ = false;
  bool retried_ = false;
  std::optional<http::response_parser<http::string_body>> parser_;
};

AsyncKeepAlive::AsyncKeepAlive(asio::io_context& context, const std::string& server,
                               std::shared_ptr<const TlsMaterial> tls, bool verifyServer)
    : context_(context), target_(server, std::move(tls), verifyServer) {}

AsyncKeepAlive::~AsyncKeepAlive() = default;

void AsyncKeepAlive::send(const ApiRequest& request, const std::string& authorization, Done done) {
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      asio::post(context_, [done = std::move(done)] { done(transportError("closed")); });
      return;
    }
  }
  std::make_shared<Exchange>(shared_from_this(), request, authorization, std::move(done))
      ->attempt(true);
}

void AsyncKeepAlive::close() {
  std::vector<ConnectionPtr> idle;
  std::lock_guard lock(mu_);
  closed_ = true;
  idle.swap(idle_);
}

std::size_t AsyncKeepAlive::connectionsOpened() const {
  std::lock_guard lock(mu_);
  return opened_;
}

AsyncKeepAlive::ConnectionPtr AsyncKeepAlive::take() {
  return takeStillOpen(mu_, idle_);
}

AsyncKeepAlive::ConnectionPtr AsyncKeepAlive::create(std::string& error) {
  std::shared_ptr<ssl::context> tlsContext = target_.tlsContext(error);
  if (target_.https_ && !tlsContext) return nullptr;
  auto connection = std::make_shared<Connection>(context_, std::move(tlsContext));
  if (auto* tls = connection->tls()) nameServer(*tls, target_.host_, target_.verifyServer_);
  std::lock_guard lock(mu_);
  ++opened_;
  return connection;
}

void AsyncKeepAlive::giveBack(ConnectionPtr connection) {
  connection->reused = true;
  connection->idleSince = SteadyClock::now();
  std::lock_guard lock(mu_);
  if (!closed_ && idle_.size() < kMaxIdle) idle_.push_back(std::move(connection));
}

}  // namespace gpufair::k8s::detail
