/*
 * ngx_http_shmf_module.c - nginx checks (and adds) request keys in a
 * shmfilter filter, in shared memory, with no round trip:
 *
 *   load_module modules/ngx_http_shmf_module.so;
 *   env SHMF_RUNTIME_DIR;      # only if shmd runs with a non-default one
 *
 *   location /fetch {
 *       shmf_filter blocklist;            # [instance=NAME] | off
 *       shmf_key    $arg_url;             # any complex value
 *       if ($shmf_hit) { return 403; }
 *       proxy_pass http://backend;
 *   }
 *   location /click {
 *       shmf_filter clicks;
 *       shmf_key    "$arg_user:$arg_ad";
 *       shmf_add    on;                   # add the key: dedupe at the edge
 *       if ($shmf_hit) { return 204; }    # seen before this request
 *       proxy_pass http://backend;
 *   }
 *
 * $shmf_hit is "1" when the key may be in the filter (with shmf_add on:
 * was in it before this request added it), "0" when it is not (an empty
 * key counts as absent and is never added), and empty (not found) when the
 * location binds no filter or the filter cannot be used; the error log then
 * says why, and `if ($shmf_hit)` lets the request pass. The lookup happens
 * once per request, when $shmf_hit is first read; with shmf_add on it also
 * happens at the preaccess phase if nothing read $shmf_hit before, so that
 * every request adds its key.
 *
 * Each worker opens each filter once (at start, or on its first request if
 * the filter did not exist yet, retried at most once a second) and keeps
 * it: libshmf follows swaps and rotations on the next call by itself; a
 * dropped filter is closed and opened again by name.
 */
#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <shmf.h>

/* One filter as the configuration names it; in each worker, its handle. */
typedef struct {
	ngx_str_t instance; /* empty: the default instance */
	ngx_str_t name;
	ngx_flag_t writable; /* some location adds through it: open SHMF_RDWR */
	shmf_t *f;           /* worker: the handle, NULL until opened */
	ngx_msec_t retry_at; /* worker: no open attempt before this time */
} ngx_http_shmf_filter_t;

typedef struct {
	ngx_array_t filters; /* of ngx_http_shmf_filter_t *, one per distinct instance and name */
} ngx_http_shmf_main_conf_t;

typedef struct {
	ngx_http_shmf_filter_t *filter; /* NULL: off; NGX_CONF_UNSET_PTR: inherit */
	ngx_http_complex_value_t *key;  /* NULL: inherit */
	ngx_flag_t add;
} ngx_http_shmf_loc_conf_t;

/* The answer for this request, and what it was computed for: an `if` block
 * has a configuration of its own with the same filter, key and add, and
 * must not add the key a second time. */
typedef struct {
	ngx_http_shmf_filter_t *filter;
	ngx_http_complex_value_t *key;
	ngx_flag_t add;
	ngx_int_t result; /* 1 hit, 0 miss, NGX_DECLINED unusable */
} ngx_http_shmf_ctx_t;

static ngx_int_t ngx_http_shmf_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_shmf_init(ngx_conf_t *cf);
static void *ngx_http_shmf_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_shmf_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_shmf_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child);
static char *ngx_http_shmf_filter(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static char *ngx_http_shmf_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf);
static ngx_int_t ngx_http_shmf_init_process(ngx_cycle_t *cycle);
static void ngx_http_shmf_exit_process(ngx_cycle_t *cycle);

