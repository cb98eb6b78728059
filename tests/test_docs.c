/*
 * test_docs.c: the documentation holds no broken link and names no program that is not built.
 *
 * Every relative link of README.md and of the .md pages in docs/ must name a file that exists,
 * a #anchor a heading of the page it points into, and a heading cited in words (`FILE.md,
 * "Heading"`, in those pages and in the configs' comments) one that FILE.md has (GitHub's slugs:
 * lower case, spaces to
 * '-', other punctuation dropped, "-1", "-2" after repeats). Every bin/NAME the README names
 * must be a program of the Makefile's PROGRAMS that `make` built (make test builds them all
 * before it runs the suites), or a target of its own (bin/bench). Tests run from tests/, so
 * the repository is "..".
 *
 * Deliberately not checked: web addresses (no network in tests), links written inside code
 * (fenced blocks and `spans` are examples, not links), anchors into pages other than .md
 * (an HTML page's ids are its script's business).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/harness.h"
#include "tests/suites.h"

enum { REPORT_SIZE = 8192, SLUG_SIZE = 160, MAX_HEADINGS = 512 };

/* Appends one formatted line to a report of REPORT_SIZE bytes. */
static void report_add(char *report, const char *where, int line, const char *what,
                       const char *detail) {
    size_t used = strlen(report);
    if (used + 1 < REPORT_SIZE)
        snprintf(report + used, REPORT_SIZE - used, "%s:%d: %s %s\n", where, line, what, detail);
}

/* A file's text, NUL-terminated, or NULL when it cannot be read. free() the result. */
static char *read_text(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return NULL;
    size_t len;
    return (char *)slurp_file(path, &len);
}

/* A fence opens or closes a code block: ``` or ~~~ after at most three spaces. */
static int is_fence(const char *line) {
    int spaces = 0;
    while (line[spaces] == ' ' && spaces < 3) spaces++;
    return strncmp(line + spaces, "```", 3) == 0 || strncmp(line + spaces, "~~~", 3) == 0;
}

/* GitHub's anchor of a heading's text (after the #s): link syntax reduced to its text,
 * A-Z lowered, letters, digits, '_' and '-' kept (and every non-ASCII byte: GitHub keeps
 * accented letters; these pages put no symbol outside ASCII in a heading), spaces to '-',
 * everything else dropped. */
static void heading_slug(const char *text, size_t len, char *slug) {
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < SLUG_SIZE; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == ']' && i + 1 < len && text[i + 1] == '(') {
            while (i < len && text[i] != ')') i++; /* a link's target is not in its text */
            continue;
        }
        if (c >= 'A' && c <= 'Z')
            slug[n++] = (char)(c - 'A' + 'a');
        else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                 c >= 0x80)
            slug[n++] = (char)c;
        else if (c == ' ')
            slug[n++] = '-';
    }
    slug[n] = '\0';
}

/* When line (of len bytes, outside code) is a heading: its slug into slug, and 1. */
static int heading_of_line(const char *line, size_t len, char *slug) {
    size_t hashes = strspn(line, "#");
    if (hashes == 0 || hashes > 6 || line[hashes] != ' ') return 0;
    const char *heading = line + hashes + 1;
    size_t heading_len = len - hashes - 1;
    while (heading_len > 0 && (heading[heading_len - 1] == ' ' || heading[heading_len - 1] == '\r'))
        heading_len--;
    heading_slug(heading, heading_len, slug);
    return 1;
}

/* Whether anchor is the slug of one of the headings of markdown text; a heading whose slug
 * came before gets "-1", "-2", ... as on GitHub. With `prefix`, whether a heading's slug
 * starts with anchor (a heading cited by its words, without the date it ends with). */
