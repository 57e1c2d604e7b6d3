/*
 * units.h: durations and sizes in the forms users type on command lines, in job files and in
 * #SBATCH lines, and their canonical printed forms.
 *
 * Durations (to whole seconds; Slurm's --time forms plus suffixed ones):
 *     "90"          minutes (a bare number means minutes, as in Slurm)
 *     "90:30"       minutes:seconds
 *     "1:30:00"     hours:minutes:seconds
 *     "2-12"        days-hours          "2-12:30"  days-hours:minutes
 *     "2-12:00:00"  days-hours:minutes:seconds
 *     "45s" "90m" "2h" "3d" "1w" "1h30m" "1.5h"   suffixed, combinable, fractions allowed
 *     "infinite" / "unlimited"                    GS_DURATION_INFINITE
 * Fields after the first in colon forms must be below 60 (hours below 24 after a day count).
 *
 * Sizes (to bytes): a number with an optional binary unit, K/M/G/T/P/E with optional "i" and
 * "B" ("64G", "64GB", "64GiB", "512MiB", "1.5T" all count in powers of 1024, as Slurm and
 * docker do), or "B" for bytes. A bare number is in the caller's default unit (Slurm's
 * --mem is in MiB, so callers parsing memory pass GS_MIB).
 *
 * Whitespace around the value is allowed, inside it not. Case of units is ignored.
 * Parsers return 0 or -EINVAL (malformed) / -ERANGE (overflow) and write the result only on
 * success. No allocation; thread-safe.
 */
#ifndef GS_UNITS_H
#define GS_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define GS_DURATION_INFINITE UINT64_MAX

#define GS_KIB (UINT64_C(1) << 10)
#define GS_MIB (UINT64_C(1) << 20)
#define GS_GIB (UINT64_C(1) << 30)
#define GS_TIB (UINT64_C(1) << 40)

int gs_parse_duration(const char *text, uint64_t *ret_seconds);
int gs_parse_size(const char *text, uint64_t default_unit, uint64_t *ret_bytes);

/*
 * Formats seconds the way squeue shows time limits: "M:SS", "H:MM:SS" or "D-HH:MM:SS";
 * GS_DURATION_INFINITE prints "UNLIMITED". Output is truncated to size; returns out.
 */
char *gs_format_duration(uint64_t seconds, char *out, size_t size);

/*
 * Formats bytes with the largest binary unit that keeps the value exact ("64G", "512M",
 * "1536K", "17B"), so that the printed form parses back to the same number. Returns out.
 */
char *gs_format_size(uint64_t bytes, char *out, size_t size);

#endif
