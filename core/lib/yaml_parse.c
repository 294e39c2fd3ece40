/*
 * yaml_parse.c — sandbox.yaml text into an msb_node tree, with libyaml's event API.
 *
 * Events rather than libyaml's document loader, because the loader resolves aliases and
 * keeps duplicate keys silently (the last one wins in most readers): both hide what a value
 * is from the person reading the line it is written on. Here a duplicate key, an anchor, an
 * alias (and so a merge key), an explicit tag, a non-scalar key and a second document are
 * refused at their own position. Every node carries its file, 1-based line and column and
 * its key path, which is what every later refusal quotes.
 *
 * Nothing in the text can make the reader crash or run away: nesting is bounded
 * (MSB_CONFIG_MAX_DEPTH, as the reader recurses), the tree's bytes are bounded
 * (MSB_CONFIG_MAX_TREE: a key path repeats its parents' keys in every node below them, so
 * 260 KB of long keys over a long sequence would otherwise be gigabytes of paths), a key is
 * checked for duplicates by hash, and a NUL in a key or value is refused rather than cut at.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "config_internal.h"

struct msb_config_doc {
	msb_arena *arena;
	msb_node *root;
};

typedef struct reader {
	yaml_parser_t *parser;
	msb_arena *arena;
	const char *file;
	msb_error *err;
	const unsigned char *text; /* the input, when it was given as bytes */
	size_t len;
	const char *path;          /* the input, when it was a file */
} reader;

msb_arena *msb_config_doc_arena(msb_config_doc *doc)
{
	return doc->arena;
}

const msb_node *msb_config_doc_root(const msb_config_doc *doc)
{
	return doc ? doc->root : NULL;
}

void msb_config_doc_free(msb_config_doc *doc)
{
	if (!doc)
		return;
	msb_arena_free(doc->arena);
	free(doc);
}

/* Count one byte into a line:column position (columns in characters, as libyaml's marks). */
static void position_step(unsigned char b, size_t *line, size_t *col)
{
	if (b == '\n') {
		++*line;
		*col = 1;
	} else if ((b & 0xc0) != 0x80) {
		++*col;
	}
}

/*
 * Where byte `offset` of the input is. libyaml's reader errors (a bad UTF-8 byte, a NUL or
 * another control character) carry only the offset, their mark left at 1:1.
 */
static void offset_position(const reader *r, size_t offset, size_t *line, size_t *col)
{
	*line = 1;
	*col = 1;
	if (r->text) {
		for (size_t i = 0; i < offset && i < r->len; i++)
			position_step(r->text[i], line, col);
		return;
	}
	FILE *f = r->path ? fopen(r->path, "rb") : NULL;
	for (size_t i = 0; f && i < offset; i++) {
		int c = getc(f);
		if (c == EOF)
			break;
		position_step((unsigned char)c, line, col);
	}
	if (f)
		fclose(f);
}