static int has_heading(const char *text, const char *anchor, int prefix) {
    char(*bases)[SLUG_SIZE] = calloc(MAX_HEADINGS, sizeof *bases);
    ck_assert_ptr_nonnull(bases);
    int count = 0, in_code = 0, found = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
        size_t len = strcspn(line, "\n");
        if (is_fence(line)) in_code = !in_code;
        if (in_code || !heading_of_line(line, len, bases[count])) continue;
        char slug[SLUG_SIZE + 16];
        if (prefix && strncmp(bases[count], anchor, strlen(anchor)) == 0) {
            found = 1;
            break;
        }
        int repeats = 0;
        for (int k = 0; k < count; k++) repeats += strcmp(bases[k], bases[count]) == 0;
        if (repeats)
            snprintf(slug, sizeof slug, "%s-%d", bases[count], repeats);
        else
            snprintf(slug, sizeof slug, "%s", bases[count]);
        if (strcmp(slug, anchor) == 0) {
            found = 1;
            break;
        }
        if (count + 1 < MAX_HEADINGS) count++;
    }
    free(bases);
    return found;
}

/* One link target of page md_path (which has text md_text): appends what is wrong with it to
 * report and returns 1, or returns 0. */
static int check_target(const char *md_path, const char *md_text, int line_no, const char *target,
                        char *report) {
    if (strstr(target, "://") || strncmp(target, "mailto:", 7) == 0) return 0;
    char path[1024];
    const char *hash = strchr(target, '#');
    size_t path_len = hash ? (size_t)(hash - target) : strlen(target);
    const char *slash = strrchr(md_path, '/');
    int dir_len = slash ? (int)(slash - md_path + 1) : 0;
    snprintf(path, sizeof path, "%.*s%.*s", dir_len, md_path, (int)path_len, target);
    if (path_len > 0) {
        struct stat st;
        if (stat(path, &st) != 0) {
            report_add(report, md_path, line_no, target, "-> no such file");
            return 1;
        }
    }
    if (!hash || !hash[1]) return 0;
    int markdown = path_len == 0 || (path_len > 3 && strncmp(target + path_len - 3, ".md", 3) == 0);
    if (!markdown) return 0;
    char *text = path_len == 0 ? NULL : read_text(path);
    int found = has_heading(text ? text : md_text, hash + 1, 0);
    free(text);
    if (found) return 0;
    report_add(report, md_path, line_no, target, "-> no heading with that anchor");
    return 1;
}

/* The broken relative links of one markdown page, each reported as "page:line: target -> why";
 * returns how many. A page that cannot be read is one problem. */
static int check_links(const char *md_path, char *report) {
    char *text = read_text(md_path);
    if (!text) {
        report_add(report, md_path, 0, "", "cannot be read");
        return 1;
    }
    int broken = 0, in_block = 0, line_no = 0;
    for (const char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
        size_t len = strcspn(line, "\n");
        line_no++;
        if (is_fence(line)) {
            in_block = !in_block;
            continue;
        }
        if (in_block) continue;
        int in_span = 0;
        for (size_t i = 0; i + 1 < len; i++) {
            if (line[i] == '`') in_span = !in_span;
            if (in_span || line[i] != ']' || line[i + 1] != '(') continue;
            size_t start = i + 2, end = start;
            while (end < len && line[end] != ')' && line[end] != ' ') end++;
            char target[512];
            snprintf(target, sizeof target, "%.*s", (int)(end - start), line + start);
            broken += check_target(md_path, text, line_no, target, report);
            i = end;
        }
    }
    free(text);
    return broken;
}

/* Overwrites a markdown text's code (fenced blocks and `spans`) with spaces, line ends kept:
 * what code shows is an example, not a citation. */
static void blank_code(char *text) {
    int in_block = 0;
    for (char *line = text; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : "") {
        size_t len = strcspn(line, "\n");
        if (is_fence(line)) in_block = !in_block;
        int in_span = in_block;
        for (size_t i = 0; i < len; i++) {
            if (!in_block && line[i] == '`') in_span = !in_span;
            if (in_span || line[i] == '`') line[i] = ' ';
        }
    }
}

/* Every citation of a heading in path's text written `FILE.md, "Heading words"` (a config's
 * comments cite the docs this way; in a markdown page, outside code): FILE.md, found from the
 * repository root or beside path, must have a heading that starts with those words (compared
 * as GitHub anchors). Each one that does not is reported; returns how many. */
