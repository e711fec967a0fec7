/* fast_team.c: #included by fast_kernel.c (one translation unit), after the layout. */

/* --- two threads: a persistent worker runs part 1 of each split step while the caller
   runs part 0 (spin-waiting, then yielding); each part writes only its own outputs and
   both finish before the step returns, so the result is the one-thread result, bit for
   bit, whatever the thread count --- */

typedef void (*part_fn)(const Model *m, const Layer *L, int part);

static int n_threads = 1;
static atomic_int team_epoch, team_done, team_started, team_claimed;
static part_fn team_fn;
static const Model *team_m;
static const Layer *team_L;
static pthread_t team_thread;
static pthread_mutex_t team_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void relax(int64_t *spins) {
#ifdef __x86_64__
    __builtin_ia32_pause();
#endif
    if (++*spins > 4000) sched_yield();
}

static void *team_worker(void *arg) {
    (void)arg;
    int seen = 0;
    for (;;) {
        int64_t spins = 0;
        while (atomic_load_explicit(&team_epoch, memory_order_acquire) == seen) relax(&spins);
        seen = atomic_load_explicit(&team_epoch, memory_order_acquire);
        int expected = seen - 1;  /* part 1 of task `seen` is not claimed yet */
        if (!atomic_compare_exchange_strong(&team_claimed, &expected, seen)) continue;
        team_fn(team_m, team_L, 1);
        atomic_store_explicit(&team_done, seen, memory_order_release);
    }
    return NULL;
}

static void team_after_fork(void) { atomic_store(&team_started, 0); }

void qgpu_set_threads(int n) { n_threads = n > 1 ? 2 : 1; }

/* run fn's two parts (on two threads when they are on and the team is free): part 1 is
   claimed by whichever thread gets to it first, so a worker that the system has not
   scheduled is passed by (the caller runs both parts) instead of waited for */
static void run_parts(const Model *m, const Layer *L, part_fn fn, int parallel) {
    if (!parallel) { fn(m, L, 0); fn(m, L, 1); return; }
    team_fn = fn; team_m = m; team_L = L;
    int e = atomic_load_explicit(&team_epoch, memory_order_relaxed) + 1;
    atomic_store_explicit(&team_epoch, e, memory_order_release);
    fn(m, L, 0);
    int expected = e - 1;
    if (atomic_compare_exchange_strong(&team_claimed, &expected, e)) { fn(m, L, 1); return; }
    int64_t spins = 0;
    while (atomic_load_explicit(&team_done, memory_order_acquire) != e) relax(&spins);
}

static int team_begin(void) {  /* 1 when this call may use the worker */
    if (n_threads < 2 || pthread_mutex_trylock(&team_lock) != 0) return 0;
    if (!atomic_load(&team_started)) {
        static int registered = 0;
        if (!registered) { pthread_atfork(NULL, NULL, team_after_fork); registered = 1; }
        atomic_store(&team_epoch, 0);
        atomic_store(&team_done, 0);
        atomic_store(&team_claimed, 0);
        if (pthread_create(&team_thread, NULL, team_worker, NULL) != 0) {
            pthread_mutex_unlock(&team_lock);
            return 0;
        }
        pthread_detach(team_thread);
        atomic_store(&team_started, 1);
    }
    return 1;
}

static void team_end(int used) { if (used) pthread_mutex_unlock(&team_lock); }
