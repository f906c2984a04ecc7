/*
 * docgen.h — the manual page and the bash completion of dtsim, generated
 * from the same key table as `dtsim keys` (`make` writes dtsim.1 and
 * dtsim.bash with them; `make install` installs both).
 */
#ifndef DTSIM_CONFIG_DOCGEN_H
#define DTSIM_CONFIG_DOCGEN_H

#include <glib.h>

G_BEGIN_DECLS

/* The manual page dtsim(1), in roff (man macros). */
void sim_write_man (GString *out);

/* A command's one-paragraph description and its example lines (one per
 * line), as the manual page gives them; FALSE for a name that is no
 * command. */
gboolean sim_command_help (const char *name, const char **doc, const char **examples);
/* The commands' names, NULL-terminated (static). */
const char *const *sim_command_names (void);

/* A bash completion script for dtsim: subcommands, their options, the
 * files each takes, scenario keys after --set and their choices after
 * "key=". */
void sim_write_bash_completion (GString *out);

G_END_DECLS

#endif
