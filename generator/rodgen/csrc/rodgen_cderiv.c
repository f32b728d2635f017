/*
 * rodgen_cderiv.c: derivatives of the constrained dynamics and of the impact map for a
 * fixed active set (see rodgen_cderiv.h). Pure C99.
 */
#include <math.h>

#include "rodgen_cderiv.h"
#include "rodgen_contact.h"   /* RODGEN_STICK */

/* A pivot of J M^-1 J^T at or below this fraction of its largest diagonal entry: singular rows
 * (rodgen_cfd_defaults' singular_tol). */
#define CDERIV_SINGULAR_TOL 1e-10

static int cd_finite(const double *x, int n)
{
    int i;
    for (i = 0; i < n; ++i) {
        if (!isfinite(x[i])) {
            return 0;
        }
    }
    return 1;
}

typedef struct {
    double *M, *L, *J, *Y, *S, *X, *T, *dg, *dg0, *dk, *B, *h, *b, *z, *lam0;
    int *rows, *nnz, *nz;   /* the held rows; per held row i its nonzero columns nz[i * n .. i * n + nnz[i]) in J */
    int *lnnz, *lnz;        /* per row k of M's factor L its nonzero columns (< k) lnz[k * n .. k * n + lnnz[k]) */
    int n;
} cd_scratch;

static long cd_doubles(const rodgen_model *m)
{
    const long n = m->nv, r = m->nrows, w = 2L * m->nv + m->nu;
    /* M, L; J, Y (r x n); S (r x r); X (n x w); T (r x w); dg, dg0 (n x 2n); dk (r x 2n); B (n x nu);
     * h, z (n); b, lam0 (r) */
    return 2 * n * n + 2 * r * n + r * r + n * w + r * w + 4 * n * n + 2 * r * n + n * m->nu + 2 * n + 2 * r + 8;
}

long rodgen_cderiv_work_bytes(const rodgen_model *m)
{
    long bytes = cd_doubles(m) * (long)sizeof(double)
                 + ((long)m->nrows * (m->nv + 2) + (long)m->nv * (m->nv + 1) + 1) * (long)sizeof(int);
    return (bytes + 15) / 16 * 16;
}

static void cd_carve(const rodgen_model *m, void *work, cd_scratch *s)
{
    const int n = m->nv, r = m->nrows, w = 2 * m->nv + m->nu;
    double *d = (double *)work;
    s->M = d; d += n * n;
    s->L = d; d += n * n;
    s->J = d; d += r * n;
    s->Y = d; d += r * n;
    s->S = d; d += r * r;
    s->X = d; d += n * w;
    s->T = d; d += r * w;
    s->dg = d; d += 2 * n * n;
    s->dg0 = d; d += 2 * n * n;
    s->dk = d; d += 2 * r * n;
    s->B = d; d += n * m->nu;
    s->h = d; d += n;
    s->z = d; d += n;
    s->b = d; d += r;
    s->lam0 = d; d += r + 8;
    s->rows = (int *)(void *)d;
    s->nnz = s->rows + r;
    s->nz = s->nnz + r;
    s->lnnz = s->nz + r * n;
    s->lnz = s->lnnz + n;
    s->n = n;
}

/* M = L^T D L in place of s->L (a copy of M), L unit lower triangular below the diagonal, D on it (Featherstone's
 * LTDL, from the last row up): the factor of a tree's mass matrix with its coordinates in tree order (each parent
 * before its children) has no fill-in, L's row k nonzero only in the ancestors of k, and the zeros skipped here and
 * in the solves leave the pairs off a branch out. The nonzero columns of each row are listed for the solves. */