static int check_heading_citations(const char *path, const char *root, char *report) {
    char *text = read_text(path);
    if (!text) {
        report_add(report, path, 0, "", "cannot be read");
        return 1;
    }
    size_t path_len = strlen(path);
    if (path_len > 3 && strcmp(path + path_len - 3, ".md") == 0) blank_code(text);
    int problems = 0, line_no = 1;
    const char *counted = text;
    for (const char *at = strstr(text, ".md, \""); at; at = strstr(at + 1, ".md, \"")) {
        for (; counted < at; counted++) line_no += *counted == '\n';
        const char *name = at;
        while (name > text &&
               strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
                      "./-",
                      name[-1]))
            name--;
        const char *words = at + 6;
        size_t words_len = strcspn(words, "\"\n");
        char file[512], cited[600], slug[SLUG_SIZE];
        snprintf(file, sizeof file, "%.*s", (int)(at + 3 - name), name);
        snprintf(cited, sizeof cited, "%s, \"%.*s\"", file, (int)words_len, words);
        if (words[words_len] != '"') {
            report_add(report, path, line_no, cited, "-> the quoted heading is cut by a line end");
            problems++;
            continue;
        }
        heading_slug(words, words_len, slug);
        char candidate[1024];
        snprintf(candidate, sizeof candidate, "%s/%s", root, file);
        char *doc = read_text(candidate);
        if (!doc) {
            const char *slash = strrchr(path, '/');
            snprintf(candidate, sizeof candidate, "%.*s%s", slash ? (int)(slash - path + 1) : 0,
                     path, file);
            doc = read_text(candidate);
        }
        if (!doc) {
            report_add(report, path, line_no, cited, "-> no such file");
            problems++;
        } else if (!has_heading(doc, slug, 1)) {
            report_add(report, path, line_no, cited, "-> no heading with those words");
            problems++;
        }
        free(doc);
    }
    free(text);
    return problems;
}

/* The Makefile's PROGRAMS (continuation lines included) as " a b c ", for " name " lookups. */
static void makefile_programs(const char *makefile, char *out, size_t size) {
    snprintf(out, size, " ");
    const char *at = strstr(makefile, "\nPROGRAMS");
    const char *equals = at ? strchr(at, '=') : NULL;
    for (const char *p = equals ? equals + 1 : ""; *p; p++) {
        if (*p == '\\' && p[1] == '\n')
            p++;
        else if (*p == '\n')
            break;
        size_t used = strlen(out);
        if (used + 2 < size)
            out[used] = (*p == '\t' || *p == '\n') ? ' ' : *p, out[used + 1] = '\0';
    }
    size_t used = strlen(out);
    if (used + 2 < size) strcat(out, " ");
}

/* Every bin/NAME of readme_path (code included: that is where commands are) that is neither a
 * built program of PROGRAMS (bin_dir/NAME executable) nor a target of its own ("bin/NAME:" in
 * the Makefile), each reported; returns how many. bin/ as a folder, and .../bin/ inside another
 * path, are not names. */
