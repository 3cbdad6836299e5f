/* test_io_json.c — the untrusted-JSON reader (src/io/json_read.c: jansson
 * under a heap budget, repeated keys and NUL refused) and the JSON writer
 * (src/io/jsonw.c), whose every output jansson must read back. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_read.h"
#include "io/jsonw.h"
#include "test.h"

static json_t *read_text(const char *text, xt_json_read_error *je) {
    return xt_json_read(text, strlen(text), XT_JSON_READ_BUDGET, je);
}

static int parses(const char *text) {
    xt_json_read_error je;
    json_t *r = read_text(text, &je);
    json_decref(r);
    return r != NULL;
}

/* Reading must fail with `what` in the message and an offset inside the text. */
static void refuses(const char *text, const char *what) {
    xt_json_read_error je;
    json_t *r = read_text(text, &je);
    CHECK_MSG(r == NULL, "accepted: %s", text);
    if (r) {
        json_decref(r);
        return;
    }
    CHECK_MSG(strstr(je.msg, what) != NULL, "for %s: expected \"%s\" in: %s", text, what, je.msg);
    CHECK(je.offset <= strlen(text));
}

TEST(json_read_parses_every_value_kind) {
    const char *text = " {\"a\": [1, -2, 3.5, -0.25e2, 1E3, 0], \"s\": \"q\\\"b\\\\s\\/n\\nt\\tu\\u00e9\\ud83d\\ude00\","
                       " \"t\": true, \"f\": false, \"n\": null, \"o\": {}, \"e\": [],"
                       " \"big\": 9223372036854775807, \"small\": -9223372036854775808} \n";
    xt_json_read_error je;
    json_t *r = read_text(text, &je);
    CHECK_MSG(r != NULL, "%s at %zu", je.msg, je.offset);
    if (!r) return;
    CHECK(json_is_object(r) && json_object_size(r) == 9);
    const json_t *a = json_object_get(r, "a");
    CHECK(json_is_array(a) && json_array_size(a) == 6);
    CHECK(json_is_integer(json_array_get(a, 0)) && json_integer_value(json_array_get(a, 0)) == 1);
    CHECK(json_integer_value(json_array_get(a, 1)) == -2);
    CHECK(json_is_real(json_array_get(a, 2)) && json_real_value(json_array_get(a, 2)) == 3.5);
    CHECK(json_real_value(json_array_get(a, 3)) == -25);
    CHECK(json_is_real(json_array_get(a, 4)) && json_real_value(json_array_get(a, 4)) == 1000);
    CHECK(json_is_integer(json_array_get(a, 5)));
    CHECK(!strcmp(json_string_value(json_object_get(r, "s")), "q\"b\\s/n\nt\tu\xc3\xa9\xf0\x9f\x98\x80"));
    CHECK(json_is_true(json_object_get(r, "t")) && json_is_false(json_object_get(r, "f")));
    CHECK(json_is_null(json_object_get(r, "n")));
    CHECK(json_object_size(json_object_get(r, "o")) == 0 && json_array_size(json_object_get(r, "e")) == 0);
    CHECK(json_integer_value(json_object_get(r, "big")) == INT64_MAX);
    CHECK(json_integer_value(json_object_get(r, "small")) == INT64_MIN);
    CHECK(!strcmp(xt_json_kind(json_object_get(r, "t")), "boolean"));
    CHECK(!strcmp(xt_json_kind(a), "array"));
    json_decref(r);
}

/* What RFC 8259 refuses, and what xlatrain refuses on top: a repeated key
 * (two tensors under one name), "\u0000" (a name cut short in C), integers
 * that do not fit int64 (a data offset past 2^63). */
