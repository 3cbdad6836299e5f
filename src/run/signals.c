/* signals.c — SIGINT/SIGTERM for single-process runs: the first sets a flag
 * that the loop polls (it finishes the step and checkpoints); a second exits
 * at once. Not here: multi-process runs, whose supervisor handles them
 * (distributed/spawn.c). */
#include "run/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

static volatile sig_atomic_t g_stop;
static struct sigaction g_old_int, g_old_term;

static void on_signal(int sig) {
    if (g_stop) {
        static const char msg[] = "\nxlatrain: interrupted twice: exiting without a checkpoint\n";
        if (write(STDERR_FILENO, msg, sizeof msg - 1)) {}
        _exit(XT_EINTR);
    }
    g_stop = sig;
}

void xt_signals_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, NULL, &g_old_int);
    sigaction(SIGTERM, NULL, &g_old_term);
    if (g_old_int.sa_handler != SIG_IGN) sigaction(SIGINT, &sa, NULL);
    if (g_old_term.sa_handler != SIG_IGN) sigaction(SIGTERM, &sa, NULL);
}

void xt_signals_restore(void) {
    sigaction(SIGINT, &g_old_int, NULL);
    sigaction(SIGTERM, &g_old_term, NULL);
}

int xt_stop_requested(void) { return g_stop; }
