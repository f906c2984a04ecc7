/*
 * measure.c — runs a command and reports its wall time and peak resident
 * memory, for the benchmarks that time what users run (make bench-scale).
 *
 * Usage: measure COMMAND [ARGS...]
 * The command's own output passes through; then one line
 *   MEASURE wall_s=W rss_kib=R status=S
 * goes to stdout, W the seconds from fork to exit, R the child's peak RSS
 * (getrusage of the waited-for child), S its exit status.  The exit status
 * of measure is the command's.
 */
#include "config.h"

#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

int
main (int argc, char **argv)
{
  if (argc < 2)
    {
      fprintf (stderr, "usage: measure COMMAND [ARGS...]\n");
      return 2;
    }
  fflush (stdout);
  double t0 = now ();
  pid_t pid = fork ();
  if (pid < 0)
    {
      perror ("measure: fork");
      return 2;
    }
  if (pid == 0)
    {
      execvp (argv[1], argv + 1);
      perror ("measure: exec");
      _exit (127);
    }
  int status = 0;
  struct rusage ru;
  if (wait4 (pid, &status, 0, &ru) < 0)
    {
      perror ("measure: wait");
      return 2;
    }
  double wall = now () - t0;
  int code = WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
  printf ("MEASURE wall_s=%.3f rss_kib=%ld status=%d\n", wall, ru.ru_maxrss, code);
  return code;
}
