/*
 * crc32c.c: table-driven CRC-32C, eight bytes per step ("slicing by 8"): eight 256-entry
 * tables, built once on first use, let each 64-bit word be folded with eight lookups instead
 * of eight dependent shifts. Fast enough (GB/s) that checksumming a shard or a checkpoint
 * costs little next to the disk; the tables are the only state, and they are written before
 * any reader can see them (pthread_once).
 */
#include "common/crc32c.h"

#include <pthread.h>

#define POLY 0x82F63B78u /* 0x1EDC6F41 bit-reversed */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;

        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (POLY & (0u - (c & 1u)));
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
    }
}

uint32_t gs_crc32c(uint32_t crc, const void *data, size_t len)
{
    const unsigned char *p = data;

    pthread_once(&table_once, build_tables);
    crc = ~crc;
    for (; len >= 8; p += 8, len -= 8) {
        uint32_t lo =
            (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        uint32_t hi =
            (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

        lo ^= crc;
        crc = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
              table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
              table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
    }
    while (len-- > 0)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFF];
    return ~crc;
}
