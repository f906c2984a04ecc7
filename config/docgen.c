/*
 * docgen.c — dtsim(1) and the bash completion, from the key table
 * (sim_scenario_foreach_key) and the commands' options below.  The options
 * here are those main.c parses; tests/test-cli.c checks that every one of
 * them is known to `dtsim SUBCOMMAND --help`.
 */
#include "config.h"

#include <string.h>

#include "config/docgen.h"
#include "config/scenario.h"

/* One option of a subcommand. */
typedef struct {
  const char *longname;  /* without -- */
  char shortname;        /* 0: none */
  const char *arg;       /* NULL: a flag */
  const char *doc;
} Option;

typedef struct {
  const char *name;
  const char *args;      /* positional arguments, for the synopsis */
  const char *files;     /* the extension its positional argument has, or NULL */
  const char *doc;
  /* the options, then a zeroed one that ends them */
  Option options[12];
  const char *examples;  /* command lines, one per line, each with a comment */
} Command;

static const Command commands[] = {
  { "run", "FILE.ini", "ini",
    "Validates the scenario (every point of its sweep), runs it and writes the trace "
    "database; prints the table of runs. A point whose model does not fit device memory is "
    "recorded infeasible and the others run.",
    { { "output", 'o', "DB", "trace database to write (default: [trace] db, else "
                             "results/NAME.db)" },
      { "set", 0, "SECTION.KEY=VALUE", "override a scenario key; sweep.SECTION.KEY=A,B sets a "
                                       "sweep (repeatable)" },
      { "json", 0, NULL, "print one JSON object: every run with its id, status, swept keys "
                         "and summary" },
      { "quiet", 'q', NULL, "no progress and no table" },
      { "jobs", 'j', "N", "sweep points run at once (default: the online cores)" },
      { "threads", 't', "N", "host threads each point's math may use (the results are the "
                             "same)" },
      { "rank-timeout", 0, "S", "under mpirun: seconds of silence after which an MPI rank is "
                                "lost (default: 60)" } } ,
    "dtsim run scenarios/consistency.ini                # BSP, SSP and async: the table\n"
    "dtsim run scenarios/tensor.ini --set policy.tensor=8 -o t8.db\n"
    "mpirun -n 4 dtsim run scenarios/staleness-sweep.ini  # the sweep over 4 ranks" },
  { "check", "FILE.ini", "ini",
    "Validates the scenario and describes it without running: network, policy, one step's "
    "time and memory, infeasible points.",
    { { "set", 0, "SECTION.KEY=VALUE", "override a scenario key (repeatable)" } } ,
    "dtsim check scenarios/zero.ini --set policy.zero=3  # memory per GPU, term by term\n"
    "dtsim check scenarios/megatron-3d.ini             # every point, before running" },
  { "plan", "FILE.ini", "ini",
    "Searches the layouts of a pipeline scenario's model on its cluster (data x pipeline x "
    "tensor, ZeRO stage, micro-batch size, 1F1B or interleaved, recomputation) with the "
    "global batch held fixed; validates each as run would, ranks those that fit by an "
    "analytic estimate, simulates the best with the event engine (no trace written) and "
    "prints them ranked, with the --set overrides that give the best. A scenario that "
    "sweeps clusters is planned point by point, ending with the fastest and the cheapest.",
    { { "set", 0, "SECTION.KEY=VALUE", "override a scenario key before the search (repeatable)" },
      { "top", 'k', "K", "layouts simulated and ranked, 1 to 20 (default: 5)" },
      { "by", 0, "time|cost", "rank by iteration time (default) or cost per iteration "
                              "(needs [cluster] price)" },
      { "tensor", 0, "T", "only layouts of tensor size T" },
      { "stages", 0, "P", "only layouts of P pipeline stages" },
      { "json", 0, NULL, "print one JSON object: the counts, the ranked layouts with their "
                         "overrides, a layout refused for memory" },
      { "quiet", 'q', NULL, "no progress lines" },
      { "jobs", 'j', "N", "layouts simulated at once (default: the online cores)" } } ,
    "dtsim plan scenarios/validation/megatron-gpt-76.1b-a100.ini --top 3  # ranked layouts\n"
    "dtsim plan scenarios/gpt3-sizing.ini --top 2    # 1,024 H100s or 2,048 A100s?\n"
    "dtsim plan scenarios/validation/megatron-gpt-76.1b-a100.ini --tensor 8 --json > plan.json" },
  { "plot", "DB", "db",
    "Draws the figures of a trace database with gnuplot.",
    { { "output", 'o', "DIR", "folder for the figures (default: the database's)" },
      { "format", 0, "png|svg", "image format (default: png)" } } ,
    "dtsim plot results/consistency.db                 # PNGs beside the database\n"
    "dtsim plot results/pipeline.db -o figs --format svg" },
  { "export", "DB", "db",
    "Writes a trace database as a table of runs (CSV or JSON, every swept key a column) or as "
    "a timeline for Perfetto.",
    { { "output", 'o', "FILE", "file to write (default: standard output)" },
      { "format", 0, "csv|json|perfetto", "what to write (default: csv)" },
      { "run", 0, "N", "export run N only" } } ,
    "dtsim export results/consistency.db > runs.csv      # a row per run\n"
    "dtsim export results/pipeline.db --format perfetto --run 2 -o trace.json" },
  { "report", "DB", "db",
    "Writes one self-contained HTML page of a trace database: the run table, the parameters, "
    "every figure and what it shows.",
    { { "output", 'o', "FILE.html", "page to write (default: the database's path with .html)" } } ,
    "dtsim report results/tensor.db -o tensor.html      # one page to share" },
  { "keys", NULL, NULL, "Prints the reference of every scenario key (markdown).", { { NULL } } ,
    "dtsim keys > keys.md                              # the reference of every key" },
  { "hardware", "[CATALOG.ini]", "ini",
    "Prints the hardware catalog (built-in, or the file) as tables.", { { NULL } } ,
    "dtsim hardware                                    # the built-in catalog\n"
    "dtsim hardware my-catalog.ini" },
  { "calibrate", "MEASURED.csv", "csv",
    "Fits device efficiencies and kernel overheads to measured step times and writes a "
    "catalog that [cluster] catalog loads.",
    { { "output", 'o', "CATALOG.ini", "calibrated catalog to write" },
      { "catalog", 0, "BASE.ini", "catalog to start from (default: the built-in one)" },
      { "force", 0, NULL, "write the catalog even when the fit predicts the measured steps "
                          "worse than the base catalog (refused otherwise)" } } ,
    "dtsim calibrate measured.csv -o my-catalog.ini    # then [cluster] catalog = my-catalog.ini" },
  { "completion", "bash", NULL, "Prints the bash completion script.", { { NULL } } ,
    "dtsim completion bash > /etc/bash_completion.d/dtsim" },
  { "man", NULL, NULL, "Prints this manual page (roff).", { { NULL } } ,
    "dtsim man | man -l -                                # this page" },
};

