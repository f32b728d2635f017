/*
 * mujoco_walk3d.c: the 12-joint biped (examples/spatial/biped12.yaml) in MuJoCo, on its MJCF twin
 * (biped12_gait.mjcf), driven by the same C joint controller as rodgen's simulation
 * (examples/spatial/biped12_walk_controller.c). Built and run by bench_walk3d.py:
 *
 *     mujoco_walk3d MODEL.xml rk4|euler|rk4_hold|euler_hold|controller STEPS REPEAT [TRACE_EVERY]
 *
 * walk3d_data.h (written by bench_walk3d.py) holds the controller's parameters and the initial state in
 * MuJoCo's coordinates. The callback maps MuJoCo's (qpos, qvel) to rodgen's y = [q, v]:
 *   q = [x y z, quaternion x y z w, 12 joints]  (MuJoCo's quaternion is w x y z),
 *   v = [R^T v_world, omega_body, 12 joint rates] (MuJoCo's free joint's linear velocity is in the world
 *       frame, its angular velocity in the body frame; rodgen's (Pinocchio's) both in the body frame),
 * calls the controller (a rodgen_controller whose model is NULL) and sets its 12 joint torques as the 12
 * motors' controls (gear 1; the biped's inputs are the joint torques). Modes rk4 and euler call it as
 * MuJoCo's control callback (mjcb_control, at every stage of RK4); rk4_hold and euler_hold once before
 * each mj_step (zero-order hold). Prints per run the seconds of the STEPS mj_step calls, then once the
 * controller's calls, whether it failed, the pelvis' x, its lowest height and the final time. With
 * TRACE_EVERY > 0 the last run prints "p t x y z zl zr" (the pelvis' position, the heights of the sole
 * boxes' centres, 5 mm above their bottoms) every TRACE_EVERY steps to stderr. Mode
 * "controller" times the controller alone (seconds per call).
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mujoco/mujoco.h>

#include "rodgen_runtime.h"
#include "walk3d_data.h"

#define NQ 19
#define NV 18
#define NJ 12

int biped12_walk_controller(void *context, double t, const double *y, double *u);

static rodgen_controller ctx;
static double params[] = WALK_PARAMS;
static long calls;
static int failed;

/* rodgen's y = [q (19), v (18)] from MuJoCo's qpos (19), qvel (18) */
static void to_rodgen(const double *qpos, const double *qvel, double *y)
{
    const double w = qpos[3], x = qpos[4], yy = qpos[5], z = qpos[6];
    int i;
    y[0] = qpos[0];
    y[1] = qpos[1];
    y[2] = qpos[2];
    y[3] = x;
    y[4] = yy;
    y[5] = z;
    y[6] = w;
    for (i = 0; i < NJ; ++i) {
        y[7 + i] = qpos[7 + i];
    }
    {
        /* R (body to world) of the unit quaternion (w, x, y, z), row major */
        const double Rm[9] = {1 - 2 * (yy * yy + z * z), 2 * (x * yy - w * z), 2 * (x * z + w * yy),
                              2 * (x * yy + w * z), 1 - 2 * (x * x + z * z), 2 * (yy * z - w * x),
                              2 * (x * z - w * yy), 2 * (yy * z + w * x), 1 - 2 * (x * x + yy * yy)};
        for (i = 0; i < 3; ++i) {     /* v_body = R^T v_world */
            y[NQ + i] = Rm[0 * 3 + i] * qvel[0] + Rm[1 * 3 + i] * qvel[1] + Rm[2 * 3 + i] * qvel[2];
        }
    }
    for (i = 3; i < NV; ++i) {
        y[NQ + i] = qvel[i];
    }
}

