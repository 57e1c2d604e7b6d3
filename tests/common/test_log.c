#include <criterion/criterion.h>
Test(placeholder, log) { cr_assert(1); }
