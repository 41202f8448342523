/* libinjtest.c - the library tests inject: a constructor that counts loads, ping/pid/stop functions (names shared with inj-tests). */
#include <stdatomic.h>
#include <unistd.h>

static _Atomic long loads;
static _Atomic long stops;

__attribute__((constructor)) static void hsp_test_ctor(void)
{
	atomic_fetch_add(&loads, 1);
}

/* x + 1: proves the call reached us with its argument. */
long hsp_test_ping(long x)
{
	return x + 1;
}

/* The pid of the process we run in. */
long hsp_test_pid(void)
{
	return (long)getpid();
}

/* How many times the constructor ran in this process image. */
long hsp_test_loads(void)
{
	return atomic_load(&loads);
}

/* A stop function for unload tests: counts its calls, returns 0 ("unload me"). */
long hsp_test_stop(void)
{
	atomic_fetch_add(&stops, 1);
	return 0;
}

/* How many times hsp_test_stop ran. */
long hsp_test_stops(void)
{
	return atomic_load(&stops);
}

/* A stop function that refuses the unload (as the payload does while a hook
 * may still be reachable): the injector must then leave the library mapped. */
long hsp_test_refuse(void)
{
	return 7;
}
