/*
 * image.c — the built-in `host` image and the `images:` config key (msb/image.h), shared by
 * the backends that build a sandbox's root from host directories.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <pthread.h>

#include <msb/image.h>
#include <msb/image_store.h>

/* A root resolved from the store: kept for the msb_images' lifetime, as resolve promises. */
struct msb_images_seen {
	char *root;     /* a resolved root; NULL in an Env entry */
	char **env;     /* an image's filtered Env, NULL-terminated; NULL in a root entry */
	char digest[MSB_IMAGE_DIGEST_LEN + 1]; /* whose Env */
	struct msb_images_seen *next;
};

static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

const char *const *msb_image_host_paths(void)
{
	static const char *const paths[] = {
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd",
		"/etc/group", "/etc/nsswitch.conf", "/etc/localtime", "/etc/alternatives", NULL,
	};
	return paths;
}

static msb_errc read_image(const msb_node_pair *p, msb_image *img, msb_error *err)
{
	if (!strcmp(p->key, "host"))
		return msb_node_error(err, p->value, MSB_E_CONFIG,
				      "\"host\" is the built-in image and cannot be redefined");
	if (p->value->kind != MSB_NODE_SCALAR || p->value->scalar[0] != '/')
		return msb_node_error(err, p->value, MSB_E_CONFIG,
				      "expected an absolute path to the image's root directory");
	struct stat st;
	if (stat(p->value->scalar, &st) != 0 || !S_ISDIR(st.st_mode))
		return msb_node_error(err, p->value, MSB_E_CONFIG, "image root %s is not a directory",
				      p->value->scalar);
	img->name = strdup(p->key);
	img->root = strdup(p->value->scalar);
	if (!img->name || !img->root)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	return MSB_OK;
}

msb_errc msb_images_read(const msb_node *config, msb_images *out, msb_error *err)
{
	memset(out, 0, sizeof *out);
	const msb_node *dir = msb_node_get(config, "images_dir");
	if (dir && (dir->kind != MSB_NODE_SCALAR || dir->scalar[0] != '/'))
		return msb_node_error(err, dir, MSB_E_CONFIG,
				      "images_dir: expected an absolute path to the image store");
	out->store = strdup(dir ? dir->scalar : msb_image_store_default_dir());
	if (!out->store)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	const msb_node *images = msb_node_get(config, "images");
	if (!images || msb_node_is_null(images))
		return MSB_OK;
	if (images->kind != MSB_NODE_MAP)
		return msb_node_error(err, images, MSB_E_CONFIG,
				      "expected a map of image names to root directories");
	out->list = calloc(images->len ? images->len : 1, sizeof *out->list);
	if (!out->list)
		return msb_error_set(err, MSB_E_NOMEM, "out of memory");
	for (size_t i = 0; i < images->len; i++) {
		msb_errc rc = read_image(&images->pairs[i], &out->list[out->len++], err);
		if (rc != MSB_OK)
			return rc;
	}
	return MSB_OK;
}

msb_errc msb_images_resolve(const msb_images *images, const char *backend, const char *image,
			    const char **root, msb_error *err)
{
	*root = NULL;
	if (!image || !*image || !strcmp(image, "host"))
		return MSB_OK;
	for (size_t i = 0; i < images->len; i++)
		if (!strcmp(images->list[i].name, image)) {
			*root = images->list[i].root;
			return MSB_OK;
		}
	msb_image_record rec;
	msb_error store_err = MSB_ERROR_INIT;
	if (images->store && msb_image_inspect(images->store, image, &rec, &store_err) == MSB_OK) {
		struct msb_images_seen *seen;
		msb_errc rc = MSB_OK;
		pthread_mutex_lock(&seen_lock);
		for (seen = images->seen; seen && (!seen->root || strcmp(seen->root, rec.root));
		     seen = seen->next)
			;
		if (!seen && (seen = calloc(1, sizeof *seen))) {
			seen->root = rec.root;
			rec.root = NULL;
			seen->next = images->seen;
			((msb_images *)images)->seen = seen;
		}
		if (!seen)
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
		else
			*root = seen->root;
		pthread_mutex_unlock(&seen_lock);
		msb_image_record_free(&rec);
		return rc;
	}
	msb_error_clear(&store_err);
	char names[512] = "host";
	for (size_t i = 0; i < images->len; i++) {
		size_t used = strlen(names);
		snprintf(names + used, sizeof names - used, ", %s", images->list[i].name);
	}
	return msb_error_set(err, MSB_E_VALUE, "backend %s: image \"%s\" is not configured for this "
			     "backend (config.images names: %s) nor in the image store %s, so there "
			     "is no root to run it from", backend, image, names,
			     images->store ? images->store : "(none)");
}

