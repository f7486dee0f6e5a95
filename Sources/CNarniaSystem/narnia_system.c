#define _GNU_SOURCE
#include "narnia_system.h"
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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
#include <dirent.h>

int narnia_flock(int fd, int operation) { return flock(fd, operation); }

int narnia_syncfs(int fd) { return syncfs(fd); }

int64_t narnia_file_system_type(int fd) {
    struct statfs sfs;
    if (fstatfs(fd, &sfs) != 0) return -1;
    return (int64_t)sfs.f_type;
}

int64_t narnia_file_system_device_major(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0) return -1;
    return (int64_t)major(st.st_dev);
}

int narnia_take_read_lease(int fd) { return fcntl(fd, F_SETLEASE, F_RDLCK); }

int narnia_take_write_lease(int fd) { return fcntl(fd, F_SETLEASE, F_WRLCK); }

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

int narnia_set_direct(int fd, int on) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, on ? (flags | O_DIRECT) : (flags & ~O_DIRECT));
}

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

/* Moves descriptor sources[i] to targets[i] for each i: each is first copied above every
   number involved (F_DUPFD), so that placing one cannot clobber another still to be placed
   (fixed staging numbers could be a source's own: review AU). The copies lie above every
   target, where the caller's close_range takes them. Returns 0, or -1. */
static int narnia_map_descriptors(const int *sources, const int *targets, int count) {
    enum { most = 64 };
    int staged[most];
    if (count > most) return -1;
    int above = 2;
    for (int i = 0; i < count; i++) {
        if (sources[i] > above) above = sources[i];
        if (targets[i] > above) above = targets[i];
    }
    for (int i = 0; i < count; i++) if ((staged[i] = fcntl(sources[i], F_DUPFD, above + 1)) < 0) return -1;
    for (int i = 0; i < count; i++) if (dup2(staged[i], targets[i]) < 0) return -1;
    return 0;
}

/* Default handling of every signal and an empty mask, as a new program expects. */
static void narnia_reset_signals(void) {
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

/* The user's umask (077 with `private_files`) and the descriptor limit narnia started with. */
static void narnia_restore_limits(int private_files) {
    umask(private_files ? 077 : narnia_child_umask);
    if (narnia_descriptor_limit_raised) setrlimit(RLIMIT_NOFILE, &narnia_child_descriptor_limit);
}

/* The child's part once it is in its group: descriptors mapped and the rest closed, signals,
   umask and limit as a new program expects, then execve. Only async-signal-safe calls: this
   runs in the child of a multithreaded process. */
static void narnia_exec_child(const char *path, char *const argv[], char *const envp[],
                              const int *sources, const int *targets, int count, unsigned int first_free,
                              int private_files) {
    if (narnia_map_descriptors(sources, targets, count) != 0) _exit(127);
    syscall(SYS_close_range, first_free, ~0U, 0);
    narnia_reset_signals();
    narnia_restore_limits(private_files);
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

/* The decimal digits of a non-negative number into `out` (at least 12 bytes), as a C string. */
static void narnia_format_number(int number, char *out) {
    char digits[12];
    int n = 0;
    do { digits[n++] = (char)('0' + number % 10); number /= 10; } while (number > 0 && n < 11);
    for (int i = 0; i < n; i++) out[i] = digits[n - 1 - i];
    out[n] = 0;
}

/* The number a C string of decimal digits gives, or -1. */
static int narnia_parse_number(const char *text) {
    int number = 0;
    if (!*text) return -1;
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9' || number > 100000000) return -1;
        number = number * 10 + (*c - '0');
    }
    return number;
}

int narnia_fork_exec_guarded(const char *path, char *const argv[], char *const envp[],
                             const int *sources, const int *targets, int count, unsigned int first_free,
                             int group, int tty, int take_terminal, int private_files,
                             int lifeline, int status) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0) return pid;
    // Still a copy of narnia (so no allocation, no locks, no fork) until the execve below
    // leaves none of narnia's memory in it.
    setpgid(0, group);
    if (take_terminal) tcsetpgrp(tty, getpgrp());
    if (getppid() != parent) _exit(127);
    // The program's descriptors where it will have them, the lifeline and the status pipe
    // just above them, nothing else.
    enum { most = 62, most_arguments = 4096 };
    int all_sources[most + 2], all_targets[most + 2];
    if (count > most) _exit(127);
    for (int i = 0; i < count; i++) { all_sources[i] = sources[i]; all_targets[i] = targets[i]; }
    all_sources[count] = lifeline;
    all_targets[count] = (int)first_free;
    all_sources[count + 1] = status;
    all_targets[count + 1] = (int)first_free + 1;
    if (narnia_map_descriptors(all_sources, all_targets, count + 2) != 0) _exit(127);
    syscall(SYS_close_range, first_free + 2, ~0U, 0);
    narnia_restore_limits(private_files);
    signal(SIGCHLD, SIG_DFL);
    // NARNIA_GUARD_NAME FIRST_FREE PATH ARGUMENTS...: the guard starts the program itself.
    static char *guard_argv[most_arguments];
    static char first_free_text[12];
    narnia_format_number((int)first_free, first_free_text);
    int argc = 0;
    while (argv[argc]) argc++;
    if (argc + 3 < most_arguments) {
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        guard_argv[0] = (char *)NARNIA_GUARD_NAME;
        guard_argv[1] = first_free_text;
        guard_argv[2] = (char *)path;
        for (int i = 1; i <= argc; i++) guard_argv[2 + i] = argv[i];
        execve("/proc/self/exe", guard_argv, envp);
    }
    // narnia cannot run itself again (no /proc): the program runs unguarded, as
    // narnia_fork_exec runs it, and narnia waits for this process (no report on the pipe).
    close((int)first_free);
    close((int)first_free + 1);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) _exit(127);
    narnia_reset_signals();
    execve(path, argv, envp);
    _exit(127);
}

