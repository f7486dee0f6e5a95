/* The only place Narnia calls libedit's variadic el_set/el_get/history functions,
 * which Swift cannot call directly. Every symbol is prefixed narnia_el_. */
#ifndef NARNIA_EDITLINE_H
#define NARNIA_EDITLINE_H

#include <stdio.h>

typedef struct narnia_el narnia_el;

/* Prompt provider: returns a NUL-terminated prompt; bytes between two `\1` are terminal
 * escapes that take no room (EL_PROMPT_ESC). */
typedef const char *(*narnia_el_prompt_fn)(void *client);

/* What the completion provider did, so that the shim tells libedit what to redraw. */
enum {
    NARNIA_EL_COMPLETE_NOTHING = 0, /* no match: ring the bell (CC_ERROR) */
    NARNIA_EL_COMPLETE_EDITED = 1,  /* the line changed: redraw it (CC_REFRESH) */
    NARNIA_EL_COMPLETE_LISTED = 2,  /* text was printed below the line: redraw the prompt and
                                       the line on a fresh line (CC_REDISPLAY) */
};

/* Completion provider: called on Tab with a copy of the line (UTF-8) and the cursor's byte
 * offset in it. Returns one of NARNIA_EL_COMPLETE_*. */
typedef int (*narnia_el_complete_fn)(void *client, const char *line, int cursor_byte);

/* el_init on the given streams, emacs bindings, EL_SIGNAL (libedit restores the terminal
 * around signals and follows window resizes), Tab bound to the completer, an in-memory history
 * of `history_size` entries (never saved), then ~/.editrc (or $EDITRC) through el_source.
 * NULL when libedit cannot start. */
narnia_el *narnia_el_open(const char *program, FILE *in, FILE *out, FILE *err,
                          void *client, narnia_el_prompt_fn prompt, narnia_el_complete_fn complete,
                          int history_size);
void narnia_el_close(narnia_el *el);

/* Reads one line (el_gets). Returns NULL at the end of input (Ctrl-D on an empty line, or the
 * terminal gone) with *count 0, or NULL with *count -1 when a read failed or a signal
 * interrupted it; the returned buffer belongs to libedit. */
const char *narnia_el_gets(narnia_el *el, int *count);

/* Adds a line to the in-memory history (H_ENTER). History is never written to disk. */
void narnia_el_history_add(narnia_el *el, const char *line);

/* Deletes `delete_chars` characters (Unicode scalars, libedit's wchar_t in a UTF-8 locale)
 * just before the cursor, then inserts `text` (UTF-8) at the cursor. 0 on success. */
int narnia_el_replace_before_cursor(narnia_el *el, int delete_chars, const char *text);

/* Re-reads the terminal size (el_resize) and returns the width in columns (80 if unknown). */
int narnia_el_columns(narnia_el *el);

/* The terminal height in lines, as last read (24 if unknown). */
int narnia_el_lines(narnia_el *el);


#endif
