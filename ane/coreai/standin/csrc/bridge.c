/*
 * bridge.c: the Linux stand-in for the Swift Core AI bridge
 * (ane/coreai/cai/bridge/CoreAIBridge.swift). It exports the same cai_* C ABI
 * (version 1, docs/COREAI.md) so the Go binding and the drivers in
 * ane/coreai run for real off a Mac: buffer management, function
 * descriptions, binding validation and every error path are implemented
 * here; only the compute of a function is delegated to one callback that
 * Go registers once per process (tb_set_compute; ane/coreai/standin). A
 * "model" is a directory holding functions.txt:
 *
 *   mpsgraph 7.0.80                    package MPSGraph version (optional)
 *   fail_if_exists /some/path          load fails while that path exists
 *   function NAME
 *   input|output|state NAME DTYPE RANK d0 .. d(RANK-1) [strides s0 ..]
 *   end
 *
 * Environment: TB_ABI_VERSION overrides cai_abi_version (default 1),
 * TB_OS_MPSGRAPH_VERSION the OS MPSGraph version (default 7.0.80).
 *
 * Stand-in symbols: tb_set_compute (the compute callback), tb_set_events
 * (when on, the callback also hears of every model load and release,
 * event 1 and 2, so Go can drop what it keeps per package), tb_live (live
 * object counts).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAXT 64
#define MAXF 64
#define MAXR 6

typedef struct {
	char name[64];
	int32_t dtype, rank;
	int64_t shape[MAXR], strides[MAXR], nbytes;
} tensor;

typedef struct {
	char name[64];
	int n[3]; /* inputs, outputs, states */
	tensor t[3][MAXT];
} fdesc;

typedef struct {
	char path[1024];
	char version[32];
	int nf;
	fdesc f[MAXF];
} model;

typedef struct {
	model *m;
	fdesc *d;
} function;

typedef struct {
	int32_t dtype, rank;
	int64_t shape[MAXR], strides[MAXR], nbytes;
	void *data;
} buffer;

typedef struct {
	function *fn;
	int n;
	const char *names[3 * MAXT];
	buffer *bufs[3 * MAXT];
} binding;

/* tb_call is what the compute callback receives: every bound tensor,
 * inputs then outputs then states, in the function's description order. */
typedef struct {
	const char *model_path;
	const char *function;
	int64_t n;
	const char **names;
	void **ptrs;
	const int64_t *nbytes;
	char *err;
	int64_t err_cap;
	int64_t event; /* TB_RUN, or TB_LOADED / TB_RELEASED (function NULL, n 0) */
} tb_call;

enum { TB_RUN = 0, TB_LOADED = 1, TB_RELEASED = 2 };

typedef int32_t (*compute_fn)(tb_call *);

static compute_fn g_compute;
static int32_t g_events;
static int64_t g_live[4]; /* models, functions, buffers, bindings */

static const char *role_name[3] = {"input", "output", "state"};
static const char *dtype_name[11] = {"f16", "f32", "i32", "i8", "u8", "bf16", "i16", "u16", "i64", "f64", "bool"};
static const int dtype_size[11] = {2, 4, 4, 1, 1, 2, 2, 2, 8, 8, 1};

static void seterr(char *err, int64_t cap, const char *msg) {
	if (err && cap > 0) {
		snprintf(err, (size_t)cap, "%s", msg);
	}
}

/* notify tells the callback a model at path was loaded or released. */
static void notify(const char *path, int64_t event) {
	if (g_compute && g_events) {
		char cerr[8] = "";
		tb_call c = {path, NULL, 0, NULL, NULL, NULL, cerr, sizeof cerr, event};
		g_compute(&c);
	}
}

int32_t cai_abi_version(void) {
	const char *v = getenv("TB_ABI_VERSION");
	return v ? atoi(v) : 1;
}

const char *cai_release(void) { return "testbridge-1 (Linux stand-in, not Core AI)"; }

static const char *os_version(void) {
	const char *v = getenv("TB_OS_MPSGRAPH_VERSION");
	return v ? v : "7.0.80";
}

int32_t cai_os_mpsgraph_version(char *out, int64_t cap) {
	seterr(out, cap, os_version());
	return 0;
}