gboolean
sim_command_help (const char *name, const char **doc, const char **examples)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (commands[i].name, name) == 0)
      {
        *doc = commands[i].doc;
        *examples = commands[i].examples;
        return TRUE;
      }
  return FALSE;
}

const char *const *
sim_command_names (void)
{
  static const char *names[G_N_ELEMENTS (commands) + 1];
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    names[i] = commands[i].name;
  return names;
}

/* --- roff ----------------------------------------------------------------- */

/* Text for roff: backslashes escaped, `code` in bold, a line that would
 * start with a control character guarded. */
static void
roff_text (GString *out, const char *text)
{
  gboolean code = FALSE;
  if (text[0] == '.' || text[0] == '\'')
    g_string_append (out, "\\&");
  for (const char *c = text; *c; c++)
    {
      if (*c == '\\')
        g_string_append (out, "\\e");
      else if (*c == '`')
        {
          g_string_append (out, code ? "\\fR" : "\\fB");
          code = !code;
        }
      else if (*c == '-')
        g_string_append (out, "\\-");
      else if (*c == '\n')
        {
          g_string_append_c (out, ' ');
        }
      else
        g_string_append_c (out, *c);
    }
  if (code)
    g_string_append (out, "\\fR");
}

static void
man_key (const SimKeyInfo *k, gpointer data)
{
  GString *out = ((gpointer *) data)[0];
  const char **section = ((gpointer *) data)[1];
  if (!*section || strcmp (*section, k->section) != 0)
    {
      *section = k->section;
      g_string_append_printf (out, ".SS [%s]\n", k->section);
    }
  g_string_append (out, ".TP\n.B ");
  roff_text (out, k->key);
  g_string_append (out, "\n(");
  g_autofree char *type = g_strdup (k->type);
  /* the reference escapes | for markdown tables */
  g_autoptr (GString) t = g_string_new (NULL);
  for (const char *c = type; *c; c++)
    if (!(c[0] == '\\' && c[1] == '|'))
      g_string_append_c (t, *c);
  roff_text (out, t->str);
  g_string_append (out, "; default ");
  roff_text (out, k->def ? (k->def[0] ? k->def : "empty") : "derived");
  g_string_append (out, ")\n");
  roff_text (out, k->doc);
  g_string_append_c (out, '\n');
}

