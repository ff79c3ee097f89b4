/*
 * The rdmx MTL component: its MCA parameters (each one an RDMX_* setting), the
 * selection rule (opt-in), and init: rdmx_init, the address published through the
 * modex, progress registered with opal_progress.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "mtl_rdmx.h"
#include "ompi/proc/proc.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/mca/memory/base/base.h"
#include "opal/memoryhooks/memory.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static int mtl_rdmx_component_register(void);
static int mtl_rdmx_component_open(void);
static int mtl_rdmx_component_close(void);
static int mtl_rdmx_component_query(mca_base_module_t** module, int* priority);

mca_mtl_base_component_2_0_0_t mca_mtl_rdmx_component = {
    .mtl_version =
        {
            MCA_MTL_BASE_VERSION_2_0_0,
            .mca_component_name = "rdmx",
            MCA_BASE_MAKE_VERSION(component, 0, 1, 0),
            .mca_open_component = mtl_rdmx_component_open,
            .mca_close_component = mtl_rdmx_component_close,
            .mca_query_component = mtl_rdmx_component_query,
            .mca_register_component_params = mtl_rdmx_component_register,
        },
    .mtl_data = {MCA_BASE_METADATA_PARAM_NONE},
    .mtl_init = mtl_rdmx_component_init,
};

/* Below ob1's 20: pml cm with rdmx is used only when asked for. */
#define MTL_RDMX_DEFAULT_PRIORITY 5

/* One MCA parameter, mtl_rdmx_<key>, per setting rdmx_init reads, registered from rdmx's
 * own descriptors (rdmx_setting_get): the name, default, accepted values and help are
 * declared once, in rdmx. A parameter reaches rdmx only when the user set it, so RDMX_*
 * variables in the environment keep working. Choices are an MCA enum. Integers are
 * registered as strings and read by rdmx (plain decimal digits, within range), because
 * Open MPI reads a non-number given to an integer parameter as 0. */
typedef struct mtl_rdmx_param {
  rdmx_setting_desc_t desc;
  char* string_value; /* INT and TEXT: this parameter's own storage */
  int enum_value;     /* CHOICE: an index into desc.choices */
  int index;          /* MCA variable index, or -1 */
  char help[768];
  mca_base_var_enum_value_t* enum_values; /* CHOICE */
} mtl_rdmx_param_t;

/* Allocated once at registration and kept: the MCA variables use it as their storage
 * until Open MPI deregisters them, which it does after mca_close_component. */
static mtl_rdmx_param_t* mtl_rdmx_params = NULL;
static size_t mtl_rdmx_nparams = 0;

static int mtl_rdmx_priority = MTL_RDMX_DEFAULT_PRIORITY;
static int mtl_rdmx_priority_index = -1;

static mtl_rdmx_param_t* mtl_rdmx_param(const char* setting) {
  for (size_t i = 0; i < mtl_rdmx_nparams; ++i)
    if (0 == strcmp(mtl_rdmx_params[i].desc.name, setting)) return &mtl_rdmx_params[i];
  return NULL;
}

/* The value a user gave, as rdmx reads it. */
static const char* mtl_rdmx_param_text(const mtl_rdmx_param_t* p) {
  if (RDMX_SETTING_CHOICE == p->desc.type) return p->desc.choices[p->enum_value];
  return p->string_value ? p->string_value : "";
}

