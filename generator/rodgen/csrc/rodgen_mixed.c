/*
 * rodgen_mixed.c: mixed problems (some coordinates prescribed as functions of
 * time, the others free) on any model's `const rodgen_model *` table.
 *
 * With the coordinates split into free (f) and prescribed (p) ones,
 * M q'' + bias = B u reads
 *
 *     [M_ff M_fp] [qdd_f]   [bias_f]   [B_f u]   [  0  ]
 *     [M_pf M_pp] [qdd_p] + [bias_p] = [B_p u] + [tau_p]
 *
 * where tau_p are the generalized forces the prescribed coordinates need to
 * follow their motion. rodgen_mixed_accelerations solves the first block row
 * for qdd_f (Cholesky factorisation of M_ff) and returns tau_p from the second;
 * rodgen_mixed_simulate integrates the free coordinates with RK4 along a
 * prescribed motion given as samples of q_p, qd_p, qdd_p (interpolated
 * linearly, as the reference of the tracking input laws).
 *
 * Pure C99, only <math.h>; no allocation, no globals. Temporaries of the size
 * of the model are variable-length arrays on the stack.
 */
#include <math.h>

#include "rodgen_runtime.h"

static int rodgen_mixed_finite(const double *x, int n)
{
    int i;
    for (i = 0; i < n; ++i) {
        if (!isfinite(x[i])) {
            return 0;
        }
    }
    return 1;
}

/* Check the prescribed coordinates (at least one, not all, in range, no repeats) and list the free
 * ones in model order into free_idx [nq]. Returns the number of free coordinates, or -1. */
static int rodgen_mixed_split(const rodgen_model *m, int npres, const int *pres, int *free_idx)
{
    const int nq = m->nq;
    int mark[nq > 0 ? nq : 1];
    int i, nf = 0;
    if (npres < 1 || npres >= nq || pres == 0 || m->nlie != 0) {   /* mixed problems: qd = dq/dt only */
        return -1;
    }
    for (i = 0; i < nq; ++i) {
        mark[i] = 0;
    }
    for (i = 0; i < npres; ++i) {
        if (pres[i] < 0 || pres[i] >= nq || mark[pres[i]]) {
            return -1;
        }
        mark[pres[i]] = 1;
    }
    for (i = 0; i < nq; ++i) {
        if (!mark[i]) {
            free_idx[nf++] = i;
        }
    }
    return nf;
}

/* The core of rodgen_mixed_accelerations on a checked split. */
static int rodgen_mixed_solve(const rodgen_model *m, double t, int npres, const int *pres, int nf, const int *free_idx,
    const double *q, const double *qd, const double *qdd_p, const double *u, const double *p, double *qdd,
    double *tau)
{
    const int nq = m->nq, nu = m->nu;
    double M[nq * nq], r[nq], Mff[nf * nf], b[nf];
    int i, j, k, status;
    m->mass_matrix(q, p, M);
    m->bias(t, q, qd, p, r);
    for (i = 0; i < nq; ++i) {
        r[i] = -r[i];
    }
    if (nu > 0 && u != 0) {   /* r = B u - bias */
        double B[nq * nu];
        m->input_map(q, p, B);
        for (i = 0; i < nq; ++i) {
            for (j = 0; j < nu; ++j) {
                r[i] += B[i * nu + j] * u[j];
            }
        }
    }
    for (i = 0; i < nf; ++i) {
        const int fi = free_idx[i];
        double s = r[fi];
        for (j = 0; j < npres; ++j) {
            s -= M[fi * nq + pres[j]] * qdd_p[j];
        }
        b[i] = s;
        for (j = 0; j < nf; ++j) {
            Mff[i * nf + j] = M[fi * nq + free_idx[j]];
        }
    }
    status = rodgen_cholesky(Mff, nf);
    if (status != RODGEN_OK) {
        return status;
    }
    rodgen_cholesky_solve(Mff, b, nf);
    for (i = 0; i < nf; ++i) {
        qdd[free_idx[i]] = b[i];
    }
    for (j = 0; j < npres; ++j) {
        qdd[pres[j]] = qdd_p[j];
    }
    for (j = 0; j < npres; ++j) {
        const int pj = pres[j];
        double s = -r[pj];
        for (k = 0; k < nq; ++k) {
            s += M[pj * nq + k] * qdd[k];
        }
        tau[j] = s;
    }
    if (!rodgen_mixed_finite(qdd, nq) || !rodgen_mixed_finite(tau, npres)) {
        return RODGEN_ERR_NONFINITE_RESULT;
    }
    return RODGEN_OK;
}

