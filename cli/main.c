#include <stdio.h>
int main(void) { puts("gsched"); return 0; }
