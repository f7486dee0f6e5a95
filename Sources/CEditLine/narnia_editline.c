#include "narnia_editline.h"

#include <histedit.h>
#include <stdlib.h>
#include <string.h>

struct narnia_el {
    EditLine *el;
    History *hist;
    HistEvent ev;
    void *client;
    narnia_el_prompt_fn prompt;
    narnia_el_complete_fn complete;
};

static char *prompt_trampoline(EditLine *el) {
    struct narnia_el *n = NULL;
    el_get(el, EL_CLIENTDATA, &n);
    return n && n->prompt ? (char *)n->prompt(n->client) : "";
}

static unsigned char complete_trampoline(EditLine *el, int ch) {
    (void)ch;
    struct narnia_el *n = NULL;
    el_get(el, EL_CLIENTDATA, &n);
    if (!n || !n->complete) return CC_ERROR;
    const LineInfo *li = el_line(el);
    size_t len = (size_t)(li->lastchar - li->buffer);
    char *copy = malloc(len + 1);
    if (!copy) return CC_ERROR;
    memcpy(copy, li->buffer, len);
    copy[len] = '\0';
    int cursor = (int)(li->cursor - li->buffer);
    int r = n->complete(n->client, copy, cursor);
    free(copy);
    if (r == 2) return CC_REDISPLAY;
    return r ? CC_REFRESH : CC_ERROR;
}

narnia_el *narnia_el_open(const char *program, FILE *in, FILE *out, FILE *err,
                          void *client, narnia_el_prompt_fn prompt, narnia_el_complete_fn complete,
                          int history_size) {
    struct narnia_el *n = calloc(1, sizeof *n);
    if (!n) return NULL;
    n->el = el_init(program, in, out, err);
    if (!n->el) { free(n); return NULL; }
    n->client = client;
    n->prompt = prompt;
    n->complete = complete;
    n->hist = history_init();
    if (n->hist) {
        history(n->hist, &n->ev, H_SETSIZE, history_size);
        history(n->hist, &n->ev, H_SETUNIQUE, 1);
        el_set(n->el, EL_HIST, history, n->hist);
    }
    el_set(n->el, EL_CLIENTDATA, n);
    el_set(n->el, EL_EDITOR, "emacs");
    el_set(n->el, EL_SIGNAL, 1);
    el_set(n->el, EL_PROMPT_ESC, prompt_trampoline, '\1');
    el_set(n->el, EL_ADDFN, "narnia-complete", "Complete a command or path", complete_trampoline);
    el_set(n->el, EL_BIND, "^I", "narnia-complete", NULL);
    el_source(n->el, NULL); /* ~/.editrc, as every libedit program does */
    return n;
}

void narnia_el_close(narnia_el *n) {
    if (!n) return;
    if (n->el) el_end(n->el);
    if (n->hist) history_end(n->hist);
    free(n);
}

const char *narnia_el_gets(narnia_el *n, int *count) {
    return el_gets(n->el, count);
}

void narnia_el_history_add(narnia_el *n, const char *line) {
    if (n->hist) history(n->hist, &n->ev, H_ENTER, line);
}

int narnia_el_replace_before_cursor(narnia_el *n, int delete_chars, const char *text) {
    if (delete_chars > 0) el_deletestr(n->el, delete_chars);
    if (text && *text) return el_insertstr(n->el, text);
    return 0;
}

int narnia_el_columns(narnia_el *n) {
    int cols = 80;
    el_resize(n->el);
    if (el_get(n->el, EL_GETTC, "co", &cols) != 0 || cols <= 0) cols = 80;
    return cols;
}

void narnia_el_redisplay(narnia_el *n) {
    (void)n;
}

void narnia_el_reset_line(narnia_el *n) {
    el_reset(n->el);
}
