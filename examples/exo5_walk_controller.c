/*
 * exo5_walk_controller.c: the virtual-constraint walking controller of examples/exo5_walk.py, in C.
 *
 * A rodgen_input_fn for rodgen.CController (see docs/controller.md): rodgen compiles this file with its C
 * runtime and calls exo5_walk_controller at every stage of the hybrid simulation, with no Python in the
 * loop. The Python class VirtualConstraints in exo5_walk.py is the readable reference; this is the same
 * law, step by step:
 *
 *   1. the stance leg (state[0]: 0 = foot_a, 1 = foot_b) changes when the swing foot is down (gap below
 *      1 mm), ahead of the stance foot, late in the step (phase past 0.7); a second, optional state entry
 *      other than 0 holds the stance leg instead (one step as one smooth law, for rodgen.gait.stride);
 *   2. the constrained dynamics of single support on the stance foot:
 *      M qdd + bias = B u + J^T lambda, J qdd = -Jdot qd (no drift correction);
 *   3. eight outputs y = C q - h(s), h a function of the phase s = (alpha0 - (theta + pi/2)) / (2 alpha0),
 *      theta = c q the stance leg's angle, are driven by input-output linearisation:
 *      Ch qdd = -kp y - kd ydot + h''(s) s'^2 thetadot^2,   Ch = C - (h'(s) s') c^T.
 *
 * The Python reference writes qdd = a0 + G u and solves (Ch G) u = ...; here the same equations are solved
 * without M^-1. With N the rows spanning the left null space of B (N B = 0; three for the planar floating
 * base) and B+ a left inverse of B (B+ B = I), step 2 is N (M qdd + bias - J^T lambda) = 0 and
 * u = B+ (M qdd + bias - J^T lambda). Of the three rows N, the combination w^T N with w orthogonal to both
 * columns of N J^T (their cross product) is free of lambda, so qdd solves the nq x nq system
 *
 *      [ w^T N M ]         [ -w^T N bias                                 ]
 *      [ J       ] qdd  =  [ -Jdot qd                                    ]
 *      [ Ch      ]         [ -kp y - kd ydot + h''(s) s'^2 thetadot^2    ]
 *
 * then lambda solves (N J^T) lambda = N (M qdd + bias) (three consistent equations, by their normal
 * equations) and u follows. Its solution is that of the reference whenever the reference's Ch G and
 * J M^-1 J^T are regular.
 *
 * The model is reached through the table of the context (c->model: sizes, routines, constraint blocks),
 * so nothing here names a coordinate: the output matrices and N, B+ come in the parameters, built by
 * VirtualConstraints.c_params() in exo5_walk.py (the input map of exo5_walk is constant: joint forces and
 * torques on its coordinates). Parameters (c->params):
 *
 *   [0] alpha0  [1] lean  [2] shorten  [3] kp  [4] kd  [5] l_thigh0  [6] l_shank0
 *   [7] block index of foot_a  [8] block index of foot_b
 *   [9 ...]  C_a (8 x nq, row-major), c_a (nq), C_b (8 x nq), c_b (nq)   (stance leg a, then b),
 *            N (3 x nq), B+ (8 x nq)
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
#define NN (NQ - NOUT)           /* rows of N: 3, the unactuated directions of the planar floating base */

int exo5_walk_controller(void *context, double t, const double *y, double *u);

/* Solve A x = b (NQ x NQ, row-major, overwritten) by Gaussian elimination with partial pivoting; b -> x.
 * Columns of a row left of the diagonal are not updated once eliminated (they are not read again). */
