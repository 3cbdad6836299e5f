/* test_io_json.c — the strict JSON parser (src/io/json.c) and the JSON writer
 * (src/io/jsonw.c). */
#include <stdint.h>
#include <string.h>

#include "io/json.h"
#include "io/jsonw.h"
#include "test.h"

static int parses(const char *text) {
    xt_json_doc d;
    xt_json_error je;
    int rc = xt_json_parse(&d, text, strlen(text), NULL, &je);
    if (rc == 0) xt_json_free(&d);
    return rc == 0;
}

/* Parse must fail with `what` in the message. */
static void refuses(const char *text, const char *what) {
    xt_json_doc d;
    xt_json_error je;
    int rc = xt_json_parse(&d, text, strlen(text), NULL, &je);
    CHECK_MSG(rc != 0, "accepted: %s", text);
    if (rc == 0) {
        xt_json_free(&d);
        return;
    }
    CHECK_MSG(strstr(je.msg, what) != NULL, "for %s: expected \"%s\" in: %s", text, what, je.msg);
    CHECK(je.offset <= strlen(text));
}

TEST(json_parses_every_value_kind) {
    const char *text = " {\"a\": [1, -2, 3.5, -0.25e2, 1E3, 0], \"s\": \"q\\\"b\\\\s\\/n\\nt\\tu\\u00e9\\ud83d\\ude00\","
                       " \"t\": true, \"f\": false, \"n\": null, \"o\": {}, \"e\": [],"
                       " \"big\": 9223372036854775807, \"small\": -9223372036854775808, \"huge\": 9223372036854775808,"
                       " \"nul\": \"x\\u0000y\"} \n";
    xt_json_doc d;
    xt_json_error je;
    int rc = xt_json_parse(&d, text, strlen(text), NULL, &je);
    CHECK_MSG(rc == 0, "%s at %zu", je.msg, je.offset);
    if (rc) return;
    const xt_json *r = d.root;
    CHECK_EQ(r->type, XT_JSON_OBJECT);
    CHECK_EQ(r->len, 11);
    const xt_json *a = xt_json_get(r, "a");
    CHECK(a && a->type == XT_JSON_ARRAY && a->len == 6);
    const xt_json *x = a->kid;
    CHECK(x->is_int && x->i == 1);
    x = x->next;
    CHECK(x->is_int && x->i == -2);
    x = x->next;
    CHECK(!x->is_int && x->num == 3.5);
    x = x->next;
    CHECK_NEAR(x->num, -25, 0);
    x = x->next;
    CHECK(!x->is_int && x->num == 1000);
    x = x->next;
    CHECK(x->is_int && x->i == 0 && x->next == NULL);
    const xt_json *s = xt_json_get(r, "s");
    CHECK(s && strcmp(s->str, "q\"b\\s/n\nt\tu\xc3\xa9\xf0\x9f\x98\x80") == 0);
    CHECK(xt_json_get(r, "t")->boolean == 1);
    CHECK(xt_json_get(r, "f")->type == XT_JSON_BOOL && xt_json_get(r, "f")->boolean == 0);
    CHECK(xt_json_get(r, "n")->type == XT_JSON_NULL);
    CHECK(xt_json_get(r, "o")->type == XT_JSON_OBJECT && xt_json_get(r, "o")->kid == NULL);
    CHECK(xt_json_get(r, "e")->len == 0);
    CHECK(xt_json_get(r, "big")->is_int && xt_json_get(r, "big")->i == INT64_MAX);
    CHECK(xt_json_get(r, "small")->is_int && xt_json_get(r, "small")->i == INT64_MIN);
    CHECK(!xt_json_get(r, "huge")->is_int); /* does not fit: only the double */
    const xt_json *nul = xt_json_get(r, "nul");
    CHECK(nul->len == 3 && memcmp(nul->str, "x\0y", 3) == 0);
    CHECK(xt_json_get(r, "missing") == NULL);
    CHECK(xt_json_duplicate_key(r, NULL) == NULL);
    xt_json_free(&d);
    xt_json_free(&d);
}

TEST(json_refuses_what_rfc8259_refuses) {
    refuses("", "unexpected end");
    refuses("   ", "unexpected end");
    refuses("[1,]", "trailing comma");
    refuses("{\"a\":1,}", "trailing comma");
    refuses("[01]", "leading zero");
    refuses("[-]", "expected a digit");
    refuses("[1.]", "after '.'");
    refuses("[1e]", "exponent");
    refuses("[NaN]", "unexpected character 'N'");
    refuses("[Infinity]", "unexpected character");
    refuses("[tru]", "expected a JSON value");
    refuses("{a:1}", "expected a string key");
    refuses("{\"a\" 1}", "expected ':'");
    refuses("[1 2]", "expected ',' or ']'");
    refuses("\"abc", "unterminated string");
    refuses("\"a\tb\"", "control character 0x09");
    refuses("\"\\x\"", "unknown escape");
    refuses("\"\\u12zz\"", "bad hex digit");
    refuses("\"\\u12\"", "truncated \\u escape");
    refuses("\"\\ud800\"", "not followed by a low one");
    refuses("\"\\udc00\"", "lone low surrogate");
    refuses("\"\xc3\"", "invalid UTF-8");
    refuses("\"\xc0\xaf\"", "invalid UTF-8");          /* overlong '/' */
    refuses("\"\xed\xa0\x80\"", "invalid UTF-8");      /* encoded surrogate */
    refuses("\"\xf4\x90\x80\x80\"", "invalid UTF-8");  /* beyond U+10FFFF */
    refuses("{} {}", "unexpected data after");
    refuses("[\x01]", "unexpected byte 0x01");
    CHECK(parses("0"));
    CHECK(parses("-0.0e+0"));
    CHECK(parses("\"\xf0\x9f\x98\x80\""));
}

