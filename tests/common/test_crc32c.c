/*
 * test_crc32c.c: CRC-32C against its published check value and RFC 3720's test vectors, and
 * chunked feeding (every split point, so the 8-byte fast path and the byte tail agree).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "common/crc32c.h"

Test(crc32c, check_value_and_rfc3720_vectors)
{
    unsigned char zeros[32] = {0}, ones[32], inc[32];

    memset(ones, 0xFF, sizeof(ones));
    for (int i = 0; i < 32; i++)
        inc[i] = (unsigned char)i;
    cr_assert_eq(gs_crc32c(0, "123456789", 9), 0xE3069283u);
    cr_assert_eq(gs_crc32c(0, zeros, 32), 0x8A9136AAu);
    cr_assert_eq(gs_crc32c(0, ones, 32), 0x62A8AB43u);
    cr_assert_eq(gs_crc32c(0, inc, 32), 0x46DD794Eu);
    cr_assert_eq(gs_crc32c(0, "", 0), 0u);
}

Test(crc32c, chunks_give_the_crc_of_the_whole)
{
    unsigned char data[61];
    uint32_t whole;

    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (unsigned char)(i * 37 + 11);
    whole = gs_crc32c(0, data, sizeof(data));
    for (size_t cut = 0; cut <= sizeof(data); cut++) {
        uint32_t c = gs_crc32c(gs_crc32c(0, data, cut), data + cut, sizeof(data) - cut);

        cr_assert_eq(c, whole, "split at %zu", cut);
    }
}
