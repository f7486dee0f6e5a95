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
    /* el_line gives the line in the locale's multibyte encoding, cursor as a byte offset. */
    const LineInfo *li = el_line(el);
    size_t len = (size_t)(li->lastchar - li->buffer);
    int cursor = (int)(li->cursor - li->buffer);
    char *copy = malloc(len + 1);
    if (!copy) return CC_ERROR;
    memcpy(copy, li->buffer, len);
    copy[len] = '\0';
    int r = n->complete(n->client, copy, cursor);
    free(copy);
    switch (r) {
    case NARNIA_EL_COMPLETE_LISTED: return CC_REDISPLAY;
    case NARNIA_EL_COMPLETE_EDITED: return CC_REFRESH;
    default: return CC_ERROR;
    }
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
    el_set(n->el, EL_ADDFN, "narnia-complete", "Complete a command, a path or a setting", complete_trampoline);
    el_set(n->el, EL_BIND, "^I", "narnia-complete", NULL);
    /* C1 controls (U+0080-U+009F) are unbound in libedit's maps: pasted, they were dropped with
     * a bell and the rest of the line ran, naming another file (review BM-5). Inserted, they
     * show as libedit shows any character that cannot be printed (never raw), and the line is
     * the one pasted. */
    for (int c = 0x80; c <= 0x9f; c++) {
        char key[3] = { (char)(0xc0 | (c >> 6)), (char)(0x80 | (c & 0x3f)), 0 };
        el_set(n->el, EL_BIND, key, "ed-insert", NULL);
    }
    /* ~/.editrc (or $EDITRC) last, so that a user's bindings win, as in every libedit program. */
    el_source(n->el, NULL);
    return n;
}

void narnia_el_close(narnia_el *n) {
    if (!n) return;
    if (n->el) el_end(n->el);
    if (n->hist) history_end(n->hist);
    free(n);
}

const char *narnia_el_gets(narnia_el *n, int *count) {
    *count = 0;
    /* Put the terminal in libedit's editing mode before the prompt is drawn. el_gets would do
     * it only at its first read, after drawing the prompt (and not at all on the first call,
     * when libedit believes the terminal is already set up), so keys typed as soon as the
     * prompt shows were echoed twice: by the terminal, then by libedit. */
    el_set(n->el, EL_PREP_TERM, 0);
    el_set(n->el, EL_PREP_TERM, 1);
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
    int cols = 0;
    el_resize(n->el);
    if (el_get(n->el, EL_GETTC, "co", &cols) != 0 || cols <= 0) cols = 80;
    return cols;
}

int narnia_el_lines(narnia_el *n) {
    int lines = 0;
    if (el_get(n->el, EL_GETTC, "li", &lines) != 0 || lines <= 0) lines = 24;
    return lines;
}
