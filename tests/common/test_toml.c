#include <criterion/criterion.h>
Test(placeholder, toml) { cr_assert(1); }
