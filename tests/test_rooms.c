/*
 * test_rooms.c: the link lines are the architecture. A room is a folder built into one archive
 * (the Makefile's ROOMS); the table below says which rooms each program may use. The Makefile's
 * link line of a program names only rooms of its row, each of them gives the program
 * something, and `nm` finds in the program no symbol defined in a room outside its row.
 *
 * The archives are the build's own (the folder bin/.link-command names: build/ or build/mpi/).
 * Without nm the symbol check skips, saying so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/suites.h"

/* What each program may use, top down as its link line lists them. Widening a row is a
 * decision about the architecture, not a fix for a link error. */
static const struct {
    const char *program;
    const char *rooms;
} allowed[] = {
    {"train", "train nmt/pictures nmt/metrics nmt nmt/formats data model base"},
    {"reference-train", "train reference nmt/pictures nmt/metrics nmt nmt/formats data model base"},
    {"translate", "tools nmt/pictures nmt nmt/formats data model base"},
    {"align", "tools nmt/pictures nmt nmt/formats data model base"},
    {"evaluate", "tools nmt/metrics nmt nmt/formats data model base"},
    {"quantize", "tools nmt/formats data model base"},
    {"gradref", "tools train reference nmt/metrics nmt nmt/formats data model base"},
    {"gradcheck", "tools reference model base"},
    {"plot", "tools train nmt/pictures base"},
    {"attend", "notes tools base"},
    {"gencorpus", "base"},
};
enum { PROGRAM_COUNT = sizeof allowed / sizeof allowed[0] };

/* Whether the space-separated list holds word. */
static int list_has(const char *list, const char *word) {
    size_t len = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == '\0')) return 1;
    return 0;
}

/* The next space-separated word of *p into out (advancing *p); 0 at the end. */
static int next_word(const char **p, char *out, size_t size) {
    *p += strspn(*p, " ");
    size_t len = strcspn(*p, " ");
    if (len == 0) return 0;
    snprintf(out, size, "%.*s", (int)len, *p);
    *p += len;
    return 1;
}

/* The rest of the Makefile's line that starts with `start` (continuation lines joined), up to
 * `stop` when given, into out; 0 when there is no such line. */
static int makefile_line(const char *makefile, const char *start, char stop, char *out,
                         size_t size) {
    const char *at = strstr(makefile, start);
    if (!at) return 0;
    size_t used = 0;
    for (const char *p = at + strlen(start); *p && *p != '\n' && *p != stop; p++) {
        if (*p == '\\' && p[1] == '\n') p++;
        if (used + 1 < size) out[used++] = (*p == '\t' || *p == '\n') ? ' ' : *p;
    }
    out[used] = '\0';
    return 1;
}

/* The rooms of bin/NAME's link line, "bin/NAME: ...$(call room_lib,ROOMS)". */
static int link_line_rooms(const char *makefile, const char *program, char *out, size_t size) {
    char start[96], line[512];
    snprintf(start, sizeof start, "\nbin/%s:", program);
    if (!makefile_line(makefile, start, '\0', line, sizeof line)) return 0;
    const char *call = strstr(line, "$(call room_lib,");
    if (!call) return 0;
    snprintf(out, size, "%.*s", (int)strcspn(call + 16, ")"), call + 16);
    return 1;
}

static char *read_makefile(void) {
    size_t len;
    char *text = (char *)slurp_file("../Makefile", &len);
    ck_assert_msg(text != NULL, "cannot read ../Makefile");
    return text;
}

START_TEST(rooms_link_lines_within_the_table) {
    char *makefile = read_makefile();
    char programs[1024], rooms[512], report[4096] = "";
    ck_assert_msg(makefile_line(makefile, "\nPROGRAMS =", '\0', programs, sizeof programs),
                  "no PROGRAMS in the Makefile");
    ck_assert_msg(makefile_line(makefile, "\nROOMS    =", '\0', rooms, sizeof rooms),
                  "no ROOMS in the Makefile");
    char name[64];
    for (const char *p = programs; next_word(&p, name, sizeof name);) {
        int row = -1;
        for (int i = 0; i < PROGRAM_COUNT; i++)
            if (strcmp(allowed[i].program, name) == 0) row = i;
        size_t used = strlen(report);
        char line[256], room[64];
        if (row < 0)
            snprintf(report + used, sizeof report - used, "%s has no row in test_rooms.c's table\n",
                     name);
        else if (!link_line_rooms(makefile, name, line, sizeof line))
            snprintf(report + used, sizeof report - used,
                     "bin/%s has no link line \"bin/%s: $(call room_lib,...)\"\n", name, name);
        else
            for (const char *q = line; next_word(&q, room, sizeof room);) {
                used = strlen(report);
                if (!list_has(rooms, room))
                    snprintf(report + used, sizeof report - used,
                             "bin/%s's link line names %s, which is not a room of ROOMS\n", name,
                             room);
                else if (!list_has(allowed[row].rooms, room))
                    snprintf(report + used, sizeof report - used,
                             "bin/%s's link line names %s, which %s may not use (its row: %s)\n",
                             name, room, name, allowed[row].rooms);
            }
    }
    free(makefile);
    ck_assert_msg(report[0] == '\0', "%s", report);
}
END_TEST

/* ---- nm ---- */

