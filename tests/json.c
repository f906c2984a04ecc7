/*
 * json.c — the tests' strict JSON reader (json.h).
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include "tests/json.h"

typedef struct {
  const char *p, *end, *start;
  char *error;
} Parser;

static TjNode *value (Parser *ps, int depth);

static gboolean
fail (Parser *ps, const char *what)
{
  if (!ps->error)
    ps->error = g_strdup_printf ("%s at offset %td", what, ps->p - ps->start);
  return FALSE;
}

static void
space (Parser *ps)
{
  while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static gboolean
literal (Parser *ps, const char *word)
{
  gsize n = strlen (word);
  if ((gsize) (ps->end - ps->p) < n || memcmp (ps->p, word, n) != 0)
    return fail (ps, "unknown literal");
  ps->p += n;
  return TRUE;
}

static int
hex4 (Parser *ps)
{
  if (ps->end - ps->p < 4)
    return -1;
  int v = 0;
  for (int i = 0; i < 4; i++)
    {
      int d = g_ascii_xdigit_value (ps->p[i]);
      if (d < 0)
        return -1;
      v = v * 16 + d;
    }
  ps->p += 4;
  return v;
}

static char *
string (Parser *ps)
{
  if (ps->p >= ps->end || *ps->p != '"')
    {
      fail (ps, "expected a string");
      return NULL;
    }
  ps->p++;
  GString *s = g_string_new (NULL);
  while (TRUE)
    {
      if (ps->p >= ps->end)
        {
          fail (ps, "unterminated string");
          break;
        }
      unsigned char c = (unsigned char) *ps->p;
      if (c == '"')
        {
          ps->p++;
          if (!g_utf8_validate (s->str, (gssize) s->len, NULL))
            {
              fail (ps, "string is not valid UTF-8");
              break;
            }
          return g_string_free (s, FALSE);
        }
      if (c < 0x20)
        {
          fail (ps, "control character in a string");
          break;
        }
      if (c != '\\')
        {
          g_string_append_c (s, (char) c);
          ps->p++;
          continue;
        }
      ps->p++;
      if (ps->p >= ps->end)
        {
          fail (ps, "unterminated escape");
          break;
        }
      char e = *ps->p++;
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      const char *k = strchr (from, e);
      if (e && k)
        {
          g_string_append_c (s, to[k - from]);
          continue;
        }
      if (e != 'u')
        {
          fail (ps, "bad escape");
          break;
        }
      int u = hex4 (ps);
      if (u < 0)
        {
          fail (ps, "bad \\u escape");
          break;
        }
      if (u >= 0xd800 && u <= 0xdbff)
        {
          if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
            {
              fail (ps, "lone surrogate");
              break;
            }
          ps->p += 2;
          int lo = hex4 (ps);
          if (lo < 0xdc00 || lo > 0xdfff)
            {
              fail (ps, "bad surrogate pair");
              break;
            }
          u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
        }
      else if (u >= 0xdc00 && u <= 0xdfff)
        {
          fail (ps, "lone surrogate");
          break;
        }
      g_string_append_unichar (s, (gunichar) u);
    }
  g_string_free (s, TRUE);
  return NULL;
}

static gboolean
number (Parser *ps, double *out)
{
  const char *q = ps->p;
  if (q < ps->end && *q == '-')
    q++;
  if (q >= ps->end || !g_ascii_isdigit (*q))
    return fail (ps, "bad number");
  if (*q == '0')
    q++;
  else
    while (q < ps->end && g_ascii_isdigit (*q))
      q++;
  if (q < ps->end && *q == '.')
    {
      q++;
      if (q >= ps->end || !g_ascii_isdigit (*q))
        return fail (ps, "bad fraction");
      while (q < ps->end && g_ascii_isdigit (*q))
        q++;
    }
  if (q < ps->end && (*q == 'e' || *q == 'E'))
    {
      q++;
      if (q < ps->end && (*q == '+' || *q == '-'))
        q++;
      if (q >= ps->end || !g_ascii_isdigit (*q))
        return fail (ps, "bad exponent");
      while (q < ps->end && g_ascii_isdigit (*q))
        q++;
    }
  g_autofree char *text = g_strndup (ps->p, (gsize) (q - ps->p));
  *out = g_ascii_strtod (text, NULL);
  ps->p = q;
  if (!isfinite (*out))
    return fail (ps, "number out of range");
  return TRUE;
}

static TjNode *
node (TjType t)
{
  TjNode *n = g_new0 (TjNode, 1);
  n->type = t;
  return n;
}

static TjNode *
container (Parser *ps, int depth, gboolean object)
{
  TjNode *n = node (object ? TJ_OBJECT : TJ_ARRAY);
  n->items = g_ptr_array_new_with_free_func ((GDestroyNotify) tj_free);
  if (object)
    n->keys = g_ptr_array_new_with_free_func (g_free);
  ps->p++;
  space (ps);
  char close = object ? '}' : ']';
  if (ps->p < ps->end && *ps->p == close)
    {
      ps->p++;
      return n;
    }
  while (TRUE)
    {
      space (ps);
      if (object)
        {
          char *k = string (ps);
          if (!k)
            break;
          g_ptr_array_add (n->keys, k);
          space (ps);
          if (ps->p >= ps->end || *ps->p != ':')
            {
              fail (ps, "expected ':'");
              break;
            }
          ps->p++;
        }
      TjNode *v = value (ps, depth + 1);
      if (!v)
        break;
      g_ptr_array_add (n->items, v);
      space (ps);
      if (ps->p < ps->end && *ps->p == ',')
        {
          ps->p++;
          continue;
        }
      if (ps->p < ps->end && *ps->p == close)
        {
          ps->p++;
          return n;
        }
      fail (ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
      break;
    }
  tj_free (n);
  return NULL;
}

static TjNode *
value (Parser *ps, int depth)
{
  if (depth > 200)
    {
      fail (ps, "nested too deep");
      return NULL;
    }
  space (ps);
  if (ps->p >= ps->end)
    {
      fail (ps, "expected a value");
      return NULL;
    }
  switch (*ps->p)
    {
    case '{':
      return container (ps, depth, TRUE);
    case '[':
      return container (ps, depth, FALSE);
    case '"':
      {
        char *s = string (ps);
        if (!s)
          return NULL;
        TjNode *n = node (TJ_STRING);
        n->string = s;
        return n;
      }
    case 'n':
      return literal (ps, "null") ? node (TJ_NULL) : NULL;
    case 't':
      return literal (ps, "true") ? node (TJ_TRUE) : NULL;
    case 'f':
      return literal (ps, "false") ? node (TJ_FALSE) : NULL;
    default:
      {
        double d;
        if (!number (ps, &d))
          return NULL;
        TjNode *n = node (TJ_NUMBER);
        n->number = d;
        return n;
      }
    }
}

TjNode *
tj_parse (const char *text, gsize len, char **error)
{
  Parser ps = { text, text + len, text, NULL };
  TjNode *n = value (&ps, 0);
  space (&ps);
  if (n && ps.p != ps.end)
    {
      fail (&ps, "text after the value");
      tj_free (n);
      n = NULL;
    }
  if (error)
    *error = ps.error;
  else
    g_free (ps.error);
  return n;
}

void
tj_free (TjNode *n)
{
  if (!n)
    return;
  g_free (n->string);
  if (n->items)
    g_ptr_array_unref (n->items);
  if (n->keys)
    g_ptr_array_unref (n->keys);
  g_free (n);
}

const TjNode *
tj_get (const TjNode *n, const char *key)
{
  if (!n || n->type != TJ_OBJECT)
    return NULL;
  for (guint i = 0; i < n->keys->len; i++)
    if (strcmp (g_ptr_array_index (n->keys, i), key) == 0)
      return g_ptr_array_index (n->items, i);
  return NULL;
}

double
tj_number (const TjNode *n, const char *key)
{
  const TjNode *v = tj_get (n, key);
  return v && v->type == TJ_NUMBER ? v->number : NAN;
}

const char *
tj_string (const TjNode *n, const char *key)
{
  const TjNode *v = tj_get (n, key);
  return v && v->type == TJ_STRING ? v->string : NULL;
}