static msb_errc syntax_error(reader *r)
{
	const yaml_parser_t *p = r->parser;
	const char *problem = p->problem ? p->problem : "unreadable YAML";
	if (p->error == YAML_READER_ERROR) {
		size_t line, col;
		offset_position(r, p->problem_offset, &line, &col);
		if (p->problem_value >= 0)
			return msb_error_set(r->err, MSB_E_CONFIG,
					     "%s:%zu:%zu: YAML syntax: %s (byte 0x%02x at offset %zu)",
					     r->file, line, col, problem, (unsigned)p->problem_value & 0xffu,
					     p->problem_offset);
		return msb_error_set(r->err, MSB_E_CONFIG, "%s:%zu:%zu: YAML syntax: %s", r->file,
				     line, col, problem);
	}
	if (p->context)
		return msb_error_set(r->err, MSB_E_CONFIG, "%s:%zu:%zu: YAML syntax: %s %s (line %zu)",
				     r->file, p->problem_mark.line + 1, p->problem_mark.column + 1,
				     problem, p->context, p->context_mark.line + 1);
	return msb_error_set(r->err, MSB_E_CONFIG, "%s:%zu:%zu: YAML syntax: %s", r->file,
			     p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
}

static msb_errc next_event(reader *r, yaml_event_t *ev)
{
	if (!yaml_parser_parse(r->parser, ev))
		return syntax_error(r);
	return MSB_OK;
}

static msb_node *node_new(reader *r, msb_node_kind kind, const yaml_event_t *ev, const char *path)
{
	msb_node *n = msb_arena_alloc(r->arena, sizeof *n);
	if (!n)
		return NULL;
	n->kind = kind;
	n->file = r->file;
	n->path = path;
	n->line = (unsigned)ev->start_mark.line + 1;
	n->column = (unsigned)ev->start_mark.column + 1;
	return n;
}

/* Anchors and tags are refused where they are written (see the header comment for why). */
static msb_errc refuse_decorations(reader *r, const msb_node *at, const yaml_char_t *anchor,
				   const yaml_char_t *tag)
{
	if (anchor)
		return msb_config_refuse(r->err, at,
					 "anchor '&%s' refused: sandbox.yaml takes no anchors, aliases or merge "
					 "keys, so that every value reads where it is written; repeat the value",
					 (const char *)anchor);
	if (tag)
		return msb_config_refuse(r->err, at,
					 "tag '%s' refused: sandbox.yaml takes no explicit tags; quote a value "
					 "to make it a string",
					 (const char *)tag);
	return MSB_OK;
}

static const char *child_path(reader *r, const char *parent, const char *key)
{
	return *parent ? msb_arena_printf(r->arena, "%s.%s", parent, key) : msb_arena_strdup(r->arena, key);
}

static msb_errc parse_node(reader *r, yaml_event_t *ev, const char *path, int depth, msb_node **out);

static msb_errc refuse_budget(reader *r, const msb_node *at)
{
	return msb_config_refuse(r->err, at,
				 "the document passes the %u MiB a parsed sandbox.yaml may hold (values, "
				 "nodes and key paths, which repeat every parent key: long keys nested deep "
				 "over long sequences multiply)",
				 (unsigned)(MSB_CONFIG_MAX_TREE >> 20));
}

/* A growable array of pointers or pairs, copied into the arena once complete. */
typedef struct vec {
	void *data;
	size_t len, cap, elem;
} vec;

static bool vec_push(vec *v, const void *item)
{
	if (v->len == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 8;
		void *p = realloc(v->data, cap * v->elem);
		if (!p)
			return false;
		v->data = p;
		v->cap = cap;
	}
	memcpy((char *)v->data + v->len * v->elem, item, v->elem);
	v->len++;
	return true;
}

static void *vec_settle(reader *r, vec *v)
{
	void *p = msb_arena_alloc(r->arena, v->len * v->elem);
	if (p && v->len)
		memcpy(p, v->data, v->len * v->elem);
	free(v->data);
	v->data = NULL;
	return p;
}

/* A "\0" escape is valid YAML, but every string msb reads would silently end there. */
static msb_errc refuse_nul(reader *r, const msb_node *at, const char *what, const yaml_char_t *text,
			   size_t len)
{
	if (!memchr(text, '\0', len))
		return MSB_OK;
	return msb_config_refuse(r->err, at,
				 "%s with a NUL character (\\0) refused: it would end the text there and "
				 "silently drop what follows",
				 what);
}

/*
 * The keys of one mapping read so far, hashed (open addressing, at most half full), so that
 * a mapping of n keys is checked for duplicates in n steps rather than n squared.
 */
typedef struct keyset {
	size_t *slots; /* index + 1 into the mapping's pairs; 0 is empty */
	size_t cap;    /* a power of two */
} keyset;

static size_t key_hash(const char *s)
{
	size_t h = 14695981039346656037u; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return h;
}

static const msb_node_pair *pair_at(const vec *pairs, size_t i)
{
	return (const msb_node_pair *)pairs->data + i;
}

/* The pair already read whose key is `key`, or NULL. */
static const msb_node_pair *keyset_find(const keyset *ks, const vec *pairs, const char *key)
{
	for (size_t i = key_hash(key); ks->cap && ks->slots[i &= ks->cap - 1]; i++)
		if (strcmp(pair_at(pairs, ks->slots[i] - 1)->key, key) == 0)
			return pair_at(pairs, ks->slots[i] - 1);
	return NULL;
}

static void keyset_place(keyset *ks, const vec *pairs, size_t index)
{
	size_t i = key_hash(pair_at(pairs, index)->key) & (ks->cap - 1);
	while (ks->slots[i])
		i = (i + 1) & (ks->cap - 1);
	ks->slots[i] = index + 1;
}

/* Record pairs[index], a key keyset_find did not find; false when out of memory. */
static bool keyset_add(keyset *ks, const vec *pairs, size_t index)
{
	if ((index + 1) * 2 > ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 16;
		size_t *slots = calloc(cap, sizeof *slots);
		if (!slots)
			return false;
		free(ks->slots);
		ks->slots = slots;
		ks->cap = cap;
		for (size_t i = 0; i < index; i++)
			keyset_place(ks, pairs, i);
	}
	keyset_place(ks, pairs, index);
	return true;
}

static msb_errc parse_scalar(reader *r, yaml_event_t *ev, const char *path, msb_node **out)
{
	msb_node *n = node_new(r, MSB_NODE_SCALAR, ev, path);
	if (!n)
		return msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
	msb_errc rc = refuse_decorations(r, n, ev->data.scalar.anchor, ev->data.scalar.tag);
	if (rc == MSB_OK)
		rc = refuse_nul(r, n, "a value", ev->data.scalar.value, ev->data.scalar.length);
	if (rc != MSB_OK)
		return rc;
	char *text;
	size_t len;
	int expanded;
	size_t used = msb_arena_total(r->arena);
	size_t left = used < MSB_CONFIG_MAX_TREE ? MSB_CONFIG_MAX_TREE - used : 0;
	if (ev->data.scalar.length >= left)
		return refuse_budget(r, n);
	rc = msb_yaml_expand(r->arena, n, (const char *)ev->data.scalar.value, ev->data.scalar.length,
			     left, &text, &len, &expanded, r->err);
	if (rc != MSB_OK)
		return rc;
	n->scalar = text;
	/* A value from the environment is a string, never YAML's null, whatever it holds. */
	n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !expanded;
	*out = n;
	return MSB_OK;
}

static msb_errc parse_sequence(reader *r, yaml_event_t *ev, const char *path, int depth, msb_node **out)
{
	msb_node *n = node_new(r, MSB_NODE_SEQ, ev, path);
	if (!n)
		return msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
	msb_errc rc = refuse_decorations(r, n, ev->data.sequence_start.anchor, ev->data.sequence_start.tag);
	vec items = { .elem = sizeof(msb_node *) };
	while (rc == MSB_OK) {
		yaml_event_t item;
		if ((rc = next_event(r, &item)) != MSB_OK)
			break;
		if (item.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&item);
			break;
		}
		const char *ipath = msb_arena_printf(r->arena, "%s[%zu]", path, items.len);
		msb_node *child = NULL;
		rc = ipath ? parse_node(r, &item, ipath, depth + 1, &child)
			   : msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
		yaml_event_delete(&item);
		if (rc == MSB_OK && !vec_push(&items, &child))
			rc = msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
	}
	n->len = items.len;
	n->items = vec_settle(r, &items);
	*out = n;
	return rc;
}