TEST(json_read_refuses_what_rfc8259_and_xlatrain_refuse) {
    refuses("", "");
    refuses("[1,]", "");
    refuses("{\"a\":1,}", "");
    refuses("[01]", "");
    refuses("[1.]", "");
    refuses("[NaN]", "");
    refuses("[Infinity]", "");
    refuses("{a:1}", "");
    refuses("\"abc", "");
    refuses("\"a\tb\"", "control character");
    refuses("\"\\x\"", "invalid escape");
    refuses("\"\\ud800\"", "invalid Unicode");
    refuses("\"\xc3\"", "unable to decode byte");
    refuses("\"\xc0\xaf\"", "unable to decode byte");          /* overlong '/' */
    refuses("\"\xed\xa0\x80\"", "unable to decode byte");      /* encoded surrogate */
    refuses("{} {}", "end of file expected");
    refuses("{\"b\":1,\"a\":2,\"a\":4}", "duplicate object key");
    refuses("{\"w\":{\"dtype\":\"F32\",\"dtype\":\"U8\"}}", "duplicate object key");
    refuses("[\"x\\u0000y\"]", "\\u0000 is not allowed");
    refuses("{\"x\\u0000\":1}", "NUL byte in object key");
    refuses("[18446744073709551615]", "too big integer");
    CHECK(parses("0"));
    CHECK(parses("-0.0e+0"));
    CHECK(parses("\"\xf0\x9f\x98\x80\""));
    /* only len bytes are read: the text need not be NUL-terminated */
    const char buf[4] = {'[', '1', ']', 'x'};
    xt_json_read_error je;
    json_t *r = xt_json_read(buf, 3, XT_JSON_READ_BUDGET, &je);
    CHECK(r != NULL);
    json_decref(r);
}

/* A header of many tiny values stops at the budget instead of growing a tree
 * twenty times its text; deep nesting stops at jansson's depth limit. */
TEST(json_read_stays_inside_its_memory_budget) {
    size_t n = 1000000; /* "[0,0,...,0]": 2 MB of text, ~40 MB as a tree (20x, measured) */
    char *t = malloc(2 * n + 2);
    t[0] = '[';
    for (size_t i = 0; i < n; i++) t[1 + 2 * i] = '0', t[2 + 2 * i] = ',';
    t[2 * n] = ']';
    xt_json_read_error je;
    json_t *r = xt_json_read(t, 2 * n + 1, (size_t)8 << 20, &je);
    CHECK_MSG(r == NULL, "a %zu-value array fit in 8 MiB", n);
    json_decref(r);
    CHECK_STR_CONTAINS(je.msg, "needs more than 8 MiB");
    CHECK(je.offset < 2 * n + 1);
    r = xt_json_read(t, 2 * n + 1, XT_JSON_READ_BUDGET, &je); /* the same text fits the default budget */
    CHECK_MSG(r && json_array_size(r) == n, "%s", r ? "wrong size" : je.msg);
    json_decref(r);
    memset(t, '[', 100000);
    r = xt_json_read(t, 100000, XT_JSON_READ_BUDGET, &je);
    CHECK(r == NULL);
    CHECK_STR_CONTAINS(je.msg, "maximum parsing depth");
    free(t);
}

/* Random bytes and mangled headers never crash the reader (run under ASan). */
TEST(json_read_survives_garbage) {
    static const char alphabet[] = "{}[]\",:.-+eE0123456789 \\/utfnlarsu\x01\xc3\xa9\xff\n";
    unsigned seed = 777;
    char buf[96];
    int ok = 0;
    for (int it = 0; it < 6000; it++) {
        size_t len = (size_t)(rand_r(&seed) % sizeof buf);
        for (size_t i = 0; i < len; i++)
            buf[i] = it % 3 == 0 ? (char)rand_r(&seed) : alphabet[rand_r(&seed) % (sizeof alphabet - 1)];
        xt_json_read_error je;
        json_t *r = xt_json_read(buf, len, XT_JSON_READ_BUDGET, &je);
        if (r) {
            ok++;
            json_decref(r);
        } else {
            CHECK(je.offset <= len);
            CHECK(je.msg[0] != 0);
        }
    }
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\\u00e9\"},"
                      "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                      "\"b\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[24,32]}}";
    size_t hl = strlen(hdr);
    for (size_t cut = 0; cut < hl; cut++) {
        xt_json_read_error je;
        json_t *r = xt_json_read(hdr, cut, XT_JSON_READ_BUDGET, &je);
        CHECK(r == NULL); /* every proper prefix is incomplete */
        json_decref(r);
    }
    CHECK(ok < 6000);
}

/* ------------------------------------------------------------------ writer */

