/*
 * exo5_walk_controller.c: the virtual-constraint walking controller of examples/exo5_walk.py, in C.
 *
 * A rodgen_input_fn for rodgen.CController (see docs/controller.md): rodgen compiles this file with its C
 * runtime and calls exo5_walk_controller at every stage of the hybrid simulation, with no Python in the
 * loop. The Python class VirtualConstraints in exo5_walk.py is the readable reference; this is the same
 * law, step by step:
 *
 *   1. the stance leg (state[0]: 0 = foot_a, 1 = foot_b) changes when the swing foot is down (gap below
 *      1 mm), ahead of the stance foot, late in the step (phase past 0.7);
 *   2. the constrained dynamics of single support on the stance foot:
 *      M qdd + bias = B u + J^T lambda, J qdd = -Jdot qd (no drift correction);
 *   3. eight outputs y = C q - h(s), h a function of the phase s = (alpha0 - (theta + pi/2)) / (2 alpha0),
 *      theta = c q the stance leg's angle, are driven by input-output linearisation:
 *      Ch qdd = -kp y - kd ydot + h''(s) s'^2 thetadot^2,   Ch = C - (h'(s) s') c^T.
 *
 * The Python reference writes qdd = a0 + G u and solves (Ch G) u = ...; here the same equations are solved
 * at once, without M^-1: with N the rows spanning the left null space of B (N B = 0) and B+ a left inverse
 * of B (B+ B = I),
 *
 *      [ N M   -N J^T ] [ qdd    ]   [ -N bias                                        ]
 *      [ J      0     ] [ lambda ] = [ -Jdot qd                                       ]
 *      [ Ch     0     ]              [ -kp y - kd ydot + h''(s) s'^2 thetadot^2       ]
 *
 * (nq + 2 equations: nq - 8, 2 and 8 rows), then u = B+ (M qdd + bias - J^T lambda) (M qdd + bias - J^T lambda lies in the range of B since N of it
 * is 0). The system is the KKT system of step 2 with u eliminated; its solution is that of the reference
 * whenever the reference's Ch G and J M^-1 J^T are regular.
 *
 * The model is reached through the table of the context (c->model: sizes, routines, constraint blocks),
 * so nothing here names a coordinate: the output matrices and N, B+ come in the parameters, built by
 * VirtualConstraints.c_params() in exo5_walk.py (the input map of exo5_walk is constant: joint forces and
 * torques on its coordinates). Parameters (c->params):
 *
 *   [0] alpha0  [1] lean  [2] shorten  [3] kp  [4] kd  [5] l_thigh0  [6] l_shank0
 *   [7] block index of foot_a  [8] block index of foot_b
 *   [9 ...]  C_a (8 x nq, row-major), c_a (nq), C_b (8 x nq), c_b (nq)   (stance leg a, then b),
 *            N ((nq - 8) x nq), B+ (8 x nq)
 *
 * Returns 0, or 1 when the parameters do not fit the model (its sizes are fixed here: NQ coordinates,
 * NOUT inputs), 4 when the system above is singular (the contact rows or the output decoupling).
 * C99, <math.h> only, no allocation, no globals: the arrays are on the stack.
 */
#include <math.h>

#include "rodgen_runtime.h"

#define NOUT 8                   /* outputs = inputs */
#define HEAD 9
#define NQ 11                   /* coordinates of exo5_walk: fixed, so that the compiler unrolls the loops */
#define NK (NQ + 2)              /* unknowns qdd, lambda */

int exo5_walk_controller(void *context, double t, const double *y, double *u);

/* Solve A x = b (NK x NK, row-major, overwritten) by Gaussian elimination with partial pivoting; b -> x.
 * Columns of a row left of the diagonal are not updated once eliminated (they are not read again). */
static int solve_lu(double *A, double *b)
{
    const int n = NK;
    int i, j, k;
    for (k = 0; k < n; ++k) {
        int piv = k;
        double big = fabs(A[k * n + k]), r;
        for (i = k + 1; i < n; ++i) {
            if (fabs(A[i * n + k]) > big) {
                big = fabs(A[i * n + k]);
                piv = i;
            }
        }
        if (!(big > 0.0)) {
            return 1;
        }
        if (piv != k) {
            double tmp;
            for (j = k; j < n; ++j) {
                tmp = A[k * n + j];
                A[k * n + j] = A[piv * n + j];
                A[piv * n + j] = tmp;
            }
            tmp = b[k];
            b[k] = b[piv];
            b[piv] = tmp;
        }
        r = 1.0 / A[k * n + k];
        for (i = k + 1; i < n; ++i) {
            const double f = A[i * n + k] * r;
            if (f != 0.0) {
                for (j = k + 1; j < n; ++j) {
                    A[i * n + j] -= f * A[k * n + j];
                }
                b[i] -= f * b[k];
            }
        }
    }
    for (i = n - 1; i >= 0; --i) {
        double s = b[i];
        for (j = i + 1; j < n; ++j) {
            s -= A[i * n + j] * b[j];
        }
        b[i] = s / A[i * n + i];
    }
    return 0;
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    int i;
    for (i = 0; i < n; ++i) {
        s += a[i] * b[i];
    }
    return s;
}

