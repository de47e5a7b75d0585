// The real client (as serve uses it) connected to a started FakeApiServer, for tests
// that check what gpufair sends against what the validating fake accepts.
#pragma once

#include <gtest/gtest.h>

#include "gpufair/k8s/client.h"

#include "k8s/fake_apiserver.h"

namespace gpufair::k8s::fake {

// Null (and a test failure) when the client cannot be made.
inline KubeClientPtr clientOf(const FakeApiServer& server) {
  ClientConfig config;
  config.server = server.url();
  auto client = makeKubeClient(config);
  EXPECT_TRUE(client.ok()) << client.error();
  return client.ok() ? client.value() : nullptr;
}

}  // namespace gpufair::k8s::fake