int narnia_can_run_itself_again(void) {
    struct stat exe;
    char exe_path[4096];
    if (stat("/proc/self/exe", &exe) != 0) return 0;
    ssize_t length = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    if (length <= 0) return 0;
    exe_path[length] = 0;
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) return 0;
    uintptr_t here = (uintptr_t)&narnia_can_run_itself_again;
    char line[4096 + 256];
    int same = 0;
    while (fgets(line, sizeof line, maps)) {
        unsigned long start, end, inode;
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %*s %*s %*s %lu %n", &start, &end, &inode, &path_at) != 3) continue;
        if (here < start || here >= end) continue;
        // The inode and the path, not the device: maps gives the file system's, stat on btrfs
        // a subvolume's own (review AV). Both paths are the kernel's of one file, " (deleted)"
        // and all.
        char *path = line + path_at;
        path[strcspn(path, "\n")] = 0;
        same = inode == (unsigned long)exe.st_ino && strcmp(path, exe_path) == 0;
        break;
    }
    fclose(maps);
    return same;
}

/* The parent pid /proc/PID/stat gives for `name` (a /proc entry), or -1: the field after the
   state, which follows the last ')' (a command name may hold spaces and parentheses). */
static pid_t narnia_parent_of(const char *name) {
    char path[64] = "/proc/";
    size_t length = strlen(name);
    if (length > 20) return -1;
    memcpy(path + 6, name, length);
    memcpy(path + 6 + length, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[1024];
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got <= 0) return -1;
    text[got] = 0;
    char *close_paren = strrchr(text, ')');
    if (close_paren == NULL) return -1;
    char state;
    int parent;
    if (sscanf(close_paren + 1, " %c %d", &state, &parent) != 2) return -1;
    return (pid_t)parent;
}

/* Reads this process's children into `pids` (at most `capacity`) and returns their number:
   every process whose /proc/PID/stat names it as parent. A scan of /proc, not
   /proc/self/task/TID/children, which only kernels built with CONFIG_PROC_CHILDREN have
   (review AV). */
