/*
 * json.h — a strict JSON reader for the tests (RFC 8259): what dtsim writes
 * as JSON must parse here, with no extension (no NaN, no trailing comma, no
 * control character in a string, valid UTF-8).
 */
#ifndef DTSIM_TESTS_JSON_H
#define DTSIM_TESTS_JSON_H

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TJ_NULL, TJ_FALSE, TJ_TRUE, TJ_NUMBER, TJ_STRING, TJ_ARRAY, TJ_OBJECT
} TjType;

typedef struct TjNode TjNode;
struct TjNode {
  TjType type;
  double number;
  char *string;
  GPtrArray *items;        /* TjNode *: array elements, or object values */
  GPtrArray *keys;         /* char *: object keys, in order */
};

/* Parses all of `text` (len bytes); NULL with *error naming the offset when
 * it is not one JSON value. */
TjNode *tj_parse (const char *text, gsize len, char **error);
void tj_free (TjNode *n);

/* The member `key` of object n; NULL when n is not an object or lacks it. */
const TjNode *tj_get (const TjNode *n, const char *key);
/* The number of member `key`, NAN when absent or not a number. */
double tj_number (const TjNode *n, const char *key);
/* The string of member `key`, NULL when absent or not a string. */
const char *tj_string (const TjNode *n, const char *key);

G_END_DECLS

#endif
