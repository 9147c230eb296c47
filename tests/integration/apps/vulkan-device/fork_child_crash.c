/* A program that makes a Vulkan device, then forks a child that makes one of its own and crashes in
 * native code (a store to address 0x10). The parent waits for it and prints how it ended:
 * `parent: the child ended by signal N`. Built with vulkan_device.c. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int bb_create_device(void);
void bb_destroy_device(void);
void bb_crash(void);

int main(void) {
  if (bb_create_device() != 0) {
    printf("parent: no device\n");
    return 1;
  }
  fflush(stdout);
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    if (bb_create_device() != 0) _exit(2);
    bb_crash();
    _exit(0);
  }
  int status;
  if (waitpid(child, &status, 0) != child) return 1;
  if (WIFSIGNALED(status)) {
    printf("parent: the child ended by signal %d\n", WTERMSIG(status));
  } else {
    printf("parent: the child exited with status %d\n", WEXITSTATUS(status));
  }
  bb_destroy_device();
  return 0;
}