static int mtl_rdmx_register_param(mtl_rdmx_param_t* p) {
  const rdmx_setting_desc_t* d = &p->desc;
  snprintf(p->help, sizeof p->help, "%s. Accepted: %s. Default: %s. Sets %s", d->help, d->accepted,
           d->default_text[0] ? d->default_text : "\"\"", d->name);
  if (RDMX_SETTING_CHOICE == d->type) {
    size_t n = 0;
    while (d->choices[n]) ++n;
    p->enum_values = calloc(n + 1, sizeof *p->enum_values);
    if (NULL == p->enum_values) return OMPI_ERR_OUT_OF_RESOURCE;
    p->enum_value = 0;
    for (size_t i = 0; i < n; ++i) {
      p->enum_values[i].value = (int)i;
      p->enum_values[i].string = d->choices[i];
      if (0 == strcmp(d->choices[i], d->default_text)) p->enum_value = (int)i;
    }
    char enum_name[96];
    snprintf(enum_name, sizeof enum_name, "mtl_rdmx_%s", d->key);
    mca_base_var_enum_t* values = NULL;
    int ret = mca_base_var_enum_create(enum_name, p->enum_values, &values);
    if (OPAL_SUCCESS != ret) return ret;
    p->index = mca_base_component_var_register(&mca_mtl_rdmx_component.mtl_version, d->key, p->help,
                                               MCA_BASE_VAR_TYPE_INT, values, 0, 0, OPAL_INFO_LVL_3,
                                               MCA_BASE_VAR_SCOPE_READONLY, &p->enum_value);
    OBJ_RELEASE(values);
  } else {
    p->string_value = (char*)d->default_text; /* Open MPI keeps its own copy */
    p->index = mca_base_component_var_register(
        &mca_mtl_rdmx_component.mtl_version, d->key, p->help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0,
        OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &p->string_value);
  }
  return p->index < 0 ? p->index : OMPI_SUCCESS;
}

static int mtl_rdmx_component_register(void) {
  mtl_rdmx_priority = MTL_RDMX_DEFAULT_PRIORITY;
  mtl_rdmx_priority_index = mca_base_component_var_register(
      &mca_mtl_rdmx_component.mtl_version, "priority",
      "Selection priority of the rdmx MTL. Below ob1's 20, so it is used only when asked for "
      "(--mca pml cm --mca mtl rdmx) or when this is raised",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &mtl_rdmx_priority);
  size_t count = rdmx_setting_count();
  if (NULL == mtl_rdmx_params) mtl_rdmx_params = calloc(count, sizeof *mtl_rdmx_params);
  if (NULL == mtl_rdmx_params) return OMPI_ERR_OUT_OF_RESOURCE;
  mtl_rdmx_nparams = 0;
  for (size_t i = 0; i < count; ++i) {
    mtl_rdmx_param_t* p = &mtl_rdmx_params[mtl_rdmx_nparams];
    p->index = -1;
    if (RDMX_OK != rdmx_setting_get(i, &p->desc)) continue;
    if (p->desc.flags & RDMX_SETTING_STANDALONE) continue; /* rdmx_init_bootstrap only */
    if (p->desc.flags & RDMX_SETTING_SECRET) continue;     /* never an MCA parameter */
    int ret = mtl_rdmx_register_param(p);
    if (OMPI_SUCCESS != ret) return ret;
    ++mtl_rdmx_nparams;
  }
  return OMPI_SUCCESS;
}

static int mtl_rdmx_component_open(void) { return OMPI_SUCCESS; }

static int mtl_rdmx_component_close(void) { return OMPI_SUCCESS; }

static int mtl_rdmx_user_set(int index) {
  const void* value = NULL;
  mca_base_var_source_t source = MCA_BASE_VAR_SOURCE_DEFAULT;
  if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &value, &source, NULL)) return 0;
  return MCA_BASE_VAR_SOURCE_DEFAULT != source;
}

/* Opt-in: rdmx starts only when the "mtl" parameter names it (not as an exclusion) or
 * its priority was set, so an installed component costs other jobs nothing. */
static int mtl_rdmx_requested(void) {
  if (mtl_rdmx_user_set(mtl_rdmx_priority_index)) return 1;
  int index = mca_base_var_find("ompi", "mtl", NULL, NULL);
  char** value = NULL;
  if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &value, NULL, NULL) ||
      NULL == value || NULL == *value || '^' == (*value)[0])
    return 0;
  const char* s = *value;
  size_t n = strlen("rdmx");
  while (*s) {
    const char* end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    if (len == n && 0 == strncmp(s, "rdmx", n)) return 1;
    if (!end) break;
    s = end + 1;
  }
  return 0;
}