static int check_programs(const char *readme_path, const char *makefile_path, const char *bin_dir,
                          char *report) {
    char *readme = read_text(readme_path), *makefile = read_text(makefile_path);
    int problems = 0;
    if (!readme || !makefile) {
        report_add(report, readme ? makefile_path : readme_path, 0, "", "cannot be read");
        free(readme), free(makefile);
        return 1;
    }
    char programs[2048];
    makefile_programs(makefile, programs, sizeof programs);
    int line_no = 1;
    for (const char *p = readme; *p; p++) {
        if (*p == '\n') line_no++;
        if (strncmp(p, "bin/", 4) != 0) continue;
        if (p > readme &&
            strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-", p[-1]))
            continue;
        size_t len = strspn(p + 4, "abcdefghijklmnopqrstuvwxyz0123456789_-");
        if (len == 0 || len > 64) continue;
        char name[80], listed[96], rule[96], built[1024];
        snprintf(name, sizeof name, "%.*s", (int)len, p + 4);
        snprintf(listed, sizeof listed, " %s ", name);
        snprintf(rule, sizeof rule, "\nbin/%s:", name);
        snprintf(built, sizeof built, "%s/%s", bin_dir, name);
        if (strstr(programs, listed)) {
            if (access(built, X_OK) == 0) continue;
            report_add(report, readme_path, line_no, name, "is in PROGRAMS but was not built");
        } else if (strstr(makefile, rule)) {
            continue;
        } else {
            report_add(report, readme_path, line_no, name, "is not a program make builds");
        }
        problems++;
    }
    free(readme), free(makefile);
    return problems;
}

/* ---- the repository's own pages ---- */

START_TEST(docs_links_resolve) {
    char report[REPORT_SIZE] = "";
    int broken = check_links("../README.md", report), pages = 0;
    DIR *dir = opendir("../docs");
    ck_assert_msg(dir != NULL, "cannot open ../docs");
    for (struct dirent *e; (e = readdir(dir));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 3, ".md") != 0) continue;
        char path[512];
        snprintf(path, sizeof path, "../docs/%s", e->d_name);
        broken += check_links(path, report);
        pages++;
    }
    closedir(dir);
    ck_assert_msg(pages >= 8, "only %d pages in docs/", pages);
    ck_assert_msg(broken == 0, "%d broken links:\n%s", broken, report);
}
END_TEST

/* The configs' comments, the README and docs/ cite headings that exist: base.ini cited
 * docs/results.md, "Round 2", which never did (issue #45). */
START_TEST(docs_cited_headings_exist) {
    char report[REPORT_SIZE] = "";
    const char *const folders[][2] = {{"../configs", ".ini"}, {"../docs", ".md"}};
    int problems = check_heading_citations("../README.md", "..", report), files = 0;
    for (size_t f = 0; f < 2; f++) {
        DIR *dir = opendir(folders[f][0]);
        ck_assert_msg(dir != NULL, "cannot open %s", folders[f][0]);
        for (struct dirent *e; (e = readdir(dir));) {
            size_t len = strlen(e->d_name), ext = strlen(folders[f][1]);
            if (len <= ext || strcmp(e->d_name + len - ext, folders[f][1]) != 0) continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", folders[f][0], e->d_name);
            problems += check_heading_citations(path, "..", report);
            files++;
        }
        closedir(dir);
    }
    ck_assert_msg(files >= 10, "only %d configs and pages", files);
    ck_assert_msg(problems == 0, "%d citations of headings that do not exist:\n%s", problems,
                  report);
}
END_TEST

START_TEST(docs_readme_names_built_programs) {
    char report[REPORT_SIZE] = "";
    int problems = check_programs("../README.md", "../Makefile", "../bin", report);
    ck_assert_msg(problems == 0, "%d programs named in README.md:\n%s", problems, report);
}
END_TEST

/* ---- the checker itself: it must find what is broken ---- */

START_TEST(docs_checker_reports_broken_link_and_anchor) {
    Scratch s;
    scratch_make(&s);
    scratch_write_text(&s, "other.md", "# Other page\n\n## The C API: `nmt.h`, in short\n");
    scratch_write_text(&s, "page.md",
                       "# A page\n"
                       "## Quick start\n"
                       "## Quick start\n"
                       "Good: [self](#quick-start), [repeat](#quick-start-1), [other](other.md),\n"
                       "[api](other.md#the-c-api-nmth-in-short), [web](https://example.org/x.md).\n"
                       "Broken: [gone](missing.md) and [bad](#no-such-heading),\n"
                       "[far](other.md#quick-start).\n"
                       "In code, not links: `[x](nowhere.md)`\n"
                       "```\n"
                       "[y](nowhere-either.md)\n"
                       "```\n");
    char page[128], report[REPORT_SIZE] = "";
    scratch_path(&s, "page.md", page, sizeof page);
    int broken = check_links(page, report);
    scratch_free(&s);
    ck_assert_msg(broken == 3, "expected 3 broken links, found %d:\n%s", broken, report);
    ck_assert_msg(strstr(report, "page.md:6: missing.md -> no such file"), "%s", report);
    ck_assert_msg(strstr(report, "page.md:6: #no-such-heading -> no heading"), "%s", report);
    ck_assert_msg(strstr(report, "page.md:7: other.md#quick-start -> no heading"), "%s", report);
    ck_assert_msg(!strstr(report, "nowhere"), "a link in code was followed:\n%s", report);
}
END_TEST