msb_errc msb_images_identity(const msb_images *images, const char *backend, const char *image,
			     char *out, size_t size, msb_error *err)
{
	const char *root = NULL;
	msb_errc rc = msb_images_resolve(images, backend, image, &root, err);
	if (rc == MSB_OK)
		snprintf(out, size, "%s", root ? root : "");
	return rc;
}

msb_errc msb_images_digest(const msb_images *images, const char *image, char *out, size_t size,
			   msb_error *err)
{
	(void)err;
	if (size)
		out[0] = '\0';
	if (!size || !image || !*image || !strcmp(image, "host"))
		return MSB_OK;
	for (size_t i = 0; i < images->len; i++)
		if (!strcmp(images->list[i].name, image))
			return MSB_OK; /* a directory an operator keeps has no content address */
	char digest[MSB_IMAGE_DIGEST_LEN + 1];
	msb_error lookup = MSB_ERROR_INIT;
	/* The name file alone: this runs before every acquire of the image. */
	if (images->store && msb_image_digest(images->store, image, digest, &lookup) == MSB_OK)
		snprintf(out, size, "%s", digest);
	msb_error_clear(&lookup);
	return MSB_OK;
}

/* An Env entry a command can be given: NAME=VALUE, NAME of [A-Za-z0-9_] not starting with a digit. */
static bool env_entry_ok(const char *e)
{
	size_t n = strspn(e, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	return n > 0 && e[n] == '=' && !(e[0] >= '0' && e[0] <= '9') && strlen(e) < 4096;
}

/*
 * The store's record of `image` when it is a store image (the config each reads is there);
 * false for "host", no image, a configured directory (no config) and a name the store does
 * not have (the start refuses that in its own words).
 */
static bool store_record(const msb_images *images, const char *image, msb_image_record *rec)
{
	if (!image || !*image || !strcmp(image, "host"))
		return false;
	for (size_t i = 0; i < images->len; i++)
		if (!strcmp(images->list[i].name, image))
			return false;
	msb_error lookup = MSB_ERROR_INIT;
	if (!images->store || msb_image_inspect(images->store, image, rec, &lookup) != MSB_OK) {
		msb_error_clear(&lookup);
		return false;
	}
	return true;
}

msb_errc msb_images_env(const msb_images *images, const char *image, const char *const **env,
			msb_error *err)
{
	*env = NULL;
	msb_image_record rec;
	if (!store_record(images, image, &rec))
		return MSB_OK;
	msb_errc rc = MSB_OK;
	pthread_mutex_lock(&seen_lock);
	struct msb_images_seen *seen = images->seen;
	while (seen && (!seen->env || strcmp(seen->digest, rec.digest)))
		seen = seen->next;
	if (!seen && rec.n_env && (seen = calloc(1, sizeof *seen))) {
		seen->env = calloc(rec.n_env + 1, sizeof *seen->env);
		size_t k = 0;
		/* What the agent could not take as NAME=VALUE is dropped, not passed on. */
		for (size_t i = 0; seen->env && i < rec.n_env; i++)
			if (env_entry_ok(rec.env[i]) && !(seen->env[k] = strdup(rec.env[i])))
				break;
			else if (env_entry_ok(rec.env[i]))
				k++;
		snprintf(seen->digest, sizeof seen->digest, "%s", rec.digest);
		seen->next = images->seen;
		((msb_images *)images)->seen = seen;
		if (!seen->env)
			rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	} else if (!seen && rec.n_env) {
		rc = msb_error_set(err, MSB_E_NOMEM, "out of memory");
	}
	if (rc == MSB_OK && seen)
		*env = (const char *const *)seen->env;
	pthread_mutex_unlock(&seen_lock);
	msb_image_record_free(&rec);
	return rc;
}

msb_errc msb_images_user(const msb_images *images, const char *image, long *uid, long *gid,
			 msb_error *err)
{
	*uid = *gid = -1;
	msb_image_record rec;
	if (!store_record(images, image, &rec))
		return MSB_OK;
	msb_errc rc = msb_image_user_resolve(rec.root, image, rec.user, uid, gid, err);
	msb_image_record_free(&rec);
	return rc;
}

void msb_images_free(msb_images *images)
{
	for (size_t i = 0; i < images->len; i++) {
		free(images->list[i].name);
		free(images->list[i].root);
	}
	free(images->list);
	free(images->store);
	for (struct msb_images_seen *s = images->seen, *next; s; s = next) {
		next = s->next;
		free(s->root);
		for (char **e = s->env; e && *e; e++)
			free(*e);
		free(s->env);
		free(s);
	}
	memset(images, 0, sizeof *images);
}