TEST(jsonw_builds_nested_valid_json) {
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_obj(&w);
    xt_jw_key(&w, "epoch");
    xt_jw_int(&w, 3);
    xt_jw_key(&w, "loss");
    xt_jw_num(&w, 0.1);
    xt_jw_key(&w, "acc");
    xt_jw_numg(&w, 97.123456789, 6);
    xt_jw_key(&w, "ok");
    xt_jw_bool(&w, 1);
    xt_jw_key(&w, "none");
    xt_jw_null(&w);
    xt_jw_key(&w, "nan");
    xt_jw_num(&w, NAN);
    xt_jw_key(&w, "list");
    xt_jw_arr(&w);
    xt_jw_uint(&w, 9223372036854775807ull);
    xt_jw_num(&w, -1e300);
    xt_jw_obj(&w);
    xt_jw_end(&w);
    xt_jw_arr(&w);
    xt_jw_end(&w);
    xt_jw_str(&w, NULL);
    xt_jw_end(&w);
    xt_jw_key(&w, "esc\"key");
    xt_jw_str(&w, "a\"b\\c\n\t\x01\xc3\xa9\xff!");
    xt_jw_end(&w);
    xt_err e = {0};
    CHECK_EQ(xt_jw_finish(&w, "results.json", &e), 0);
    CHECK(strcmp(w.buf, "{\"epoch\":3,\"loss\":0.1,\"acc\":97.1235,\"ok\":true,\"none\":null,\"nan\":null,"
                        "\"list\":[9223372036854775807,-1e+300,{},[],null],"
                        "\"esc\\\"key\":\"a\\\"b\\\\c\\n\\t\\u0001\xc3\xa9\xef\xbf\xbd!\"}") == 0);
    /* and jansson, strict, reads back what was written */
    xt_json_read_error je;
    json_t *r = xt_json_read(w.buf, w.len, XT_JSON_READ_BUDGET, &je);
    CHECK_MSG(r != NULL, "%s at %zu in %s", je.msg, je.offset, w.buf);
    CHECK(r && json_real_value(json_object_get(r, "loss")) == 0.1);
    CHECK(r && !strcmp(json_string_value(json_object_get(r, "esc\"key")), "a\"b\\c\n\t\x01\xc3\xa9\xef\xbf\xbd!"));
    json_decref(r);

    xt_jw_reset(&w);
    xt_jw_obj(&w);
    xt_jw_key(&w, "step");
    xt_jw_int(&w, -5);
    xt_jw_end(&w);
    xt_jw_raw(&w, "\n", 1);
    CHECK(strcmp(w.buf, "{\"step\":-5}\n") == 0);
    CHECK_EQ(xt_jw_finish(&w, "metrics.jsonl", &e), 0);
    xt_jw_free(&w);
}

TEST(jsonw_doubles_round_trip_shortest) {
    double vals[] = {0.1, 1.0 / 3, 98.25, 1e-7, 123456789012345678.0, -0.0, 5e-324, 1.7976931348623157e308};
    xt_jsonw w;
    xt_jw_init(&w);
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        xt_jw_reset(&w);
        xt_jw_num(&w, vals[i]);
        CHECK(strtod(w.buf, NULL) == vals[i]);
        CHECK(strlen(w.buf) <= 24);
    }
    xt_jw_reset(&w);
    xt_jw_num(&w, 0.1);
    CHECK(strcmp(w.buf, "0.1") == 0);
    xt_jw_reset(&w);
    xt_jw_uint(&w, 18446744073709551615ull);
    CHECK(strcmp(w.buf, "18446744073709551615") == 0);
    xt_jw_reset(&w);
    xt_jw_num(&w, INFINITY);
    CHECK(strcmp(w.buf, "null") == 0);
    xt_jw_free(&w);
}

TEST(jsonw_flags_misuse) {
    xt_err e = {0};
    xt_jsonw w;
    xt_jw_init(&w);
    xt_jw_obj(&w);
    xt_jw_int(&w, 1); /* a value where a key is due */
    xt_jw_end(&w);
    CHECK_EQ(xt_jw_finish(&w, "x.json", &e), XT_EIO);
    CHECK_STR_CONTAINS(e.msg, "x.json");
    xt_jw_reset(&w);
    xt_jw_arr(&w); /* never closed */
    CHECK_EQ(xt_jw_finish(&w, "x.json", &e), XT_EIO);
    xt_jw_reset(&w);
    xt_jw_end(&w); /* nothing open */
    CHECK_EQ(xt_jw_finish(&w, "x.json", &e), XT_EIO);
    xt_jw_reset(&w);
    xt_jw_arr(&w);
    xt_jw_key(&w, "k"); /* key in an array */
    xt_jw_end(&w);
    CHECK_EQ(xt_jw_finish(&w, "x.json", &e), XT_EIO);
    xt_jw_reset(&w);
    for (int i = 0; i < XT_JW_MAX_DEPTH + 2; i++) xt_jw_arr(&w);
    CHECK_EQ(xt_jw_finish(&w, "x.json", &e), XT_EIO);
    xt_jw_free(&w);
}
