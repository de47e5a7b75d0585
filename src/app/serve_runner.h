// `gpufair serve`, step three of three (options -> config -> run): wires the parts a ServeConfig
// asks for and runs them until SIGINT or SIGTERM.
//   the cluster:  a file held in memory (bind and eviction act on the mirror), or the API server
//                 through KubeSource (reflectors, leader election, the k8s ports);
//   the webhooks: ExtenderService over the mirror, served by ExtenderServer on --listen;
//   metrics:      metrics::Metrics over the snapshot and the traffic, served on --metrics-listen;
//   threads:      the server's io threads, KubeSource's reflectors and elector, the reclaim loop
//                 (ReclaimRunner), the metrics server; the calling thread runs housekeeping every
//                 second (expiring assumptions and reservations, KubeSource::tick()) until stopped.
// Stopping finishes requests in flight, stops reclaim first (no eviction starts after a stop) and
// releases the Lease last, so another replica takes over at once.
#pragma once

#include <string>

#include "serve_config.h"

namespace gpufair::app {

// Runs serve; returns the process exit code: 0 after a stop, 1 when the cluster cannot be read or
// the webhook server cannot start, 2 for an unusable --metrics-listen. Logging must be configured.
int runServeConfig(const ServeConfig& config);

// The host part of a URL for a listen address ("0.0.0.0:80" -> "127.0.0.1", "[::]:80" -> "[::1]").
std::string urlHost(const std::string& listen);

}  // namespace gpufair::app
