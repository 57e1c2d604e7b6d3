#include <criterion/criterion.h>
Test(placeholder, buf) { cr_assert(1); }
