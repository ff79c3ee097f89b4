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

#include "mtl_rdmx.h"
#include "ompi/mca/rte/rte.h"
#include "ompi/proc/proc.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/pmix/pmix.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"

static int mtl_rdmx_component_register(void);
static int mtl_rdmx_component_open(void);
static int mtl_rdmx_component_close(void);
static int mtl_rdmx_component_query(mca_base_module_t** module, int* priority);
static mca_mtl_base_module_t* mtl_rdmx_component_init(bool enable_progress_threads,
                                                      bool enable_mpi_threads);

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

/* One MCA parameter per RDMX_* setting. Its default and help come from rdmx itself
 * (rdmx_print_settings); it reaches rdmx only when the user set it, so RDMX_* variables
 * in the environment keep working. */
typedef struct mtl_rdmx_param {
  const char* name;    /* mtl_rdmx_<name> */
  const char* setting; /* RDMX_<SETTING> */
  int is_string;
  int int_value;
  char* string_value;
  int index; /* MCA variable index, or -1 */
  char help[512];
} mtl_rdmx_param_t;

static mtl_rdmx_param_t mtl_rdmx_params[] = {
    {"fabric", "RDMX_FABRIC", 1, 0, NULL, -1, ""},
    {"eager_limit", "RDMX_EAGER_LIMIT", 0, 0, NULL, -1, ""},
    {"rndv_chunk", "RDMX_RNDV_CHUNK", 0, 0, NULL, -1, ""},
    {"max_rd_atomic", "RDMX_MAX_RD_ATOMIC", 0, 0, NULL, -1, ""},
    {"retry_count", "RDMX_RETRY_COUNT", 0, 0, NULL, -1, ""},
    {"rnr_retry", "RDMX_RNR_RETRY", 0, 0, NULL, -1, ""},
    {"srq", "RDMX_SRQ", 0, 0, NULL, -1, ""},
    {"verbose", "RDMX_VERBOSE", 0, 0, NULL, -1, ""},
};
#define MTL_RDMX_NPARAMS (sizeof(mtl_rdmx_params) / sizeof(mtl_rdmx_params[0]))

static int mtl_rdmx_priority = MTL_RDMX_DEFAULT_PRIORITY;
static int mtl_rdmx_priority_index = -1;
static char mtl_rdmx_fabric_default[64] = "auto";

static mtl_rdmx_param_t* mtl_rdmx_param(const char* setting) {
  for (size_t i = 0; i < MTL_RDMX_NPARAMS; ++i)
    if (0 == strcmp(mtl_rdmx_params[i].setting, setting)) return &mtl_rdmx_params[i];
  return NULL;
}

/* Fills each parameter's default and help from rdmx's own list of settings, one line
 * each: "NAME default VALUE description (accepted values)". */
static void mtl_rdmx_load_defaults(void) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (NULL == f) return;
  rdmx_print_settings(f);
  fclose(f);
  for (char* line = strtok(text, "\n"); NULL != line; line = strtok(NULL, "\n")) {
    char name[64], def[64];
    int used = 0;
    if (2 != sscanf(line, "%63s default %63s %n", name, def, &used) || 0 == used) continue;
    mtl_rdmx_param_t* p = mtl_rdmx_param(name);
    if (NULL == p) continue;
    if (p->is_string) {
      snprintf(mtl_rdmx_fabric_default, sizeof mtl_rdmx_fabric_default, "%s", def);
    } else {
      p->int_value = atoi(def);
    }
    snprintf(p->help, sizeof p->help, "Sets %s: %s", name, line + used);
  }
  free(text);
}

