/*
 * rodgen_cderiv.c: derivatives of the constrained dynamics and of the impact map for a
 * fixed active set (see rodgen_cderiv.h). Pure C99 (GNU vector extensions where AVX is on).
 *
 * Both solve the KKT system [M -J^T; J 0] [dqdd; dlam] = -[R; K] for w right-hand columns along the tree:
 * M = L^T D L (Featherstone's LTDL, no fill-in when the velocities are in tree order), V = L^-T J^T of the held
 * rows (column a nonzero only on the ancestors of its row's nonzero columns: a foot's on its leg and the base),
 * W = D^-1 V, S = J M^-1 J^T = V^T W. With U = L^-T R (one pass from the leaves),
 *     dlam = S^-1 (W^T U - K),   dqdd = -L^-1 D^-1 (U - V dlam)   (one pass from the roots),
 * every product over the nonzeros of L and V only (Pinocchio's ContactCholeskyDecomposition keeps the same
 * sparsity in one factor of the whole KKT matrix).
 */
#include <math.h>

#include "rodgen_cderiv.h"
#include "rodgen_contact.h"   /* RODGEN_STICK */

/* A pivot of J M^-1 J^T at or below this fraction of its largest diagonal entry: singular rows
 * (rodgen_cfd_defaults' singular_tol). */
#define CDERIV_SINGULAR_TOL 1e-10

/* The loops below at -O3 under GCC whatever the file's level (the runtime's C is built at -O2, a model's at -O1),
 * their multiply-adds fused where the CPU has them (one rounding instead of two; -std=c99 turns that off
 * otherwise). */
#if defined(__GNUC__) && !defined(__clang__) && !defined(__INTEL_COMPILER) && defined(__OPTIMIZE__)
#define CD_LOOPS __attribute__((optimize("O3", "fp-contract=fast")))
#else
#define CD_LOOPS
#endif

#if defined(__GNUC__) && !defined(__INTEL_COMPILER) && defined(__AVX__)
typedef double cd_v4 __attribute__((vector_size(32), aligned(8)));
#define CD_V4(x) (*(cd_v4 *)(x))
#define CD_CV4(x) (*(const cd_v4 *)(x))
#endif

/* Whether x[0..n) are all finite: x - x is 0 for a finite x and NaN for an infinite or NaN one (one pass without
 * branches, vectorised, instead of a test per entry). */
CD_LOOPS static int cd_finite(const double *x, int n)
{
    int i = 0, bad = 0;
#ifdef CD_V4
    cd_v4 acc = {0.0, 0.0, 0.0, 0.0};
    for (; i + 4 <= n; i += 4) {
        acc += CD_CV4(x + i) - CD_CV4(x + i);
    }
    bad = !(acc[0] + acc[1] + acc[2] + acc[3] == 0.0);
#endif
    for (; i < n; ++i) {
        bad |= !(x[i] - x[i] == 0.0);
    }
    return !bad;
}

typedef struct {
    double *M, *L, *J, *V, *W, *S, *X, *T, *dg, *dg0, *dk, *B, *h, *y, *b, *lam0, *cf;
    int *rows;          /* the held rows */
    int *lnnz, *lnz;    /* per row k of L its nonzero columns (ancestors of k, < k): lnz[k * n .. k * n + lnnz[k]) */
    int *dnnz, *dnz;    /* per column i of L its nonzero rows (descendants of i, > i), ascending */
    int *vrn, *vr;      /* per row k of V its nonzero columns: vr[k * r .. k * r + vrn[k]) */
    int *vcn, *vc;      /* per column a of V its nonzero rows: vc[a * n .. a * n + vcn[a]) */
    int *iota;          /* 0, 1, .., nrows - 1 */
    int n;
} cd_scratch;

static long cd_doubles(const rodgen_model *m)
{
    const long n = m->nv, r = m->nrows, w = 2L * m->nv + m->nu;
    /* M, L; J, V, W (r x n); S (r x r); X (n x w); T (r x w); dg, dg0 (n x 2n); dk (r x 2n); B (n x nu);
     * h, y (n); b, lam0 (r); cf (n + r) */
    return 2 * n * n + 3 * r * n + r * r + n * w + r * w + 4 * n * n + 2 * r * n + n * m->nu + 3 * n + 3 * r + 8;
}