static int cd_ltdl(cd_scratch *s)
{
    const int n = s->n;
    double *H = s->L;
    int i, j, k;
    for (k = n - 1; k >= 0; --k) {
        double *hk = H + k * n;
        const double d = hk[k];
        int c = 0;
        if (!(d > RODGEN_PIVOT_RTOL * fabs(s->M[k * n + k]))) {
            return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
        }
        for (i = k - 1; i >= 0; --i) {
            if (hk[i] != 0.0) {
                const double a = hk[i] / d;
                double *hi = H + i * n;
                for (j = i; j >= 0; --j) {
                    hi[j] -= a * hk[j];
                }
                hk[i] = a;
            }
        }
        for (i = 0; i < k; ++i) {
            if (hk[i] != 0.0) {
                s->lnz[k * n + c++] = i;
            }
        }
        s->lnnz[k] = c;
    }
    return RODGEN_OK;
}

/* B <- M^-1 B for the n x w block B (row-major) with cd_ltdl's factor: L^T Y = B, Y <- D^-1 Y, L X = Y, each step
 * a row update over L's nonzeros. */
static void cd_solve_block(const cd_scratch *s, double *B, int w)
{
    const int n = s->n;
    const double *L = s->L;
    int j, k, c;
    for (k = n - 1; k >= 0; --k) {
        const double *bk = B + k * w;
        for (j = 0; j < s->lnnz[k]; ++j) {
            const int i2 = s->lnz[k * n + j];
            const double a = L[k * n + i2];
            double *bi = B + i2 * w;
            for (c = 0; c < w; ++c) {
                bi[c] -= a * bk[c];
            }
        }
    }
    for (k = 0; k < n; ++k) {
        const double dinv = 1.0 / L[k * n + k];
        double *bk = B + k * w;
        for (c = 0; c < w; ++c) {
            bk[c] *= dinv;
        }
        for (j = 0; j < s->lnnz[k]; ++j) {
            const int i2 = s->lnz[k * n + j];
            const double a = L[k * n + i2];
            const double *bi = B + i2 * w;
            for (c = 0; c < w; ++c) {
                bk[c] -= a * bi[c];
            }
        }
    }
}

/* The held rows of `active` (impact: FRICTION blocks left out); -1 for a mode that is not held. */
static int cd_rows(const rodgen_model *m, const int *active, int impact, int *rows)
{
    int k, i, na = 0;
    for (k = 0; k < m->nconstraints; ++k) {
        const rodgen_constraint *c = &m->constraints[k];
        int a = c->kind == RODGEN_LOOP ? RODGEN_STICK : (active != 0 ? active[k] : 0);
        if (a == 0 || (impact && c->kind == RODGEN_FRICTION)) {
            continue;
        }
        if (a != RODGEN_STICK) {
            return -1;
        }
        for (i = 0; i < c->nrows; ++i) {
            rows[na++] = c->row + i;
        }
    }
    return na;
}

/* y[c] += sum_k a[k * as] B[k][c] for the w columns of B (kn x w, row-major): four columns at a time held in
 * registers over k (see rodgen_linalg.c's block solve). */
static void cd_accumulate(double *y, int w, const double *a, int as, const double *B, int kn)
{
    int c, k;
    for (c = 0; c + 4 <= w; c += 4) {
        double y0 = y[c], y1 = y[c + 1], y2 = y[c + 2], y3 = y[c + 3];
        for (k = 0; k < kn; ++k) {
            const double ak = a[k * as];
            const double *bk = B + k * w + c;
            y0 += ak * bk[0];
            y1 += ak * bk[1];
            y2 += ak * bk[2];
            y3 += ak * bk[3];
        }
        y[c] = y0;
        y[c + 1] = y1;
        y[c + 2] = y2;
        y[c + 3] = y3;
    }
    for (; c < w; ++c) {
        double acc = y[c];
        for (k = 0; k < kn; ++k) {
            acc += a[k * as] * B[k * w + c];
        }
        y[c] = acc;
    }
}

/* y[c] += sum_j a[idx[j]] B[idx[j]][c] over the nnz entries idx of a (a sparse row of J) for the w columns of B
 * (row-major): cd_accumulate skipping J's zeros (a foot's rows touch the base and its leg only). */