static int mtl_rdmx_component_register(void) {
  mtl_rdmx_load_defaults();
  mtl_rdmx_priority = MTL_RDMX_DEFAULT_PRIORITY;
  mtl_rdmx_priority_index = mca_base_component_var_register(
      &mca_mtl_rdmx_component.mtl_version, "priority",
      "Selection priority of the rdmx MTL. Below ob1's 20, so it is used only when asked for "
      "(--mca pml cm --mca mtl rdmx) or when this is raised",
      MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_9, MCA_BASE_VAR_SCOPE_READONLY,
      &mtl_rdmx_priority);
  for (size_t i = 0; i < MTL_RDMX_NPARAMS; ++i) {
    mtl_rdmx_param_t* p = &mtl_rdmx_params[i];
    if ('\0' == p->help[0]) snprintf(p->help, sizeof p->help, "Sets %s", p->setting);
    if (p->is_string) {
      p->string_value = mtl_rdmx_fabric_default;
      p->index = mca_base_component_var_register(
          &mca_mtl_rdmx_component.mtl_version, p->name, p->help, MCA_BASE_VAR_TYPE_STRING, NULL, 0,
          0, OPAL_INFO_LVL_3, MCA_BASE_VAR_SCOPE_READONLY, &p->string_value);
    } else {
      p->index = mca_base_component_var_register(
          &mca_mtl_rdmx_component.mtl_version, p->name, p->help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0,
          OPAL_INFO_LVL_4, MCA_BASE_VAR_SCOPE_READONLY, &p->int_value);
    }
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

/* "RDMX_X=v,..." for the parameters the user set; NULL with *bad set if a value cannot
 * be passed on. */
static char* mtl_rdmx_settings_string(mtl_rdmx_param_t** bad) {
  size_t cap = 64, len = 0;
  char* out = calloc(1, cap);
  if (NULL == out) return NULL;
  for (size_t i = 0; i < MTL_RDMX_NPARAMS; ++i) {
    mtl_rdmx_param_t* p = &mtl_rdmx_params[i];
    if (!mtl_rdmx_user_set(p->index)) continue;
    char item[320];
    if (p->is_string) {
      const char* v = p->string_value ? p->string_value : "";
      if (strchr(v, ',') || strlen(v) > 256) {
        *bad = p;
        free(out);
        return NULL;
      }
      snprintf(item, sizeof item, "%s%s=%s", len ? "," : "", p->setting, v);
    } else {
      snprintf(item, sizeof item, "%s%s=%d", len ? "," : "", p->setting, p->int_value);
    }
    size_t n = strlen(item);
    if (len + n + 1 > cap) {
      cap = 2 * (len + n + 1);
      char* grown = realloc(out, cap);
      if (NULL == grown) {
        free(out);
        return NULL;
      }
      out = grown;
    }
    memcpy(out + len, item, n + 1);
    len += n;
  }
  return out;
}

static void mtl_rdmx_show_param_help(const mtl_rdmx_param_t* p, const char* why) {
  char value[64];
  if (p->is_string)
    snprintf(value, sizeof value, "%s", p->string_value ? p->string_value : "");
  else
    snprintf(value, sizeof value, "%d", p->int_value);
  char mca_name[96];
  snprintf(mca_name, sizeof mca_name, "mtl_rdmx_%s", p->name);
  opal_show_help(MTL_RDMX_HELP_FILE, "bad parameter", true, mca_name, value, why,
                 ompi_process_info.nodename);
}

/* rdmx_init failed: name the MCA parameter if one of ours caused it. */
static void mtl_rdmx_report_init_failure(int rc) {
  const char* why = rdmx_last_error(NULL);
  for (size_t i = 0; i < MTL_RDMX_NPARAMS; ++i) {
    const mtl_rdmx_param_t* p = &mtl_rdmx_params[i];
    size_t n = strlen(p->setting);
    if (mtl_rdmx_user_set(p->index) && 0 == strncmp(why, p->setting, n) && '=' == why[n]) {
      mtl_rdmx_show_param_help(p, why);
      return;
    }
  }
  opal_show_help(MTL_RDMX_HELP_FILE, "init failed", true, ompi_process_info.nodename,
                 (int)ompi_proc_local()->super.proc_name.vpid, rdmx_strerror(rc), why);
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
  OPAL_MODEX_SEND(ret, OPAL_PMIX_GLOBAL, &mca_mtl_rdmx_component.mtl_version, addr, len);
  free(addr);
  return ret;
}

/* Whether Open MPI was told the processor is shared: mpi_yield_when_idle, which it also
 * sets when a node runs more processes than it has cores. */
static bool mtl_rdmx_processor_shared(void) {
  int index = mca_base_var_find("ompi", "mpi", NULL, "yield_when_idle");
  const void* value = NULL;
  if (index < 0 || OPAL_SUCCESS != mca_base_var_get_value(index, &value, NULL, NULL) || !value)
    return false;
  return *(const bool*)value;
}

/* Unless the user chose (RDMX_IDLE), waiting ranks sleep on the fabric only where the
 * processor is shared: over libfabric the wait object costs every message ~1 us. */
static char* mtl_rdmx_add_idle_setting(char* settings) {
  const char* chosen = getenv("RDMX_IDLE");
  if (chosen) {
    ompi_mtl_rdmx.sleep_when_idle = 0 == strcmp(chosen, "sleep");
    return settings;
  }
  ompi_mtl_rdmx.sleep_when_idle = mtl_rdmx_processor_shared();
  const char* item = ompi_mtl_rdmx.sleep_when_idle ? "RDMX_IDLE=sleep" : "RDMX_IDLE=spin";
  size_t len = strlen(settings), n = strlen(item);
  char* grown = realloc(settings, len + n + 2);
  if (NULL == grown) return settings;
  snprintf(grown + len, n + 2, "%s%s", len ? "," : "", item);
  return grown;
}

static mca_mtl_base_module_t* mtl_rdmx_component_init(bool enable_progress_threads,
                                                      bool enable_mpi_threads) {
  (void)enable_progress_threads;
  mtl_rdmx_module_t* m = &ompi_mtl_rdmx;
  mtl_rdmx_add_help_dir();
  m->output = opal_output_open(NULL);
  opal_output_set_verbosity(m->output, mtl_rdmx_param("RDMX_VERBOSE")->int_value);

  mtl_rdmx_param_t* bad = NULL;
  char* settings = mtl_rdmx_settings_string(&bad);
  if (NULL == settings) {
    if (bad) mtl_rdmx_show_param_help(bad, "the value must not contain ',' (at most 256 bytes)");
    return NULL;
  }
  settings = mtl_rdmx_add_idle_setting(settings);

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
  opal_output_verbose(2, m->output, "mtl rdmx: rdmx_init rank %d of %d, settings \"%s\"", m->rank,
                      m->size, settings);
  int rc = rdmx_init(&params, &m->ctx);
  free(settings);
  if (RDMX_OK != rc) {
    mtl_rdmx_report_init_failure(rc);
    m->ctx = NULL;
    return NULL;
  }

  int ret = mtl_rdmx_publish_address();
  if (OMPI_SUCCESS != ret) {
    opal_show_help(MTL_RDMX_HELP_FILE, "modex failed", true, ompi_process_info.nodename, m->rank,
                   "publishing this process's rdmx address", ret);
    rdmx_finalize(m->ctx);
    m->ctx = NULL;
    return NULL;
  }

  m->peer_added = calloc((size_t)m->size, 1);
  if (NULL == m->peer_added) {
    rdmx_finalize(m->ctx);
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

  opal_output_verbose(1, m->output, "mtl rdmx: rank %d of %d on fabric %s (%s)", m->rank, m->size,
                      rdmx_fabric_name(m->ctx),
                      enable_mpi_threads ? "MPI_THREAD_MULTIPLE: rdmx calls serialised by a lock"
                                         : "single-threaded");
  return &m->super;
}
