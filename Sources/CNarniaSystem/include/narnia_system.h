// The system calls Swift cannot call directly or safely: variadic ones (prctl), names that
// clash with C structs (flock, stat), and those Glibc's module map hides behind _GNU_SOURCE.
// Each is a plain function with fixed arguments; errno is left as the call set it.
#ifndef NARNIA_SYSTEM_H
#define NARNIA_SYSTEM_H

#include <stdint.h>
#include <stdio.h>


/// flock(2).
int narnia_flock(int fd, int operation);
/// fcntl(F_SETLEASE, F_RDLCK): granted only while no process has the file open for writing
/// (EAGAIN otherwise). fd must be open read-only.
int narnia_take_read_lease(int fd);
/// fcntl(F_SETLEASE, F_WRLCK): granted only while no other descriptor, of any process, has the
/// file open (EAGAIN otherwise).
int narnia_take_write_lease(int fd);
/// fcntl(F_SETLEASE, F_UNLCK).
int narnia_release_lease(int fd);
/// The lease held on fd (`F_GETLEASE`): F_RDLCK while held, its target type once a break is pending.
int narnia_lease_type(int fd);
/// renameat2(2) with RENAME_NOREPLACE within one directory: EEXIST when `to` exists, EINVAL
/// where the file system cannot promise it.
int narnia_rename_no_replace(int directory, const char *from, const char *to);
/// syncfs(2): flushes the file system holding fd.
int narnia_syncfs(int fd);
/// fstatfs(2)'s f_type of the file system holding fd, or -1 with errno set.
int64_t narnia_file_system_type(int fd);
/// major(3) of the device number of the file system holding fd (0 for an anonymous one:
/// FUSE without a block device, tmpfs), or -1 with errno set.
int64_t narnia_file_system_device_major(int fd);
/// sync_file_range(2) with SYNC_FILE_RANGE_WRITE: starts writeback, does not wait.
int narnia_start_writeback(int fd, int64_t offset, int64_t length);
/// prctl(PR_SET_DUMPABLE, 0): no core dumps and no ptrace by other processes of the user.
int narnia_set_not_dumpable(void);
/// prctl(PR_SET_CHILD_SUBREAPER, 1): orphans among the caller's descendants become its children.
int narnia_become_subreaper(void);
/// prctl(PR_SET_PDEATHSIG, signal): the calling process gets `signal` when its parent dies.
int narnia_set_parent_death_signal(int signal);
/// memfd_create(2) with MFD_CLOEXEC | MFD_ALLOW_SEALING.
int narnia_memfd_create(const char *name);
/// fcntl(F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_WRITE).
int narnia_seal_memfd(int fd);
/// pipe2(2) with O_CLOEXEC.
int narnia_pipe_cloexec(int fds[2]);
/// close_range(first, ~0U, 0): closes every descriptor from `first` up.
int narnia_close_from(unsigned int first);
/// The O_TMPFILE flag (not exported by every Glibc module map).
int narnia_o_tmpfile(void);
/// The O_NOATIME flag (likewise).
int narnia_o_noatime(void);
/// Sets (`on` nonzero) or clears O_DIRECT on an open descriptor (fcntl F_SETFL): -1 with
/// errno when the file system takes no direct I/O (EINVAL).
int narnia_set_direct(int fd, int on);
/// linkat(fd, "", dirfd, name, AT_EMPTY_PATH): gives an O_TMPFILE file its name; where the
/// kernel refuses that to an ordinary user (before Linux 6.10), linkat of /proc/self/fd/FD
/// with AT_SYMLINK_FOLLOW.
int narnia_link_open_file(int fd, int directory, const char *name);

/// The file mode creation mask children get (`narnia_fork_exec`): the one the user had
/// before narnia made its own 077.
void narnia_set_child_umask(unsigned int mask);
/// Raises the soft limit of open descriptors to the hard limit (at most 1 << 20) for this
/// process, and keeps the one it had for children (`narnia_fork_exec`). Returns the new
/// soft limit, or -1.
long narnia_raise_descriptor_limit(void);