typedef struct {
    char **names; /* sorted */
    size_t count;
} Symbols;

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void symbols_free(Symbols *s) {
    for (size_t i = 0; i < s->count; i++) free(s->names[i]);
    free(s->names);
}

/* The global symbols path defines (nm's upper-case types: code, data, read-only data, bss):
 * a global name is one definition in a program, so the program holds it only from the room
 * that defines it. Local names (static functions) repeat across files and say nothing. */
static Symbols defined_symbols(const char *path) {
    char command[600], line[1024];
    snprintf(command, sizeof command, "nm --defined-only -g '%s' 2>/dev/null", path);
    FILE *nm = popen(command, "r");
    ck_assert_msg(nm != NULL, "cannot run nm on %s", path);
    Symbols s = {0};
    size_t capacity = 0;
    while (fgets(line, sizeof line, nm)) {
        char address[64], type[8], name[900];
        if (sscanf(line, "%63s %7s %899s", address, type, name) != 3) continue;
        if (!strchr("TDRB", type[0]) || type[1]) continue;
        if (s.count == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            s.names = realloc(s.names, capacity * sizeof *s.names);
            ck_assert(s.names != NULL);
        }
        s.names[s.count] = strdup(name);
        ck_assert(s.names[s.count] != NULL);
        s.count++;
    }
    int status = pclose(nm);
    ck_assert_msg(status == 0 && s.count > 0, "nm found no symbols in %s (status %d)", path,
                  status);
    qsort(s.names, s.count, sizeof *s.names, compare_names);
    return s;
}

/* How many of room's symbols the program holds; the first in *example. */
static size_t shared_symbols(const Symbols *room, const Symbols *program, const char **example) {
    size_t shared = 0;
    for (size_t i = 0; i < room->count; i++)
        if (bsearch(&room->names[i], program->names, program->count, sizeof *program->names,
                    compare_names)) {
            if (!shared) *example = room->names[i];
            shared++;
        }
    return shared;
}

/* The build folder the programs were linked from: bin/.link-command is "CC BUILD LDLIBS". */
static void build_folder(char *out, size_t size) {
    size_t len;
    char *stamp = (char *)slurp_file("../bin/.link-command", &len);
    ck_assert_msg(stamp != NULL, "cannot read ../bin/.link-command (make writes it)");
    char cc[256], folder[256];
    ck_assert_msg(sscanf(stamp, "%255s %255s", cc, folder) == 2, "bin/.link-command: %s", stamp);
    snprintf(out, size, "../%s", folder);
    free(stamp);
}

START_TEST(rooms_programs_hold_only_their_rooms) {
    if (system("command -v nm >/dev/null 2>&1") != 0) {
        test_skip("rooms_programs_hold_only_their_rooms", "nm (binutils) is not installed");
        return;
    }
    char *makefile = read_makefile(), rooms[512], folder[300], report[8192] = "";
    ck_assert_msg(makefile_line(makefile, "\nROOMS    =", '\0', rooms, sizeof rooms),
                  "no ROOMS in the Makefile");
    build_folder(folder, sizeof folder);

    enum { MAX_ROOMS = 32 };
    char room_names[MAX_ROOMS][64];
    Symbols room_symbols[MAX_ROOMS];
    int room_count = 0;
    for (const char *p = rooms;
         room_count < MAX_ROOMS && next_word(&p, room_names[room_count], sizeof room_names[0]);
         room_count++) {
        char archive[sizeof folder + sizeof room_names[0] + 8];
        snprintf(archive, sizeof archive, "%s/lib%.63s.a", folder, room_names[room_count]);
        size_t at = strlen(folder) + strlen("/lib");
        for (char *c = archive + at; (c = strchr(c, '/'));) *c = '-'; /* nmt/formats */
        room_symbols[room_count] = defined_symbols(archive);
    }

    for (int i = 0; i < PROGRAM_COUNT; i++) {
        char path[256], line[256] = "";
        snprintf(path, sizeof path, "../bin/%s", allowed[i].program);
        ck_assert_msg(access(path, X_OK) == 0, "%s was not built", path);
        link_line_rooms(makefile, allowed[i].program, line, sizeof line);
        Symbols program = defined_symbols(path);
        for (int r = 0; r < room_count; r++) {
            const char *example = NULL;
            size_t shared = shared_symbols(&room_symbols[r], &program, &example);
            size_t used = strlen(report);
            if (shared && !list_has(allowed[i].rooms, room_names[r]))
                snprintf(report + used, sizeof report - used,
                         "bin/%s holds %zu symbols of %s (%s among them), a room it may not "
                         "use\n",
                         allowed[i].program, shared, room_names[r], example);
            else if (!shared && list_has(line, room_names[r]))
                snprintf(report + used, sizeof report - used,
                         "bin/%s links %s but uses nothing of it: take it off its link line\n",
                         allowed[i].program, room_names[r]);
        }
        symbols_free(&program);
    }
    for (int r = 0; r < room_count; r++) symbols_free(&room_symbols[r]);
    free(makefile);
    ck_assert_msg(report[0] == '\0', "%s", report);
}
END_TEST

Suite *rooms_suite(void) {
    Suite *s = suite_create("rooms");
    TCase *tc = tcase_create("rooms");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, rooms_link_lines_within_the_table);
    tcase_add_test(tc, rooms_programs_hold_only_their_rooms);
    suite_add_tcase(s, tc);
    return s;
}
