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
 *   2. the constrained dynamics of single support on the stance foot, affine in the inputs:
 *      qdd = a0 + G u, from M qdd + bias = B u + J^T lambda, J qdd = -Jdot qd (no drift correction);
 *   3. eight outputs y = C q - h(s), h a function of the phase s = (alpha0 - (theta + pi/2)) / (2 alpha0),
 *      theta = c q the stance leg's angle, are driven by input-output linearisation:
 *      (Ch G) u = -kp y - kd ydot + h''(s) s'^2 thetadot^2 - Ch a0,   Ch = C - (h'(s) s') c^T.
 *
 * The model is reached through the table of the context (c->model: sizes, routines, constraint blocks),
 * so nothing here names a coordinate: the output matrices come in the parameters, built by
 * VirtualConstraints.c_params() in exo5_walk.py. Parameters (c->params):
 *
 *   [0] alpha0  [1] lean  [2] shorten  [3] kp  [4] kd  [5] l_thigh0  [6] l_shank0
 *   [7] block index of foot_a  [8] block index of foot_b
 *   [9 ...]  C_a (8 x nq, row-major), c_a (nq), C_b (8 x nq), c_b (nq)   (stance leg a, then b)
 *
 * Returns 0, or 1 when the parameters do not fit the model, 2 when M is not positive definite, 3 when
 * the contact rows are singular, 4 when the output decoupling matrix Ch G is singular.
 * C99, <math.h> only, no allocation, no globals: arrays of the model's size are on the stack.
 */
#include <math.h>

#include "rodgen_runtime.h"

#define NOUT 8                   /* outputs = inputs */
#define NCOL (NOUT + 3)           /* columns of X = M^-1 [B, h, J^T] */
#define HEAD 9

int exo5_walk_controller(void *context, double t, const double *y, double *u);

