#include "common/engine/thread_priority.h"

#include <cerrno>
#include <cstring>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace gpuspeech {

#if defined(__linux__)
namespace {
// On Linux a nice value belongs to the thread (task) named by its id, not
// to the process, so PRIO_PROCESS with the thread's id changes that thread
// alone.
id_t this_thread_id() { return static_cast<id_t>(syscall(SYS_gettid)); }
}  // namespace

int thread_nice() {
  errno = 0;
  const int v = getpriority(PRIO_PROCESS, this_thread_id());
  return errno == 0 ? v : 0;
}

std::string set_thread_nice(int nice) {
  if (nice < 0 || nice > 19) return "a nice value must be 0 to 19, got " + std::to_string(nice);
  const int now = thread_nice();
  if (nice < now)
    return "cannot lower the thread's nice value from " + std::to_string(now) + " to " +
           std::to_string(nice) + " (a higher priority needs privileges)";
  if (nice == now) return std::string();
  if (setpriority(PRIO_PROCESS, this_thread_id(), nice) != 0)
    return std::string("setpriority: ") + std::strerror(errno);
  return std::string();
}
#else
int thread_nice() { return 0; }

std::string set_thread_nice(int nice) {
  if (nice == 0) return std::string();
  return "a thread's own nice value is not supported on this system";
}
#endif

}  // namespace gpuspeech