static int mtl_rdmx_component_query(mca_base_module_t** module, int* priority) {
  if (!mtl_rdmx_requested()) {
    *module = NULL;
    *priority = -1;
    return OMPI_ERR_NOT_AVAILABLE;
  }
  *priority = mtl_rdmx_priority;
  *module = (mca_base_module_t*)&ompi_mtl_rdmx.super;
  return OMPI_SUCCESS;
}

/* opal_show_help looks for help-mtl-rdmx.txt next to this component's .so. */
static void mtl_rdmx_add_help_dir(void) {
  Dl_info info;
  if (0 == dladdr((void*)&mca_mtl_rdmx_component, &info) || NULL == info.dli_fname) return;
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", info.dli_fname);
  char* slash = strrchr(dir, '/');
  if (NULL == slash) return;
  *slash = '\0';
  opal_show_help_add_dir(dir);
}

/* The parameters the user set, for rdmx_init; NULL with *bad set if rdmx refuses one. */
static rdmx_settings_t* mtl_rdmx_settings(mtl_rdmx_param_t** bad) {
  rdmx_settings_t* s = NULL;
  if (RDMX_OK != rdmx_settings_create(&s)) return NULL;
  for (size_t i = 0; i < mtl_rdmx_nparams; ++i) {
    mtl_rdmx_param_t* p = &mtl_rdmx_params[i];
    if (!mtl_rdmx_user_set(p->index)) continue;
    if (RDMX_OK != rdmx_settings_set(s, p->desc.name, mtl_rdmx_param_text(p))) {
      *bad = p;
      rdmx_settings_free(s);
      return NULL;
    }
  }
  return s;
}

static void mtl_rdmx_show_param_help(const mtl_rdmx_param_t* p, const char* why) {
  char mca_name[96];
  snprintf(mca_name, sizeof mca_name, "mtl_rdmx_%s", p->desc.key);
  opal_show_help(MTL_RDMX_HELP_FILE, "bad parameter", true, mca_name, mtl_rdmx_param_text(p), why,
                 ompi_process_info.nodename);
  /* Open MPI 4.1's mpirun loses a help message now and then when the rank exits right
   * after sending it (ORTE_ERROR_LOG: "Data unpack would read past end of buffer"); the
   * rank's own stderr is not lost, so the reason is also said there, in one line. */
  opal_output(0, "mtl rdmx: %s=\"%s\" is not accepted: %s", mca_name, mtl_rdmx_param_text(p), why);
}

/* rdmx_init failed: name the MCA parameter if one of ours caused it. */
static void mtl_rdmx_report_init_failure(int rc) {
  const char* why = rdmx_last_error(NULL);
  for (size_t i = 0; i < mtl_rdmx_nparams; ++i) {
    const mtl_rdmx_param_t* p = &mtl_rdmx_params[i];
    size_t n = strlen(p->desc.name);
    if (mtl_rdmx_user_set(p->index) && 0 == strncmp(why, p->desc.name, n) && '=' == why[n]) {
      mtl_rdmx_show_param_help(p, why);
      return;
    }
  }
  opal_show_help(MTL_RDMX_HELP_FILE, "init failed", true, ompi_process_info.nodename,
                 (int)ompi_proc_local()->super.proc_name.vpid, rdmx_strerror(rc), why);
}

/* rdmx's log lines go to this component's opal_output stream: errors and warnings
 * always (rdmx produces warnings only when asked, or for a misspelt RDMX_* variable),
 * connections and debug lines at the stream's verbosity. */
static void mtl_rdmx_log(int level, int32_t rank, const char* line, void* user) {
  int output = *(const int*)user;
  static const char* const names[] = {"error", "warning", "info", "debug"};
  const char* name = level >= 0 && level <= 3 ? names[level] : "log";
  if (level <= 1)
    opal_output(output, "rdmx[%d] %s: %s", (int)rank, name, line);
  else
    opal_output_verbose(level, output, "rdmx[%d] %s: %s", (int)rank, name, line);
}

/* The stream's verbosity: mtl_rdmx_verbose where set, else RDMX_VERBOSE (which rdmx
 * reads too), else 0. rdmx refuses a value that is not a number from 0 to 3. */
