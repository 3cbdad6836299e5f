/* test_progress.c — the progress bar on a real terminal: xlatrain runs on a
 * pseudo-terminal of 60 or 120 columns (and one resized while it runs), and
 * a small terminal emulator replays what it wrote. No frame is wider than
 * the terminal, no stale copy of the bar is left on the screen, and the bar
 * shows the time left in the epoch and in the whole run, saying "left". */
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define ROWS 400
#define COLS_MAX 200

/* A terminal of `cols` columns: \r, \n, ESC[K and printable characters,
 * wrapping at the right edge as a terminal does. */
typedef struct {
    char screen[ROWS][COLS_MAX + 1];
    int row, col, cols;
} term;

static void term_put(term *t, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\r') {
            t->col = 0;
        } else if (c == '\n') {
            if (t->row < ROWS - 1) t->row++;
            t->col = 0;
        } else if (c == '\033' && i + 2 < n && s[i + 1] == '[' && s[i + 2] == 'K') {
            t->screen[t->row][t->col] = 0;
            i += 2;
        } else if ((unsigned char)c >= 32) {
            if (t->col == t->cols) { /* the right edge: the terminal wraps */
                if (t->row < ROWS - 1) t->row++;
                t->col = 0;
            }
            char *line = t->screen[t->row];
            size_t len = strlen(line);
            while ((int)len < t->col) line[len++] = ' ';
            line[t->col] = c;
            if ((int)len <= t->col) line[t->col + 1] = 0;
            t->col++;
        }
    }
}

typedef struct {
    char *raw;          /* everything the program wrote */
    size_t len;
    int status;
} run_result;

/* Run xlatrain on a pty of `cols` columns; after the first progress frame,
 * resize it to `resize_to` columns when that is > 0. */
static run_result run_on_pty(const char *cfg, const char *outdir, int cols, int resize_to, term *t) {
    run_result r = {malloc(1 << 22), 0, -1};
    struct winsize ws = {.ws_row = 40, .ws_col = (unsigned short)cols};
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    if (pid == 0) {
        char set[1100];
        snprintf(set, sizeof set, "output_dir=%s", outdir);
        execl(test_bin(), test_bin(), "--config", cfg, "--set", set, (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0);
    memset(t, 0, sizeof *t);
    t->cols = cols;
    int resized = resize_to <= 0;
    for (;;) {
        struct pollfd pf = {master, POLLIN, 0};
        if (poll(&pf, 1, 120000) <= 0) break;
        ssize_t k = read(master, r.raw + r.len, (1 << 22) - 1 - r.len);
        if (k <= 0) break; /* EIO: the child closed the terminal */
        term_put(t, r.raw + r.len, (size_t)k);
        r.len += (size_t)k;
        r.raw[r.len] = 0;
        if (!resized && strstr(r.raw, " left")) { /* the first frame is up: make the window narrower */
            ws.ws_col = (unsigned short)resize_to;
            ioctl(master, TIOCSWINSZ, &ws);
            t->cols = resize_to;
            resized = 1;
        }
    }
    waitpid(pid, &r.status, 0);
    close(master);
    return r;
}

/* Widest progress frame (a piece between \r that holds " left" or "epoch N/M ["),
 * counting from the `from`-th frame. */
static int widest_frame(const char *raw, int from, int *frames) {
    int widest = 0, k = 0;
    const char *p = raw;
    while ((p = strchr(p, '\r'))) {
        p++;
        size_t n = strcspn(p, "\r\n\033");
        if (memmem(p, n, " left", 5) || memmem(p, n, "epoch ", 6)) {
            if (k++ >= from && (int)n > widest) widest = (int)n;
        }
    }
    *frames = k;
    return widest;
}

static const char *config(void) {
    return test_write_file("progress.yaml", test_sanitized() ? "dataset: synthetic\nsynthetic_train_size: 6000\nsynthetic_test_size: 200\n"
                                                   "num_epochs: 2\nbatch_size: 64\nlog_steps: 40\ntarget_accuracy: 0\nmodel: mlp\n"
                                                 : "dataset: synthetic\nsynthetic_train_size: 30000\nsynthetic_test_size: 500\n"
                                                   "num_epochs: 2\nbatch_size: 64\nlog_steps: 100\ntarget_accuracy: 0\n"
                                                   "model: models/fashion_cnn.yaml\n");
}

static void check_terminal(int cols) {
    static term t;
    char out[1024];
    snprintf(out, sizeof out, "%s/run%d", test_tmpdir(), cols);
    run_result r = run_on_pty(config(), out, cols, 0, &t);
    CHECK_MSG(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "exit status %d: %.2000s", r.status, r.raw);
    int frames, widest = widest_frame(r.raw, 0, &frames);
    CHECK_MSG(frames >= 2, "only %d progress frames drawn", frames);
    CHECK_MSG(widest <= cols - 1, "a frame of %d columns on a %d-column terminal", widest, cols);
    CHECK_STR_CONTAINS(r.raw, " left, run ");
    for (int i = 0; i <= t.row; i++)
        CHECK_MSG(!strstr(t.screen[i], " left, run ") && strncmp(t.screen[i], "epoch ", 6), "stale progress on screen row %d: %s", i, t.screen[i]);
    CHECK_STR_CONTAINS(r.raw, "Finished training epoch 2");
    free(r.raw);
}

TEST(progress_fits_a_60_column_terminal_and_leaves_no_stale_lines) { check_terminal(60); }
TEST(progress_uses_a_120_column_terminal) {
    check_terminal(120);
}

TEST(progress_follows_a_resized_terminal) {
    static term t;
    char out[1024];
    snprintf(out, sizeof out, "%s/resized", test_tmpdir());
    run_result r = run_on_pty(config(), out, 120, 45, &t);
    CHECK_MSG(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "exit status %d", r.status);
    int frames, first_wide = widest_frame(r.raw, 0, &frames);
    CHECK_MSG(first_wide > 44, "the 120-column frames were only %d wide", first_wide);
    /* frames drawn after the resize was noticed: the last few */
    int late = widest_frame(r.raw, frames > 3 ? frames - 3 : frames - 1, &frames);
    CHECK_MSG(late <= 44, "after resizing to 45 columns a frame is %d wide", late);
    free(r.raw);
}
