/*
 * pb_field_size.h: for tests that walk protobuf-c messages by their descriptors (the frame
 * round-trip test filling every field, the live daemon fuzzer mutating them): the bytes one
 * element of a field of that type takes in the generated C struct (a repeated field is an
 * array of them). protobuf-c keeps this to itself.
 */
#ifndef TESTS_PB_FIELD_SIZE_H
#define TESTS_PB_FIELD_SIZE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

static inline size_t pb_field_elem_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    default:
        return 4;
    }
}

#endif