int rodgen_mixed_accelerations(const rodgen_model *m, double t, int npres, const int *pres, const double *q,
    const double *qd, const double *qdd_p, const double *u, const double *p, double *qdd, double *tau)
{
    const int nq = m->nq;
    int free_idx[nq > 0 ? nq : 1];
    const int nf = rodgen_mixed_split(m, npres, pres, free_idx);
    if (nf < 1) {
        return RODGEN_ERR_OPTIONS;
    }
    if (!rodgen_mixed_finite(q, nq) || !rodgen_mixed_finite(qd, nq) || !rodgen_mixed_finite(qdd_p, npres)
        || (u != 0 && !rodgen_mixed_finite(u, m->nu)) || !rodgen_mixed_finite(p, m->np)) {
        return RODGEN_ERR_NONFINITE_INPUT;
    }
    return rodgen_mixed_solve(m, t, npres, pres, nf, free_idx, q, qd, qdd_p, u, p, qdd, tau);
}

long rodgen_mixed_grid(double t0, double t_end, double dt, double *times)
{
    long k = 0;
    double t = t0;
    if (!(dt > 0.0) || !(t_end > t0) || !isfinite(t_end) || !isfinite(t0)) {
        return -1;
    }
    if (times != 0) {
        times[0] = t0;
    }
    for (;;) {
        double t_next = t0 + (double)(k + 1) * dt;
        if (t_next > t_end - 1e-9 * dt) {
            t_next = t_end;
        }
        if (times != 0) {
            times[2 * k + 1] = t + 0.5 * (t_next - t);
            times[2 * k + 2] = t_next;
        }
        k += 1;
        t = t_next;
        if (t_next >= t_end) {
            return k;
        }
    }
}

/* Everything one evaluation of the free dynamics needs. */
typedef struct {
    const rodgen_model *m;
    const rodgen_mixed *mx;
    const rodgen_input *inp;
    const double *p;
    const int *free_idx;
    int nf;
} rodgen_mixed_run;

/* The full state y [2*nq] at time t from the free state yf [2*nf] and the prescribed motion; the
 * prescribed accelerations into qdd_p [npres]. */
static void rodgen_mixed_state(const rodgen_mixed_run *r, double t, const double *yf, double *y, double *qdd_p)
{
    const int nq = r->m->nq, np = r->mx->npres, nf = r->nf;
    double ref[3 * np];
    int i;
    rodgen_interpolate(r->mx->times, r->mx->values, r->mx->n, 3 * np, t, ref);
    for (i = 0; i < nf; ++i) {
        y[r->free_idx[i]] = yf[i];
        y[nq + r->free_idx[i]] = yf[nf + i];
    }
    for (i = 0; i < np; ++i) {
        y[r->mx->pres[i]] = ref[i];
        y[nq + r->mx->pres[i]] = ref[np + i];
        qdd_p[i] = ref[2 * np + i];
    }
}

/* The full state, accelerations and prescribed forces at (t, yf); dyf [2*nf] the free derivative; the
 * inputs into u_store [nu] (NULL: not kept). */
static int rodgen_mixed_eval(const rodgen_mixed_run *r, double t, const double *yf, double *y, double *qdd,
    double *tau, double *dyf, double *u_store)
{
    const rodgen_model *m = r->m;
    const int nq = m->nq, np = r->mx->npres, nf = r->nf;
    double qdd_p[np], u[m->nu > 0 ? m->nu : 1];
    int i, status;
    if (!rodgen_mixed_finite(yf, 2 * nf)) {
        return RODGEN_ERR_NONFINITE_STATE;
    }
    rodgen_mixed_state(r, t, yf, y, qdd_p);
    for (i = 0; i < m->nu; ++i) {
        u[i] = 0.0;
    }
    if (r->inp != 0) {
        status = rodgen_input_eval(m, r->inp, t, y, r->p, u);
        if (status != RODGEN_OK) {
            return status;
        }
    }
    for (i = 0; u_store != 0 && i < m->nu; ++i) {
        u_store[i] = u[i];
    }
    status = rodgen_mixed_solve(m, t, np, r->mx->pres, nf, r->free_idx, y, y + nq, qdd_p, r->inp != 0 ? u : 0, r->p,
        qdd, tau);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < nf; ++i) {
        dyf[i] = yf[nf + i];
        dyf[nf + i] = qdd[r->free_idx[i]];
    }
    return RODGEN_OK;
}

