/* The only place Narnia calls libedit's variadic el_set/el_get/history functions,
 * which Swift cannot call directly. Every symbol is prefixed narnia_el_. */
#ifndef NARNIA_EDITLINE_H
#define NARNIA_EDITLINE_H

#include <stdio.h>
#include <wchar.h>

typedef struct narnia_el narnia_el;

/* Prompt provider: returns a NUL-terminated prompt; bytes between two `\1` are terminal
 * escapes that take no room (EL_PROMPT_ESC). */
typedef const char *(*narnia_el_prompt_fn)(void *client);
/* Completion provider: called on Tab with the line buffer (UTF-8) and the cursor's byte
 * offset. Returns 1 when it changed the line or listed candidates, 0 to ring the bell. */
typedef int (*narnia_el_complete_fn)(void *client, const char *line, int cursor_byte);

/* el_init on the given streams, emacs bindings, ~/.editrc, Tab bound to the completer,
 * an in-memory history of `history_size` entries. NULL when libedit cannot start. */
narnia_el *narnia_el_open(const char *program, FILE *in, FILE *out, FILE *err,
                          void *client, narnia_el_prompt_fn prompt, narnia_el_complete_fn complete,
                          int history_size);
void narnia_el_close(narnia_el *el);

/* Reads one line (el_gets). Returns NULL on EOF (Ctrl-D on an empty line) and sets *count to
 * -1 on a read error or interruption; the returned buffer belongs to libedit. */
const char *narnia_el_gets(narnia_el *el, int *count);

/* Adds a line to the in-memory history (H_ENTER). History is never written to disk. */
void narnia_el_history_add(narnia_el *el, const char *line);

/* Replaces the text between the start of the current word and the cursor: deletes
 * `delete_bytes` bytes before the cursor, then inserts `text`. */
int narnia_el_replace_before_cursor(narnia_el *el, int delete_chars, const char *text);

/* Re-reads the terminal size (EL_RESIZE) and returns the width in columns. */
int narnia_el_columns(narnia_el *el);

/* Asks libedit to redisplay the prompt and line after the caller printed candidates. */
void narnia_el_redisplay(narnia_el *el);

/* Clears the current line (after Ctrl-C at the prompt). */
void narnia_el_reset_line(narnia_el *el);

#endif
