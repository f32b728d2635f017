/*
 * Runs the scenarios of tests/test_contact_c.py once more in a plain program, for a build with
 * -fsanitize=address,undefined: the workspace carving and every array index of rodgen_contact.c
 * are exercised (compass walk in small output chunks, four-bar on its limit, redundant loops through
 * the least-norm solves).
 * Prints one status per scenario.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int h_cfd(int id, const double *p, const double *q, const double *qd, const double *u, const int *active,
    const double *target, double alpha, double beta, double *qdd, double *lambda);
int h_impact(int id, const double *p, const double *q, const double *qdm, const int *active, double *qdp,
    double *impulse, int *after, double *loss);
int h_simulate(int id, const double *p, const double *opts, const int *iopts, const double *y0, const int *active0,
    const int *disarmed0, long capacity, double *t_out, double *y_out, double *lam_out, int *act_out,
    double *u_out, long ecap, double *ev_t, int *ev_kind, int *ev_block, double *ev_imp, double *ev_loss,
    long *info);

static int run(int id, const double *p, const double *opts, const int *iopts, const double *y0, const int *a0,
    const int *d0, int nq, int nr, int nc)
{
    const long cap = 20000, ecap = 1000;
    long info[5];
    double *t = malloc(cap * sizeof *t), *y = malloc(cap * 2 * nq * sizeof *y), *lam = malloc(cap * nr * sizeof *lam);
    int *act = malloc(cap * nc * sizeof *act);
    double *u = malloc(cap * sizeof *u), *et = malloc(ecap * sizeof *et), *ei = malloc(ecap * 2 * sizeof *ei);
    double *el = malloc(ecap * sizeof *el);
    int *ek = malloc(ecap * sizeof *ek), *eb = malloc(ecap * sizeof *eb);
    int status = h_simulate(id, p, opts, iopts, y0, a0, d0, cap, t, y, lam, act, u, ecap, et, ek, eb, ei, el, info);
    printf("%d %ld %ld\n", status, info[0], info[1]);
    free(t);
    free(y);
    free(lam);
    free(act);
    free(u);
    free(et);
    free(ei);
    free(el);
    free(ek);
    free(eb);
    return status;
}

int main(void)
{
    const double cp[7] = {5.0, 10.0, 0.5, 0.5, 9.81, -0.05235987755982988, 0.8};
    const double cy[8] = {-0.21696077, 0.97618032, 0.2187, -0.32341976, 1.06579368, 0.23687777, -1.0918,
        -0.3772};
    const double copts[9] = {8.0, 5e-3, 1e-10, 10.0, 10.0, 0.02, 1e-4, 0.0, 0.0};
    const int ciopts[3] = {0, 1, 7};
    const int ca[2] = {1, 0}, cd[2] = {0, 1};
    const double fp[10] = {1.0, 1.0, 1.0, 1.0, 2.0, 1.5, 9.81, 1.2, 0.0, -0.3};
    /* a closed four-bar at th1 = 0.9 at rest (solved as in the Python test) */
    double fy[6] = {0.9, 0.0, 0.0, 0.0, 0.0, 0.0};
    const double fopts[9] = {2.0, 1e-3, 1e-10, 10.0, 10.0, 1e-6, 1e-8, -20.0, 0.0};
    const int fiopts[3] = {0, 3, 50};
    const int fa[3] = {1, 0, 0};
    double qdd[4], lam[5], qdp[4], imp[5], loss;
    int after[3];
    {
        const double l = 1.0, px = 1.2, py = 0.0;
        const double p1x = l * sin(fy[0]), p1y = -l * cos(fy[0]);
        const double dx = px - p1x, dy = py - p1y, dist = sqrt(dx * dx + dy * dy);
        const double along = dist / 2.0, across = sqrt(1.0 - along * along);
        const double p2x = p1x + along * dx / dist + across * dy / dist;
        const double p2y = p1y + along * dy / dist - across * dx / dist;
        fy[1] = atan2(p2x - p1x, -(p2y - p1y));
        fy[2] = atan2(px - p2x, -(py - p2y));
    }
    run(0, cp, copts, ciopts, cy, ca, cd, 4, 4, 2);
    run(1, fp, fopts, fiopts, fy, fa, 0, 3, 3, 2);
    run(2, fp, fopts, fiopts, fy, fa, 0, 3, 5, 3);
    printf("%d\n", h_cfd(2, fp, fy, fy + 3, fopts + 7, fa, 0, 10.0, 10.0, qdd, lam));
    printf("%d\n", h_impact(0, cp, cy, cy + 4, ca, qdp, imp, after, &loss));
    return 0;
}
