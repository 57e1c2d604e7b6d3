/*
 * refuse_mempolicy.h: for worker tests, makes set_mempolicy fail with EPERM in the calling
 * process and its children, as Docker's default seccomp profile does without CAP_SYS_NICE,
 * so the "policy refused" paths run without a hook in production code. Irreversible: call
 * it only in a test that runs in its own process (Criterion forks one per test).
 */
#ifndef TEST_REFUSE_MEMPOLICY_H
#define TEST_REFUSE_MEMPOLICY_H

void test_refuse_set_mempolicy(void);

#endif