static int mtl_rdmx_verbosity(void) {
  const mtl_rdmx_param_t* p = mtl_rdmx_param("RDMX_VERBOSE");
  const char* text = NULL;
  if (NULL != p && mtl_rdmx_user_set(p->index))
    text = mtl_rdmx_param_text(p);
  else
    text = getenv("RDMX_VERBOSE");
  return NULL != text ? atoi(text) : 0;
}

static int mtl_rdmx_publish_address(void) {
  size_t len = 0;
  int rc = rdmx_address(ompi_mtl_rdmx.ctx, NULL, &len);
  if (RDMX_OK != rc) return mtl_rdmx_error(rc);
  void* addr = malloc(len);
  if (NULL == addr) return OMPI_ERR_OUT_OF_RESOURCE;
  rc = rdmx_address(ompi_mtl_rdmx.ctx, addr, &len);
  if (RDMX_OK != rc) {
    free(addr);
    return mtl_rdmx_error(rc);
  }
  int ret = OMPI_SUCCESS;
  OPAL_MODEX_SEND(ret, MTL_RDMX_MODEX_GLOBAL, &mca_mtl_rdmx_component.mtl_version, addr, len);
  free(addr);
  return ret;
}

/* Connections prove membership of the job with a secret (a MAC in their private data)
 * unless the user chose otherwise (mtl_rdmx_auth, RDMX_AUTH, or a secret of their own in
 * RDMX_JOB_SECRET). The secret is rank 0's: it publishes 128 random bits in the modex,
 * which every rank reads before its first connection (mtl_rdmx_add_peer). */
static void mtl_rdmx_choose_auth(rdmx_settings_t* s) {
  const mtl_rdmx_param_t* p = mtl_rdmx_param("RDMX_AUTH");
  bool chosen =
      (p && mtl_rdmx_user_set(p->index)) || getenv("RDMX_AUTH") || getenv("RDMX_JOB_SECRET");
  ompi_mtl_rdmx.secret_from_modex =
      !chosen && RDMX_OK == rdmx_settings_set(s, "RDMX_AUTH", "secret");
}

/* The value of an rdmx setting as the user gave it (MCA parameter, else environment),
 * or NULL where the user left it alone. */
static const char* mtl_rdmx_user_value(const char* name) {
  const mtl_rdmx_param_t* p = mtl_rdmx_param(name);
  return p && mtl_rdmx_user_set(p->index) ? mtl_rdmx_param_text(p) : getenv(name);
}

/* A job whose every rank is on this host needs no network fabric: with RDMX_FABRIC left
 * at auto, shared memory on and the host not split into RDMX_SHM_DOMAINs (a rank that
 * sets one expects to reach other domains through the network, so a job that splits
 * its host sets one on every rank), rdmx uses shared memory alone, as vader does.
 * Opening libfabric costs each rank tens of milliseconds of CPU in MPI_Init (its verbs
 * provider reads /proc/kallsyms twice, whatever provider is asked for), which among
 * oversubscribed ranks adds up to seconds. */
static void mtl_rdmx_choose_fabric(rdmx_settings_t* s) {
  const char* fabric = mtl_rdmx_user_value("RDMX_FABRIC");
  const char* shm = mtl_rdmx_user_value("RDMX_SHM");
  const char* domain = mtl_rdmx_user_value("RDMX_SHM_DOMAIN");
  bool all_local = (long)ompi_process_info.num_local_peers + 1 >= (long)ompi_process_info.num_procs;
  if (all_local && (NULL == fabric || 0 == strcmp(fabric, "auto")) &&
      (NULL == shm || 0 != strcmp(shm, "off")) && (NULL == domain || '\0' == domain[0]) &&
      RDMX_OK == rdmx_settings_set(s, "RDMX_FABRIC", "shm"))
    opal_output_verbose(2, ompi_mtl_rdmx.output,
                        "mtl rdmx: all %u ranks on this host: shared memory only (RDMX_FABRIC=shm)",
                        (unsigned)ompi_process_info.num_procs);
}