/* version_cmp compares dotted versions numerically. */
static int version_cmp(const char *a, const char *b) {
	while (*a || *b) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
		if (x != y) {
			return x < y ? -1 : 1;
		}
		if (*a == '.') a++;
		if (*b == '.') b++;
		if (!*a && !*b) break;
	}
	return 0;
}

static int parse_tensor(char *line, tensor *t, char *err, int64_t cap, int lineno) {
	char msg[256];
	char *tok = strtok(line, " \t\n");
	if (!tok) goto bad;
	snprintf(t->name, sizeof t->name, "%s", tok);
	if (!(tok = strtok(NULL, " \t\n"))) goto bad;
	t->dtype = -1;
	for (int i = 0; i < 11; i++) {
		if (strcmp(tok, dtype_name[i]) == 0) t->dtype = i;
	}
	if (t->dtype < 0) goto bad;
	if (!(tok = strtok(NULL, " \t\n"))) goto bad;
	t->rank = atoi(tok);
	if (t->rank < 1 || t->rank > MAXR) goto bad;
	for (int i = 0; i < t->rank; i++) {
		if (!(tok = strtok(NULL, " \t\n"))) goto bad;
		t->shape[i] = atoll(tok);
		if (t->shape[i] < 1) goto bad;
	}
	tok = strtok(NULL, " \t\n");
	if (tok && strcmp(tok, "strides") == 0) {
		for (int i = 0; i < t->rank; i++) {
			if (!(tok = strtok(NULL, " \t\n"))) goto bad;
			t->strides[i] = atoll(tok);
		}
	} else {
		t->strides[t->rank - 1] = 1;
		for (int i = t->rank - 2; i >= 0; i--) t->strides[i] = t->strides[i + 1] * t->shape[i + 1];
	}
	t->nbytes = t->strides[0] * t->shape[0] * dtype_size[t->dtype];
	return 0;
bad:
	snprintf(msg, sizeof msg, "functions.txt line %d: bad tensor line", lineno);
	seterr(err, cap, msg);
	return -1;
}

void *cai_model_load(const char *path, int32_t compute, int32_t check_version, char *err, int64_t cap) {
	char file[1100], line[1024], msg[1400];
	struct stat st;
	if (compute < 0 || compute > 3) {
		snprintf(msg, sizeof msg, "compute unit %d is not 0..3", compute);
		seterr(err, cap, msg);
		return NULL;
	}
	snprintf(file, sizeof file, "%s/functions.txt", path);
	FILE *fp = fopen(file, "r");
	if (!fp) {
		snprintf(msg, sizeof msg, "cannot load model %s: no functions.txt", path);
		seterr(err, cap, msg);
		return NULL;
	}
	model *m = calloc(1, sizeof *m);
	snprintf(m->path, sizeof m->path, "%s", path);
	snprintf(m->version, sizeof m->version, "7.0.0");
	fdesc *cur = NULL;
	int lineno = 0;
	while (fgets(line, sizeof line, fp)) {
		lineno++;
		char kw[32] = "", arg[1000] = "";
		if (sscanf(line, "%31s %999s", kw, arg) < 1) continue;
		if (strcmp(kw, "mpsgraph") == 0) {
			snprintf(m->version, sizeof m->version, "%s", arg);
		} else if (strcmp(kw, "fail_if_exists") == 0) {
			if (stat(arg, &st) == 0) {
				snprintf(msg, sizeof msg, "cannot load model %s: stale specialization cache at %s", path, arg);
				goto fail;
			}
		} else if (strcmp(kw, "function") == 0) {
			if (m->nf == MAXF) {
				snprintf(msg, sizeof msg, "functions.txt line %d: too many functions", lineno);
				goto fail;
			}
			cur = &m->f[m->nf++];
			snprintf(cur->name, sizeof cur->name, "%s", arg);
		} else if (strcmp(kw, "end") == 0) {
			cur = NULL;
		} else {
			int role = -1;
			for (int r = 0; r < 3; r++) {
				if (strcmp(kw, role_name[r]) == 0) role = r;
			}
			if (role < 0 || !cur || cur->n[role] == MAXT) {
				snprintf(msg, sizeof msg, "functions.txt line %d: unexpected %s", lineno, kw);
				goto fail;
			}
			if (parse_tensor(line + strlen(kw) + 1, &cur->t[role][cur->n[role]], err, cap, lineno) != 0) {
				fclose(fp);
				free(m);
				return NULL;
			}
			cur->n[role]++;
		}
	}
	fclose(fp);
	if (check_version && version_cmp(m->version, os_version()) > 0) {
		snprintf(msg, sizeof msg, "package %s needs MPSGraph %s, the OS has %s", path, m->version, os_version());
		seterr(err, cap, msg);
		free(m);
		return NULL;
	}
	g_live[0]++;
	notify(m->path, TB_LOADED);
	return m;
fail:
	fclose(fp);
	free(m);
	seterr(err, cap, msg);
	return NULL;
}