/* The manual's SYNOPSIS lines: each command with its options and arguments. */
static void
man_synopsis (GString *out)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      const Command *c = &commands[i];
      g_string_append_printf (out, ".B dtsim %s\n", c->name);
      for (const Option *o = c->options; o->longname; o++)
        {
          g_string_append_printf (out, "[\\fB\\-\\-%s\\fR", o->longname);
          if (o->arg)
            {
              g_string_append (out, " \\fI");
              roff_text (out, o->arg);
              g_string_append (out, "\\fR");
            }
          g_string_append (out, "]\n");
        }
      if (c->args)
        {
          g_string_append (out, ".I ");
          roff_text (out, c->args);
          g_string_append_c (out, '\n');
        }
      g_string_append (out, ".br\n");
    }
}

/* The manual's COMMANDS section: each command's paragraph and options. */
static void
man_commands (GString *out)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      const Command *c = &commands[i];
      g_string_append_printf (out, ".SS %s\n", c->name);
      roff_text (out, c->doc);
      g_string_append_c (out, '\n');
      for (const Option *o = c->options; o->longname; o++)
        {
          g_string_append (out, ".TP\n");
          if (o->shortname)
            g_string_append_printf (out, "\\fB\\-%c\\fR, ", o->shortname);
          g_string_append_printf (out, "\\fB\\-\\-%s\\fR", o->longname);
          if (o->arg)
            {
              g_string_append (out, " \\fI");
              roff_text (out, o->arg);
              g_string_append (out, "\\fR");
            }
          g_string_append_c (out, '\n');
          roff_text (out, o->doc);
          g_string_append_c (out, '\n');
        }
    }
}

/* The EXAMPLES section: each command's example lines, verbatim. */
static void
man_examples (GString *out)
{
  g_string_append (out, ".SH EXAMPLES\n.nf\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      g_auto (GStrv) lines = g_strsplit (commands[i].examples, "\n", -1);
      for (int l = 0; lines[l]; l++)
        {
          roff_text (out, lines[l]);
          g_string_append_c (out, '\n');
        }
    }
  g_string_append (out, ".fi\n");
}

