/* pickle.h — a writer for the small part of Python's pickle format (protocol
 * 2) that a PyTorch state_dict needs: globals, tuples, ints, booleans,
 * unicode strings, persistent ids, reduce calls and dict items.
 *
 *   xt_pickle p; xt_pickle_init(&p);
 *   xt_pickle_proto(&p);
 *   xt_pickle_global(&p, "collections", "OrderedDict"); xt_pickle_empty_tuple(&p); xt_pickle_reduce(&p);
 *   ...
 *   xt_pickle_stop(&p);            // p.buf / p.len is the stream; xt_pickle_free(&p)
 *
 * Is: an append-only byte buffer and one function per opcode, named after
 * the opcode's meaning; a sticky out-of-memory flag (checked once at the
 * end). Is not: a reader, or a general serializer (no memo, no floats, no
 * lists, no classes): torch_save.c composes these calls into torch.save's
 * layout.
 */
#ifndef XT_IO_PICKLE_H
#define XT_IO_PICKLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct xt_pickle {
    unsigned char *buf;
    size_t len, cap;
    int oom;        /* an append failed; the stream is incomplete */
} xt_pickle;

void xt_pickle_init(xt_pickle *p);
void xt_pickle_free(xt_pickle *p);

void xt_pickle_proto(xt_pickle *p);                                    /* PROTO 2 */
void xt_pickle_stop(xt_pickle *p);                                     /* STOP */
void xt_pickle_global(xt_pickle *p, const char *module, const char *name); /* GLOBAL */
void xt_pickle_mark(xt_pickle *p);                                     /* MARK */
void xt_pickle_tuple(xt_pickle *p);                                    /* TUPLE: items since MARK */
void xt_pickle_empty_tuple(xt_pickle *p);                              /* EMPTY_TUPLE */
void xt_pickle_int(xt_pickle *p, int64_t v);                           /* BININT or LONG1 */
void xt_pickle_bool(xt_pickle *p, int v);                              /* NEWTRUE / NEWFALSE */
void xt_pickle_str(xt_pickle *p, const char *s);                       /* BINUNICODE (UTF-8) */
void xt_pickle_persid(xt_pickle *p);                                   /* BINPERSID: id = top of stack */
void xt_pickle_reduce(xt_pickle *p);                                   /* REDUCE: callable(*args) */
void xt_pickle_setitems(xt_pickle *p);                                 /* SETITEMS: k/v pairs since MARK */

#endif