// clang-format off
static ngx_command_t ngx_http_shmf_commands[] = {
	{ ngx_string("shmf_filter"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE12,
	  ngx_http_shmf_filter, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL },
	{ ngx_string("shmf_key"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_TAKE1,
	  ngx_http_shmf_key, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL },
	{ ngx_string("shmf_add"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF | NGX_CONF_FLAG,
	  ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET, offsetof(ngx_http_shmf_loc_conf_t, add), NULL },
	ngx_null_command
};
// clang-format on

static ngx_http_module_t ngx_http_shmf_module_ctx = {
	ngx_http_shmf_add_variables,    /* preconfiguration */
	ngx_http_shmf_init,             /* postconfiguration */
	ngx_http_shmf_create_main_conf, /* create main configuration */
	NULL,                           /* init main configuration */
	NULL,                           /* create server configuration */
	NULL,                           /* merge server configuration */
	ngx_http_shmf_create_loc_conf,  /* create location configuration */
	ngx_http_shmf_merge_loc_conf    /* merge location configuration */
};

// clang-format off
ngx_module_t ngx_http_shmf_module = {
	NGX_MODULE_V1,
	&ngx_http_shmf_module_ctx,  /* module context */
	ngx_http_shmf_commands,     /* module directives */
	NGX_HTTP_MODULE,            /* module type */
	NULL,                       /* init master */
	NULL,                       /* init module */
	ngx_http_shmf_init_process, /* init process */
	NULL,                       /* init thread */
	NULL,                       /* exit thread */
	ngx_http_shmf_exit_process, /* exit process */
	NULL,                       /* exit master */
	NGX_MODULE_V1_PADDING
};
// clang-format on

static const char *instance_or_default(ngx_http_shmf_filter_t *flt)
{
	return flt->instance.len ? (const char *)flt->instance.data : "default";
}

/* The worker's handle for flt, opened on first use; NULL (logged) if the
 * filter cannot be opened now. */
static shmf_t *ngx_http_shmf_handle(ngx_http_shmf_filter_t *flt, ngx_log_t *log)
{
	shmf_t *f;
	int rc;

	if (flt->f != NULL)
		return flt->f;
	/* A missing filter must not cost every request an open attempt (a few
	 * system calls) and a log line: once a second at most. */
	if (flt->retry_at != 0 && (ngx_msec_int_t)(flt->retry_at - ngx_current_msec) > 0)
		return NULL;
	rc = shmf_open(flt->instance.len ? (const char *)flt->instance.data : NULL, (const char *)flt->name.data,
		       flt->writable ? SHMF_RDWR : SHMF_RDONLY, &f);
	if (rc < 0) {
		flt->retry_at = ngx_current_msec + 1000;
		if (flt->retry_at == 0)
			flt->retry_at = 1;
		/* A permission error: libshmf's detail names the file, its
		 * owner, group and mode, and what to change. */
		ngx_log_error(NGX_LOG_ERR, log, 0, "shmf: filter \"%V\" of instance \"%s\": cannot open: %s%s%s",
			      &flt->name, instance_or_default(flt), shmf_strerror(rc),
			      rc == -EACCES || rc == -EPERM ? ": " : "",
			      rc == -EACCES || rc == -EPERM ? shmf_error_detail() : "");
		return NULL;
	}
	flt->f = f;
	flt->retry_at = 0;
	return f;
}

/* Check (or add) the request's key: 1, 0, or NGX_DECLINED. */
static ngx_int_t ngx_http_shmf_lookup(ngx_http_request_t *r, ngx_http_shmf_loc_conf_t *lcf)
{
	ngx_http_shmf_filter_t *flt = lcf->filter;
	ngx_str_t key;
	shmf_t *f;
	int rc;

	if (ngx_http_complex_value(r, lcf->key, &key) != NGX_OK)
		return NGX_DECLINED;
	if (key.len == 0)
		return 0;
	if ((f = ngx_http_shmf_handle(flt, r->connection->log)) == NULL)
		return NGX_DECLINED;
	/* shmf_add_unique: a Bloom filter's add, and a cuckoo filter's
	 * add-if-absent (a plain cuckoo add would store a copy per request). */
	rc = lcf->add ? shmf_add_unique(f, key.data, key.len) : shmf_check(f, key.data, key.len);
	if (rc < 0) {
		ngx_log_error(NGX_LOG_ERR, r->connection->log, 0, "shmf: filter \"%V\" of instance \"%s\": %s: %s",
			      &flt->name, instance_or_default(flt), lcf->add ? "add" : "check", shmf_strerror(rc));
		if (rc == SHMF_E_DROPPED) {
			shmf_close(flt->f);
			flt->f = NULL;
		}
		return NGX_DECLINED;
	}
	return lcf->add ? rc == 0 : rc == 1;
}

/* The request's answer, computed once. */
static ngx_int_t ngx_http_shmf_eval(ngx_http_request_t *r)
{
	ngx_http_shmf_loc_conf_t *lcf = ngx_http_get_module_loc_conf(r, ngx_http_shmf_module);
	ngx_http_shmf_ctx_t *ctx;

	if (lcf->filter == NULL)
		return NGX_DECLINED;
	ctx = ngx_http_get_module_ctx(r, ngx_http_shmf_module);
	if (ctx != NULL && ctx->filter == lcf->filter && ctx->key == lcf->key && ctx->add == lcf->add)
		return ctx->result;
	if (ctx == NULL) {
		if ((ctx = ngx_pcalloc(r->pool, sizeof(*ctx))) == NULL)
			return NGX_DECLINED;
		ngx_http_set_ctx(r, ctx, ngx_http_shmf_module);
	}
	ctx->filter = lcf->filter;
	ctx->key = lcf->key;
	ctx->add = lcf->add;
	ctx->result = ngx_http_shmf_lookup(r, lcf);
	return ctx->result;
}

static ngx_int_t ngx_http_shmf_hit_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v, uintptr_t data)
{
	ngx_int_t rc = ngx_http_shmf_eval(r);

	(void)data;
	if (rc == NGX_DECLINED) {
		v->not_found = 1;
		return NGX_OK;
	}
	v->data = (u_char *)(rc ? "1" : "0");
	v->len = 1;
	v->valid = 1;
	v->no_cacheable = 0;
	v->not_found = 0;
	return NGX_OK;
}

/* Preaccess: with shmf_add on, the key is added even if nothing reads
 * $shmf_hit. */
static ngx_int_t ngx_http_shmf_preaccess_handler(ngx_http_request_t *r)
{
	ngx_http_shmf_loc_conf_t *lcf = ngx_http_get_module_loc_conf(r, ngx_http_shmf_module);

	if (lcf->filter != NULL && lcf->add)
		(void)ngx_http_shmf_eval(r);
	return NGX_DECLINED;
}

static ngx_int_t ngx_http_shmf_add_variables(ngx_conf_t *cf)
{
	static ngx_str_t name = ngx_string("shmf_hit");
	/* Not cacheable: the answer depends on the location's configuration;
	 * the request context keeps it from being computed (or added) twice. */
	ngx_http_variable_t *var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);

	if (var == NULL)
		return NGX_ERROR;
	var->get_handler = ngx_http_shmf_hit_variable;
	return NGX_OK;
}

static ngx_int_t ngx_http_shmf_init(ngx_conf_t *cf)
{
	ngx_http_core_main_conf_t *cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
	ngx_http_handler_pt *h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);

	if (h == NULL)
		return NGX_ERROR;
	*h = ngx_http_shmf_preaccess_handler;
	return NGX_OK;
}