void cai_model_release(void *mp) {
	model *m = mp;
	if (m) {
		notify(m->path, TB_RELEASED);
		free(m);
		g_live[0]--;
	}
}

int32_t cai_package_mpsgraph_version(const char *path, char *out, int64_t cap) {
	char err[256];
	model *m = cai_model_load(path, 3, 0, err, sizeof err);
	if (!m) {
		seterr(out, cap, err);
		return -1;
	}
	seterr(out, cap, m->version);
	cai_model_release(m);
	return 0;
}

/* cai_model_function_names writes a JSON array of names; returns the
 * length it needs (call again with a larger buffer when it exceeds cap). */
int64_t cai_model_function_names(void *mp, char *out, int64_t cap) {
	model *m = mp;
	char buf[MAXF * 70 + 4];
	size_t n = 0;
	n += (size_t)snprintf(buf + n, sizeof buf - n, "[");
	for (int i = 0; i < m->nf; i++) {
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"%s\"", i ? "," : "", m->f[i].name);
	}
	n += (size_t)snprintf(buf + n, sizeof buf - n, "]");
	if ((int64_t)n < cap) memcpy(out, buf, n + 1);
	return (int64_t)n;
}

void *cai_function_load(void *mp, const char *name, char *err, int64_t cap) {
	model *m = mp;
	char msg[256];
	for (int i = 0; i < m->nf; i++) {
		if (strcmp(m->f[i].name, name) == 0) {
			function *f = calloc(1, sizeof *f);
			f->m = m;
			f->d = &m->f[i];
			g_live[1]++;
			return f;
		}
	}
	snprintf(msg, sizeof msg, "model has no function %s", name);
	seterr(err, cap, msg);
	return NULL;
}

void cai_function_release(void *f) {
	if (f) {
		free(f);
		g_live[1]--;
	}
}

int64_t cai_function_describe(void *fp, char *out, int64_t cap) {
	fdesc *d = ((function *)fp)->d;
	static const char *keys[3] = {"inputs", "outputs", "states"};
	size_t size = 4096 + 512 * (size_t)(d->n[0] + d->n[1] + d->n[2]);
	char *buf = malloc(size);
	size_t n = (size_t)snprintf(buf, size, "{\"name\":\"%s\"", d->name);
	for (int r = 0; r < 3; r++) {
		n += (size_t)snprintf(buf + n, size - n, ",\"%s\":[", keys[r]);
		for (int i = 0; i < d->n[r]; i++) {
			tensor *t = &d->t[r][i];
			n += (size_t)snprintf(buf + n, size - n, "%s{\"name\":\"%s\",\"dtype\":\"%s\",\"shape\":[", i ? "," : "",
			                      t->name, dtype_name[t->dtype]);
			for (int k = 0; k < t->rank; k++) {
				n += (size_t)snprintf(buf + n, size - n, "%s%lld", k ? "," : "", (long long)t->shape[k]);
			}
			n += (size_t)snprintf(buf + n, size - n, "],\"strides\":[");
			for (int k = 0; k < t->rank; k++) {
				n += (size_t)snprintf(buf + n, size - n, "%s%lld", k ? "," : "", (long long)t->strides[k]);
			}
			n += (size_t)snprintf(buf + n, size - n, "],\"nbytes\":%lld,\"dynamic\":false}", (long long)t->nbytes);
		}
		n += (size_t)snprintf(buf + n, size - n, "]");
	}
	n += (size_t)snprintf(buf + n, size - n, "}");
	if ((int64_t)n < cap) memcpy(out, buf, n + 1);
	free(buf);
	return (int64_t)n;
}