void
sim_write_man (GString *out)
{
  g_string_append (out, ".\\\" dtsim.1, generated by `dtsim man` from the program's key table\n");
  g_string_append_printf (out, ".TH DTSIM 1 \"\" \"dtsim %s\" \"User Commands\"\n", PACKAGE_VERSION);
  g_string_append (out,
    ".SH NAME\n"
    "dtsim \\- simulator and emulator of distributed training clusters\n"
    ".SH SYNOPSIS\n");
  man_synopsis (out);
  g_string_append (out,
    ".SH DESCRIPTION\n"
    "dtsim runs the training of a model on a simulated cluster: a discrete-event engine "
    "prices computation, network transfers with contention, stragglers and failures, while "
    "the workers run the real SGD arithmetic, so a run gives both the timeline and the loss "
    "reached at each moment of simulated time. A scenario file (a key file of "
    "\\fB[section]\\fR and \\fBkey = value\\fR lines) describes the cluster, the model and "
    "the training policy; a \\fB[sweep]\\fR section runs every combination of the values it "
    "lists. Every run writes one SQLite trace database.\n"
    ".SH COMMANDS\n");
  man_commands (out);
  g_string_append (out,
    ".SH SCENARIO KEYS\n"
    "Quantities take a unit after the number (\\fB5us\\fR, \\fB64KiB\\fR, \\fB10Gbps\\fR, "
    "\\fB19.5TFLOPS\\fR); a bare number is in the SI base unit. Every key below may be set in "
    "the file, overridden with \\fB\\-\\-set section.key=value\\fR, or swept.\n");
  const char *section = NULL;
  gpointer ctx[2] = { out, &section };
  sim_scenario_foreach_key (man_key, ctx);
  man_examples (out);
  g_string_append (out,
    ".SH EXIT STATUS\n"
    ".TP\n.B 0\nsuccess\n"
    ".TP\n.B 1\na failure while running (a point failed, the disk is full)\n"
    ".TP\n.B 2\nbad input: one line on standard error names the file, the "
    "\\fB[section] key\\fR, what is wrong and the fix; nothing is written\n"
    ".SH FILES\n"
    ".TP\n.I results/NAME.db\n"
    "the default trace database of a scenario named NAME\n"
    ".SH SEE ALSO\n"
    ".BR gnuplot (1),\n"
    ".BR sqlite3 (1).\n"
    "The documentation in the source tree: docs/scenarios.md (keys), docs/trace.md (the "
    "database), docs/analysis.md (exports), docs/policies.md, docs/hardware.md, "
    "docs/validation.md, docs/security.md.\n");
}

/* --- bash ------------------------------------------------------------------ */

static void
bash_key (const SimKeyInfo *k, gpointer data)
{
  GString **s = data;   /* keys, choices (case arms) */
  g_string_append_printf (s[0], " %s.%s", k->section, k->key);
  if (k->choices && k->choices[0])
    {
      g_autofree char *list = g_strjoinv (" ", k->choices);
      g_string_append_printf (s[1], "        %s.%s|sweep.%s.%s) echo '%s' ;;\n", k->section,
                              k->key, k->section, k->key, list);
    }
}

/* The completion's functions of the commands: _dtsim_options (each
 * command's options) and _dtsim_files (the extension of its file argument);
 * CMDS gets the commands' names, space-separated. */