/// Forks and, in the child, with only async-signal-safe calls: joins process group `group`
/// (0: a new one led by the child) and, when `take_terminal`, makes it the foreground group of
/// `tty`; asks for SIGKILL when the parent dies (PR_SET_PDEATHSIG); moves descriptor
/// `sources[i]` to `targets[i]`; closes every descriptor from `first_free` up; restores default
/// handling of every signal and an empty signal mask; sets the mask `narnia_set_child_umask`
/// gave (077 with `private_files`) and the descriptor limit the process started with;
/// execve(path, argv, envp). The caller blocks all signals around the call. Returns the
/// child's pid, or -1 with errno set.
int narnia_fork_exec(const char *path, char *const argv[], char *const envp[],
                       const int *sources, const int *targets, int count, unsigned int first_free,
                       int group, int tty, int take_terminal, int private_files);

/// The name (argv[0]) under which narnia runs as a viewer's guard (`narnia_fork_exec_guarded`).
#define NARNIA_GUARD_NAME "narnia-viewer-guard"
/// The guard's reports on its status pipe, each two ints {kind, value}: the program started
/// (its pid), stopped (its wait status; narnia continues it), ended (its wait status, last).
#define NARNIA_GUARD_STARTED 1
#define NARNIA_GUARD_STOPPED 2
#define NARNIA_GUARD_ENDED 3

/// As `narnia_fork_exec`, but the program runs below a guard. The child joins the group and
/// takes the terminal as in `narnia_fork_exec`, puts the program's descriptors in place with
/// `lifeline` (the read end of a pipe whose write end only narnia holds) at `first_free` and
/// `status` (a pipe's write end) just above, makes itself the reaper of its orphaned
/// descendants (PR_SET_CHILD_SUBREAPER), and executes narnia itself again (/proc/self/exe) as
/// `NARNIA_GUARD_NAME FIRST_FREE PATH ARGUMENTS...`, so that none of narnia's memory stays in
/// it; that fresh process starts the program (`narnia_guard_if_asked`). Where narnia cannot
/// run itself again, the child executes the program unguarded instead, as
/// `narnia_fork_exec` does, and sends no report. Returns the child's pid, or -1.
int narnia_fork_exec_guarded(const char *path, char *const argv[], char *const envp[],
                             const int *sources, const int *targets, int count, unsigned int first_free,
                             int group, int tty, int take_terminal, int private_files,
                             int lifeline, int status);

/// 1 when /proc/self/exe is the program this code belongs to (the file its code is mapped
/// from: same inode and same path), so that executing it runs narnia again; 0 when it is
/// another (narnia started through the dynamic loader, an emulator or valgrind) or /proc
/// cannot tell.
int narnia_can_run_itself_again(void);

/// When this process was started as a guard (`narnia_fork_exec_guarded`), its whole life, and
/// it never returns: it starts the program (SIGKILL when the guard dies), reports on the
/// status pipe (`NARNIA_GUARD_STARTED`…), keeps none of the program's descriptors, reaps the
/// descendants that come to it and exits once none is left; when narnia dies (end of file on
/// the lifeline) it kills them all first, so that nothing a viewer started keeps a decrypted
/// file open after narnia is gone. Returns at once otherwise.
void narnia_guard_if_asked(int argc, char **argv);

/// Replaces the handling of fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT),
/// the Swift runtime's backtracer included, with a handler that runs on its own stack (so a
/// stack overflow reaches it), writes one line that says nothing of the process's memory, and
/// exits with status 70.
int narnia_install_fatal_signal_handlers(void);

/* The C library's standard streams, as functions: Swift 6 does not let code share the
   mutable C globals `stdin`, `stdout` and `stderr`, and reading them through a call is as
   safe as C's own use of them. */
FILE *narnia_standard_input(void);
FILE *narnia_standard_output(void);
FILE *narnia_standard_error(void);

#endif