static int solve_lu(double *A, double *b)
{
    const int n = NQ;
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
    const int n = NQ, nr = m->nrows;
    const double *q = y, *qd = y + n, *par = c->params;
    const double alpha0 = par[0], lean = par[1], shorten = par[2], kp = par[3], kd = par[4];
    const double pi = 3.14159265358979323846;
    const double ds = -1.0 / (2.0 * alpha0);
    int i, j, k, blk[2], stance;
    (void)t;
    if (m->nq != NQ || m->nu != NOUT || c->nparams != HEAD + 2 * (NOUT + 1) * n + (NN + NOUT) * n || c->nstate < 1
        || m->nconstraints < 2) {
        return 1;
    }
    blk[0] = (int)par[7];
    blk[1] = (int)par[8];
    if (blk[0] < 0 || blk[0] >= m->nconstraints || blk[1] < 0 || blk[1] >= m->nconstraints) {
        return 1;
    }
    stance = c->state[0] != 0.0;
    if (c->nstate < 2 || c->state[1] == 0.0) {
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
        const double *N = par + HEAD + 2 * (NOUT + 1) * n, *Bp = N + NN * n;
        const int row = m->constraints[blk[stance]].row;
        const double *J0, *J1;
        double M[NQ * NQ], h[NQ], Jall[(nr > 0 ? nr : 1) * NQ], ball[nr > 0 ? nr : 1];
        double NM[NN * NQ], nh[NN], na[2][NN], w[NN], K[NQ * NQ], x[NQ], f[NQ], r[NN], lam[2];
        double sn, cn, hs[NOUT], dh[NOUT], ddh[NOUT], theta, thd;
        m->mass_matrix(q, c->p, M);
        m->bias(t, q, qd, c->p, h);
        m->constraint_jacobian(q, c->p, Jall);
        m->constraint_bias(q, qd, c->p, ball);
        J0 = Jall + row * n;
        J1 = J0 + n;
        /* 2. N (M qdd - J^T lambda) = -N bias (no inputs: N B = 0): N M, N bias and the columns of N J^T */
        for (i = 0; i < NN; ++i) {
            const double *Ni = N + i * n;
            double *NMi = NM + i * n;
            for (j = 0; j < n; ++j) {
                NMi[j] = 0.0;
            }
            nh[i] = 0.0;
            na[0][i] = 0.0;
            na[1][i] = 0.0;
            for (k = 0; k < n; ++k) {
                const double a = Ni[k];
                if (a != 0.0) {
                    const double *Mk = M + k * n;
                    for (j = 0; j < n; ++j) {
                        NMi[j] += a * Mk[j];
                    }
                    nh[i] += a * h[k];
                    na[0][i] += a * J0[k];
                    na[1][i] += a * J1[k];
                }
            }
        }
        /* row 0: w^T N (M qdd + bias) = 0 with w orthogonal to both columns of N J^T (their cross
         * product): the one of these rows free of lambda */
        w[0] = na[0][1] * na[1][2] - na[0][2] * na[1][1];
        w[1] = na[0][2] * na[1][0] - na[0][0] * na[1][2];
        w[2] = na[0][0] * na[1][1] - na[0][1] * na[1][0];
        for (j = 0; j < n; ++j) {
            K[j] = w[0] * NM[j] + w[1] * NM[n + j] + w[2] * NM[2 * n + j];
        }
        x[0] = -(w[0] * nh[0] + w[1] * nh[1] + w[2] * nh[2]);
        /* rows 1, 2: the stance foot holds, J qdd = -Jdot qd */
        for (i = 0; i < 2; ++i) {
            const double *Ji = J0 + i * n;
            double *Ki = K + (1 + i) * n;
            for (j = 0; j < n; ++j) {
                Ki[j] = Ji[j];
            }
            x[1 + i] = -ball[row + i];
        }
        /* 3. the outputs' targets at the phase s and their s-derivatives; rows 3 ..: Ch qdd = v */
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
            double *Ki = K + (3 + i) * n;
            const double yo = dot(Ci, q, n) - hs[i];
            const double yd = dot(Ci, qd, n) - dh[i] * ds * thd;
            for (k = 0; k < n; ++k) {                 /* row i of Ch = C - (h' s') c^T */
                Ki[k] = Ci[k] - dh[i] * ds * cv[k];
            }
            x[3 + i] = -kp * yo - kd * yd + ddh[i] * ds * ds * thd * thd;
        }
        if (solve_lu(K, x) != 0) {
            return 4;
        }
        /* lambda from the rows N: (N J^T) lambda = N (M qdd + bias), consistent by row 0 (normal equations) */
        for (i = 0; i < NN; ++i) {
            r[i] = dot(NM + i * n, x, n) + nh[i];
        }
        {
            const double g00 = dot(na[0], na[0], NN), g01 = dot(na[0], na[1], NN), g11 = dot(na[1], na[1], NN);
            const double b0 = dot(na[0], r, NN), b1 = dot(na[1], r, NN), det = g00 * g11 - g01 * g01;
            if (!(det > 1e-14 * g00 * g11)) {
                return 4;
            }
            lam[0] = (g11 * b0 - g01 * b1) / det;
            lam[1] = (g00 * b1 - g01 * b0) / det;
        }
        /* u = B+ (M qdd + bias - J^T lambda) */
        for (k = 0; k < n; ++k) {
            f[k] = h[k] + dot(M + k * n, x, n) - J0[k] * lam[0] - J1[k] * lam[1];
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