TEST(json_limits_depth_and_nodes) {
    char deep[201];
    memset(deep, '[', 200);
    deep[200] = 0;
    refuses(deep, "nesting deeper than 64 levels");
    /* exactly at the limit is fine */
    char ok[130];
    memset(ok, '[', 64);
    memset(ok + 64, ']', 64);
    ok[128] = 0;
    CHECK(parses(ok));
    xt_json_limits lim = {.max_depth = 2, .max_nodes = 4};
    xt_json_doc d;
    xt_json_error je;
    CHECK(xt_json_parse(&d, "[[[]]]", 6, &lim, &je) != 0);
    CHECK_STR_CONTAINS(je.msg, "deeper than 2");
    CHECK(xt_json_parse(&d, "[1,2,3,4]", 9, &lim, &je) != 0);
    CHECK_STR_CONTAINS(je.msg, "more than 4 values");
    CHECK(xt_json_parse(&d, "[1,2,3]", 7, &lim, &je) == 0);
    xt_json_free(&d);
    /* the input need not be NUL-terminated: only len bytes are read */
    const char buf[4] = {'[', '1', ']', 'x'};
    CHECK(xt_json_parse(&d, buf, 3, NULL, &je) == 0);
    xt_json_free(&d);
}

TEST(json_finds_duplicate_keys) {
    xt_json_doc d;
    xt_json_error je;
    const char *t = "{\"b\":1,\"a\":2,\"c\":3,\"a\":4,\"b\":5}";
    CHECK(xt_json_parse(&d, t, strlen(t), NULL, &je) == 0);
    int oom;
    const xt_json *dup = xt_json_duplicate_key(d.root, &oom);
    CHECK(dup != NULL && !oom);
    if (dup) {
        CHECK(strcmp(dup->key, "a") == 0); /* the first repeat in document order */
        CHECK_EQ(dup->offset, 19); /* where its key starts */
    }
    xt_json_free(&d);
}

/* Random bytes and mangled headers never crash the parser (run under ASan). */
TEST(json_parser_survives_garbage) {
    static const char alphabet[] = "{}[]\",:.-+eE0123456789 \\/utfnlarsu\x01\xc3\xa9\xff\n";
    unsigned seed = 777;
    char buf[96];
    int ok = 0;
    for (int it = 0; it < 6000; it++) {
        size_t len = (size_t)(rand_r(&seed) % sizeof buf);
        for (size_t i = 0; i < len; i++)
            buf[i] = it % 3 == 0 ? (char)rand_r(&seed) : alphabet[rand_r(&seed) % (sizeof alphabet - 1)];
        xt_json_doc d;
        xt_json_error je;
        if (xt_json_parse(&d, buf, len, NULL, &je) == 0) {
            ok++;
            xt_json_free(&d);
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
        xt_json_doc d;
        xt_json_error je;
        CHECK(xt_json_parse(&d, hdr, cut, NULL, &je) != 0); /* every proper prefix is incomplete */
    }
    char *m = malloc(hl);
    for (int it = 0; it < 3000; it++) {
        memcpy(m, hdr, hl);
        for (int k = 0; k < 1 + it % 3; k++) m[rand_r(&seed) % hl] = alphabet[rand_r(&seed) % (sizeof alphabet - 1)];
        xt_json_doc d;
        xt_json_error je;
        if (xt_json_parse(&d, m, hl, NULL, &je) == 0) xt_json_free(&d);
    }
    free(m);
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
    xt_jw_uint(&w, 18446744073709551615ull);
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
                        "\"list\":[18446744073709551615,-1e+300,{},[],null],"
                        "\"esc\\\"key\":\"a\\\"b\\\\c\\n\\t\\u0001\xc3\xa9\xef\xbf\xbd!\"}") == 0);
    /* and our own strict parser agrees it is JSON */
    xt_json_doc d;
    xt_json_error je;
    CHECK_MSG(xt_json_parse(&d, w.buf, w.len, NULL, &je) == 0, "%s at %zu in %s", je.msg, je.offset, w.buf);
    xt_json_free(&d);

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
