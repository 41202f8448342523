/* preflight.h - preflight_full(): inj_preflight() that also hands over the maps and modules it read. */
#ifndef HEAPSNAP_INJECTOR_PREFLIGHT_H
#define HEAPSNAP_INJECTOR_PREFLIGHT_H

#include "internal.h"

/* As inj_preflight(), and on return (success or not) *maps and *mods hold
 * what was read; the caller frees them with proc_maps_free()/mods_free(). */
int preflight_full(pid_t pid, struct inj_info *info, char *reason, struct proc_maps *maps,
		   struct mods *mods);

#endif