static int mtl_rdmx_publish_secret(void) {
  uint8_t secret[16];
  if (getrandom(secret, sizeof secret, 0) != (ssize_t)sizeof secret) return OMPI_ERROR;
  int ret = OMPI_SUCCESS;
  OPAL_MODEX_SEND_STRING(ret, MTL_RDMX_MODEX_GLOBAL, MTL_RDMX_SECRET_KEY, secret, sizeof secret);
  memset(secret, 0, sizeof secret);
  return ret;
}

/* Waiting ranks keep polling unless the user asked them to sleep (mtl_rdmx_idle or
 * RDMX_IDLE = sleep); where Open MPI was told the processor is shared
 * (mpi_yield_when_idle, set by itself for more processes than cores) it yields between
 * polls, since progress reports nothing done. Measured with bench/contention: among
 * yielding ranks, polling beats sleeping by about 20%; beside busy programs that do not
 * yield, sleeping halves the time. Polling also keeps libfabric tcp's completion queue
 * free of a wait object, which costs every message about 1 us. */
static void mtl_rdmx_choose_idle(rdmx_settings_t* s) {
  const mtl_rdmx_param_t* p = mtl_rdmx_param("RDMX_IDLE");
  const char* chosen =
      p && mtl_rdmx_user_set(p->index) ? mtl_rdmx_param_text(p) : getenv("RDMX_IDLE");
  if (NULL == chosen) {
    chosen = "spin";
    if (RDMX_OK != rdmx_settings_set(s, "RDMX_IDLE", chosen)) chosen = "sleep";
  }
  ompi_mtl_rdmx.sleep_when_idle = 0 == strcmp(chosen, "sleep");
}

/* Memory about to go back to the system, as opal's memory hooks see it: its patcher
 * catches munmap, mremap, madvise, brk and what free() returns, in every library of the
 * process, which rdmx's own interposition (librdmx's munmap and friends) cannot. */
static void mtl_rdmx_memory_released(void* buf, size_t length, void* cbdata, bool from_alloc) {
  (void)cbdata;
  (void)from_alloc;
  rdmx_memory_released(buf, length);
}

/* The registration cache pins pages on verbs, so rdmx keeps it off there by default
 * (RDMX_RCACHE=auto) unless every release of memory is reported. Where opal's hooks see
 * every release (munmap and free), they are forwarded, and auto becomes on. Open MPI
 * installs the hooks (the memory framework's patcher) only for a component that opens
 * the framework, as the ucx and ofi components do. */
static void mtl_rdmx_choose_rcache(rdmx_settings_t* s) {
  const int all = OPAL_MEMORY_FREE_SUPPORT | OPAL_MEMORY_MUNMAP_SUPPORT;
  int level = OPAL_SUCCESS == mca_base_framework_open(&opal_memory_base_framework, 0)
                  ? opal_mem_hooks_support_level()
                  : 0;
  mtl_rdmx_module_t* m = &ompi_mtl_rdmx;
  m->release_hook = (level & all) == all &&
                    OPAL_SUCCESS == opal_mem_hooks_register_release(mtl_rdmx_memory_released, NULL);
  const mtl_rdmx_param_t* p = mtl_rdmx_param("RDMX_RCACHE");
  const char* chosen =
      p && mtl_rdmx_user_set(p->index) ? mtl_rdmx_param_text(p) : getenv("RDMX_RCACHE");
  if (m->release_hook && (NULL == chosen || 0 == strcmp(chosen, "auto")))
    rdmx_settings_set(s, "RDMX_RCACHE", "on");
  opal_output_verbose(2, m->output,
                      "mtl rdmx: opal memory hooks support level %#x: %s; RDMX_RCACHE=%s", level,
                      m->release_hook ? "releases forwarded to rdmx" : "not used",
                      m->release_hook && (NULL == chosen || 0 == strcmp(chosen, "auto"))
                          ? "on"
                          : (chosen ? chosen : "auto"));
}

void mtl_rdmx_release_hook_off(void) {
  if (!ompi_mtl_rdmx.release_hook) return;
  opal_mem_hooks_unregister_release(mtl_rdmx_memory_released);
  ompi_mtl_rdmx.release_hook = false;
}

