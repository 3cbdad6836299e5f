/* check.h — XT_CHECK: an always-on assertion for programmer errors.
 *
 * Two kinds of failure, two mechanisms (as redis' serverAssert beside its
 * error replies):
 *   - the user's errors (a bad config, a corrupt file, a dead worker) go
 *     through xt_err (util/err.h): a one-line message naming the place and
 *     the fix, a documented exit code, and the caller decides what to do;
 *   - a broken invariant inside xlatrain (an op with no kernel, a plan
 *     operand that has no location) is a bug: XT_CHECK prints where and
 *     what, says it is a bug, and aborts, in release builds too, because
 *     continuing would compute wrong numbers or corrupt memory silently.
 * Not for anything a user's input can trigger.
 */
#ifndef XT_CHECK_H
#define XT_CHECK_H

void xt_check_failed(const char *expr, const char *file, int line, const char *func) __attribute__((noreturn, cold));

#define XT_CHECK(cond)                                                   \
    do {                                                                 \
        if (__builtin_expect(!(cond), 0)) xt_check_failed(#cond, __FILE__, __LINE__, __func__); \
    } while (0)

#endif
