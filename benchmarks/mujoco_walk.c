/*
 * mujoco_walk.c: the exo5 walker in MuJoCo, driven by the same C controller as rodgen's simulation
 * (examples/exo5_walk_controller.c), set as MuJoCo's control callback. Built and run by bench_walk.py:
 *
 *     mujoco_walk MODEL.xml rk4|euler|rk4_hold|euler_hold|controller STEPS REPEAT
 *
 * walk_data.h (written by bench_walk.py) holds the joint map s = T q of the expanded tree (MuJoCo's
 * hinge and slide coordinates s from rodgen's q), its inverse, the controller's parameters and the
 * initial state. The callback maps MuJoCo's (qpos, qvel) to rodgen's y = [q, qd], calls the controller,
 * and turns its inputs into joint forces: generalized forces Q = B(q) u in q are tau = T^-T Q in s (equal
 * power), one motor of gear 1 per joint. Modes rk4 and euler call it as MuJoCo's control callback
 * (mjcb_control: at every stage of RK4); rk4_hold and euler_hold call it once before each mj_step and
 * leave d->ctrl set over the step (zero-order hold, as a digital controller; no callback). Prints, per
 * run: seconds of the STEPS mj_step calls (and, with hold, of the controller's calls before them), then
 * once the controller's calls, its stance changes, whether it failed, the hip's x at the end, its lowest
 * height, and the final time. Mode "controller" times the controller alone (seconds per call).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mujoco/mujoco.h>

#include "exo5_walk.h"
#include "rodgen_runtime.h"
#include "walk_data.h"

#define N EXO5_WALK_NQ
#define NU EXO5_WALK_NU

int exo5_walk_controller(void *context, double t, const double *y, double *u);

/* MuJoCo's control callback has no context argument: the harness's state is static. */
static rodgen_controller ctx;
static double params[] = WALK_PARAMS;
static double state[1];
static double p[EXO5_WALK_NP] = EXO5_WALK_DEFAULT_PARAMETERS;
static const double Tinv[N * N] = WALK_TINV;    /* q = Tinv s */
static long calls, switches;
static int failed;

static void control(const mjModel *m, mjData *d)
{
    double y[2 * N], u[NU], B[N * NU], Q[N];
    int i, j;
    const double before = state[0];
    for (i = 0; i < N; ++i) {
        double a = 0.0, b = 0.0;
        for (j = 0; j < N; ++j) {
            a += Tinv[i * N + j] * d->qpos[j];
            b += Tinv[i * N + j] * d->qvel[j];
        }
        y[i] = a;
        y[N + i] = b;
    }
    ++calls;
    if (failed || exo5_walk_controller(&ctx, d->time, y, u) != 0) {
        failed = 1;
        for (i = 0; i < m->nu; ++i) {
            d->ctrl[i] = 0.0;
        }
        return;
    }
    if (state[0] != before) {
        ++switches;
    }
    exo5_walk_input_map(y, p, B);
    for (i = 0; i < N; ++i) {
        double s = 0.0;
        for (j = 0; j < NU; ++j) {
            s += B[i * NU + j] * u[j];
        }
        Q[i] = s;
    }
    for (i = 0; i < N; ++i) {          /* tau = Tinv^T Q */
        double s = 0.0;
        for (j = 0; j < N; ++j) {
            s += Tinv[j * N + i] * Q[j];
        }
        d->ctrl[i] = s;
    }
}

/* The held mode's call, through a pointer so that it stays a function of its own (callgrind counts it). */
static void (*volatile sample)(const mjModel *m, mjData *d) = control;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv)
{
    static const double qpos0[N] = WALK_QPOS0, qvel0[N] = WALK_QVEL0;
    char error[1000] = "";
    mjModel *m;
    mjData *d;
    long steps, k;
    int repeat, r, hold;
    double low = 1e300;
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL.xml rk4|euler|rk4_hold|euler_hold|controller STEPS REPEAT\n", argv[0]);
        return 2;
    }
    m = mj_loadXML(argv[1], NULL, error, sizeof error);
    if (m == NULL) {
        fprintf(stderr, "MuJoCo could not load %s: %s\n", argv[1], error);
        return 2;
    }
    m->opt.integrator = strncmp(argv[2], "euler", 5) == 0 ? mjINT_EULER : mjINT_RK4;
    hold = strstr(argv[2], "_hold") != NULL;
    steps = atol(argv[3]);
    repeat = atoi(argv[4]);
    if (strcmp(argv[2], "controller") == 0) {
        /* the controller alone: STEPS calls at the initial state (the first stance), seconds per call */
        double y[2 * N], u[NU], t0, acc = 0.0;
        int i, j;
        for (i = 0; i < N; ++i) {
            y[i] = y[N + i] = 0.0;
            for (j = 0; j < N; ++j) {
                y[i] += Tinv[i * N + j] * qpos0[j];
                y[N + i] += Tinv[i * N + j] * qvel0[j];
            }
        }
        ctx.model = exo5_walk_model();
        ctx.p = p;
        ctx.params = params;
        ctx.nparams = (long)(sizeof params / sizeof params[0]);
        ctx.state = state;
        ctx.nstate = 1;
        for (r = 0; r < repeat; ++r) {
            state[0] = 0.0;
            t0 = now();
            for (k = 0; k < steps; ++k) {
                y[N] += 1e-12;                      /* a new state every call */
                failed |= exo5_walk_controller(&ctx, 0.0, y, u);
                acc += u[0];
            }
            printf("%.9e\n", (now() - t0) / (double)steps);
        }
        printf("calls %ld switches 0 failed %d x %.9g low 0 t 0\n", steps, failed, acc);
        mj_deleteModel(m);
        return 0;
    }
    if (m->nq != N || m->nv != N || m->nu != N) {
        fprintf(stderr, "the MJCF has nq = %d, nu = %d; expected %d\n", m->nq, m->nu, N);
        return 2;
    }
    d = mj_makeData(m);
    ctx.model = exo5_walk_model();
    ctx.p = p;
    ctx.params = params;
    ctx.nparams = (long)(sizeof params / sizeof params[0]);
    ctx.state = state;
    ctx.nstate = 1;
    mjcb_control = hold ? NULL : control;
    for (r = 0; r < repeat; ++r) {
        double t0, t1;
        mj_resetData(m, d);
        memcpy(d->qpos, qpos0, sizeof qpos0);
        memcpy(d->qvel, qvel0, sizeof qvel0);
        state[0] = 0.0;
        calls = switches = 0;
        failed = 0;
        low = 1e300;
        t0 = now();
        for (k = 0; k < steps; ++k) {
            if (hold) {
                sample(m, d);   /* sampled at the start of the step, held over it */
            }
            mj_step(m, d);
            if (d->qpos[1] < low) {
                low = d->qpos[1];
            }
        }
        t1 = now();
        printf("%.9e\n", t1 - t0);
    }
    printf("calls %ld switches %ld failed %d x %.9g low %.9g t %.9g\n", calls, switches, failed, d->qpos[0], low,
           d->time);
    mj_deleteData(d);
    mj_deleteModel(m);
    return 0;
}