static void *ngx_http_shmf_create_main_conf(ngx_conf_t *cf)
{
	ngx_http_shmf_main_conf_t *mcf = ngx_pcalloc(cf->pool, sizeof(*mcf));

	if (mcf == NULL || ngx_array_init(&mcf->filters, cf->pool, 4, sizeof(ngx_http_shmf_filter_t *)) != NGX_OK)
		return NULL;
	return mcf;
}

static void *ngx_http_shmf_create_loc_conf(ngx_conf_t *cf)
{
	ngx_http_shmf_loc_conf_t *conf = ngx_pcalloc(cf->pool, sizeof(*conf));

	if (conf == NULL)
		return NULL;
	conf->filter = NGX_CONF_UNSET_PTR;
	conf->key = NULL;
	conf->add = NGX_CONF_UNSET;
	return conf;
}

static char *ngx_http_shmf_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
	ngx_http_shmf_loc_conf_t *prev = parent, *conf = child;

	ngx_conf_merge_ptr_value(conf->filter, prev->filter, NULL);
	if (conf->key == NULL)
		conf->key = prev->key;
	ngx_conf_merge_value(conf->add, prev->add, 0);

	if (conf->filter != NULL && conf->key == NULL) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "\"shmf_filter %V\" needs \"shmf_key\" (the key to look up, such as $arg_url)",
				   &conf->filter->name);
		return NGX_CONF_ERROR;
	}
	if (conf->filter != NULL && conf->add)
		conf->filter->writable = 1;
	return NGX_CONF_OK;
}

