/*
 * crc32c.h: CRC-32C (Castagnoli, the polynomial of iSCSI and ext4), the checksum of dataset
 * shards and checkpoints. Incremental: start with 0, feed chunks in order, the result is
 * the CRC of their concatenation (crc32c("123456789") == 0xE3069283).
 */
#ifndef GS_CRC32C_H
#define GS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t gs_crc32c(uint32_t crc, const void *data, size_t len);

#endif