/* Solve A x = b (n x n, row-major, overwritten) by Gaussian elimination with partial pivoting; b -> x. */
static int solve_lu(double *A, double *b, int n)
{
    int i, j, k;
    for (k = 0; k < n; ++k) {
        int piv = k;
        double big = fabs(A[k * n + k]);
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
            for (j = 0; j < n; ++j) {
                tmp = A[k * n + j];
                A[k * n + j] = A[piv * n + j];
                A[piv * n + j] = tmp;
            }
            tmp = b[k];
            b[k] = b[piv];
            b[piv] = tmp;
        }
        for (i = k + 1; i < n; ++i) {
            const double f = A[i * n + k] / A[k * n + k];
            for (j = k; j < n; ++j) {
                A[i * n + j] -= f * A[k * n + j];
            }
            b[i] -= f * b[k];
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
    const int n = m->nq, nr = m->nrows;
    const double *q = y, *qd = y + n, *par = c->params;
    const double alpha0 = par[0], lean = par[1], shorten = par[2], kp = par[3], kd = par[4];
    const double pi = 3.14159265358979323846;
    const double ds = -1.0 / (2.0 * alpha0);
    int i, j, k, blk[2], stance;
    (void)t;
    if (m->nu != NOUT || c->nparams != HEAD + 2 * (NOUT + 1) * n || c->nstate < 1 || m->nconstraints < 2) {
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
        const int row = m->constraints[blk[stance]].row;
        double M[n * n], h[n], B[n * NOUT], Jall[(nr > 0 ? nr : 1) * n], ball[nr > 0 ? nr : 1];
        double X[n * NCOL];             /* columns: M^-1 B (NOUT), M^-1 h, M^-1 J^T (2) */
        double inv_pivot[n], S[4], a0[n], G[n * NOUT];
        double A[NOUT * NOUT], v[NOUT];
        double sn, cn, hs[NOUT], dh[NOUT], ddh[NOUT], theta, thd;
        /* 2. qdd = a0 + G u in single support */
        m->mass_matrix(q, c->p, M);
        m->bias(t, q, qd, c->p, h);
        m->input_map(q, c->p, B);
        m->constraint_jacobian(q, c->p, Jall);
        m->constraint_bias(q, qd, c->p, ball);
        if (rodgen_cholesky(M, n) != RODGEN_OK) {
            return 2;
        }
        /* X = M^-1 [B, h, J^T]: both triangular solves on all NOUT + 3 columns at once (row-major X, the
         * inner loops run along a row of columns), dividing by the pivots through their reciprocals */
        for (i = 0; i < n; ++i) {
            double *xi = X + i * NCOL;
            for (k = 0; k < NOUT; ++k) {
                xi[k] = B[i * NOUT + k];
            }
            xi[NOUT] = h[i];
            xi[NOUT + 1] = Jall[row * n + i];
            xi[NOUT + 2] = Jall[(row + 1) * n + i];
            inv_pivot[i] = 1.0 / M[i * n + i];
        }
        for (i = 0; i < n; ++i) {               /* L Z = [B, h, J^T] */
            double acc[NCOL];
            for (k = 0; k < NCOL; ++k) {
                acc[k] = X[i * NCOL + k];
            }
            for (j = 0; j < i; ++j) {
                const double l = M[i * n + j];
                for (k = 0; k < NCOL; ++k) {
                    acc[k] -= l * X[j * NCOL + k];
                }
            }
            for (k = 0; k < NCOL; ++k) {
                X[i * NCOL + k] = acc[k] * inv_pivot[i];
            }
        }
        for (i = n - 1; i >= 0; --i) {          /* L^T X = Z */
            double acc[NCOL];
            for (k = 0; k < NCOL; ++k) {
                acc[k] = X[i * NCOL + k];
            }
            for (j = i + 1; j < n; ++j) {
                const double l = M[j * n + i];
                for (k = 0; k < NCOL; ++k) {
                    acc[k] -= l * X[j * NCOL + k];
                }
            }
            for (k = 0; k < NCOL; ++k) {
                X[i * NCOL + k] = acc[k] * inv_pivot[i];
            }
        }
        /* S = J M^-1 J^T (2 x 2) */
        for (i = 0; i < 2; ++i) {
            for (j = 0; j < 2; ++j) {
                double s = 0.0;
                for (k = 0; k < n; ++k) {
                    s += Jall[(row + i) * n + k] * X[k * NCOL + NOUT + 1 + j];
                }
                S[i * 2 + j] = s;
            }
        }
        {
            const double det = S[0] * S[3] - S[1] * S[2];
            double r[2], lam[2];
            if (!(fabs(det) > 1e-14 * (fabs(S[0] * S[3]) + fabs(S[1] * S[2])))) {
                return 3;
            }
            /* a0: lambda0 = S^-1 (-b + J M^-1 h), a0 = -M^-1 h + M^-1 J^T lambda0 */
            for (i = 0; i < 2; ++i) {
                double s = -ball[row + i];
                for (k = 0; k < n; ++k) {
                    s += Jall[(row + i) * n + k] * X[k * NCOL + NOUT];
                }
                r[i] = s;
            }
            lam[0] = (S[3] * r[0] - S[1] * r[1]) / det;
            lam[1] = (-S[2] * r[0] + S[0] * r[1]) / det;
            for (k = 0; k < n; ++k) {
                a0[k] = -X[k * NCOL + NOUT] + X[k * NCOL + NOUT + 1] * lam[0] + X[k * NCOL + NOUT + 2] * lam[1];
            }
            /* G = M^-1 B - M^-1 J^T S^-1 J M^-1 B */
            for (j = 0; j < NOUT; ++j) {
                for (i = 0; i < 2; ++i) {
                    double s = 0.0;
                    for (k = 0; k < n; ++k) {
                        s += Jall[(row + i) * n + k] * X[k * NCOL + j];
                    }
                    r[i] = s;
                }
                lam[0] = (S[3] * r[0] - S[1] * r[1]) / det;
                lam[1] = (-S[2] * r[0] + S[0] * r[1]) / det;
                for (k = 0; k < n; ++k) {
                    G[k * NOUT + j] = X[k * NCOL + j] - X[k * NCOL + NOUT + 1] * lam[0]
                        - X[k * NCOL + NOUT + 2] * lam[1];
                }
            }
        }
        /* 3. the outputs' targets at the phase s and their s-derivatives */
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
            const double yo = dot(Ci, q, n) - hs[i];
            const double yd = dot(Ci, qd, n) - dh[i] * ds * thd;
            double cha0 = 0.0;
            for (j = 0; j < NOUT; ++j) {
                A[i * NOUT + j] = 0.0;
            }
            for (k = 0; k < n; ++k) {                 /* row i of Ch = C - (h' s') c^T, times a0 and G */
                const double ch = Ci[k] - dh[i] * ds * cv[k];
                if (ch != 0.0) {
                    cha0 += ch * a0[k];
                    for (j = 0; j < NOUT; ++j) {
                        A[i * NOUT + j] += ch * G[k * NOUT + j];
                    }
                }
            }
            v[i] = -kp * yo - kd * yd + ddh[i] * ds * ds * thd * thd - cha0;
        }
        if (solve_lu(A, v, NOUT) != 0) {
            return 4;
        }
        for (j = 0; j < NOUT; ++j) {
            u[j] = v[j];
        }
    }
    return 0;
}