static msb_errc parse_mapping(reader *r, yaml_event_t *ev, const char *path, int depth, msb_node **out)
{
	msb_node *n = node_new(r, MSB_NODE_MAP, ev, path);
	if (!n)
		return msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
	msb_errc rc = refuse_decorations(r, n, ev->data.mapping_start.anchor, ev->data.mapping_start.tag);
	vec pairs = { .elem = sizeof(msb_node_pair) };
	keyset seen = { 0 };
	while (rc == MSB_OK) {
		yaml_event_t key;
		if ((rc = next_event(r, &key)) != MSB_OK)
			break;
		if (key.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&key);
			break;
		}
		msb_node_pair pair = { .key_line = (unsigned)key.start_mark.line + 1,
				       .key_column = (unsigned)key.start_mark.column + 1 };
		msb_node at = { .file = r->file, .path = path, .line = pair.key_line, .column = pair.key_column };
		if (key.type == YAML_ALIAS_EVENT)
			rc = msb_config_refuse(r->err, &at,
					       "alias refused: sandbox.yaml takes no anchors, aliases or merge keys, "
					       "so that every value reads where it is written");
		else if (key.type != YAML_SCALAR_EVENT)
			rc = msb_config_refuse(r->err, &at, "a mapping key must be a plain string, found a %s",
					       key.type == YAML_MAPPING_START_EVENT ? "mapping" : "sequence");
		else if ((rc = refuse_decorations(r, &at, key.data.scalar.anchor, key.data.scalar.tag)) == MSB_OK &&
			 (rc = refuse_nul(r, &at, "a key", key.data.scalar.value, key.data.scalar.length)) == MSB_OK)
			pair.key = msb_arena_strndup(r->arena, (const char *)key.data.scalar.value,
						     key.data.scalar.length);
		/* YAML 1.1's merge key, even without an alias: it would read as a key named "<<". */
		if (rc == MSB_OK && pair.key && strcmp(pair.key, "<<") == 0)
			rc = msb_config_refuse(r->err, &at,
					       "merge key '<<' refused: sandbox.yaml takes no anchors, "
					       "aliases or merge keys, so that every value reads where it "
					       "is written (and '<<' is no workload, backend or option name)");
		yaml_event_delete(&key);
		if (rc != MSB_OK)
			break;
		if (!pair.key) {
			rc = msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
			break;
		}
		at.path = child_path(r, path, pair.key);
		const msb_node_pair *first = keyset_find(&seen, &pairs, pair.key);
		if (first) {
			rc = msb_config_refuse(r->err, &at,
					       "duplicate key '%s' (first given at line %u): each key may "
					       "appear once in a mapping, so no later line can silently "
					       "override an earlier one",
					       pair.key, first->key_line);
			break;
		}
		yaml_event_t value;
		if ((rc = next_event(r, &value)) != MSB_OK)
			break;
		rc = at.path ? parse_node(r, &value, at.path, depth + 1, &pair.value)
			     : msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
		yaml_event_delete(&value);
		if (rc == MSB_OK && (!vec_push(&pairs, &pair) || !keyset_add(&seen, &pairs, pairs.len - 1)))
			rc = msb_error_set(r->err, MSB_E_NOMEM, "out of memory");
	}
	free(seen.slots);
	n->len = pairs.len;
	n->pairs = vec_settle(r, &pairs);
	*out = n;
	return rc;
}