static void cd_accumulate_sparse(double *y, int w, const double *a, const int *idx, int nnz, const double *B)
{
    int c, j;
    for (c = 0; c + 4 <= w; c += 4) {
        double y0 = y[c], y1 = y[c + 1], y2 = y[c + 2], y3 = y[c + 3];
        for (j = 0; j < nnz; ++j) {
            const double ak = a[idx[j]];
            const double *bk = B + idx[j] * w + c;
            y0 += ak * bk[0];
            y1 += ak * bk[1];
            y2 += ak * bk[2];
            y3 += ak * bk[3];
        }
        y[c] = y0;
        y[c + 1] = y1;
        y[c + 2] = y2;
        y[c + 3] = y3;
    }
    for (; c < w; ++c) {
        double acc = y[c];
        for (j = 0; j < nnz; ++j) {
            acc += a[idx[j]] * B[idx[j] * w + c];
        }
        y[c] = acc;
    }
}

/* M and its factor, J, the held rows (with their nonzero columns), Y = M^-1 J^T of the held rows (n x na, row-major: column i that of held
 * row i) and the factor of S = J M^-1 J^T. */
static int cd_factor(const rodgen_model *m, const double *p, const double *q, const int *active, int impact,
                     cd_scratch *s, int *na_out)
{
    const int n = m->nv;
    int i, j, k, na;
    if (m->constraint_partials == 0 || m->nconstraints == 0) {
        return RODGEN_ERR_OPTIONS;
    }
    na = cd_rows(m, active, impact, s->rows);
    if (na < 0) {
        return RODGEN_ERR_OPTIONS;
    }
    m->mass_matrix(q, p, s->M);
    for (i = 0; i < n * n; ++i) {
        s->L[i] = s->M[i];
    }
    if (cd_ltdl(s) != RODGEN_OK) {
        return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
    }
    m->constraint_jacobian(q, p, s->J);
    for (i = 0; i < na; ++i) {
        const double *Ji = s->J + s->rows[i] * n;
        int *nzi = s->nz + i * n, c = 0;
        for (k = 0; k < n; ++k) {
            if (Ji[k] != 0.0) {
                nzi[c++] = k;
            }
        }
        s->nnz[i] = c;
    }
    for (k = 0; k < n; ++k) {
        for (i = 0; i < na; ++i) {
            s->Y[k * na + i] = s->J[s->rows[i] * n + k];
        }
    }
    cd_solve_block(s, s->Y, na);
    for (i = 0; i < na; ++i) {
        for (j = 0; j < na; ++j) {
            s->S[i * na + j] = 0.0;
        }
        cd_accumulate_sparse(s->S + i * na, na, s->J + s->rows[i] * n, s->nz + i * n, s->nnz[i], s->Y);
    }
    if (rodgen_cholesky_rel(s->S, na, CDERIV_SINGULAR_TOL) != RODGEN_OK) {
        return RODGEN_ERR_SINGULAR_CONSTRAINTS;
    }
    *na_out = na;
    return RODGEN_OK;
}

/* With X = M^-1 dg/dx (n x w) and T = dk/dx of the held rows (na x w) given: T <- S^-1 (J X - T) (the
 * derivatives of lambda) and the derivatives of the accelerations -X + Y T into D (n x w); D's rows
 * n + row the derivatives of lambda (0 for rows not held). */
