/*
 * signals.c: the one table of signal names (see signals.h) the CLI and the sbatch option
 * reader share.
 */
#include "common/signals.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    int number;
} signals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ILL", SIGILL},
    {"TRAP", SIGTRAP}, {"ABRT", SIGABRT},     {"BUS", SIGBUS},   {"FPE", SIGFPE},
    {"KILL", SIGKILL}, {"USR1", SIGUSR1},     {"SEGV", SIGSEGV}, {"USR2", SIGUSR2},
    {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},     {"TERM", SIGTERM}, {"CHLD", SIGCHLD},
    {"CONT", SIGCONT}, {"STOP", SIGSTOP},     {"TSTP", SIGTSTP}, {"TTIN", SIGTTIN},
    {"TTOU", SIGTTOU}, {"URG", SIGURG},       {"XCPU", SIGXCPU}, {"XFSZ", SIGXFSZ},
    {"PROF", SIGPROF}, {"VTALRM", SIGVTALRM}, {"SYS", SIGSYS},   {"WINCH", SIGWINCH},
};

const char *gs_signal_name(int signo)
{
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        if (signals[i].number == signo)
            return signals[i].name;
    }
    return NULL;
}

int gs_signal_parse(const char *text, size_t len, int *ret)
{
    int n = 0;

    if (len > 0 && text[0] >= '0' && text[0] <= '9') {
        for (size_t i = 0; i < len; i++) {
            if (text[i] < '0' || text[i] > '9' || n > GS_SIGNAL_MAX)
                return -EINVAL;
            n = n * 10 + (text[i] - '0');
        }
        if (n < 1 || n > GS_SIGNAL_MAX)
            return -EINVAL;
        *ret = n;
        return 0;
    }
    if (len > 3 && strncasecmp(text, "SIG", 3) == 0) {
        text += 3;
        len -= 3;
    }
    for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++) {
        if (strlen(signals[i].name) == len && strncasecmp(text, signals[i].name, len) == 0) {
            *ret = signals[i].number;
            return 0;
        }
    }
    return -EINVAL;
}