static long cd_ints(const rodgen_model *m)
{
    const long n = m->nv, r = m->nrows;
    return 2 * r + 2 * n * (n + 1) + n * (r + 1) + r * (n + 1) + 1;
}

long rodgen_cderiv_work_bytes(const rodgen_model *m)
{
    long bytes = cd_doubles(m) * (long)sizeof(double) + cd_ints(m) * (long)sizeof(int);
    return (bytes + 15) / 16 * 16;
}

static void cd_carve(const rodgen_model *m, void *work, cd_scratch *s)
{
    const int n = m->nv, r = m->nrows, w = 2 * m->nv + m->nu;
    double *d = (double *)work;
    int i;
    s->M = d; d += n * n;
    s->L = d; d += n * n;
    s->J = d; d += r * n;
    s->V = d; d += r * n;
    s->W = d; d += r * n;
    s->S = d; d += r * r;
    s->X = d; d += n * w;
    s->T = d; d += r * w;
    s->dg = d; d += 2 * n * n;
    s->dg0 = d; d += 2 * n * n;
    s->dk = d; d += 2 * r * n;
    s->B = d; d += n * m->nu;
    s->h = d; d += n;
    s->y = d; d += n;
    s->b = d; d += r;
    s->lam0 = d; d += r;
    s->cf = d; d += n + r + 8;
    s->rows = (int *)(void *)d;
    s->lnnz = s->rows + r;
    s->lnz = s->lnnz + n;
    s->dnnz = s->lnz + n * n;
    s->dnz = s->dnnz + n;
    s->vrn = s->dnz + n * n;
    s->vr = s->vrn + n;
    s->vcn = s->vr + n * r;
    s->vc = s->vcn + r;
    s->iota = s->vc + r * n;
    for (i = 0; i < r; ++i) {
        s->iota[i] = i;
    }
    s->n = n;
}

#ifdef CD_V4
/* The block of cd_row of NB vectors of 4 columns from column c, held in registers over the terms (a constant NB:
 * the loops over the block unrolled). */
#define CD_BLOCK(NB)                                                                   \
    for (; c + 4 * (NB) <= w; c += 4 * (NB)) {                                         \
        cd_v4 acc[NB];                                                                 \
        int v_;                                                                        \
        for (v_ = 0; v_ < (NB); ++v_) {                                                \
            acc[v_] = x != 0 ? sx * CD_CV4(x + c + 4 * v_) : zero;                     \
        }                                                                              \
        for (t = 0; t < k; ++t) {                                                      \
            const double l = cf[t];                                                    \
            const double *b = A + idx[t] * lda + c;                                    \
            for (v_ = 0; v_ < (NB); ++v_) {                                            \
                acc[v_] -= l * CD_CV4(b + 4 * v_);                                     \
            }                                                                          \
        }                                                                              \
        for (v_ = 0; v_ < (NB); ++v_) {                                                \
            CD_V4(y + c + 4 * v_) = acc[v_] * my;                                      \
        }                                                                              \
    }
#endif

/* y[c] = (sx * x[c] - sum_t cf[t] A[idx[t] * lda + c]) * my for the w columns of one row (x may be y; x NULL: 0):
 * each row computed once, its columns held in registers over the terms (blocks of 48, 24, 12 and 4 columns in
 * vectors of 4 where AVX is on), so a row is read and written once instead of once per term. */
CD_LOOPS static void cd_row(double *y, const double *x, double sx, double my, const double *cf, const int *idx,
                            int k, const double *A, int lda, int w)
{
    int c = 0, t;
#ifdef CD_V4
    const cd_v4 zero = {0.0, 0.0, 0.0, 0.0};
    CD_BLOCK(12)
    CD_BLOCK(6)
    CD_BLOCK(3)
    CD_BLOCK(1)
#endif
    for (; c < w; ++c) {
        double a = x != 0 ? sx * x[c] : 0.0;
        for (t = 0; t < k; ++t) {
            a -= cf[t] * A[idx[t] * lda + c];
        }
        y[c] = a * my;
    }
}

/* M = L^T D L in place of s->L (a copy of M), L unit lower triangular below the diagonal, D on it (Featherstone's
 * LTDL, from the last row up): the factor of a tree's mass matrix with its coordinates in tree order (each parent
 * before its children) has no fill-in, L's row k nonzero only in the ancestors of k, and the zeros skipped here and
 * in the solves leave the pairs off a branch out. The nonzeros of each row and column are listed for the solves. */