/* shmf_filter NAME [instance=NAME] | off */
static char *ngx_http_shmf_filter(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
	ngx_http_shmf_loc_conf_t *lcf = conf;
	ngx_http_shmf_main_conf_t *mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_shmf_module);
	ngx_str_t *value = cf->args->elts, name = value[1], instance = ngx_null_string;
	ngx_http_shmf_filter_t *flt, **slot, **all;
	shmf_t *f;
	int rc;

	(void)cmd;
	if (lcf->filter != NGX_CONF_UNSET_PTR)
		return "is duplicate";
	if (cf->args->nelts == 2 && ngx_strcmp(name.data, "off") == 0) {
		lcf->filter = NULL;
		return NGX_CONF_OK;
	}
	if (cf->args->nelts == 3) {
		if (value[2].len <= 9 || ngx_strncmp(value[2].data, "instance=", 9) != 0) {
			ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\" (expected instance=NAME)",
					   &value[2]);
			return NGX_CONF_ERROR;
		}
		instance.data = value[2].data + 9;
		instance.len = value[2].len - 9;
	}
	/* Configuration tokens are NUL-terminated: the names pass to libshmf
	 * as they are. Ask libshmf whether they are valid names, so that a
	 * typo fails `nginx -t` instead of every request; any other answer
	 * (no such filter yet, no daemon) is for run time. */
	rc = shmf_open(instance.len ? (const char *)instance.data : NULL, (const char *)name.data, SHMF_RDONLY, &f);
	if (rc == SHMF_E_NAME || rc == SHMF_E_INVAL) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "shmf_filter \"%V\"%s%V: %s", &name,
				   instance.len ? " instance=" : "", &instance, shmf_strerror(SHMF_E_NAME));
		return NGX_CONF_ERROR;
	}
	if (rc == 0)
		shmf_close(f);

	all = mcf->filters.elts;
	for (ngx_uint_t i = 0; i < mcf->filters.nelts; i++) {
		if (all[i]->name.len == name.len && ngx_strcmp(all[i]->name.data, name.data) == 0 &&
		    all[i]->instance.len == instance.len &&
		    (instance.len == 0 || ngx_strcmp(all[i]->instance.data, instance.data) == 0)) {
			lcf->filter = all[i];
			return NGX_CONF_OK;
		}
	}
	if ((flt = ngx_pcalloc(cf->pool, sizeof(*flt))) == NULL || (slot = ngx_array_push(&mcf->filters)) == NULL)
		return NGX_CONF_ERROR;
	flt->name = name;
	flt->instance = instance;
	*slot = flt;
	lcf->filter = flt;
	return NGX_CONF_OK;
}

/* shmf_key VALUE: a complex value ($arg_url, "$remote_addr:$http_x_device", ...) */
static char *ngx_http_shmf_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
	ngx_http_shmf_loc_conf_t *lcf = conf;
	ngx_str_t *value = cf->args->elts;
	ngx_http_compile_complex_value_t ccv;

	(void)cmd;
	if (lcf->key != NULL)
		return "is duplicate";
	if ((lcf->key = ngx_palloc(cf->pool, sizeof(*lcf->key))) == NULL)
		return NGX_CONF_ERROR;
	ngx_memzero(&ccv, sizeof(ccv));
	ccv.cf = cf;
	ccv.value = &value[1];
	ccv.complex_value = lcf->key;
	if (ngx_http_compile_complex_value(&ccv) != NGX_OK)
		return NGX_CONF_ERROR;
	return NGX_CONF_OK;
}

/* Each worker maps its filters at start, so that the first requests do not
 * pay for it; a filter that is not there yet is opened on a later request. */
static ngx_int_t ngx_http_shmf_init_process(ngx_cycle_t *cycle)
{
	ngx_http_shmf_main_conf_t *mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_shmf_module);
	ngx_http_shmf_filter_t **all;

	if (mcf == NULL)
		return NGX_OK;
	all = mcf->filters.elts;
	for (ngx_uint_t i = 0; i < mcf->filters.nelts; i++)
		(void)ngx_http_shmf_handle(all[i], cycle->log);
	return NGX_OK;
}

static void ngx_http_shmf_exit_process(ngx_cycle_t *cycle)
{
	ngx_http_shmf_main_conf_t *mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_shmf_module);
	ngx_http_shmf_filter_t **all;

	if (mcf == NULL)
		return;
	all = mcf->filters.elts;
	for (ngx_uint_t i = 0; i < mcf->filters.nelts; i++) {
		shmf_close(all[i]->f);
		all[i]->f = NULL;
	}
}
