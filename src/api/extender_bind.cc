// /bind of ExtenderService: the checks and the mirror's assumption, the Binder (synchronously, or
// through bindAsync() for the webhook, whose answer then waits for the Binding on no io thread),
// then confirm or forget by its outcome.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "gpufair/api/extender_service.h"
#include "gpufair/api/wire.h"
#include "gpufair/common/labels.h"

#include "request_document.h"

namespace gpufair::api {
namespace {

// The body's BindingArgs in `args`, or the 400 answer when it has none.
std::optional<Response> decodeBind(std::string_view body, BindingArgs& args) {
  detail::RequestDocument document(body);
  if (!document.status().isOk()) return detail::badRequest("bind", document.status().reason());
  if (auto status = decodeBindingArgs(document.root(), args); !status.isOk()) {
    return detail::badRequest("bind", status.reason());
  }
  return std::nullopt;
}

Response bindError(std::string_view message) {
  Response response;  // ExtenderBindingResult: HTTP 200, the error in the body
  encodeErrorResult(message, response.body);
  return response;
}

}  // namespace

Response ExtenderService::bind(std::string_view body) {
  BindingArgs args;
  if (std::optional<Response> bad = decodeBind(body, args)) return std::move(*bad);
  return bindError(bindArgs(args));
}

void ExtenderService::handleAsync(const Request& request, Reply reply) {
  if (request.method != "POST" || request.target.substr(0, request.target.find('?')) != "/bind") {
    return reply(handle(request));
  }
  const auto start = std::chrono::steady_clock::now();
  // Answers and hears of it as handle() does, when the Binding is done.
  auto answer = [this, start, reply = std::move(reply)](Response response) {
    observeRequest("bind", response.status, start);
    reply(std::move(response));
  };
  BindingArgs args;
  if (std::optional<Response> bad = decodeBind(request.body, args)) {
    return answer(std::move(*bad));
  }
  bindArgsAsync(
      args, [answer = std::move(answer)](std::string error) mutable { answer(bindError(error)); });
}

struct ExtenderService::PreparedBind {
  std::string key;  // the mirror's key of the pod
  std::string node;
  policy::PodPtr pod;     // as /filter saw it
  policy::PodPtr placed;  // as assumed (a fractional pod carries its GPU)
  bool overQuota = false;
  std::string queue;
};

std::string ExtenderService::bindArgs(const BindingArgs& args) {
  PreparedBind prepared;
  if (std::string refused = prepareBind(args, prepared); !refused.empty()) return refused;
  return finishBind(prepared, binder_.bind(*prepared.placed, prepared.node, prepared.overQuota));
}

void ExtenderService::bindArgsAsync(const BindingArgs& args,
                                    std::function<void(std::string)> done) {
  auto prepared = std::make_shared<PreparedBind>();
  if (std::string refused = prepareBind(args, *prepared); !refused.empty()) {
    return done(std::move(refused));
  }
  const PreparedBind& bind = *prepared;
  binder_.bindAsync(*bind.placed, bind.node, bind.overQuota,
                    [this, prepared = std::move(prepared), done = std::move(done)](Status bound) {
                      done(finishBind(*prepared, bound));
                    });
}

std::string ExtenderService::prepareBind(const BindingArgs& args, PreparedBind& prepared) {
  if (Status allowed = decisionsAllowed(); !allowed.isOk()) {
    spdlog::info("bind {}/{} to {} refused: {}", args.podNamespace, args.podName, args.node,
                 allowed.reason());
    return allowed.reason();
  }
  const std::string argsKey = args.podNamespace + "/" + args.podName;
  const std::string key = args.podUid.empty() ? argsKey : args.podUid;
  const policy::PodPtr pod = mirror_.findPod(key);
  if (pod == nullptr) {
    const std::string message = "pod " + argsKey + " (uid " + args.podUid +
                                ") was never offered to gpufair's filter; cannot bind";
    spdlog::info("bind: {}", message);
    return message;
  }
  if (!args.podName.empty() && pod->key() != argsKey) {
    const std::string message = "PodUID " + args.podUid + " belongs to pod " + pod->key() +
                                ", not " + argsKey + "; cannot bind";
    spdlog::info("bind: {}", message);
    return message;
  }

  // kube-scheduler chose another node than the one /prioritize held the share on: move it.
  if (heldElsewhere(*pod, key, args.node)) mirror_.forget(key);
  auto assumed = mirror_.assume(key, args.node);
  if (!assumed) {
    spdlog::info("bind {} to {} refused: {}", pod->key(), args.node, assumed.error());
    return assumed.error();
  }
  prepared.key = key;
  prepared.node = args.node;
  prepared.pod = pod;
  // The pod as assumed: a fractional pod carries the GPU it was given (gpuIndex and annotation).
  prepared.placed = mirror_.findPod(key);
  if (prepared.placed == nullptr) prepared.placed = pod;
  prepared.overQuota = assumed->overQuota;
  prepared.queue = assumed->queue;
  return "";
}

std::string ExtenderService::finishBind(const PreparedBind& prepared, const Status& bound) {
  const std::string& key = prepared.key;
  const std::string& node = prepared.node;
  const bool overQuota = prepared.overQuota;
  const policy::Pod& pod = *prepared.pod;
  if (!bound.isOk()) {
    mirror_.forget(key);
    spdlog::warn("bind {} to {} failed: {}", pod.key(), node, bound.reason());
    return bound.reason();
  }
  if (binder_.confirmsImmediately()) {
    mirror_.confirm(key);
    const policy::PodPtr confirmed = mirror_.findPod(key);
    if (overQuota && confirmed != nullptr) {
      const auto label = confirmed->labels.find(kOverQuotaLabel);
      if (!confirmed->overQuota || label == confirmed->labels.end() || label->second != "true") {
        // What the label patch does in a cluster: the borrowed pod shows as such, still bound.
        policy::Pod labelled = *confirmed;
        labelled.nodeName = node;
        labelled.overQuota = true;
        labelled.labels[kOverQuotaLabel] = "true";
        mirror_.upsertPod(std::move(labelled));
      }
    }
  }
  if (overQuota && observer_ != nullptr) observer_->borrowed(pod, node, prepared.queue);
  spdlog::debug("bound {} to {} (queue {}{})", pod.key(), node, prepared.queue,
                overQuota ? ", over quota" : "");
  return "";
}

}  // namespace gpufair::api
