/* cmd_stop.c - `heapsnap stop PID`: stop sampling, unload the payload, leave the process as found. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "cmd_live.h"
#include "cmd_report.h"
#include "hs.h"
#include "json.h"

struct stop_result {
	int pid;
	bool was_loaded;
};

static int fill_json(FILE *f, void *ctx)
{
	const struct stop_result *r = ctx;
	struct json j;

	json_begin(&j, f);
	json_obj_open(&j);
	json_kv_int(&j, "pid", r->pid);
	json_kv_bool(&j, "was_loaded", r->was_loaded);
	json_kv_bool(&j, "unloaded", r->was_loaded);
	json_obj_close(&j);
	return json_end(&j);
}

int do_stop(int argc, char **argv)
{
	struct cmd_live o;
	struct stop_result r = { 0 };
	int ret = cmd_live_parse(&o, "stop", argc, argv, 0);

	if (ret)
		return ret;
	if (optind != argc)
		return hs_usage_err("stop", "too many operands");
	r.pid = o.pid;
	ret = cmd_live_unload(&o, &r.was_loaded);
	if (ret)
		return ret;
	if (opt_json) {
		ret = cmd_report_emit(fill_json, &r);
		if (ret)
			hs_err("cannot write the result: %s", strerror(-ret));
		return ret ? HS_FAIL : HS_OK;
	}
	if (!r.was_loaded)
		printf("pid %d: heapsnap is not running there\n", o.pid);
	else if (!opt_quiet)
		printf("pid %d: sampling stopped, heapsnap unloaded\n", o.pid);
	return HS_OK;
}
