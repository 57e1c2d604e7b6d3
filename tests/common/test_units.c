#include <criterion/criterion.h>
Test(placeholder, units) { cr_assert(1); }
