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
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

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

/* The child's part once it is where it belongs: descriptors mapped and the rest closed,
   signals and mask as a new program expects, the user's umask and descriptor limit, then
   execve. Only async-signal-safe calls: this runs in the child of a multithreaded process. */
static void narnia_exec_child(const char *path, char *const argv[], char *const envp[],
                              const int *sources, const int *targets, int count, unsigned int first_free,
                              int private_files) {
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
    narnia_exec_child(path, argv, envp, sources, targets, count, first_free, private_files);
    return -1;
}

/* The decimal digits of a pid into `out` (at least 12 bytes), as a C string. */
static void narnia_format_pid(pid_t pid, char *out) {
    char digits[12];
    int n = 0;
    do { digits[n++] = (char)('0' + pid % 10); pid /= 10; } while (pid > 0 && n < 11);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    out[n] = 0;
}

int narnia_fork_exec_guarded(const char *path, char *const argv[], char *const envp[],
                             const int *sources, const int *targets, int count, unsigned int first_free,
                             int group, int tty, int take_terminal, int private_files,
                             int lifeline, int status) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    // The guard, still a copy of narnia (so no allocation, no locks), until its execve below
    // leaves none of narnia's memory in it.
    setpgid(0, group);
    if (take_terminal) tcsetpgrp(tty, getpgrp());
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    if (getppid() != parent) _exit(127);
    pid_t guard = getpid();
    pid_t viewer = fork();
    if (viewer == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != guard) _exit(127);
        narnia_exec_child(path, argv, envp, sources, targets, count, first_free, private_files);
    }
    if (viewer < 0) _exit(127);
    // Standard input, output and error on /dev/null (a pipe a caller reads to its end must
    // not stay open for the guard), the lifeline at 3, the status pipe at 4, nothing else.
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || dup2(lifeline, 200) < 0 || dup2(status, 201) < 0 || dup2(null, 202) < 0) _exit(127);
    for (int fd = 0; fd < 3; fd++) if (dup2(202, fd) < 0) _exit(127);
    if (dup2(200, 3) < 0 || dup2(201, 4) < 0) _exit(127);
    syscall(SYS_close_range, 5, ~0U, 0);
    signal(SIGCHLD, SIG_DFL);
    static char viewer_pid[12];
    narnia_format_pid(viewer, viewer_pid);
    char *const guard_argv[] = { (char *)NARNIA_GUARD_NAME, viewer_pid, NULL };
    char *const no_environment[] = { NULL };
    execve("/proc/self/exe", guard_argv, no_environment);
    // No way to become the guard: the viewer goes too, and narnia hears exit status 127.
    kill(viewer, SIGKILL);
    _exit(127);
}

/* Reads this single-threaded process's children from /proc/self/task/PID/children into
   `pids` (at most `capacity`); returns their number, or -1 when the file cannot be read. */
static int narnia_read_children(pid_t self, pid_t *pids, int capacity) {
    char path[48] = "/proc/self/task/";
    char digits[12];
    narnia_format_pid(self, digits);
    size_t at = strlen(path);
    for (size_t i = 0; digits[i]; i++) path[at++] = digits[i];
    memcpy(path + at, "/children", 10);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    static char text[8192];
    ssize_t length = read(fd, text, sizeof text - 1);
    close(fd);
    if (length < 0) return -1;
    int found = 0;
    pid_t current = 0;
    int inNumber = 0;
    for (ssize_t i = 0; i <= length; i++) {
        char c = i < length ? text[i] : ' ';
        if (c >= '0' && c <= '9') { current = current * 10 + (c - '0'); inNumber = 1; continue; }
        if (inNumber && found < capacity) pids[found++] = current;
        current = 0;
        inNumber = 0;
    }
    return found;
}

/* Kills everything below this process: its children, then those of theirs that come to it
   as orphans (it is their reaper), until none is left. */
static void narnia_kill_descendants(void) {
    pid_t self = getpid();
    static pid_t children[1024];
    while (1) {
        int count = narnia_read_children(self, children, 1024);
        for (int i = 0; i < count; i++) kill(children[i], SIGKILL);
        int status;
        if (waitpid(-1, &status, 0) < 0 && errno == ECHILD) return;
    }
}

void narnia_guard_if_asked(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[0], NARNIA_GUARD_NAME) != 0) return;
    if (fcntl(3, F_GETFD) < 0 || fcntl(4, F_GETFD) < 0) return;
    pid_t viewer = 0;
    for (const char *c = argv[1]; *c; c++) {
        if (*c < '0' || *c > '9') return;
        viewer = viewer * 10 + (*c - '0');
    }
    // Signals stay blocked, as narnia left them: the terminal's keys are the viewer's.
    sigset_t children;
    sigemptyset(&children);
    sigaddset(&children, SIGCHLD);
    sigprocmask(SIG_BLOCK, &children, NULL);
    int events = signalfd(-1, &children, SFD_CLOEXEC);
    if (events < 0) { narnia_kill_descendants(); _exit(70); }
    int viewer_status = 4;
    while (1) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
            if (pid != viewer) continue;
            // Stopped by Ctrl-Z: continued, as narnia has no job control.
            if (WIFSTOPPED(status)) { kill(viewer, SIGCONT); continue; }
            ssize_t ignored = write(viewer_status, &status, sizeof status);
            (void)ignored;
            close(viewer_status);
            viewer_status = -1;
        }
        if (pid < 0 && errno == ECHILD) _exit(0);
        struct pollfd watched[2] = { { events, POLLIN, 0 }, { 3, POLLIN, 0 } };
        if (poll(watched, 2, -1) < 0) continue;
        if (watched[1].revents) {
            // narnia is gone (its end of the lifeline closed with it): nothing it started stays.
            narnia_kill_descendants();
            _exit(0);
        }
        if (watched[0].revents & POLLIN) {
            struct signalfd_siginfo info;
            ssize_t ignored = read(events, &info, sizeof info);
            (void)ignored;
        }
    }
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
