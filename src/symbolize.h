/* symbolize.h - names, inlined frames and file:line for profile locations (libdw, live or offline). */
#ifndef HEAPSNAP_SYMBOLIZE_H
#define HEAPSNAP_SYMBOLIZE_H

#include "profile.h"

/*
 * A sym_ctx holds one libdwfl session (the modules of one address space,
 * their ELF and DWARF data) plus caches of per-address results and
 * per-function names, so symbolizing several snapshots of the same process
 * only pays for addresses it has not seen.  It is not thread-safe.
 *
 * Which binaries are trusted:
 *  - live (sym_open_pid): the very file the process mapped, through
 *    /proc/PID/map_files/ (root) or /proc/PID/exe, else the path when its
 *    inode is the one /proc/PID/maps shows.  A replaced or deleted file that
 *    cannot be reached that way is not used.  The vdso image is read from
 *    /proc/PID/mem (libdwfl's dwfl_linux_proc_find_elf).
 *  - offline (sym_open_profile): a file whose GNU build-id equals the one
 *    saved in the mapping, found at the saved path, in the directories of
 *    HEAPSNAP_DEBUG_PATH then PPROF_BINARY_PATH (colon-separated; in each
 *    DIR/BUILDID/BASENAME, DIR/BASENAME, DIR/PATH,
 *    DIR/.build-id/xx/rest.debug, DIR/.build-id/xx/rest) or in
 *    /usr/lib/debug/.build-id/xx/rest.debug.  A mapping saved without a
 *    build-id trusts its path (nothing to check against).
 *  - both: when a location's mapping carries a build-id that differs from
 *    the module's, the module is not used for it.
 * Separate debug files (build-id or .gnu_debuglink, /usr/lib/debug and the
 * HEAPSNAP_DEBUG_PATH directories) are found by libdwfl's standard search.
 */

struct sym_ctx;

/* Opens a symbolization session on the live process pid: its modules are
 * reported from /proc/PID/maps (dwfl_linux_proc_report); ELF files are opened
 * lazily on first use, and libraries loaded later are picked up by
 * sym_profile when a profile maps them.  Returns 0 and *out, or -errno
 * (-ESRCH no such process, -EACCES/-EPERM maps not readable, -ENOMEM,
 * -EINVAL libdwfl failure) with a one-line reason in err (no "heapsnap:"
 * prefix) and *out untouched. */
int sym_open_pid(int pid, struct sym_ctx **out, char err[256]);

/* Opens a session on the mappings saved in p (the process may be gone),
 * trusting binaries as described above.  p is only read here; it need not
 * outlive the session.  Mappings for which no trusted binary is found are
 * simply not reported (their frames become "module+0xoffset").  Returns 0
 * and *out, or -ENOMEM / -EINVAL (libdwfl failure) with err filled. */
int sym_open_profile(const struct profile *p, struct sym_ctx **out, char err[256]);

/*
 * Symbolizes every location of p that has no lines and whose mapping had
 * has_functions clear on entry (locations of other mappings are left alone).
 * The lookup is at the location's address as stored (already return
 * address - 1 for callers, see profile.h).  Each location gets:
 *  - from DWARF: one line per frame, innermost inlined function first, the
 *    real function last; each with the function's C++-demangled name
 *    (system_name = the linkage name: mangled C++, or a C asm label such as
 *    glibc's __GI___libc_malloc; "" when the same as the name), its
 *    declaration file and line (start_line), and line/column: from the
 *    line table for the innermost frame, from the inlined call site for the
 *    others.  A static C++ function (no linkage name in DWARF) takes its
 *    full signature from the ELF symbol when it is the outermost frame;
 *  - else from the ELF symbol table: one line, demangled symbol name, plus
 *    file:line when the line table knows the address;
 *  - else one line naming "basename+0xOFFSET" (file offset in the location's
 *    mapping) or "0xADDRESS" without a mapping, line 0.
 * Sets has_functions / has_filenames / has_line_numbers on a mapping when
 * any of its locations got a real name / a source file / a line number, and
 * has_inline_frames when any was resolved through DWARF scopes (so its
 * inlined frames are complete).  Junk addresses are never an error.
 * Returns 0, or -ENOMEM (p then holds a mix of symbolized and untouched
 * locations, all valid).
 */
int sym_profile(struct sym_ctx *c, struct profile *p);

/* Ends the session and frees everything it owns; NULL is fine. */
void sym_close(struct sym_ctx *c);

#endif