START_TEST(docs_checker_reports_missing_cited_heading) {
    Scratch s;
    scratch_make(&s);
    scratch_write_text(&s, "results.md",
                       "# Results\n\n## The levers of RNN translation (2026-11-27)\n");
    scratch_write_text(&s, "base.ini",
                       "# measured (results.md, \"The levers of RNN translation\"), good\n"
                       "# measured (results.md, \"Round 2\"), a heading that never was\n"
                       "# (gone.md, \"Anything\") and (results.md, \"The levers of\n"
                       "# RNN translation\")\n");
    scratch_write_text(&s, "page.md",
                       "A page may show one: `(results.md, \"Round 2\")`, and\n"
                       "```\n(results.md, \"Round 3\")\n```\n"
                       "but not cite one: (results.md, \"Round 4\").\n");
    char config[128], report[REPORT_SIZE] = "";
    scratch_path(&s, "base.ini", config, sizeof config);
    int problems = check_heading_citations(config, "/nonexistent", report);
    char page[128];
    scratch_path(&s, "page.md", page, sizeof page);
    problems += check_heading_citations(page, "/nonexistent", report);
    scratch_free(&s);
    ck_assert_msg(problems == 4, "expected 4 problems, found %d:\n%s", problems, report);
    ck_assert_msg(strstr(report, "page.md:5: results.md, \"Round 4\" -> no heading"), "%s", report);
    ck_assert_msg(strstr(report, "base.ini:2: results.md, \"Round 2\" -> no heading"), "%s",
                  report);
    ck_assert_msg(strstr(report, "base.ini:3: gone.md, \"Anything\" -> no such file"), "%s",
                  report);
    ck_assert_msg(strstr(report, "base.ini:3: results.md, \"The levers of\" -> the quoted"), "%s",
                  report);
}
END_TEST

START_TEST(docs_checker_reports_program_not_built) {
    Scratch s;
    scratch_make(&s);
    scratch_write_text(&s, "Makefile",
                       "CC ?= gcc\nPROGRAMS = train translate \\\n\tnothere\n"
                       "bin/bench: bench.o\n");
    scratch_write_text(&s, "README.md",
                       "Run bin/train, then `bin/translate`, see bin/ and $HOME/.local/bin/x;\n"
                       "bin/bench is a target of its own, bin/nothere is listed but not built,\n"
                       "and bin/nosuch is nowhere.\n");
    char readme[128], makefile[128], report[REPORT_SIZE] = "";
    scratch_path(&s, "README.md", readme, sizeof readme);
    scratch_path(&s, "Makefile", makefile, sizeof makefile);
    int problems = check_programs(readme, makefile, "../bin", report);
    scratch_free(&s);
    ck_assert_msg(problems == 2, "expected 2 problems, found %d:\n%s", problems, report);
    ck_assert_msg(strstr(report, "README.md:2: nothere is in PROGRAMS but was not built"), "%s",
                  report);
    ck_assert_msg(strstr(report, "README.md:3: nosuch is not a program make builds"), "%s", report);
}
END_TEST

Suite *docs_suite(void) {
    Suite *s = suite_create("docs");
    TCase *tc = tcase_create("docs");
    tcase_add_test(tc, docs_links_resolve);
    tcase_add_test(tc, docs_readme_names_built_programs);
    tcase_add_test(tc, docs_cited_headings_exist);
    tcase_add_test(tc, docs_checker_reports_missing_cited_heading);
    tcase_add_test(tc, docs_checker_reports_broken_link_and_anchor);
    tcase_add_test(tc, docs_checker_reports_program_not_built);
    suite_add_tcase(s, tc);
    return s;
}
