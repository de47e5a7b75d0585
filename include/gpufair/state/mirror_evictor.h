// MirrorEvictor: eviction in file mode (`serve --cluster`): the victim is deleted from the mirror,
// as if the API server had evicted it and the watch had reported it gone.
// Thread-safety: thread-safe (the Mirror is).
#pragma once

#include "gpufair/state/mirror.h"
#include "gpufair/state/ports.h"

namespace gpufair::state {

class MirrorEvictor final : public Evictor {
 public:
  explicit MirrorEvictor(Mirror& mirror) : mirror_(mirror) {}
  EvictResult evict(const policy::Pod& pod, const std::string& reason) override;

 private:
  Mirror& mirror_;
};

}  // namespace gpufair::state