int exo5_walk_controller(void *context, double t, const double *y, double *u)
{
    const rodgen_controller *c = (const rodgen_controller *)context;
    const rodgen_model *m = c->model;
    const int n = NQ, nr = m->nrows, nn = n - NOUT, nk = NK;
    const double *q = y, *qd = y + n, *par = c->params;
    const double alpha0 = par[0], lean = par[1], shorten = par[2], kp = par[3], kd = par[4];
    const double pi = 3.14159265358979323846;
    const double ds = -1.0 / (2.0 * alpha0);
    int i, j, k, blk[2], stance;
    (void)t;
    if (m->nq != NQ || m->nu != NOUT || c->nparams != HEAD + 2 * (NOUT + 1) * n + n * n || c->nstate < 1
        || m->nconstraints < 2) {
        return 1;
    }
    blk[0] = (int)par[7];
    blk[1] = (int)par[8];
    if (blk[0] < 0 || blk[0] >= m->nconstraints || blk[1] < 0 || blk[1] >= m->nconstraints) {
        return 1;
    }
    stance = c->state[0] != 0.0;
    {
        /* 1. the stance leg */
        double pos[nr > 0 ? nr : 1];
        const double *cs = par + HEAD + stance * (NOUT + 1) * n + NOUT * n;
        const int rs = m->constraints[blk[stance]].row, rw = m->constraints[blk[!stance]].row;
        const double phase = (alpha0 - (dot(cs, q, n) + pi / 2)) / (2.0 * alpha0);
        m->constraint_position(q, c->p, pos);
        if (pos[rw + 1] < 1e-3 && pos[rw] > pos[rs] && phase > 0.7) {
            stance = !stance;
            c->state[0] = stance;
        }
    }
    {
        const double *C = par + HEAD + stance * (NOUT + 1) * n, *cv = C + NOUT * n;
        const double *N = par + HEAD + 2 * (NOUT + 1) * n, *Bp = N + nn * n;
        const int row = m->constraints[blk[stance]].row;
        const double *J0, *J1;
        double M[n * n], h[n], Jall[(nr > 0 ? nr : 1) * n], ball[nr > 0 ? nr : 1];
        double K[nk * nk], x[nk], f[n];
        double sn, cn, hs[NOUT], dh[NOUT], ddh[NOUT], theta, thd;
        m->mass_matrix(q, c->p, M);
        m->bias(q, qd, c->p, h);
        m->constraint_jacobian(q, c->p, Jall);
        m->constraint_bias(q, qd, c->p, ball);
        J0 = Jall + row * n;
        J1 = J0 + n;
        /* 2. rows 0 .. nn-1: N (M qdd - J^T lambda) = -N bias (no inputs: N B = 0) */
        for (i = 0; i < nn; ++i) {
            const double *Ni = N + i * n;
            double *Ki = K + i * nk;
            double nh = 0.0, nj0 = 0.0, nj1 = 0.0;
            for (j = 0; j < n; ++j) {
                Ki[j] = 0.0;
            }
            for (k = 0; k < n; ++k) {
                const double a = Ni[k];
                if (a != 0.0) {
                    const double *Mk = M + k * n;
                    for (j = 0; j < n; ++j) {
                        Ki[j] += a * Mk[j];
                    }
                    nh += a * h[k];
                    nj0 += a * J0[k];
                    nj1 += a * J1[k];
                }
            }
            Ki[n] = -nj0;
            Ki[n + 1] = -nj1;
            x[i] = -nh;
        }
        /* rows nn, nn+1: the stance foot holds, J qdd = -Jdot qd */
        for (i = 0; i < 2; ++i) {
            const double *Ji = J0 + i * n;
            double *Ki = K + (nn + i) * nk;
            for (j = 0; j < n; ++j) {
                Ki[j] = Ji[j];
            }
            Ki[n] = 0.0;
            Ki[n + 1] = 0.0;
            x[nn + i] = -ball[row + i];
        }
        /* 3. the outputs' targets at the phase s and their s-derivatives; rows nn+2 ..: Ch qdd = v */
        theta = dot(cv, q, n);
        thd = dot(cv, qd, n);
        {
            const double s = (alpha0 - (theta + pi / 2)) / (2.0 * alpha0);
            sn = sin(pi * s);
            cn = cos(pi * s);
        }
        for (i = 0; i < NOUT; ++i) {
            dh[i] = 0.0;
            ddh[i] = 0.0;
        }
        hs[0] = pi / 2 - lean;
        hs[1] = -pi;
        hs[2] = 0.0;
        hs[3] = 0.0;
        hs[4] = par[5];
        hs[5] = par[6];
        hs[6] = par[5] - shorten * sn;
        hs[7] = par[6] - shorten * sn;
        dh[6] = dh[7] = -shorten * pi * cn;
        ddh[6] = ddh[7] = shorten * pi * pi * sn;
        for (i = 0; i < NOUT; ++i) {
            const double *Ci = C + i * n;
            double *Ki = K + (nn + 2 + i) * nk;
            const double yo = dot(Ci, q, n) - hs[i];
            const double yd = dot(Ci, qd, n) - dh[i] * ds * thd;
            for (k = 0; k < n; ++k) {                 /* row i of Ch = C - (h' s') c^T */
                Ki[k] = Ci[k] - dh[i] * ds * cv[k];
            }
            Ki[n] = 0.0;
            Ki[n + 1] = 0.0;
            x[nn + 2 + i] = -kp * yo - kd * yd + ddh[i] * ds * ds * thd * thd;
        }
        if (solve_lu(K, x) != 0) {
            return 4;
        }
        /* u = B+ (M qdd + bias - J^T lambda) */
        for (k = 0; k < n; ++k) {
            f[k] = h[k] + dot(M + k * n, x, n) - J0[k] * x[n] - J1[k] * x[n + 1];
        }
        for (j = 0; j < NOUT; ++j) {
            const double *Bj = Bp + j * n;
            double s = 0.0;
            for (k = 0; k < n; ++k) {
                if (Bj[k] != 0.0) {
                    s += Bj[k] * f[k];
                }
            }
            u[j] = s;
        }
    }
    return 0;
}
