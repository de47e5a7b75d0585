#include "gpufair/k8s/leader.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "gpufair/common/thread_name.h"
#include "gpufair/k8s/events.h"

namespace gpufair::k8s {

namespace {

std::int64_t toNanos(Timestamp t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Timestamp fromNanos(std::int64_t n) {
  return Timestamp{std::chrono::duration_cast<Timestamp::duration>(std::chrono::nanoseconds{n})};
}

}  // namespace

std::string LeaderElector::defaultIdentity() {
  std::random_device random;
  std::uint64_t bits = (static_cast<std::uint64_t>(random()) << 32) ^ random();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(bits));
  return hostName() + "_" + hex;
}

LeaderElector::LeaderElector(KubeClientPtr client, ClockPtr clock, LeaderElectorOptions options)
    : client_(std::move(client)), clock_(std::move(clock)), options_(std::move(options)) {
  if (options_.retryPeriod.count() <= 0 || options_.renewDeadline <= options_.retryPeriod ||
      options_.leaseDuration <= options_.renewDeadline) {
    throw std::invalid_argument(
        "leader election needs leaseDuration > renewDeadline > retryPeriod > 0");
  }
  if (options_.identity.empty()) options_.identity = defaultIdentity();
  if (!options_.followHolderPrefix.empty()) {
    spdlog::info(
        "leader election follows lease {}/{}: this replica leads while its holder "
        "starts with {}",
        options_.ns, options_.name, options_.followHolderPrefix);
  }
}

LeaderElector::~LeaderElector() {
  stop();
}

bool LeaderElector::renewedWithin(Timestamp now) const {
  return now - fromNanos(lastRenew_.load()) < options_.renewDeadline;
}

bool LeaderElector::isLeader() const {
  return leading_.load() && renewedWithin(clock_->now());
}

std::string LeaderElector::leader() const {
  std::lock_guard lock(infoMu_);
  return holder_;
}

std::chrono::milliseconds LeaderElector::requestTimeout(Timestamp now) const {
  if (!leading_.load()) return options_.renewDeadline;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      options_.renewDeadline - (now - fromNanos(lastRenew_.load())));
  return std::clamp(left, std::chrono::milliseconds{100}, options_.renewDeadline);
}

void LeaderElector::observe(const Lease& lease, Timestamp now) {
  const bool changed = !observed_ || !observed_->sameRecord(lease);
  const bool newHolder = !observed_ || observed_->holderIdentity != lease.holderIdentity;
  observed_ = lease;
  if (!changed) return;
  observedTime_ = now;
  if (!newHolder) return;
  {
    std::lock_guard lock(infoMu_);
    holder_ = lease.holderIdentity;
  }
  spdlog::info("lease {}/{} is held by {}", options_.ns, options_.name,
               lease.holderIdentity.empty() ? std::string("nobody") : lease.holderIdentity);
  if (options_.onNewLeader) options_.onNewLeader(lease.holderIdentity);
}

void LeaderElector::becomeLeader(Timestamp now) {
  lastRenew_.store(toNanos(now));
  leading_.store(true);
  spdlog::info("{} is now the leader (lease {}/{})", options_.identity, options_.ns, options_.name);
  if (options_.onStartedLeading) options_.onStartedLeading();
}

void LeaderElector::loseLeadership(const std::string& why) {
  if (!leading_.exchange(false)) return;
  spdlog::warn("{} stopped leading: {}", options_.identity, why);
  if (options_.onStoppedLeading) options_.onStoppedLeading();
}

bool LeaderElector::write(const std::optional<Lease>& current, Timestamp now, bool& conflict) {
  Lease next = current ? *current : Lease{};
  next.ns = options_.ns;
  next.name = options_.name;
  const bool ours = current && current->holderIdentity == options_.identity;
  const std::string previous = current ? current->holderIdentity : std::string();
  next.holderIdentity = options_.identity;
  next.leaseDurationSeconds =
      static_cast<int>(std::chrono::ceil<std::chrono::seconds>(options_.leaseDuration).count());
  next.renewTime = now;
  if (!ours) {
    next.acquireTime = now;
    next.leaseTransitions = current ? current->leaseTransitions + 1 : 0;
  }
  const auto timeout = requestTimeout(now);
  LeaseResult result =
      current ? updateLease(*client_, next, timeout) : createLease(*client_, next, timeout);
  conflict = result.kind == LeaseResult::Kind::kConflict;
  if (result.kind != LeaseResult::Kind::kOk) {
    if (conflict) {
      spdlog::debug("{}", result.message);
    } else {
      spdlog::warn("{}", result.message);
    }
    return false;
  }
  if (!ours && current && !previous.empty()) {
    spdlog::info("{} took lease {}/{} over from {} (transition {})", options_.identity, options_.ns,
                 options_.name, previous, result.lease.leaseTransitions);
  }
  observe(result.lease, now);
  return true;
}

