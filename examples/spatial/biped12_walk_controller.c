/*
 * biped12_walk_controller.c: the joint-level walking controller of the 12-joint biped
 * (examples/spatial/biped12_walk.py), a rodgen_input_fn for rodgen.CController (docs/controller.md).
 *
 * The gait is planned ahead of time (biped12_gait.py: inverse kinematics of a quasi-static CoM plan,
 * constrained inverse dynamics) and handed over as a table sampled every dt_table seconds; this law tracks it:
 *
 *     u_j = tau_ff_j(t) + kp_j (q_ref_j(t) - q_j) + kd_j (v_ref_j(t) - v_j),   j = the 12 joints,
 *
 * the table interpolated linearly in t (held at its ends), the gains of a leg those of a swing leg while
 * the table's gains code of the nearer sample says it swings or is being unloaded for its swing (0: both legs
 * stance gains, 1: the right leg swing gains, 2: the left leg), else those of a stance leg; the swing leg's
 * ankle pitch and roll references less the pelvis' pitch and roll (ZYX angles of its quaternion, the 4
 * coordinates before the joints'), so that the swing foot stays level and lands flat. Nothing here is
 * symbolic or model-specific beyond the layout of the state (the joints' coordinates and velocities are the last 12 of q and of v,
 * after the free pelvis'), so that another simulator of the mechanism (its MJCF twin in MuJoCo,
 * biped12_gait.mjcf) can call it too, with a rodgen_controller whose model is NULL.
 *
 * params: [N, dt_table, kp_stance (6), kd_stance (6), kp_swing (6), kd_swing (6), first joint index in q,
 *          in v, then N rows of q_ref (12), v_ref (12), tau_ff (12), gains code (1)]
 * y: [q (nq), v (nv)] of the simulated model; nq and nv come from the model's table when there is one,
 *    else nq = first_q + 12, nv = first_v + 12.
 */
#include <math.h>
#include <stddef.h>

#include "rodgen_runtime.h"

#define NJ 12
#define HEAD 28
#define ROW (3 * NJ + 1)

int biped12_walk_controller(void *context, double t, const double *y, double *u)
{
    const rodgen_controller *c = (const rodgen_controller *)context;
    const double *par = c->params;
    long n, k;
    int fq, fv, nq, j;
    double dt, s, w;
    const double *r0, *r1;
    if (c->nparams < HEAD) {
        return 1;
    }
    n = (long)par[0];
    dt = par[1];
    fq = (int)par[26];
    fv = (int)par[27];
    if (n < 2 || !(dt > 0.0) || c->nparams != HEAD + n * ROW || fq < 4 || fv < 0) {
        return 1;
    }
    nq = fq + NJ;
    if (c->model != NULL && (c->model->nq != nq || c->model->nu != NJ)) {
        return 1;
    }
    s = t / dt;
    if (s <= 0.0) {
        k = 0;
        w = 0.0;
    } else if (s >= (double)(n - 1)) {
        k = n - 2;
        w = 1.0;
    } else {
        k = (long)s;
        w = s - (double)k;
    }
    r0 = par + HEAD + k * ROW;
    r1 = r0 + ROW;
    {
        /* the gains code of the nearer sample: which leg has the swing gains */
        const int phase = (int)(w < 0.5 ? r0[3 * NJ] : r1[3 * NJ]);
        /* the pelvis' roll and pitch (its quaternion x y z w just before the joints; the plan keeps it level):
         * the swing foot's ankle takes them out, so that the foot comes down flat on the ground however the
         * pelvis leans */
        const double qx = y[fq - 4], qy = y[fq - 3], qz = y[fq - 2], qw = y[fq - 1];
        const double roll = atan2(2.0 * (qy * qz + qx * qw), 1.0 - 2.0 * (qx * qx + qy * qy));
        const double pitch = asin(fmax(-1.0, fmin(1.0, -2.0 * (qx * qz - qy * qw))));
        for (j = 0; j < NJ; ++j) {
            const int leg = j / 6, i = j % 6;           /* leg 0: left, 1: right */
            const int swing = (phase == 1 && leg == 1) || (phase == 2 && leg == 0);
            const double kp = par[2 + (swing ? 12 : 0) + i], kd = par[8 + (swing ? 12 : 0) + i];
            const double level = !swing ? 0.0 : i == 4 ? pitch : i == 5 ? roll : 0.0;
            const double qr = r0[j] + w * (r1[j] - r0[j]) - level;
            const double vr = r0[NJ + j] + w * (r1[NJ + j] - r0[NJ + j]);
            const double ff = r0[2 * NJ + j] + w * (r1[2 * NJ + j] - r0[2 * NJ + j]);
            u[j] = ff + kp * (qr - y[fq + j]) + kd * (vr - y[nq + fv + j]);
        }
    }
    return 0;
}