void *cai_buffer_create(int32_t dtype, int32_t rank, const int64_t *shape, const int64_t *strides, char *err,
                        int64_t cap) {
	char msg[256];
	if (dtype < 0 || dtype > 10) {
		snprintf(msg, sizeof msg, "dtype code %d is not 0..10", dtype);
		seterr(err, cap, msg);
		return NULL;
	}
	if (rank < 1 || rank > MAXR) {
		snprintf(msg, sizeof msg, "rank %d is not 1..%d", rank, MAXR);
		seterr(err, cap, msg);
		return NULL;
	}
	buffer *b = calloc(1, sizeof *b);
	b->dtype = dtype;
	b->rank = rank;
	for (int i = 0; i < rank; i++) {
		if (shape[i] < 1) {
			snprintf(msg, sizeof msg, "dimension %d is %lld", i, (long long)shape[i]);
			goto fail;
		}
		b->shape[i] = shape[i];
	}
	if (strides) {
		if (strides[rank - 1] != 1) {
			snprintf(msg, sizeof msg, "last stride is %lld, must be 1", (long long)strides[rank - 1]);
			goto fail;
		}
		for (int i = 0; i < rank; i++) b->strides[i] = strides[i];
		for (int i = 0; i + 1 < rank; i++) {
			if (b->strides[i] < b->strides[i + 1] * b->shape[i + 1]) {
				snprintf(msg, sizeof msg, "stride %d (%lld) overlaps dimension %d", i, (long long)b->strides[i], i + 1);
				goto fail;
			}
		}
	} else {
		b->strides[rank - 1] = 1;
		for (int i = rank - 2; i >= 0; i--) b->strides[i] = b->strides[i + 1] * b->shape[i + 1];
	}
	b->nbytes = b->strides[0] * b->shape[0] * dtype_size[dtype];
	/* malloc + memset (not calloc): every page is touched now, as the Swift
	 * bridge's memset of a new IOSurface does, so first writes cost no faults. */
	b->data = malloc((size_t)b->nbytes);
	if (!b->data) {
		snprintf(msg, sizeof msg, "cannot allocate %lld bytes", (long long)b->nbytes);
		goto fail;
	}
	memset(b->data, 0, (size_t)b->nbytes);
	g_live[2]++;
	return b;
fail:
	free(b);
	seterr(err, cap, msg);
	return NULL;
}

void *cai_buffer_address(void *b) { return ((buffer *)b)->data; }
int64_t cai_buffer_nbytes(void *b) { return ((buffer *)b)->nbytes; }

void cai_buffer_release(void *bp) {
	buffer *b = bp;
	if (b) {
		free(b->data);
		free(b);
		g_live[2]--;
	}
}

static int same_layout(const tensor *t, const buffer *b) {
	if (t->dtype != b->dtype || t->rank != b->rank) return 0;
	for (int i = 0; i < t->rank; i++) {
		if (t->shape[i] != b->shape[i] || t->strides[i] != b->strides[i]) return 0;
	}
	return 1;
}

static void describe_layout(char *out, size_t cap, int32_t dtype, int32_t rank, const int64_t *shape,
                            const int64_t *strides) {
	size_t n = (size_t)snprintf(out, cap, "%s (", dtype_name[dtype]);
	for (int i = 0; i < rank; i++) n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)shape[i]);
	n += (size_t)snprintf(out + n, cap - n, ") strides (");
	for (int i = 0; i < rank; i++) n += (size_t)snprintf(out + n, cap - n, "%s%lld", i ? "," : "", (long long)strides[i]);
	snprintf(out + n, cap - n, ")");
}

/* bind_role checks one role's list against the description (every tensor
 * bound exactly once, layouts equal) and appends it in description order. */
