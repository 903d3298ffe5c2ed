/* Times mj_forward over a batch of states inside a compiled loop (no Python in the loop).

   usage: mujoco_harness MODEL.xml STATES.bin NSTATES REPEATS

   STATES.bin: NSTATES records of float64, each qpos (nq) then qvel (nv), native byte order.
   Each repeat copies every state into mjData and calls mj_forward once per state; the time of
   one repeat divided by NSTATES is one sample of ns per call (the two memcpy per state are
   included; they are a few ns). Wall-clock (CLOCK_MONOTONIC) and this thread's CPU time
   (CLOCK_THREAD_CPUTIME_ID: not inflated when other processes take the core) are both kept.
   Each repeat then times a single-state pass: state 0 loaded and mj_forward called NSTATES
   times (one state's cost with everything in cache, as a simulator stepping one model sees).
   Prints, one "key value..." per line:
     version, nq, nv, nefc, niter (solver iterations of state 0), ns_min, ns_median, ns_max,
     cpu_ns_min, cpu_ns_median, single_ns_min, single_ns_median,
     qacc0 (nv numbers: mjData.qacc for state 0, computed last, from a fresh mjData)
   Built by bench/mujoco_race.py against the mujoco wheel's headers and libmujoco. */

#include <mujoco/mujoco.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double clock_ns(clockid_t clock) {
  struct timespec t;
  clock_gettime(clock, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void load_state(const mjModel* m, mjData* d, const double* s) {
  memcpy(d->qpos, s, sizeof(mjtNum) * m->nq);
  memcpy(d->qvel, s + m->nq, sizeof(mjtNum) * m->nv);
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s MODEL.xml STATES.bin NSTATES REPEATS\n", argv[0]);
    return 2;
  }
  char err[1024] = "";
  mjModel* m = mj_loadXML(argv[1], NULL, err, sizeof(err));
  if (!m) {
    fprintf(stderr, "mj_loadXML: %s\n", err);
    return 2;
  }
  long n = atol(argv[3]);
  int repeats = atoi(argv[4]);
  if (n < 1 || repeats < 1) {
    fprintf(stderr, "NSTATES and REPEATS must be positive\n");
    return 2;
  }
  long width = m->nq + m->nv;
  double* states = (double*)malloc(sizeof(double) * width * n);
  double* samples = (double*)malloc(sizeof(double) * repeats);
  double* cpu = (double*)malloc(sizeof(double) * repeats);
  double* single = (double*)malloc(sizeof(double) * repeats);
  FILE* f = fopen(argv[2], "rb");
  if (!states || !samples || !cpu || !single || !f) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  size_t got = fread(states, sizeof(double), (size_t)(width * n), f);
  int extra = fgetc(f);
  fclose(f);
  if (got != (size_t)(width * n) || extra != EOF) {
    fprintf(stderr, "%s: expected exactly %ld doubles (nq=%d nv=%d, %ld states)\n", argv[2],
            width * n, m->nq, m->nv, n);
    return 2;
  }

  mjData* d = mj_makeData(m);
  for (long i = 0; i < n; i++) {  /* warm-up pass: caches, page faults, lazy allocations */
    load_state(m, d, states + i * width);
    mj_forward(m, d);
  }
  for (int r = 0; r < repeats; r++) {  /* the batch pass and the single-state pass alternate */
    double c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < n; i++) {
      load_state(m, d, states + i * width);
      mj_forward(m, d);
    }
    samples[r] = (clock_ns(CLOCK_MONOTONIC) - t0) / (double)n;
    cpu[r] = (clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)n;
    t0 = clock_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < n; i++) {
      load_state(m, d, states);
      mj_forward(m, d);
    }
    single[r] = (clock_ns(CLOCK_MONOTONIC) - t0) / (double)n;
  }
  qsort(samples, repeats, sizeof(double), cmp_double);
  qsort(cpu, repeats, sizeof(double), cmp_double);
  qsort(single, repeats, sizeof(double), cmp_double);
  mj_deleteData(d);

  d = mj_makeData(m);  /* state 0 from a fresh mjData: no history (warmstart) can leak in */
  load_state(m, d, states);
  mj_forward(m, d);

  printf("version %s\n", mj_versionString());
  printf("nq %d\nnv %d\nnefc %d\nniter %d\n", m->nq, m->nv, d->nefc, d->solver_niter[0]);
  printf("ns_min %.1f\nns_median %.1f\nns_max %.1f\n", samples[0], samples[repeats / 2],
         samples[repeats - 1]);
  printf("cpu_ns_min %.1f\ncpu_ns_median %.1f\n", cpu[0], cpu[repeats / 2]);
  printf("single_ns_min %.1f\nsingle_ns_median %.1f\n", single[0], single[repeats / 2]);
  printf("qacc0");
  for (int i = 0; i < m->nv; i++) printf(" %.17g", d->qacc[i]);
  printf("\n");

  mj_deleteData(d);
  mj_deleteModel(m);
  free(states);
  free(samples);
  free(cpu);
  free(single);
  return 0;
}