CD_LOOPS static int cd_ltdl(cd_scratch *s)
{
    const int n = s->n;
    double *H = s->L;
    int i, j, k;
    for (k = n - 1; k >= 0; --k) {
        double *hk = H + k * n;
        int *nz = s->lnz + k * n;
        const double d = hk[k];
        int c = 0, t;
        if (!(d > RODGEN_PIVOT_RTOL * fabs(s->M[k * n + k]))) {
            return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
        }
        for (i = 0; i < k; ++i) {     /* the row's nonzeros: the ancestors of k */
            if (hk[i] != 0.0) {
                nz[c++] = i;
            }
        }
        s->lnnz[k] = c;
        for (t = c - 1; t >= 0; --t) {
            const double a = hk[nz[t]] / d;
            double *hi = H + nz[t] * n;
            for (j = 0; j <= t; ++j) {
                hi[nz[j]] -= a * hk[nz[j]];
            }
            hk[nz[t]] = a;
        }
    }
    for (i = 0; i < n; ++i) {
        s->dnnz[i] = 0;
    }
    for (k = 0; k < n; ++k) {
        for (j = 0; j < s->lnnz[k]; ++j) {
            i = s->lnz[k * n + j];
            s->dnz[i * n + s->dnnz[i]++] = k;
        }
    }
    return RODGEN_OK;
}

/* B <- L^-T B (the pass from the leaves: row i less its descendants' rows) for the n x w block B, row-major. */
CD_LOOPS static void cd_up(cd_scratch *s, double *B, int w)
{
    const int n = s->n;
    int i, t;
    for (i = n - 1; i >= 0; --i) {
        const int *dz = s->dnz + i * n;
        for (t = 0; t < s->dnnz[i]; ++t) {
            s->cf[t] = s->L[dz[t] * n + i];
        }
        cd_row(B + i * w, B + i * w, 1.0, 1.0, s->cf, dz, s->dnnz[i], B, w, w);
    }
}

