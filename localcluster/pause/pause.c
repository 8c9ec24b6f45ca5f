/*
 * The pod sandbox's first process on the real node (localcluster --real-node): it holds the
 * pod's namespaces while the pod lives, reaps the orphans that are re-parented to it, and
 * ends at once on SIGTERM or SIGINT, which is all a CRI runtime asks of its sandbox image.
 * Built statically by hack/build-tools.sh (node step), so its image needs no other file.
 */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction on_stop, on_child;
  memset(&on_stop, 0, sizeof on_stop);
  on_stop.sa_handler = stop;
  sigaction(SIGTERM, &on_stop, NULL);
  sigaction(SIGINT, &on_stop, NULL);
  memset(&on_child, 0, sizeof on_child);
  on_child.sa_handler = reap;
  on_child.sa_flags = SA_NOCLDSTOP;
  sigaction(SIGCHLD, &on_child, NULL);
  for (;;) {
    pause();
  }
}