/* Called through mtl_rdmx_component_init (mtl_rdmx_compat.h), in this Open MPI's shape. */
mca_mtl_base_module_t* mtl_rdmx_init(bool enable_progress_threads, bool enable_mpi_threads) {
  mtl_rdmx_module_t* m = &ompi_mtl_rdmx;
  uint64_t cpu0 = mtl_rdmx_thread_cpu_ns();
  mtl_rdmx_add_help_dir();
  m->output = opal_output_open(NULL);
  opal_output_set_verbosity(m->output, mtl_rdmx_verbosity());
  rdmx_set_log_handler(mtl_rdmx_log, &m->output);

  mtl_rdmx_param_t* bad = NULL;
  rdmx_settings_t* settings = mtl_rdmx_settings(&bad);
  if (NULL == settings) {
    if (bad) mtl_rdmx_show_param_help(bad, rdmx_last_error(NULL));
    return NULL;
  }
  mtl_rdmx_choose_idle(settings);
  mtl_rdmx_choose_fabric(settings);
  mtl_rdmx_choose_auth(settings);
  mtl_rdmx_choose_rcache(settings);

  const opal_process_name_t* me = &ompi_proc_local()->super.proc_name;
  rdmx_init_params_t params;
  memset(&params, 0, sizeof params);
  params.rank = (int32_t)me->vpid;
  params.size = (int32_t)ompi_process_info.num_procs;
  params.fabric = NULL;
  params.job_key = (UINT64_C(0x52444d58) << 32) | me->jobid; /* "RDMX" | jobid */
  params.settings = settings;
  m->rank = params.rank;
  m->size = params.size;
  m->jobid = me->jobid;
  opal_output_verbose(2, m->output, "mtl rdmx: rdmx_init rank %d of %d", m->rank, m->size);
  int rc = rdmx_init(&params, &m->ctx);
  rdmx_settings_free(settings);
  if (RDMX_OK != rc) {
    mtl_rdmx_release_hook_off();
    mtl_rdmx_report_init_failure(rc);
    m->ctx = NULL;
    return NULL;
  }

  /* Completions reach Open MPI through the callback only: rdmx releases a request when
   * its callback returns, and the component never frees one (a valid rule: no error). */
  (void)rdmx_set_request_release(m->ctx, RDMX_RELEASE_AFTER_CALLBACK);

  int ret = mtl_rdmx_publish_address();
  if (OMPI_SUCCESS == ret && m->secret_from_modex && 0 == m->rank) ret = mtl_rdmx_publish_secret();
  if (OMPI_SUCCESS != ret) {
    opal_show_help(MTL_RDMX_HELP_FILE, "modex failed", true, ompi_process_info.nodename, m->rank,
                   "publishing this process's rdmx address", ret);
    rdmx_finalize(m->ctx);
    mtl_rdmx_release_hook_off();
    m->ctx = NULL;
    return NULL;
  }

  m->peer_added = calloc((size_t)m->size, 1);
  if (NULL == m->peer_added) {
    rdmx_finalize(m->ctx);
    mtl_rdmx_release_hook_off();
    m->ctx = NULL;
    return NULL;
  }
  m->peer_added[m->rank] = 1; /* sends to self never leave the process */
  OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
  m->done_head = m->done_tail = NULL;

  m->super.mtl_max_contextid = INT_MAX;
  m->super.mtl_max_tag = INT_MAX;
  m->super.mtl_request_size = sizeof(mtl_rdmx_request_t) - sizeof(mca_mtl_request_t);
  m->super.mtl_flags = 0;
  opal_progress_register(mtl_rdmx_progress);
  if (OMPI_SUCCESS != mtl_rdmx_ulfm_init(enable_progress_threads, enable_mpi_threads)) {
    m->super.mtl_finalize(&m->super);
    return NULL;
  }

  m->start_cpu_ns += mtl_rdmx_thread_cpu_ns() - cpu0;
  opal_output_verbose(1, m->output, "mtl rdmx: rank %d of %d on fabric %s (%s)", m->rank, m->size,
                      rdmx_fabric_name(m->ctx),
                      enable_mpi_threads ? "MPI_THREAD_MULTIPLE: rdmx calls serialised by a lock"
                                         : "single-threaded");
  return &m->super;
}
