#include "gpufair/common/thread_name.h"

#include <array>

#include <pthread.h>

namespace gpufair {

void nameThisThread(std::string_view name) {
  constexpr std::size_t kMaxName = 15;  // TASK_COMM_LEN 16, with its terminating NUL
  const std::string cut(name.substr(0, kMaxName));
  pthread_setname_np(pthread_self(), cut.c_str());
}

std::string thisThreadName() {
  std::array<char, 16> name{};
  if (pthread_getname_np(pthread_self(), name.data(), name.size()) != 0) return "";
  return name.data();
}

}  // namespace gpufair