static msb_errc parse_node(reader *r, yaml_event_t *ev, const char *path, int depth, msb_node **out)
{
	msb_node at = { .file = r->file, .path = path, .line = (unsigned)ev->start_mark.line + 1,
			.column = (unsigned)ev->start_mark.column + 1 };
	if (depth > MSB_CONFIG_MAX_DEPTH)
		return msb_config_refuse(r->err, &at, "nested deeper than %d levels", MSB_CONFIG_MAX_DEPTH);
	if (msb_arena_total(r->arena) > MSB_CONFIG_MAX_TREE)
		return refuse_budget(r, &at);
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return parse_scalar(r, ev, path, out);
	case YAML_SEQUENCE_START_EVENT:
		return parse_sequence(r, ev, path, depth, out);
	case YAML_MAPPING_START_EVENT:
		return parse_mapping(r, ev, path, depth, out);
	case YAML_ALIAS_EVENT:
		return msb_config_refuse(r->err, &at,
					 "alias '*%s' refused: sandbox.yaml takes no anchors, aliases or merge "
					 "keys, so that every value reads where it is written; repeat the value",
					 (const char *)ev->data.alias.anchor);
	default:
		return msb_config_refuse(r->err, &at, "unexpected YAML event %d", (int)ev->type);
	}
}

/* STREAM-START, at most one DOCUMENT, STREAM-END: a second document is refused. */
static msb_errc parse_stream(reader *r, msb_node **root)
{
	yaml_event_t ev;
	msb_errc rc = next_event(r, &ev);
	if (rc != MSB_OK)
		return rc;
	yaml_event_delete(&ev); /* STREAM-START */
	if ((rc = next_event(r, &ev)) != MSB_OK)
		return rc;
	if (ev.type == YAML_STREAM_END_EVENT) {
		yaml_event_delete(&ev);
		return MSB_OK; /* an empty file: the schema reader says what it expected */
	}
	yaml_event_delete(&ev); /* DOCUMENT-START */
	if ((rc = next_event(r, &ev)) != MSB_OK)
		return rc;
	rc = parse_node(r, &ev, "", 0, root);
	yaml_event_delete(&ev);
	if (rc != MSB_OK)
		return rc;
	if ((rc = next_event(r, &ev)) != MSB_OK) /* DOCUMENT-END */
		return rc;
	yaml_event_delete(&ev);
	if ((rc = next_event(r, &ev)) != MSB_OK)
		return rc;
	if (ev.type != YAML_STREAM_END_EVENT) {
		msb_node at = { .file = r->file, .path = "", .line = (unsigned)ev.start_mark.line + 1,
				.column = (unsigned)ev.start_mark.column + 1 };
		rc = msb_config_refuse(r->err, &at,
				       "a second YAML document refused: sandbox.yaml is one document, so "
				       "that what a host runs under is all in one place");
	}
	yaml_event_delete(&ev);
	return rc;
}

