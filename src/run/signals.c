/* signals.c — SIGINT/SIGTERM for single-process runs: the first sets a flag
 * that the loop polls (it finishes the step and checkpoints); a second exits
 * at once. main installs the handlers first thing, so a signal that comes
 * while the config is read or the data made is a stop too (exit 130), not
 * the default death (143); commands that never poll the flag hand the
 * signals back (xt_signals_release). Not here: multi-process runs, whose
 * supervisor handles them (distributed/spawn.c). */
#include "run/signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

static volatile sig_atomic_t g_stop;
static struct sigaction g_old_int, g_old_term;
static int g_depth; /* nested installs; the outermost one owns the old dispositions */

static void on_signal(int sig) {
    if (g_stop) {
        static const char msg[] = "\nxlatrain: interrupted twice: exiting without a checkpoint\n";
        if (write(STDERR_FILENO, msg, sizeof msg - 1)) {}
        _exit(XT_EINTR);
    }
    g_stop = sig;
}

void xt_signals_install(void) {
    if (g_depth++) return; /* already ours: a second install must not save our own handler as the old one */
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
    if (g_depth == 0 || --g_depth) return;
    sigaction(SIGINT, &g_old_int, NULL);
    sigaction(SIGTERM, &g_old_term, NULL);
}

void xt_signals_release(void) {
    if (g_depth == 0) return;
    g_depth = 1;
    xt_signals_restore();
    if (g_stop) raise(g_stop); /* the caller's disposition, as if it had been in place all along */
}

int xt_stop_requested(void) { return g_stop; }

int xt_stopped_before_start(xt_err *e) {
    int sig = xt_stop_requested();
    if (!sig) return 0;
    return xt_fail(e, XT_EINTR, "interrupted by %s before the run started: nothing was trained or written", sig == SIGINT ? "SIGINT" : "SIGTERM");
}