static void cd_kkt(const rodgen_model *m, cd_scratch *s, int na, int w, double *D)
{
    const int n = m->nv, r = m->nrows;
    int i, c, k;
    for (i = 0; i < na; ++i) {
        double *ti = s->T + i * w;
        for (c = 0; c < w; ++c) {
            ti[c] = -ti[c];
        }
        cd_accumulate_sparse(ti, w, s->J + s->rows[i] * n, s->nz + i * n, s->nnz[i], s->X);
    }
    rodgen_cholesky_solve_block(s->S, na, s->T, w);
    for (k = 0; k < n; ++k) {
        double *dk = D + k * w;
        const double *xk = s->X + k * w;
        for (c = 0; c < w; ++c) {
            dk[c] = -xk[c];
        }
        cd_accumulate(dk, w, s->Y + k * na, 1, s->T, na);
    }
    for (i = 0; i < r * w; ++i) {
        D[n * w + i] = 0.0;
    }
    for (i = 0; i < na; ++i) {
        for (c = 0; c < w; ++c) {
            D[(n + s->rows[i]) * w + c] = s->T[i * w + c];
        }
    }
}

int rodgen_constrained_derivatives(const rodgen_model *m, double t, const double *p, const double *q,
                                   const double *qd, const double *u, const int *active, double *qdd,
                                   double *lam, double *D, void *work)
{
    const int n = m->nv, r = m->nrows, nu = m->nu, w = 2 * n + nu;
    cd_scratch s;
    int i, j, k, na = 0, status;
    double zu[nu > 0 ? nu : 1];   /* u = NULL: zero inputs */
    const double *uu = u != 0 ? u : zu;
    for (j = 0; j < (nu > 0 ? nu : 1); ++j) {
        zu[j] = 0.0;
    }
    if (!cd_finite(q, m->nq) || !cd_finite(qd, n) || (nu > 0 && u != 0 && !cd_finite(u, nu))
        || !cd_finite(p, m->np) || !isfinite(t)) {
        return RODGEN_ERR_NONFINITE_INPUT;
    }
    cd_carve(m, work, &s);
    status = cd_factor(m, p, q, active, 0, &s, &na);
    if (status != RODGEN_OK) {
        return status;
    }
    /* the constrained dynamics: qdd0 = M^-1 (B u - bias), S lambda = -(J qdd0 + Jdot qd) */
    m->bias(t, q, qd, p, s.h);
    if (nu > 0) {
        m->input_map(q, p, s.B);
    }
    for (i = 0; i < n; ++i) {
        double acc = -s.h[i];
        for (j = 0; j < nu; ++j) {
            acc += s.B[i * nu + j] * uu[j];
        }
        qdd[i] = acc;
    }
    cd_solve_block(&s, qdd, 1);
    m->constraint_bias(q, qd, p, s.b);
    for (i = 0; i < r; ++i) {
        lam[i] = 0.0;
    }
    for (i = 0; i < na; ++i) {
        const double *Ji = s.J + s.rows[i] * n;
        double acc = s.b[s.rows[i]];
        for (k = 0; k < n; ++k) {
            acc += Ji[k] * qdd[k];
        }
        s.lam0[i] = -acc;
    }
    rodgen_cholesky_solve(s.S, s.lam0, na);
    for (i = 0; i < na; ++i) {
        lam[s.rows[i]] = s.lam0[i];
        for (k = 0; k < n; ++k) {
            qdd[k] += s.Y[k * na + i] * s.lam0[i];
        }
    }
    /* the partials at the solution; X = M^-1 [dg/dx, -B], T = [dk/dx, 0] of the held rows */
    m->constraint_partials(t, q, qd, qdd, uu, lam, p, s.dg, s.dk);
    for (k = 0; k < n; ++k) {
        for (j = 0; j < 2 * n; ++j) {
            s.X[k * w + j] = s.dg[k * 2 * n + j];
        }
        for (j = 0; j < nu; ++j) {
            s.X[k * w + 2 * n + j] = -s.B[k * nu + j];
        }
    }
    cd_solve_block(&s, s.X, w);
    for (i = 0; i < na; ++i) {
        for (j = 0; j < w; ++j) {
            s.T[i * w + j] = j < 2 * n ? s.dk[s.rows[i] * 2 * n + j] : 0.0;
        }
    }
    cd_kkt(m, &s, na, w, D);
    if (!cd_finite(qdd, n) || !cd_finite(lam, r) || !cd_finite(D, (n + r) * w)) {
        return RODGEN_ERR_NONFINITE_RESULT;
    }
    return RODGEN_OK;
}

