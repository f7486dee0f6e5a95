#define _GNU_SOURCE
#include "narnia_system.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <signal.h>
#include <termios.h>
#include <string.h>
#include <stdio.h>

int narnia_flock(int fd, int operation) { return flock(fd, operation); }

int narnia_syncfs(int fd) { return syncfs(fd); }

int64_t narnia_file_system_type(int fd) {
    struct statfs sfs;
    if (fstatfs(fd, &sfs) != 0) return -1;
    return (int64_t)sfs.f_type;
}

int narnia_take_read_lease(int fd) { return fcntl(fd, F_SETLEASE, F_RDLCK); }

int narnia_release_lease(int fd) { return fcntl(fd, F_SETLEASE, F_UNLCK); }

int narnia_lease_type(int fd) { return fcntl(fd, F_GETLEASE); }

int narnia_rename_no_replace(int directory, const char *from, const char *to) {
    return renameat2(directory, from, directory, to, RENAME_NOREPLACE);
}

int narnia_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
}

int narnia_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

int narnia_become_subreaper(void) { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

int narnia_set_parent_death_signal(int signal) { return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0); }

int narnia_memfd_create(const char *name) { return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING); }

int narnia_seal_memfd(int fd) {
    return fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_GROW | F_SEAL_WRITE);
}

int narnia_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }

int narnia_close_from(unsigned int first) { return (int)syscall(SYS_close_range, first, ~0U, 0); }

int narnia_o_tmpfile(void) { return O_TMPFILE; }

int narnia_o_noatime(void) { return O_NOATIME; }

int narnia_link_open_file(int fd, int directory, const char *name) {
    if (linkat(fd, "", directory, name, AT_EMPTY_PATH) == 0) return 0;
    // Before Linux 6.10, AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH: an ordinary user gets ENOENT
    // (EPERM under some security modules). open(2)'s own way for them: the file's /proc link.
    if (errno != ENOENT && errno != EPERM) return -1;
    char path[32];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return linkat(AT_FDCWD, path, directory, name, AT_SYMLINK_FOLLOW);
}

static unsigned int narnia_child_umask = 077;

void narnia_set_child_umask(unsigned int mask) { narnia_child_umask = mask & 0777; }

static struct rlimit narnia_child_descriptor_limit;
static int narnia_descriptor_limit_raised = 0;

long narnia_raise_descriptor_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    narnia_child_descriptor_limit = limit;
    rlim_t wanted = limit.rlim_max == RLIM_INFINITY || limit.rlim_max > (1 << 20) ? (1 << 20) : limit.rlim_max;
    if (wanted <= limit.rlim_cur) return (long)limit.rlim_cur;
    limit.rlim_cur = wanted;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
    narnia_descriptor_limit_raised = 1;
    return (long)wanted;
}

int narnia_fork_exec(const char *path, char *const argv[], char *const envp[],
                       const int *sources, const int *targets, int count, unsigned int first_free,
                       int group, int tty, int take_terminal, int private_files) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    // The child of a multithreaded process: no allocation, no locks from here on.
    setpgid(0, group);
    if (take_terminal) tcsetpgrp(tty, getpgrp());
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(127);
    // Each source first to a staging number, then to its place, so that mapping one onto
    // another's number cannot clobber it.
    for (int i = 0; i < count; i++) if (dup2(sources[i], 200 + i) < 0) _exit(127);
    for (int i = 0; i < count; i++) if (dup2(200 + i, targets[i]) < 0) _exit(127);
    syscall(SYS_close_range, first_free, ~0U, 0);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    umask(private_files ? 077 : narnia_child_umask);
    if (narnia_descriptor_limit_raised) setrlimit(RLIMIT_NOFILE, &narnia_child_descriptor_limit);
    execve(path, argv, envp);
    _exit(127);
}

static char narnia_alternate_stack[1 << 16];

static void narnia_fatal(int signal) {
    static const char message[] = "narnia: internal error: stopped by a fatal signal; nothing of its memory is printed\n";
    (void)signal;
    ssize_t ignored = write(2, message, sizeof message - 1);
    (void)ignored;
    _exit(70);
}

int narnia_install_fatal_signal_handlers(void) {
    stack_t stack = { .ss_sp = narnia_alternate_stack, .ss_size = sizeof narnia_alternate_stack, .ss_flags = 0 };
    if (sigaltstack(&stack, NULL) != 0) return -1;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = narnia_fatal;
    action.sa_flags = SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    const int signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT };
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
    }
    return 0;
}

FILE *narnia_standard_input(void) { return stdin; }
FILE *narnia_standard_output(void) { return stdout; }
FILE *narnia_standard_error(void) { return stderr; }
