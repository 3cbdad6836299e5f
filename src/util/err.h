/* err.h — how library code reports failure.
 *
 * Library code never exits or prints: it fills an xt_err with a process exit
 * code (the documented ones below) and a one-line message, and returns that
 * code. Only main() prints "xlatrain: <msg>" and exits with e->code.
 * Messages follow "<file>:<line>:<col>: <what is wrong>; <how to fix>" where a
 * place is known, and are never split across lines (so they can be grepped).
 */
#ifndef XT_ERR_H
#define XT_ERR_H

enum xt_exit {
    XT_OK = 0,
    XT_EUSAGE = 2,    /* bad command line, config or layer spec */
    XT_EDATA = 3,     /* dataset files missing, truncated, corrupt */
    XT_ERUNTIME = 4,  /* training failure: NaN loss, a worker died, bad checkpoint */
    XT_EIO = 5,       /* could not read/write an output file */
    XT_EBELOW = 6,    /* finished, but best accuracy < target_accuracy */
    XT_ECOMPILE = 7,  /* more graphs compiled than --max-compiles allows */
    XT_EINTR = 130,   /* interrupted by SIGINT/SIGTERM */
};

/* The same codes as data (util/exit_codes.c), one row each in the order
 * above: --help prints its exit-status list from it and tests/test_docs.c
 * checks that the man page's EXIT STATUS documents exactly these codes. */
typedef struct xt_exit_code {
    int code;
    const char *name;  /* the enumerator: "XT_EUSAGE" */
    const char *help;  /* --help's text, lines split by '\n'; results.json statuses in [brackets] */
} xt_exit_code;
extern const xt_exit_code xt_exit_codes[];
extern const int xt_nexit_codes;

typedef struct xt_err {
    int code;        /* one of enum xt_exit; 0 while no error */
    char msg[1024];  /* one line, no trailing newline */
} xt_err;

/* Record an error (printf-style) and return its code, so callers can write
 * `return xt_fail(e, XT_EDATA, "%s: truncated", path);`. A NULL e is allowed. */
int xt_fail(xt_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Format n with thousands separators ("10,000") into buf; returns buf. */
const char *xt_commas(char *buf, unsigned long long n);

#endif