/* B <- L^-1 B (the pass from the roots: row k less its ancestors' rows) for the n x w block B, row-major. */
CD_LOOPS static void cd_down(cd_scratch *s, double *B, int w)
{
    const int n = s->n;
    int k;
    for (k = 0; k < n; ++k) {
        const int *lz = s->lnz + k * n;
        int t;
        for (t = 0; t < s->lnnz[k]; ++t) {
            s->cf[t] = s->L[k * n + lz[t]];
        }
        cd_row(B + k * w, B + k * w, 1.0, 1.0, s->cf, lz, s->lnnz[k], B, w, w);
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

/* M and its factor, J, the held rows, V = L^-T J^T of the held rows and W = D^-1 V (n x na, row-major: column a
 * that of held row a) with V's nonzeros by row and by column, and the Cholesky factor of S = J M^-1 J^T = V^T W. */
CD_LOOPS static int cd_factor(const rodgen_model *m, const double *p, const double *q, const int *active,
                              int impact, cd_scratch *s, int *na_out)
{
    const int n = m->nv;
    int i, k, a, na;
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
    for (k = 0; k < n; ++k) {
        for (a = 0; a < na; ++a) {
            s->V[k * na + a] = s->J[s->rows[a] * n + k];
        }
    }
    cd_up(s, s->V, na);
    for (a = 0; a < na; ++a) {
        s->vcn[a] = 0;
    }
    for (k = 0; k < n; ++k) {
        const double dinv = 1.0 / s->L[k * n + k];
        int c = 0;
        for (a = 0; a < na; ++a) {
            const double v = s->V[k * na + a];
            s->W[k * na + a] = v * dinv;
            if (v != 0.0) {
                s->vr[k * na + c++] = a;
                s->vc[a * n + s->vcn[a]++] = k;
            }
        }
        s->vrn[k] = c;
    }
    for (a = 0; a < na; ++a) {     /* S row a = sum_k V[k][a] W[k] over the nonzeros of V's column a */
        for (i = 0; i < s->vcn[a]; ++i) {
            s->cf[i] = -s->V[s->vc[a * n + i] * na + a];
        }
        cd_row(s->S + a * na, 0, 0.0, 1.0, s->cf, s->vc + a * n, s->vcn[a], s->W, na, na);
    }
    if (rodgen_cholesky_rel(s->S, na, CDERIV_SINGULAR_TOL) != RODGEN_OK) {
        return RODGEN_ERR_SINGULAR_CONSTRAINTS;
    }
    *na_out = na;
    return RODGEN_OK;
}

/* With X = R (n x w) and T = K of the held rows (na x w) given: X <- U = L^-T R, T <- dlam = S^-1 (W^T U - K),
 * D's first n rows dqdd = -L^-1 D^-1 (U - V dlam) and its rows n + row dlam (0 for rows not held). */
CD_LOOPS static void cd_kkt(const rodgen_model *m, cd_scratch *s, int na, int w, double *D)
{
    const int n = m->nv, r = m->nrows;
    const double *Ls = s->S;
    int i, a, c, k;
    cd_up(s, s->X, w);
    for (a = 0; a < na; ++a) {      /* T_a = sum_k W[k][a] U_k - K_a */
        for (i = 0; i < s->vcn[a]; ++i) {
            s->cf[i] = -s->W[s->vc[a * n + i] * na + a];
        }
        cd_row(s->T + a * w, s->T + a * w, -1.0, 1.0, s->cf, s->vc + a * n, s->vcn[a], s->X, w, w);
    }
    for (a = 0; a < na; ++a) {      /* S = Ls Ls^T: forward, then back */
        cd_row(s->T + a * w, s->T + a * w, 1.0, 1.0 / Ls[a * na + a], Ls + a * na, s->iota, a, s->T, w, w);
    }
    for (a = na - 1; a >= 0; --a) {
        for (i = a + 1; i < na; ++i) {
            s->cf[i - a - 1] = Ls[i * na + a];
        }
        cd_row(s->T + a * w, s->T + a * w, 1.0, 1.0 / Ls[a * na + a], s->cf, s->iota + a + 1, na - a - 1,
               s->T, w, w);
    }
    for (k = 0; k < n; ++k) {       /* D_k = -(U_k - sum_a V[k][a] dlam_a) / d_k */
        const int *vz = s->vr + k * na;
        for (i = 0; i < s->vrn[k]; ++i) {
            s->cf[i] = s->V[k * na + vz[i]];
        }
        cd_row(D + k * w, s->X + k * w, 1.0, -1.0 / s->L[k * n + k], s->cf, vz, s->vrn[k], s->T, w, w);
    }
    cd_down(s, D, w);
    for (i = 0; i < r; ++i) {    /* the rows of lambda: dlam where held, else 0 */
        double *di = D + (n + i) * w;
        const double *ta = 0;
        for (a = 0; a < na; ++a) {
            if (s->rows[a] == i) {
                ta = s->T + a * w;
            }
        }
        for (c = 0; c < w; ++c) {
            di[c] = ta != 0 ? ta[c] : 0.0;
        }
    }
}

/* x = M^-1 J^T lam + M^-1 y0 with y = L^-T y0 given: x = L^-1 (D^-1 y + W lam) (lam over the held rows) */
CD_LOOPS static void cd_finish(const cd_scratch *s, int na, const double *y, const double *lam, double *x)
{
    const int n = s->n;
    int k, t;
    for (k = 0; k < n; ++k) {
        double acc = y[k] / s->L[k * n + k];
        for (t = 0; t < s->vrn[k]; ++t) {
            acc += s->W[k * na + s->vr[k * na + t]] * lam[s->vr[k * na + t]];
        }
        for (t = 0; t < s->lnnz[k]; ++t) {
            acc -= s->L[k * n + s->lnz[k * n + t]] * x[s->lnz[k * n + t]];
        }
        x[k] = acc;
    }
}

/* y <- L^-T y for one vector */
CD_LOOPS static void cd_up1(const cd_scratch *s, double *y)
{
    const int n = s->n;
    int i, t;
    for (i = n - 1; i >= 0; --i) {
        double acc = y[i];
        for (t = 0; t < s->dnnz[i]; ++t) {
            acc -= s->L[s->dnz[i * n + t] * n + i] * y[s->dnz[i * n + t]];
        }
        y[i] = acc;
    }
}

/* W^T y over V's nonzeros, less or plus b */
CD_LOOPS static void cd_wty(const cd_scratch *s, int na, const double *y, double *out)
{
    const int n = s->n;
    int a, t;
    for (a = 0; a < na; ++a) {
        double acc = 0.0;
        for (t = 0; t < s->vcn[a]; ++t) {
            acc += s->W[s->vc[a * n + t] * na + a] * y[s->vc[a * n + t]];
        }
        out[a] = acc;
    }
}

CD_LOOPS int rodgen_constrained_derivatives(const rodgen_model *m, double t, const double *p, const double *q,
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
    /* the constrained dynamics: y = L^-T (B u - bias), S lambda = -(W^T y + Jdot qd), qdd = L^-1 (D^-1 y + W lambda) */
    m->bias(t, q, qd, p, s.h);
    if (nu > 0) {
        m->input_map(q, p, s.B);
    }
    for (i = 0; i < n; ++i) {
        double acc = -s.h[i];
        for (j = 0; j < nu; ++j) {
            acc += s.B[i * nu + j] * uu[j];
        }
        s.y[i] = acc;
    }
    cd_up1(&s, s.y);
    m->constraint_bias(q, qd, p, s.b);
    cd_wty(&s, na, s.y, s.lam0);
    for (i = 0; i < na; ++i) {
        s.lam0[i] = -(s.lam0[i] + s.b[s.rows[i]]);
    }
    rodgen_cholesky_solve(s.S, s.lam0, na);
    cd_finish(&s, na, s.y, s.lam0, qdd);
    for (i = 0; i < r; ++i) {
        lam[i] = 0.0;
    }
    for (i = 0; i < na; ++i) {
        lam[s.rows[i]] = s.lam0[i];
    }
    /* the partials at the solution; R = [dg/dx, -B], K = [dk/dx, 0] of the held rows */
    m->constraint_partials(t, q, qd, qdd, uu, lam, p, s.dg, s.dk);
    for (k = 0; k < n; ++k) {
        double *xk = s.X + k * w;
        const double *gk = s.dg + k * 2 * n, *bk = s.B + k * nu;
        for (j = 0; j < 2 * n; ++j) {
            xk[j] = gk[j];
        }
        for (j = 0; j < nu; ++j) {
            xk[2 * n + j] = -bk[j];
        }
    }
    for (i = 0; i < na; ++i) {
        double *ti = s.T + i * w;
        const double *ki = s.dk + s.rows[i] * 2 * n;
        for (j = 0; j < 2 * n; ++j) {
            ti[j] = ki[j];
        }
        for (j = 2 * n; j < w; ++j) {
            ti[j] = 0.0;
        }
    }
    cd_kkt(m, &s, na, w, D);
    if (!cd_finite(qdd, n) || !cd_finite(lam, r) || !cd_finite(D, (n + r) * w)) {
        return RODGEN_ERR_NONFINITE_RESULT;
    }
    return RODGEN_OK;
}

CD_LOOPS int rodgen_impact_derivatives(const rodgen_model *m, const double *p, const double *q,
                                       const double *qd_minus, const int *active, double *qd_plus, double *impulse,
                                       double *D, void *work)
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
        s.y[k] = 0.0;
    }
    cd_finish(&s, na, s.y, s.lam0, qd_plus);   /* M^-1 J^T Lambda */
    for (k = 0; k < n; ++k) {
        qd_plus[k] += qd_minus[k];
    }
    for (i = 0; i < na; ++i) {
        impulse[s.rows[i]] = s.lam0[i];
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
            s.h[k] = 0.0;
            wv[k] = qd_plus[k] - qd_minus[k];
        }
        for (i = 0; i < r; ++i) {
            s.b[i] = 0.0;
        }
        m->constraint_partials(0.0, q, s.h, s.h, zero_u, s.b, p, s.dg0, s.dk);
        m->constraint_partials(0.0, q, s.h, wv, zero_u, impulse, p, s.dg, s.dk);
        m->constraint_partials(0.0, q, s.h, qd_plus, zero_u, s.b, p, s.X, s.dk);   /* s.X: scratch */
    }
    /* R = [d(M w - J^T Lambda)/dq, -M], K = [dk_q, 0] */
    for (k = 0; k < n; ++k) {
        for (j = 0; j < n; ++j) {
            s.X[k * w + j] = s.dg[k * 2 * n + j] - s.dg0[k * 2 * n + j];
            s.X[k * w + n + j] = -s.M[k * n + j];
        }
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
