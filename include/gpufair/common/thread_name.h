// Names the calling thread as the kernel shows it (top -H, ps -L, perf --sort comm, /proc/PID/task/
// TID/comm), so an SRE or a profile can tell gpufair's threads apart: "gpufair-io" (the webhook
// server's io threads), "watch-pods" and the like (one per reflector), "label-patch", "events",
// "leader". Names longer than 15 bytes (the kernel's limit) are cut to 15; a failure is ignored (a
// name is a help, not a requirement). Thread-safety: any thread, for itself.
#pragma once

#include <string>
#include <string_view>

namespace gpufair {

void nameThisThread(std::string_view name);

// The calling thread's name, as the kernel keeps it ("" when it cannot be read).
std::string thisThreadName();

}  // namespace gpufair