static int bind_role(binding *bd, int role, int32_t n, const char *names, void **bufs, char *err, int64_t cap) {
	fdesc *d = bd->fn->d;
	char msg[600], want[200], got[200];
	const char *nm[MAXT];
	const char *p = names;
	if (n != d->n[role]) {
		snprintf(msg, sizeof msg, "%s: %d %ss bound, the function has %d", d->name, n, role_name[role], d->n[role]);
		seterr(err, cap, msg);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		nm[i] = p;
		p += strlen(p) + 1;
	}
	for (int k = 0; k < d->n[role]; k++) {
		tensor *t = &d->t[role][k];
		int found = -1;
		for (int i = 0; i < n; i++) {
			if (strcmp(nm[i], t->name) == 0) {
				if (found >= 0) {
					snprintf(msg, sizeof msg, "%s: %s %s is bound twice", d->name, role_name[role], t->name);
					seterr(err, cap, msg);
					return -1;
				}
				found = i;
			}
		}
		if (found < 0) {
			snprintf(msg, sizeof msg, "%s: %s %s is not bound", d->name, role_name[role], t->name);
			seterr(err, cap, msg);
			return -1;
		}
		buffer *b = bufs[found];
		if (!b) {
			snprintf(msg, sizeof msg, "%s: %s %s is bound to a null buffer", d->name, role_name[role], t->name);
			seterr(err, cap, msg);
			return -1;
		}
		if (!same_layout(t, b)) {
			describe_layout(want, sizeof want, t->dtype, t->rank, t->shape, t->strides);
			describe_layout(got, sizeof got, b->dtype, b->rank, b->shape, b->strides);
			snprintf(msg, sizeof msg, "%s: %s %s wants %s, the buffer is %s", d->name, role_name[role], t->name, want, got);
			seterr(err, cap, msg);
			return -1;
		}
		bd->names[bd->n] = t->name;
		bd->bufs[bd->n] = b;
		bd->n++;
	}
	return 0;
}

void *cai_binding_create(void *fn, int32_t n_in, const char *in_names, void **in_bufs, int32_t n_out,
                         const char *out_names, void **out_bufs, int32_t n_states, const char *state_names,
                         void **state_bufs, char *err, int64_t cap) {
	char msg[300];
	binding *bd = calloc(1, sizeof *bd);
	bd->fn = fn;
	if (bind_role(bd, 0, n_in, in_names, in_bufs, err, cap) || bind_role(bd, 1, n_out, out_names, out_bufs, err, cap) ||
	    bind_role(bd, 2, n_states, state_names, state_bufs, err, cap)) {
		free(bd);
		return NULL;
	}
	int nin = bd->fn->d->n[0];
	for (int i = 0; i < nin; i++) {
		for (int o = nin; o < bd->n; o++) {
			if (bd->bufs[i] == bd->bufs[o]) {
				snprintf(msg, sizeof msg, "%s: input %s aliases %s", bd->fn->d->name, bd->names[i], bd->names[o]);
				seterr(err, cap, msg);
				free(bd);
				return NULL;
			}
		}
	}
	g_live[3]++;
	return bd;
}

void cai_binding_release(void *b) {
	if (b) {
		free(b);
		g_live[3]--;
	}
}

int32_t cai_run(int32_t n, void **bindings, double *times_ms, char *err, int64_t cap) {
	char msg[1024];
	if (!g_compute) {
		seterr(err, cap, "stand-in bridge: no compute callback registered (tb_set_compute)");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		binding *bd = bindings[i];
		void *ptrs[3 * MAXT];
		int64_t sizes[3 * MAXT];
		for (int k = 0; k < bd->n; k++) {
			ptrs[k] = bd->bufs[k]->data;
			sizes[k] = bd->bufs[k]->nbytes;
		}
		char cerr[900] = "";
		tb_call c = {bd->fn->m->path, bd->fn->d->name, bd->n, bd->names, ptrs, sizes, cerr, sizeof cerr, TB_RUN};
		if (g_compute(&c) != 0) {
			snprintf(msg, sizeof msg, "binding %d (%s): %s", i, bd->fn->d->name, cerr);
			seterr(err, cap, msg);
			return -1;
		}
		if (times_ms) times_ms[i] = 0.001 * (i + 1);
	}
	return 0;
}

void tb_set_compute(void *fn) { g_compute = (compute_fn)fn; }

void tb_set_events(int32_t on) { g_events = on; }

int64_t tb_live(int32_t kind) { return kind >= 0 && kind < 4 ? g_live[kind] : -1; }
