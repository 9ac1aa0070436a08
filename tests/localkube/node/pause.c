/* The pod sandbox's first process: holds the namespaces, reaps orphans, exits on INT/TERM. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void quit(int signo) { (void)signo; _exit(0); }

static void reap(int signo) {
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction on_quit = {.sa_handler = quit};
    struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    sigaction(SIGINT, &on_quit, NULL);
    sigaction(SIGTERM, &on_quit, NULL);
    sigaction(SIGCHLD, &on_child, NULL);
    for (;;) pause();
}