int rodgen_mixed_simulate(const rodgen_model *m, const rodgen_mixed *mx, const rodgen_input *inp,
    const double *p, double t0, double t_end, double dt, const double *y0, long capacity, double *t_out,
    double *y_out, double *qdd_out, double *tau_out, double *u_out, long *n_out)
{
    const int nq = m->nq, np = mx->npres;
    int free_idx[nq > 0 ? nq : 1];
    const int nf = rodgen_mixed_split(m, mx->npres, mx->pres, free_idx);
    const long steps = rodgen_mixed_grid(t0, t_end, dt, 0);
    rodgen_mixed_run run;
    long i, k, n = 0;
    int status = RODGEN_OK;
    *n_out = 0;
    if (nf < 1 || steps < 1 || capacity < steps + 1 || mx->n < 1 || mx->times == 0 || mx->values == 0) {
        return RODGEN_ERR_OPTIONS;
    }
    for (i = 1; i < mx->n; ++i) {
        if (!(mx->times[i] > mx->times[i - 1])) {
            return RODGEN_ERR_OPTIONS;
        }
    }
    if (!rodgen_mixed_finite(mx->times, (int)mx->n) || !rodgen_mixed_finite(mx->values, (int)(3 * np * mx->n))
        || !rodgen_mixed_finite(y0, 2 * nf) || !rodgen_mixed_finite(p, m->np)) {
        return RODGEN_ERR_NONFINITE_INPUT;
    }
    run.m = m;
    run.mx = mx;
    run.inp = inp;
    run.p = p;
    run.free_idx = free_idx;
    run.nf = nf;
    {
        const int ny = 2 * nf;
        double yf[ny], yt[ny], k1[ny], k2[ny], k3[ny], k4[ny];
        double y[2 * nq], qdd[nq], tau[np];
        double t = t0;
        for (i = 0; i < ny; ++i) {
            yf[i] = y0[i];
        }
        for (k = 0; k <= steps; ++k) {
            double t_next, h;
            int j;
            /* the state at t: store it with its accelerations and forces (k1 of the next step) */
            for (j = 0; u_out != 0 && j < m->nu; ++j) {
                u_out[n * m->nu + j] = NAN;
            }
            status = rodgen_mixed_eval(&run, t, yf, y, qdd, tau, k1, u_out != 0 ? u_out + n * m->nu : 0);
            t_out[n] = t;
            for (j = 0; j < 2 * nq; ++j) {
                y_out[n * 2 * nq + j] = y[j];
            }
            for (j = 0; j < nq; ++j) {
                qdd_out[n * nq + j] = status == RODGEN_OK ? qdd[j] : NAN;
            }
            for (j = 0; j < np; ++j) {
                tau_out[n * np + j] = status == RODGEN_OK ? tau[j] : NAN;
            }
            n += 1;
            if (status != RODGEN_OK || k == steps) {
                break;
            }
            t_next = t0 + (double)(k + 1) * dt;
            if (t_next > t_end - 1e-9 * dt) {
                t_next = t_end;
            }
            h = t_next - t;
            for (j = 0; j < ny; ++j) {
                yt[j] = yf[j] + 0.5 * h * k1[j];
            }
            status = rodgen_mixed_eval(&run, t + 0.5 * h, yt, y, qdd, tau, k2, 0);
            if (status == RODGEN_OK) {
                for (j = 0; j < ny; ++j) {
                    yt[j] = yf[j] + 0.5 * h * k2[j];
                }
                status = rodgen_mixed_eval(&run, t + 0.5 * h, yt, y, qdd, tau, k3, 0);
            }
            if (status == RODGEN_OK) {
                for (j = 0; j < ny; ++j) {
                    yt[j] = yf[j] + h * k3[j];
                }
                status = rodgen_mixed_eval(&run, t_next, yt, y, qdd, tau, k4, 0);
            }
            if (status == RODGEN_OK) {
                for (j = 0; j < ny; ++j) {
                    yt[j] = yf[j] + (h / 6.0) * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]);
                }
                if (!rodgen_mixed_finite(yt, ny)) {
                    status = RODGEN_ERR_NONFINITE_STATE;
                }
            }
            if (status != RODGEN_OK) {
                break;   /* the last good state is the last row */
            }
            for (j = 0; j < ny; ++j) {
                yf[j] = yt[j];
            }
            t = t_next;
        }
    }
    *n_out = n;
    return status;
}