LeaderElector::Attempt LeaderElector::tryAcquireOrRenew(Timestamp now) {
  bool conflict = false;
  // The leader's fast path: write over the record it wrote last; a conflict means re-read.
  if (leading_.load() && observed_ && observed_->holderIdentity == options_.identity &&
      write(observed_, now, conflict)) {
    return Attempt::kHeld;
  }
  for (int round = 0; round < 2; ++round) {
    LeaseResult got = getLease(*client_, options_.ns, options_.name, requestTimeout(now));
    if (got.kind == LeaseResult::Kind::kNotFound) {
      if (write(std::nullopt, now, conflict)) return Attempt::kHeld;
      if (conflict) continue;  // another candidate created it first: read theirs
      return Attempt::kFailed;
    }
    if (got.kind != LeaseResult::Kind::kOk) {
      spdlog::warn("{}", got.message);
      return Attempt::kFailed;
    }
    observe(got.lease, now);
    const Lease& lease = *observed_;
    const bool expired = observedTime_ + std::chrono::seconds(lease.leaseDurationSeconds) <= now;
    if (!lease.holderIdentity.empty() && lease.holderIdentity != options_.identity && !expired) {
      return Attempt::kHeldByOther;
    }
    if (write(lease, now, conflict)) return Attempt::kHeld;
    if (!conflict) return Attempt::kFailed;
  }
  return Attempt::kFailed;
}

LeaderElector::Attempt LeaderElector::follow(Timestamp now) {
  LeaseResult got = getLease(*client_, options_.ns, options_.name, requestTimeout(now));
  if (got.kind == LeaseResult::Kind::kNotFound) return Attempt::kHeldByOther;  // nobody leads
  if (got.kind != LeaseResult::Kind::kOk) {
    spdlog::warn("{}", got.message);
    return Attempt::kFailed;
  }
  observe(got.lease, now);
  const Lease& lease = *observed_;
  const bool expired = observedTime_ + std::chrono::seconds(lease.leaseDurationSeconds) <= now;
  const bool ours = lease.holderIdentity.rfind(options_.followHolderPrefix, 0) == 0;
  return ours && !expired ? Attempt::kHeld : Attempt::kHeldByOther;
}

bool LeaderElector::tick() {
  std::lock_guard op(opMu_);
  const Timestamp now = clock_->now();
  if (leading_.load() && !renewedWithin(now)) {
    loseLeadership("the lease was not renewed within the renew deadline");
  }
  const bool following = !options_.followHolderPrefix.empty();
  switch (following ? follow(now) : tryAcquireOrRenew(now)) {
    case Attempt::kHeld:
      if (leading_.load()) {
        lastRenew_.store(toNanos(now));
      } else {
        becomeLeader(now);
      }
      break;
    case Attempt::kHeldByOther:
      loseLeadership(leader().empty() ? std::string("the lease is held by nobody")
                                      : "the lease is held by " + leader() +
                                            (following ? " (or its record went stale)" : ""));
      break;
    case Attempt::kFailed:
      if (leading_.load() && !renewedWithin(now)) {
        loseLeadership("the lease was not renewed within the renew deadline");
      }
      break;
  }
  return isLeader();
}

Status LeaderElector::release() {
  std::lock_guard op(opMu_);
  loseLeadership("releasing the lease");
  if (!options_.followHolderPrefix.empty()) return Status::ok();  // never ours to write
  if (!observed_ || observed_->holderIdentity != options_.identity) return Status::ok();
  const Timestamp now = clock_->now();
  Lease current = *observed_;
  for (int round = 0; round < 2; ++round) {
    Lease next = current;
    next.holderIdentity.clear();
    next.leaseDurationSeconds = 1;
    next.acquireTime = now;
    next.renewTime = now;
    LeaseResult result = updateLease(*client_, next, options_.renewDeadline);
    if (result.kind == LeaseResult::Kind::kOk) {
      observe(result.lease, now);
      spdlog::info("{} released lease {}/{}", options_.identity, options_.ns, options_.name);
      return Status::ok();
    }
    if (result.kind != LeaseResult::Kind::kConflict) return Status::error(result.message);
    LeaseResult got = getLease(*client_, options_.ns, options_.name, options_.renewDeadline);
    if (got.kind != LeaseResult::Kind::kOk) {
      return got.kind == LeaseResult::Kind::kNotFound ? Status::ok() : Status::error(got.message);
    }
    observe(got.lease, now);
    if (got.lease.holderIdentity != options_.identity) return Status::ok();  // not ours anymore
    current = got.lease;
  }
  return Status::error("releasing lease " + options_.ns + "/" + options_.name +
                       ": conflicting writes");
}

void LeaderElector::run() {
  std::mt19937_64 random(std::random_device{}());
  std::uniform_real_distribution<double> jitter(0.0, 0.2);
  for (;;) {
    {
      std::lock_guard lock(stopMu_);
      if (stopped_) break;
    }
    tick();
    auto wait = options_.retryPeriod;
    if (!leading_.load()) {
      wait += std::chrono::duration_cast<std::chrono::milliseconds>(wait * jitter(random));
    }
    std::unique_lock lock(stopMu_);
    if (stopCv_.wait_for(lock, wait, [this] { return stopped_; })) break;
  }
}

void LeaderElector::start() {
  thread_ = std::thread([this] {
    nameThisThread("leader");
    run();
  });
}

void LeaderElector::stop() {
  {
    std::lock_guard lock(stopMu_);
    stopped_ = true;
  }
  stopCv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace gpufair::k8s
