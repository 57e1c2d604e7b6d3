/*
 * config_internal.h: what config.c (the reader of gsched.toml, common/config.h) and
 * its parts (config_policy.c: [priority] and [[account]]; config_qos.c: [[qos]];
 * config_switch.c: [[switch]]) share and no one else needs:
 * the policy readers config.c registers in its section tables, and the defaults and
 * cleanup it calls from gs_config_init / gs_config_release.
 */
#ifndef GS_CONFIG_INTERNAL_H
#define GS_CONFIG_INTERNAL_H

#include "common/config.h"
#include "common/schema.h"
#include "common/toml.h"

/*
 * The tables of [[name]] (v), each in turn: add(c) appends the element its keys are read
 * into (false: out of memory, which ends the walk), the table is read with section name's
 * keys, then after(c, t) (NULL: none) checks what it read. have is how many the
 * configuration holds already, max how many it may: a longer array, or anything but an
 * array of tables, is reported at its place.
 */
void gs_config_read_tables(struct gs_schema_ctx *c, const struct gs_toml_value *v, const char *name,
                           size_t have, size_t max, bool (*add)(struct gs_schema_ctx *c),
                           void (*after)(struct gs_schema_ctx *c, const struct gs_toml_value *t));
/* *items (size bytes each, *n of them) grown by a copy of init; NULL out of memory (then
 * c->enomem is set and *items is as it was). */
void *gs_config_append(struct gs_schema_ctx *c, void *items, size_t *n, size_t size,
                       const void *init);

/* The keys of section "priority" and of each [[account]] table (section "account"). */
extern const struct gs_schema_key gs_config_priority_keys[];
extern const struct gs_schema_key gs_config_account_keys[];

/* Root readers of [priority] and [[account]] (the latter also checks parents and cycles). */
void gs_config_read_priority(struct gs_schema_ctx *c, const struct gs_toml_value *v);
void gs_config_read_accounts(struct gs_schema_ctx *c, const struct gs_toml_value *v);

/* [[qos]] (config_qos.c): its keys, its root reader, and freeing what it read. */
extern const struct gs_schema_key gs_config_qos_keys[];
void gs_config_read_qos(struct gs_schema_ctx *c, const struct gs_toml_value *v);
void gs_config_qos_free(struct gs_config *cfg);
/* After the whole document is read: each name in a [[qos]]'s accounts (qos: the document's
 * qos array, NULL when none) is an [[account]], when any is configured. */
void gs_config_qos_check_accounts(struct gs_schema_ctx *c, const struct gs_toml_value *qos);
/* A user name as [[account]] users and [[qos]] users take it: 1-255 bytes of len, no
 * spaces, controls, ':', ',' or '/' (config_policy.c). */
bool gs_config_user_name_ok(const char *s, size_t len);

/* [[license]] (config_license.c): its keys, its root reader, and freeing what it read. */
extern const struct gs_schema_key gs_config_license_keys[];
void gs_config_read_licenses(struct gs_schema_ctx *c, const struct gs_toml_value *v);
void gs_config_licenses_free(struct gs_config *cfg);

/* [[switch]] (config_switch.c): its keys, its root reader, and after the whole document
 * is read, the index by node name gs_config_switch_of searches, which reports a node
 * under two switches. Freeing empties both. */
extern const struct gs_schema_key gs_config_switch_keys[];
void gs_config_read_switches(struct gs_schema_ctx *c, const struct gs_toml_value *v);
void gs_config_index_switches(struct gs_schema_ctx *c);
void gs_config_switches_free(struct gs_config *cfg);
/* One hostlist or a list of them at v (named path in reports), expanded and appended to
 * *nodes (NULL-terminated), *nnodes counting them. */
void gs_config_read_node_lists(struct gs_schema_ctx *c, const struct gs_toml_value *v,
                               const char *path, char ***nodes, size_t *nnodes);

/* [priority]'s defaults (weights 0, 7 days, billing 1 / 10 / 0). */
void gs_config_priority_defaults(struct gs_config_priority *p);
/* Frees cfg->accounts and empties it. */
void gs_config_accounts_free(struct gs_config *cfg);

#endif
