// cxx_churn.cc - C++ churn bench workload: std::map/std::string/std::vector growth and destruction per op.
//
// Usage: cxx_churn THREADS [MAX_SECS]; the main thread is the probe (probe.h:
// SIGUSR1 phase line, SIGUSR2/SIGTERM final line).  One op builds a map of
// strings and a growing vector, looks keys up, and destroys them all.
#include <map>
#include <pthread.h>
#include <string>
#include <vector>

#include "probe.h"

static uint64_t one_op(uint64_t x)
{
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 16; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		std::string key = "key-" + std::to_string(x >> 40) + std::string((x >> 33) % 48, 'x');
		std::vector<int> &v = m[key];
		for (unsigned j = 0; j < (x >> 20) % 64; j++)
			v.push_back((int)j);
	}
	uint64_t sum = 0;
	for (auto &kv : m)
		sum += kv.first.size() + kv.second.size();
	return sum + x;
}

static void *worker(void *arg)
{
	struct probe_thread *t = static_cast<struct probe_thread *>(arg);
	uint64_t x = (uint64_t)(t - probe_t) + 1, last = probe_now(), n = 0;
	volatile uint64_t sink = 0;

	probe_thread_init(t);
	while (!probe_stopping()) {
		for (int k = 0; k < 4; k++)
			sink = sink + one_op(x += 0x9e3779b97f4a7c15ull);
		n += 4;
		probe_tick(t, &last, n);
	}
	return nullptr;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	double max_secs = argc > 2 ? atof(argv[2]) : 600;

	if (n < 1 || n > PROBE_MAX_THREADS) {
		fprintf(stderr, "usage: cxx_churn THREADS [MAX_SECS]\n");
		return 64;
	}
	return probe_run(n, worker, max_secs);
}