static void
bash_commands (GString *out, GString *cmds)
{
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    {
      const Command *c = &commands[i];
      g_string_append_printf (cmds, "%s%s", i ? " " : "", c->name);
      g_string_append_printf (out, "        %s) echo '", c->name);
      for (const Option *o = c->options; o->longname; o++)
        {
          if (o->shortname)
            g_string_append_printf (out, "-%c ", o->shortname);
          g_string_append_printf (out, "--%s ", o->longname);
        }
      g_string_append (out, "--help' ;;\n");
    }
  g_string_append (out, "    esac\n}\n\n_dtsim_files ()\n{\n    case $1 in\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (commands[i].files)
      g_string_append_printf (out, "        %s) echo '%s' ;;\n", commands[i].name,
                              commands[i].files);
  g_string_append (out, "    esac\n}\n\n");
}

/* The completion's entry point, _dtsim, and its registration; CMDS: the
 * commands' names, space-separated. */
static void
bash_main (GString *out, const char *cmds)
{
  g_string_append_printf (out,
    "_dtsim ()\n"
    "{\n"
    "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    "    local cmd=${COMP_WORDS[1]} word ext\n"
    "    COMPREPLY=()\n"
    "    if (( COMP_CWORD == 1 )); then\n"
    "        COMPREPLY=( $(compgen -W '%s --version --help' -- \"$cur\") )\n"
    "        return\n"
    "    fi\n"
    "    # --set KEY=VALUE: with '=' in COMP_WORDBREAKS (the default) the key,\n"
    "    # the '=' and the value are words of their own\n"
    "    if [[ $prev == = && ${COMP_WORDS[COMP_CWORD-3]} == --set ]]; then\n"
    "        COMPREPLY=( $(compgen -W \"$(_dtsim_choices \"${COMP_WORDS[COMP_CWORD-2]}\")\" -- \"$cur\") )\n"
    "        return\n"
    "    fi\n"
    "    if [[ $cur == = && $prev != --set && ${COMP_WORDS[COMP_CWORD-2]} == --set ]]; then\n"
    "        COMPREPLY=( $(_dtsim_choices \"$prev\") )\n"
    "        return\n"
    "    fi\n"
    "    case $prev in\n"
    "        --set)\n"
    "            if [[ $cur == *=* ]]; then\n"
    "                COMPREPLY=( $(compgen -P \"${cur%%%%=*}=\" -W \"$(_dtsim_choices \"${cur%%%%=*}\")\" -- \"${cur#*=}\") )\n"
    "            else\n"
    "                compopt -o nospace 2>/dev/null\n"
    "                local k all=\"$_dtsim_keys\"\n"
    "                for k in $_dtsim_keys; do all+=\" sweep.$k\"; done\n"
    "                COMPREPLY=( $(compgen -S = -W \"$all\" -- \"$cur\") )\n"
    "            fi\n"
    "            return ;;\n"
    "        --format)\n"
    "            case $cmd in\n"
    "                plot) COMPREPLY=( $(compgen -W 'png svg' -- \"$cur\") ) ;;\n"
    "                export) COMPREPLY=( $(compgen -W 'csv json perfetto' -- \"$cur\") ) ;;\n"
    "            esac\n"
    "            return ;;\n"
    "        -o|--output|--catalog)\n"
    "            COMPREPLY=( $(compgen -f -- \"$cur\") )\n"
    "            return ;;\n"
    "        -j|--jobs|-t|--threads|--run|--rank-timeout)\n"
    "            return ;;\n"
    "    esac\n"
    "    if [[ $cur == -* ]]; then\n"
    "        COMPREPLY=( $(compgen -W \"$(_dtsim_options \"$cmd\")\" -- \"$cur\") )\n"
    "        return\n"
    "    fi\n"
    "    if [[ $cmd == completion ]]; then\n"
    "        COMPREPLY=( $(compgen -W 'bash' -- \"$cur\") )\n"
    "        return\n"
    "    fi\n"
    "    ext=$(_dtsim_files \"$cmd\")\n"
    "    if [[ -n $ext ]]; then\n"
    "        COMPREPLY=( $(compgen -f -X \"!*.$ext\" -- \"$cur\") $(compgen -d -- \"$cur\") )\n"
    "    fi\n"
    "}\n"
    "complete -F _dtsim dtsim\n", cmds);
}

void
sim_write_bash_completion (GString *out)
{
  GString *s[2] = { g_string_new (NULL), g_string_new (NULL) };
  sim_scenario_foreach_key (bash_key, s);
  g_string_append (out,
    "# bash completion for dtsim, generated by `dtsim completion bash` from the\n"
    "# program's key table.  Source it, or install it as\n"
    "# /usr/share/bash-completion/completions/dtsim (make install does).\n\n");
  g_string_append_printf (out, "_dtsim_keys='%s'\n\n", s[0]->str + 1);
  g_string_append (out, "_dtsim_choices ()\n{\n    case $1 in\n");
  g_string_append (out, s[1]->str);
  g_string_append (out, "    esac\n}\n\n_dtsim_options ()\n{\n    case $1 in\n");
  GString *cmds = g_string_new (NULL);
  bash_commands (out, cmds);
  bash_main (out, cmds->str);
  g_string_free (cmds, TRUE);
  g_string_free (s[0], TRUE);
  g_string_free (s[1], TRUE);
}
