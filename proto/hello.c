/*
 * hello.c: building and judging the Hello every connection starts with.
 *
 * Compatibility is decided by the protocol major alone: a minor bump only adds fields and
 * body cases, which an older peer skips or (for body cases) is never sent. The role check
 * lets an endpoint refuse peers that have no business there, such as a worker on the CLI's
 * socket. Values off the wire are range-checked before use as shift counts or indices.
 *
 * Pure functions, any thread.
 */
#include "proto/frame.h"

#include "gsched_config.h"

void gs_proto_hello_init(Gs__Hello *hello, Gs__Role role, const char *name)
{
    gs__hello__init(hello);
    hello->magic = GS_PROTO_MAGIC;
    hello->protocol_major = GS_PROTO_VERSION_MAJOR;
    hello->protocol_minor = GS_PROTO_VERSION_MINOR;
    hello->role = role;
    /* protobuf-c's string fields are not const; packing only reads them. */
    hello->name = (char *)(name != NULL ? name : "");
    hello->software_version = (char *)GSCHED_VERSION;
}

static bool role_valid(Gs__Role role)
{
    return role == GS__ROLE__ROLE_SCHEDULER || role == GS__ROLE__ROLE_WORKER ||
           role == GS__ROLE__ROLE_CLI;
}

int gs_proto_hello_check(const Gs__Hello *hello, uint32_t accept_roles)
{
    if (hello->magic != GS_PROTO_MAGIC)
        return GS_PROTO_ERR_HANDSHAKE;
    if (hello->protocol_major != GS_PROTO_VERSION_MAJOR)
        return GS_PROTO_ERR_VERSION;
    if (!role_valid(hello->role))
        return GS_PROTO_ERR_ROLE;
    if (accept_roles != 0 && !(accept_roles & GS_PROTO_ROLE_BIT(hello->role)))
        return GS_PROTO_ERR_ROLE;
    return 0;
}

const char *gs_proto_role_name(Gs__Role role)
{
    switch (role) {
    case GS__ROLE__ROLE_SCHEDULER:
        return "scheduler";
    case GS__ROLE__ROLE_WORKER:
        return "worker";
    case GS__ROLE__ROLE_CLI:
        return "cli";
    default:
        return "unknown";
    }
}