int rodgen_impact_derivatives(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
                              const int *active, double *qd_plus, double *impulse, double *D, void *work)
{
    const int n = m->nv, r = m->nrows, nu = m->nu, w = 2 * n;
    cd_scratch s;
    int i, j, k, na = 0, status;
    if (!cd_finite(q, m->nq) || !cd_finite(qd_minus, n) || !cd_finite(p, m->np)) {
        return RODGEN_ERR_NONFINITE_INPUT;
    }
    cd_carve(m, work, &s);
    status = cd_factor(m, p, q, active, 1, &s, &na);
    if (status != RODGEN_OK) {
        return status;
    }
    /* S Lambda = -J qd_minus; qd_plus = qd_minus + M^-1 J^T Lambda */
    for (i = 0; i < r; ++i) {
        impulse[i] = 0.0;
    }
    for (i = 0; i < na; ++i) {
        const double *Ji = s.J + s.rows[i] * n;
        double acc = 0.0;
        for (k = 0; k < n; ++k) {
            acc += Ji[k] * qd_minus[k];
        }
        s.lam0[i] = -acc;
    }
    rodgen_cholesky_solve(s.S, s.lam0, na);
    for (k = 0; k < n; ++k) {
        qd_plus[k] = qd_minus[k];
    }
    for (i = 0; i < na; ++i) {
        impulse[s.rows[i]] = s.lam0[i];
        for (k = 0; k < n; ++k) {
            qd_plus[k] += s.Y[k * na + i] * s.lam0[i];
        }
    }
    /* partials at qd = 0 (u = 0; the inputs, the time and the velocity terms cancel in the differences):
     * d(M w - J^T Lambda)/dq = dg(a = w, lam = Lambda) - dg(a = 0, lam = 0), w = qd_plus - qd_minus;
     * d(J qd_plus)/dq = dk(a = qd_plus) */
    {
        double zero_u[nu > 0 ? nu : 1];
        double wv[n];
        for (j = 0; j < (nu > 0 ? nu : 1); ++j) {
            zero_u[j] = 0.0;
        }
        for (k = 0; k < n; ++k) {
            s.z[k] = 0.0;
            wv[k] = qd_plus[k] - qd_minus[k];
        }
        for (i = 0; i < r; ++i) {
            s.b[i] = 0.0;
        }
        m->constraint_partials(0.0, q, s.z, s.z, zero_u, s.b, p, s.dg0, s.dk);
        m->constraint_partials(0.0, q, s.z, wv, zero_u, impulse, p, s.dg, s.dk);
        m->constraint_partials(0.0, q, s.z, qd_plus, zero_u, s.b, p, s.X, s.dk);   /* s.X: scratch */
    }
    /* X = M^-1 [dg_q, -M] = [M^-1 dg_q, -I]; T = [dk_q, 0] */
    for (k = 0; k < n; ++k) {
        for (j = 0; j < n; ++j) {
            s.X[k * w + j] = s.dg[k * 2 * n + j] - s.dg0[k * 2 * n + j];
            s.X[k * w + n + j] = 0.0;
        }
    }
    cd_solve_block(&s, s.X, w);   /* the right half stays 0: set it to -I after the solve */
    for (k = 0; k < n; ++k) {
        s.X[k * w + n + k] = -1.0;
    }
    for (i = 0; i < na; ++i) {
        for (j = 0; j < w; ++j) {
            s.T[i * w + j] = j < n ? s.dk[s.rows[i] * 2 * n + j] : 0.0;
        }
    }
    cd_kkt(m, &s, na, w, D);
    if (!cd_finite(qd_plus, n) || !cd_finite(impulse, r) || !cd_finite(D, (n + r) * w)) {
        return RODGEN_ERR_NONFINITE_RESULT;
    }
    return RODGEN_OK;
}
