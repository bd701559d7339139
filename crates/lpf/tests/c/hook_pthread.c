/*
 * lpf_hook from existing threads: NT user threads call lpf_pthread_initialize
 * with their own pid, then lpf_hook twice with the same init object (each
 * thread passing its own args), a hook whose section fails (FATAL on every thread),
 * a third good hook, then lpf_pthread_finalize.
 */
#include <lpf/core.h>
#include <lpf/pthread.h>
#include <pthread.h>
#include "check.h"

enum { NT = 3 };

void allsum(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    CHECK(p == NT);
    CHECK(args.input_size == sizeof(int) && *(const int *)args.input == (int)s * (int)s);
    int mine = *(const int *)args.input, all[NT] = {0};
    lpf_memslot_t a, b;
    CHECK_RC(lpf_resize_memory_register(ctx, 2), LPF_SUCCESS);
    CHECK_RC(lpf_resize_message_queue(ctx, 2 * p), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    CHECK_RC(lpf_register_local(ctx, &mine, sizeof mine, &a), LPF_SUCCESS);
    CHECK_RC(lpf_register_global(ctx, all, sizeof all, &b), LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    for (lpf_pid_t k = 0; k < p; ++k)
        CHECK_RC(lpf_put(ctx, a, 0, k, b, s * sizeof(int), sizeof(int), LPF_MSG_DEFAULT),
                 LPF_SUCCESS);
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_SUCCESS);
    int sum = 0;
    for (int k = 0; k < NT; ++k) sum += all[k];
    *(int *)args.output = sum;
}

/* The last thread leaves at once: the others' sync and every lpf_hook return FATAL. */
void leaves(lpf_t ctx, lpf_pid_t s, lpf_pid_t p, lpf_args_t args) {
    (void)args;
    if (s == p - 1) return;
    CHECK_RC(lpf_sync(ctx, LPF_SYNC_DEFAULT), LPF_ERR_FATAL);
}

static int results[NT][2];

static void *thread_main(void *arg) {
    lpf_pid_t pid = (lpf_pid_t)(size_t)arg;
    lpf_init_t init = LPF_INIT_NONE;
    CHECK_RC(lpf_pthread_initialize(pid, NT, &init), LPF_SUCCESS);
    CHECK(init != LPF_INIT_NONE);
    for (int round = 0; round < 2; ++round) {
        int in = (int)(pid * pid);
        lpf_args_t args = {&in, sizeof in, &results[pid][round], sizeof(int), NULL, 0};
        CHECK_RC(lpf_hook(init, allsum, args), LPF_SUCCESS);
    }
    CHECK_RC(lpf_hook(init, leaves, LPF_NO_ARGS), LPF_ERR_FATAL);
    /* The init object stays usable after a failed section. */
    int in = (int)(pid * pid), again = -1;
    lpf_args_t args = {&in, sizeof in, &again, sizeof(int), NULL, 0};
    CHECK_RC(lpf_hook(init, allsum, args), LPF_SUCCESS);
    CHECK(again == 0 + 1 + 4);
    CHECK_RC(lpf_pthread_finalize(init), LPF_SUCCESS);
    return NULL;
}

int main(void) {
    pthread_t t[NT];
    for (size_t i = 0; i < NT; ++i)
        CHECK(pthread_create(&t[i], NULL, thread_main, (void *)i) == 0);
    for (size_t i = 0; i < NT; ++i) CHECK(pthread_join(t[i], NULL) == 0);
    for (int i = 0; i < NT; ++i)
        CHECK(results[i][0] == 0 + 1 + 4 && results[i][1] == 0 + 1 + 4);
    printf("hook_pthread ok\n");
    return 0;
}