static void control(const mjModel *m, mjData *d)
{
    double y[NQ + NV], u[NJ];
    int i;
    to_rodgen(d->qpos, d->qvel, y);
    ++calls;
    if (failed || biped12_walk_controller(&ctx, d->time, y, u) != 0) {
        failed = 1;
        for (i = 0; i < m->nu; ++i) {
            d->ctrl[i] = 0.0;
        }
        return;
    }
    for (i = 0; i < NJ; ++i) {
        d->ctrl[i] = u[i];
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
    static const double qpos0[NQ] = WALK_QPOS0, qvel0[NV] = WALK_QVEL0;
    char error[1000] = "";
    mjModel *m;
    mjData *d;
    long steps, k, trace = 0;
    int repeat, r, hold, sole_l, sole_r;
    double low = 1e300;
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL.xml rk4|euler|rk4_hold|euler_hold|controller STEPS REPEAT [TRACE]\n",
                argv[0]);
        return 2;
    }
    m = mj_loadXML(argv[1], NULL, error, sizeof error);
    if (m == NULL) {
        fprintf(stderr, "MuJoCo could not load %s: %s\n", argv[1], error);
        return 2;
    }
    if (m->nq != NQ || m->nv != NV || m->nu != NJ) {
        fprintf(stderr, "the MJCF has nq = %d, nv = %d, nu = %d; expected %d, %d, %d\n", m->nq, m->nv, m->nu, NQ,
                NV, NJ);
        return 2;
    }
    m->opt.integrator = strncmp(argv[2], "euler", 5) == 0 ? mjINT_EULER : mjINT_RK4;
    hold = strstr(argv[2], "_hold") != NULL;
    steps = atol(argv[3]);
    repeat = atoi(argv[4]);
    if (argc > 5) {
        trace = atol(argv[5]);
    }
    ctx.model = NULL;
    ctx.p = NULL;
    ctx.params = params;
    ctx.nparams = (long)(sizeof params / sizeof params[0]);
    ctx.state = NULL;
    ctx.nstate = 0;
    if (strcmp(argv[2], "controller") == 0) {
        /* the controller alone: STEPS calls at the initial state, seconds per call */
        double y[NQ + NV], u[NJ], t0, acc = 0.0;
        to_rodgen(qpos0, qvel0, y);
        for (r = 0; r < repeat; ++r) {
            t0 = now();
            for (k = 0; k < steps; ++k) {
                y[NQ + 6] += 1e-12;                 /* a new state every call */
                failed |= biped12_walk_controller(&ctx, 1e-4 * (double)(k % 10000), y, u);
                acc += u[0];
            }
            printf("%.9e\n", (now() - t0) / (double)steps);
        }
        printf("calls %ld failed %d x %.9g low 0 t 0\n", steps, failed, acc);
        mj_deleteModel(m);
        return 0;
    }
    d = mj_makeData(m);
    sole_l = mj_name2id(m, mjOBJ_GEOM, "sole_l");
    sole_r = mj_name2id(m, mjOBJ_GEOM, "sole_r");
    if (sole_l < 0 || sole_r < 0) {
        fprintf(stderr, "the MJCF has no geoms sole_l and sole_r\n");
        return 2;
    }
    mjcb_control = hold ? NULL : control;
    for (r = 0; r < repeat; ++r) {
        double t0, t1;
        const int tracing = trace > 0 && r == repeat - 1;
        mj_resetData(m, d);
        memcpy(d->qpos, qpos0, sizeof qpos0);
        memcpy(d->qvel, qvel0, sizeof qvel0);
        calls = 0;
        failed = 0;
        low = 1e300;
        if (tracing) {
            mj_kinematics(m, d);
            fprintf(stderr, "p %.9g %.12g %.12g %.12g %.12g %.12g\n", d->time, d->qpos[0], d->qpos[1], d->qpos[2],
                    d->geom_xpos[3 * sole_l + 2], d->geom_xpos[3 * sole_r + 2]);
        }
        t0 = now();
        for (k = 0; k < steps; ++k) {
            if (hold) {
                sample(m, d);   /* sampled at the start of the step, held over it */
            }
            mj_step(m, d);
            if (d->qpos[2] < low) {
                low = d->qpos[2];
            }
            if (tracing && (k + 1) % trace == 0) {   /* geom_xpos: of the step's last stage, close enough */
                mj_kinematics(m, d);
                fprintf(stderr, "p %.9g %.12g %.12g %.12g %.12g %.12g\n", d->time, d->qpos[0], d->qpos[1],
                        d->qpos[2], d->geom_xpos[3 * sole_l + 2], d->geom_xpos[3 * sole_r + 2]);
            }
        }
        t1 = now();
        printf("%.9e\n", t1 - t0);
    }
    printf("calls %ld failed %d x %.9g low %.9g t %.9g\n", calls, failed, d->qpos[0], low, d->time);
    mj_deleteData(d);
    mj_deleteModel(m);
    return 0;
}