static int narnia_read_children(pid_t self, pid_t *pids, int capacity) {
    DIR *proc = opendir("/proc");
    if (proc == NULL) return -1;
    int found = 0;
    struct dirent *entry;
    while (found < capacity && (entry = readdir(proc)) != NULL) {
        if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
        if (narnia_parent_of(entry->d_name) != self) continue;
        pids[found++] = (pid_t)narnia_parse_number(entry->d_name);
    }
    closedir(proc);
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

/* Once narnia died (by SIGKILL, which it cannot act on) with a viewer on the terminal: leaves
   the viewer's alternate screen, and the page of plaintext on it, sets colours, cursor and
   keypad back (as `Session.leaveViewerScreen`), and the terminal modes the guard found when
   it started, narnia's (review CT-3: less's page stayed under the user's next prompt, with
   echo off). Through /dev/tty, the guard's own terminal still; SIGTTOU, blocked here, does
   not stop a guard left in the background. */
static void narnia_restore_terminal(const struct termios *saved) {
    int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (tty < 0) return;
    static const char leave[] = "\033[0m\033[?1049l\033[?25h\033[?1l\033>";
    ssize_t ignored = write(tty, leave, sizeof leave - 1);
    (void)ignored;
    tcsetattr(tty, TCSANOW, saved);
    close(tty);
}

/* Sends narnia one report (`NARNIA_GUARD_STARTED`…): two ints, less than PIPE_BUF, so whole. */
static void narnia_guard_report(int pipe, int kind, int value) {
    int record[2] = { kind, value };
    ssize_t ignored = write(pipe, record, sizeof record);
    (void)ignored;
}

void narnia_guard_if_asked(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[0], NARNIA_GUARD_NAME) != 0) return;
    int first_free = narnia_parse_number(argv[1]);
    if (first_free < 3) return;
    int lifeline = first_free, reports = first_free + 1;
    if (fcntl(lifeline, F_SETFD, FD_CLOEXEC) < 0 || fcntl(reports, F_SETFD, FD_CLOEXEC) < 0) return;
    // A fresh process of one thread, so fork is safe here. Signals stay blocked, as narnia
    // left them: the terminal's keys are the program's.
    // The terminal's modes are kept, to put back should narnia die while the program has it:
    // taken before the program starts, which may change them at once (when the fork went
    // first, less's raw mode was once saved here, and "restored" after narnia's SIGKILL).
    struct termios terminal_modes;
    int had_terminal = 0;
    for (int fd = 0; fd < 3 && !had_terminal; fd++) had_terminal = isatty(fd) && tcgetattr(fd, &terminal_modes) == 0;
    pid_t guard = getpid();
    pid_t program = fork();
    if (program == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != guard) _exit(127);
        narnia_reset_signals();
        execve(argv[2], argv + 2, environ);
        _exit(127);
    }
    if (program < 0) { narnia_guard_report(reports, NARNIA_GUARD_ENDED, 127 << 8); _exit(127); }
    narnia_guard_report(reports, NARNIA_GUARD_STARTED, program);
    // Hold nothing of the program's: its standard streams, its terminal, the content.
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3; fd++) if (fd != null) dup2(null, fd);
    if (null > 2) close(null);
    if (first_free > 3) syscall(SYS_close_range, 3, first_free - 1, 0);
    sigset_t children;
    sigemptyset(&children);
    sigaddset(&children, SIGCHLD);
    sigprocmask(SIG_BLOCK, &children, NULL);
    int events = signalfd(-1, &children, SFD_CLOEXEC);
    if (events < 0) { narnia_kill_descendants(); _exit(70); }
    while (1) {
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
            if (pid != program) continue;
            // Stopped (Ctrl-Z) is said, not undone: narnia continues it once narnia runs, as
            // it did its own children (review AU: continued here, it ran behind the user's
            // shell while narnia was stopped).
            if (WIFSTOPPED(status)) { narnia_guard_report(reports, NARNIA_GUARD_STOPPED, status); continue; }
            narnia_guard_report(reports, NARNIA_GUARD_ENDED, status);
            close(reports);
        }
        if (pid < 0 && errno == ECHILD) _exit(0);
        struct pollfd watched[2] = { { events, POLLIN, 0 }, { lifeline, POLLIN, 0 } };
        if (poll(watched, 2, -1) < 0) continue;
        if (watched[1].revents) {
            // narnia is gone (its end of the lifeline closed with it): nothing it started stays.
            narnia_kill_descendants();
            if (had_terminal) narnia_restore_terminal(&terminal_modes);
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