static msb_errc doc_read(yaml_parser_t *parser, const char *name, const unsigned char *text,
			 size_t len, msb_config_doc **out, msb_error *err)
{
	msb_config_doc *doc = calloc(1, sizeof *doc);
	msb_arena *arena = msb_arena_new();
	const char *file = arena ? msb_arena_strdup(arena, name ? name : "<memory>") : NULL;
	if (!doc || !file) {
		free(doc);
		msb_arena_free(arena);
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	doc->arena = arena;
	reader r = { .parser = parser, .arena = arena, .file = file, .err = err,
		     .text = text, .len = len, .path = text ? NULL : name };
	msb_errc rc = parse_stream(&r, &doc->root);
	if (rc != MSB_OK) {
		msb_config_doc_free(doc);
		return rc;
	}
	*out = doc;
	return MSB_OK;
}

msb_errc msb_config_doc_parse(const char *text, size_t len, const char *name,
			      msb_config_doc **out, msb_error *err)
{
	yaml_parser_t parser;
	if (!yaml_parser_initialize(&parser))
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	msb_errc rc = doc_read(&parser, name, (const unsigned char *)text, len, out, err);
	yaml_parser_delete(&parser);
	return rc;
}

/* What a file type is called in a refusal. */
static const char *file_kind(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISFIFO(mode) ? "a FIFO" : S_ISCHR(mode) ? "a character device"
	     : S_ISBLK(mode) ? "a block device" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

/*
 * The file's text, read with a bound. O_NONBLOCK on the open is what keeps a FIFO from
 * hanging it (an open for reading waits for a writer); the type is refused before a read.
 */
static msb_errc read_text(const char *path, char **text, size_t *len, msb_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return msb_error_set_errno(err, errno == ENOENT ? MSB_E_NOT_FOUND : MSB_E_OS, errno,
					   "cannot open configuration '%s'", path);
	struct stat st;
	msb_errc rc = MSB_OK;
	if (fstat(fd, &st) != 0)
		rc = msb_error_set_errno(err, MSB_E_OS, errno, "cannot read configuration '%s'", path);
	else if (S_ISDIR(st.st_mode))
		rc = msb_error_set_errno(err, MSB_E_OS, EISDIR, "cannot read configuration '%s'", path);
	else if (!S_ISREG(st.st_mode))
		rc = msb_error_set(err, MSB_E_CONFIG, "configuration '%s' is %s, not a regular file; "
				   "refused before reading, since it could block or never end", path,
				   file_kind(st.st_mode));
	else if ((uint64_t)st.st_size > MSB_CONFIG_MAX_FILE)
		rc = msb_error_set(err, MSB_E_CONFIG, "configuration '%s' is %lld bytes, over the %zu "
				   "a sandbox.yaml may have; refused before reading", path,
				   (long long)st.st_size, MSB_CONFIG_MAX_FILE);
	char *buf = rc == MSB_OK ? malloc(MSB_CONFIG_MAX_FILE + 1) : NULL;
	if (rc == MSB_OK && !buf)
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	size_t got = 0;
	/* A regular file may still grow while it is read: the bound is held on the reads too. */
	while (rc == MSB_OK) {
		ssize_t n = read(fd, buf + got, MSB_CONFIG_MAX_FILE + 1 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = msb_error_set(err, MSB_E_OS, "cannot read configuration '%s': reading it "
					   "failed part-way", path);
		else if (n == 0)
			break;
		else if ((got += (size_t)n) > MSB_CONFIG_MAX_FILE)
			rc = msb_error_set(err, MSB_E_CONFIG, "configuration '%s' grew past the %zu "
					   "bytes a sandbox.yaml may have while it was read; refused",
					   path, MSB_CONFIG_MAX_FILE);
	}
	close(fd);
	if (rc != MSB_OK) {
		free(buf);
		return rc;
	}
	*text = buf;
	*len = got;
	return MSB_OK;
}

msb_errc msb_config_doc_load(const char *path, msb_config_doc **out, msb_error *err)
{
	char *text = NULL;
	size_t len = 0;
	msb_errc rc = read_text(path, &text, &len, err);
	if (rc == MSB_OK)
		rc = msb_config_doc_parse(text, len, path, out, err);
	free(text);
	return rc;
}
