/*
 * cmd: the `pyprof` commands, for main.c's table.  Each lives in utils/cmd_NAME.c as
 * cmd_NAME(argc, argv), with argv[0] its name, and its help text cmd_NAME_usage.
 *
 * Interface: cmd_* and cmd_*_usage.
 */
#ifndef PYPROF_CMD_H
#define PYPROF_CMD_H

/* The commands: each takes its own name as argv[0] and returns an exit code. */
int cmd_run(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_systemd(int argc, char **argv);
extern const char cmd_run_usage[];
extern const char cmd_info_usage[];
extern const char cmd_report_usage[];
extern const char cmd_tree_usage[];
extern const char cmd_export_usage[];
extern const char cmd_html_usage[];
extern const char cmd_ctl_usage[];
extern const char cmd_dump_usage[];
extern const char cmd_top_usage[];
extern const char cmd_trace_usage[];
extern const char cmd_diff_usage[];
extern const char cmd_systemd_usage[];

#endif
