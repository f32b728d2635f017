/*
 * rodgen_contact.c: constrained forward dynamics, impact map and hybrid
 * simulation on a rodgen_model table (see rodgen_contact.h). Pure C99.
 */
#include <math.h>

#include "rodgen_contact.h"

/* ---- small dense linear algebra (row-major) ------------------------------ */

/* x <- L^-1 x */
static void solve_lower(const double *L, int n, double *x)
{
    int i, k;
    for (i = 0; i < n; ++i) {
        double s = x[i];
        for (k = 0; k < i; ++k) {
            s -= L[i * n + k] * x[k];
        }
        x[i] = s / L[i * n + i];
    }
}

/* x <- L^-T x */
static void solve_upper(const double *L, int n, double *x)
{
    int i, k;
    for (i = n - 1; i >= 0; --i) {
        double s = x[i];
        for (k = i + 1; k < n; ++k) {
            s -= L[k * n + i] * x[k];
        }
        x[i] = s / L[i * n + i];
    }
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

/* In-place LU with partial pivoting, P A = L U (unit L below the diagonal). Fails (returns 1)
 * when a pivot is <= tol * max |A| or not finite. */
static int lu(double *A, int n, int *piv, double tol)
{
    double amax = 0.0;
    int i, j, c;
    for (i = 0; i < n * n; ++i) {
        amax = fmax(amax, fabs(A[i]));
    }
    if (!(amax > 0.0) || !isfinite(amax)) {
        return 1;
    }
    for (j = 0; j < n; ++j) {
        int best = j;
        for (i = j + 1; i < n; ++i) {
            if (fabs(A[i * n + j]) > fabs(A[best * n + j])) {
                best = i;
            }
        }
        if (!(fabs(A[best * n + j]) > tol * amax)) {
            return 1;
        }
        piv[j] = best;
        if (best != j) {
            for (c = 0; c < n; ++c) {
                const double t = A[j * n + c];
                A[j * n + c] = A[best * n + c];
                A[best * n + c] = t;
            }
        }
        for (i = j + 1; i < n; ++i) {
            A[i * n + j] /= A[j * n + j];
            for (c = j + 1; c < n; ++c) {
                A[i * n + c] -= A[i * n + j] * A[j * n + c];
            }
        }
    }
    return 0;
}

static void lu_solve(const double *A, int n, const int *piv, double *x)
{
    int i, c;
    for (i = 0; i < n; ++i) {
        if (piv[i] != i) {
            const double t = x[i];
            x[i] = x[piv[i]];
            x[piv[i]] = t;
        }
    }
    for (i = 0; i < n; ++i) {
        for (c = 0; c < i; ++c) {
            x[i] -= A[i * n + c] * x[c];
        }
    }
    for (i = n - 1; i >= 0; --i) {
        for (c = i + 1; c < n; ++c) {
            x[i] -= A[i * n + c] * x[c];
        }
        x[i] /= A[i * n + i];
    }
}

/* 0 when every x[i] is finite, else NaN: x * 0 is 0 for a finite x and NaN for inf or NaN, and a NaN
 * survives the sum (no branch per entry). */
static double finite_sum(const double *x, int n)
{
    double s0 = 0.0, s1 = 0.0;
    int i;
    for (i = 0; i + 1 < n; i += 2) {
        s0 += x[i] * 0.0;
        s1 += x[i + 1] * 0.0;
    }
    if (i < n) {
        s0 += x[i] * 0.0;
    }
    return s0 + s1;
}

static int all_finite(const double *x, int n)
{
    return finite_sum(x, n) == 0.0;
}

/* Whether q [nq], qd [nv], u [nu] and p [np] are all finite. A sum of finite values minus itself is 0 (an
 * infinite or NaN entry makes it NaN); only when it is not (an entry not finite, or the sum overflowed)
 * are the entries tested one by one. */
static int inputs_finite(const double *q, const double *qd, const double *u, const double *p, int nq, int nv,
    int nu, int np)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s;
    int i;
    for (i = 0; i + 1 < nv; i += 2) {
        s0 += q[i];
        s1 += qd[i];
        s2 += q[i + 1];
        s3 += qd[i + 1];
    }
    if (i < nv) {
        s0 += q[i];
        s1 += qd[i];
    }
    for (i = nv; i < nq; ++i) {   /* the coordinates past nv (a free joint's quaternion has one more) */
        s2 += q[i];
    }
    for (i = 0; i + 1 < nu; i += 2) {
        s2 += u[i];
        s3 += u[i + 1];
    }
    if (i < nu) {
        s2 += u[i];
    }
    for (i = 0; i + 1 < np; i += 2) {
        s0 += p[i];
        s1 += p[i + 1];
    }
    if (i < np) {
        s0 += p[i];
    }
    s = (s0 + s1) + (s2 + s3);
    if (s - s == 0.0) {
        return 1;
    }
    return all_finite(q, nq) && all_finite(qd, nv) && (nu == 0 || all_finite(u, nu)) && all_finite(p, np);
}

/* ---- scratch layout ------------------------------------------------------ */

typedef struct {
    double *M;     /* [nv*nv] M, then its Cholesky factor */
    double *J;     /* [nrows*nv] */
    double *c;     /* [nrows] */
    double *b;     /* [nrows] Jdot qd */
    double *Y;     /* [nrows*nv] row i: L^-1 J_{row i}^T */
    double *S;     /* [nrows*nrows] */
    double *h;     /* [nv] */
    double *B;     /* [nv*nu] */
    double *z;     /* [nv] */
    double *v;     /* [nv] */
    double *w;     /* [nrows] */
    double *Z;     /* [nrows*nv] row i: L^-1 (force direction of row i)^T (= Y when nothing slides) */
    double *coef;  /* [2*nrows] sliding contact: tangential force along its tangent j = coef[2i+j] * normal
                      force (one tangent in the plane, two in space); else 0 */
    double *mu;    /* [nconstraints] */
    double *Sf;    /* [nrows*nrows] J M^-1 J^T of every row (constrained_terms) */
    int *rows;     /* [nrows] active rows */
    int *trow;     /* [nrows] sliding contact: its first tangential row (rows[i] - trow[i] tangents); else -1 */
    int *piv;      /* [nrows] LU pivots */
    int *act;      /* [nconstraints] working active set */
    int *tang;     /* [nrows] active row i is a contact's tangential row (held where it is without a target) */
    int nslide;    /* sliding contacts among the rows */
    double *mk;    /* [nconstraints] kinetic friction limits (dry-friction blocks) */
    double *fval;  /* [nconstraints] the friction forces of the slipping dry-friction blocks */
    int *frow;     /* [nconstraints] their rows */
    int nfric;     /* slipping dry-friction blocks */
    int *act0;     /* [nconstraints] an impact's blocks at the ground (its active set before any release) */
} scratch;

/* The factors constrained_solve stores for constrained_response: (nq + nv)^2 doubles where the model has it. */
#define RESPONSE_DOUBLES(m) ((m)->constrained_response != 0 ? (long)RODGEN_NY(m) * RODGEN_NY(m) : 0L)

static long size_doubles(const rodgen_model *m)
{
    const long nv = RODGEN_NV(m), nr = m->nrows, nu = m->nu;
    return nv * nv + 3 * nr * nv + 2 * nr * nr + 5 * nr + 3 * nv + nv * nu + 3L * m->nconstraints;
}

static long size_ints(const rodgen_model *m)
{
    return 4L * m->nrows + 3L * m->nconstraints;
}

static long round_up(long bytes)
{
    const long d = (long)sizeof(double);
    return (bytes + d - 1) / d * d;
}

long rodgen_contact_work_bytes(const rodgen_model *m)
{
    return round_up(size_doubles(m) * (long)sizeof(double) + size_ints(m) * (long)sizeof(int));
}

static void carve(const rodgen_model *m, void *work, scratch *w)
{
    const int nv = RODGEN_NV(m), nr = m->nrows, nu = m->nu;
    double *d = (double *)work;
    w->M = d;
    d += nv * nv;
    w->J = d;
    d += nr * nv;
    w->c = d;
    d += nr;
    w->b = d;
    d += nr;
    w->Y = d;
    d += nr * nv;
    w->S = d;
    d += nr * nr;
    w->h = d;
    d += nv;
    w->B = d;
    d += nv * nu;
    w->z = d;
    d += nv;
    w->v = d;
    d += nv;
    w->w = d;
    d += nr;
    w->Z = d;
    d += nr * nv;
    w->coef = d;
    d += 2 * nr;
    w->mu = d;
    d += m->nconstraints;
    w->Sf = d;
    d += nr * nr;
    w->mk = d;
    d += m->nconstraints;
    w->fval = d;
    d += m->nconstraints;
    w->rows = (int *)(void *)d;
    w->trow = w->rows + nr;
    w->piv = w->rows + 2 * nr;
    w->act = w->rows + 3 * nr;
    w->tang = w->act + m->nconstraints;
    w->frow = w->tang + nr;
    w->act0 = w->frow + m->nconstraints;
    w->nslide = 0;
    w->nfric = 0;
}

void rodgen_cfd_defaults(rodgen_cfd_options *o)
{
    o->alpha = 10.0;
    o->beta = 10.0;
    o->singular_tol = 1e-10;
}

static int is_active(const rodgen_model *m, const int *active, int i)
{
    return m->constraints[i].kind == RODGEN_LOOP || (active != 0 && active[i] != 0);
}

static int is_sliding(const rodgen_model *m, const int *active, int i)
{
    return m->constraints[i].kind == RODGEN_CONTACT && active != 0
        && (active[i] == RODGEN_SLIDE_PLUS || active[i] == RODGEN_SLIDE_MINUS || active[i] == RODGEN_SLIDE);
}

/* The tangential rows of contact i (1 in the plane, 2 in space): rows row .. row + ntan - 1, its normal after. */
static int ntan(const rodgen_model *m, int i)
{
    return m->constraints[i].nrows - 1;
}

/* The Euclidean norm of a contact's tangential entries x[r .. r + nt - 1]. */
static double tnorm(const double *x, int r, int nt)
{
    return nt == 1 ? fabs(x[r]) : sqrt(x[r] * x[r] + x[r + 1] * x[r + 1]);
}

/* The unit direction of a 3-row contact's sliding motion (RODGEN_SLIDE, see rodgen_contact.h) from its
 * tangential velocity vt [2] and reference ref [2] (NULL or zero: vt's own direction): with e = |ref| (at
 * least RODGEN_SLIDE_REST) and r its direction, s = vt + e (1 - |vt|/(4e))^2 r below the speed 4e (vt
 * itself above), its component along r mirrored into r's half plane, normalised, into d [2]. Returns 1
 * when there is no direction (vt = 0, no ref). */
static int slide_direction(const double *vt, const double *ref, double *d)
{
    double r0 = ref != 0 ? ref[0] : 0.0, r1 = ref != 0 ? ref[1] : 0.0, e = sqrt(r0 * r0 + r1 * r1), s0, s1, n, v;
    if (!(e > 0.0) || !isfinite(e)) {
        r0 = vt[0];
        r1 = vt[1];
        e = sqrt(r0 * r0 + r1 * r1);
        if (!(e > 0.0) || !isfinite(e)) {
            return 1;
        }
        r0 /= e;
        r1 /= e;
        e = RODGEN_SLIDE_REST;
    } else {
        r0 /= e;
        r1 /= e;
        e = fmax(e, RODGEN_SLIDE_REST);
    }
    v = sqrt(vt[0] * vt[0] + vt[1] * vt[1]);
    s0 = vt[0];
    s1 = vt[1];
    if (v < 4.0 * e) {
        const double f = 1.0 - v / (4.0 * e), w = e * f * f;
        s0 += w * r0;
        s1 += w * r1;
    }
    n = s0 * r0 + s1 * r1;
    if (n < 0.0) {
        /* moving back along the reference (past the stop, in a trial step): the component along it is
         * mirrored, so the force stays against the reference and the direction field stays continuous
         * across v_t . ref = 0 */
        s0 -= 2.0 * n * r0;
        s1 -= 2.0 * n * r1;
    }
    n = sqrt(s0 * s0 + s1 * s1);
    if (!(n > 0.0)) {
        s0 = r0;
        s1 = r1;
        n = 1.0;
    }
    d[0] = s0 / n;
    d[1] = s1 / n;
    return 0;
}

/* The tangential coefficients of the sliding 3-row contacts among the k active rows (w->coef: -mu d, d
 * their sliding direction) from the rows' velocities vrow (vrow[r] = J_r qd of every row r) and the
 * reference directions in target (NULL: the velocities' own). Returns RODGEN_OK or RODGEN_ERR_OPTIONS
 * (a contact at rest without a reference direction). */
static int slide_coefs(int k, const double *vrow, const double *target, scratch *w)
{
    int i;
    for (i = 0; i < k; ++i) {
        const int r = w->trow[i];
        double d[2];
        if (r < 0 || w->rows[i] - r != 2) {
            continue;
        }
        if (slide_direction(vrow + r, target != 0 ? target + r : 0, d) != 0) {
            return RODGEN_ERR_OPTIONS;
        }
        w->coef[2 * i] = -w->coef[2 * i] * d[0];       /* coef[2i] held mu */
        w->coef[2 * i + 1] = -w->coef[2 * i + 1] * d[1];
    }
    return RODGEN_OK;
}

/* A dry-friction block (RODGEN_FRICTION): held while it sticks, its kinetic force applied while it slips. */
static int is_friction(const rodgen_model *m, int i)
{
    return m->constraints[i].kind == RODGEN_FRICTION;
}

static int friction_slips(const rodgen_model *m, const int *active, int i)
{
    return is_friction(m, i) && active != 0 && (active[i] == RODGEN_SLIDE_PLUS || active[i] == RODGEN_SLIDE_MINUS);
}

/* A sliding contact or a slipping dry-friction block: it sticks when its velocity turns. */
static int slides(const rodgen_model *m, const int *active, int i)
{
    return is_sliding(m, active, i) || friction_slips(m, active, i);
}

static int is_unilateral(const rodgen_model *m, int i)
{
    return m->constraints[i].kind == RODGEN_CONTACT || m->constraints[i].kind == RODGEN_LIMIT;
}

/* The row of a unilateral block that carries its normal: the gap of a contact (a contact of d = 2 or 3 rows
 * has its d - 1 tangential rows first, then the gap; a flat foot of 6 rows the three of a point, then its
 * orientation), the limit's row. */
static int normal_row(const rodgen_model *m, int i)
{
    const rodgen_constraint *c = m->constraints + i;
    return c->kind == RODGEN_CONTACT ? c->row + (c->nrows < 3 ? c->nrows : 3) - 1 : c->row;
}

/* Whether row k (0-based within block i) of a contact is held where it is when no target is given: every
 * row but the gap (the tangential position, a flat foot's orientation). */
static int held_in_place(const rodgen_model *m, int i, int k)
{
    return m->constraints[i].kind == RODGEN_CONTACT && m->constraints[i].row + k != normal_row(m, i);
}

/* Whether row r is a row of a contact held where it is when no target is given. */
static int tangential_row(const rodgen_model *m, int r)
{
    int j;
    for (j = 0; j < m->nconstraints; ++j) {
        const rodgen_constraint *c = m->constraints + j;
        if (c->kind == RODGEN_CONTACT && r >= c->row && r < c->row + c->nrows) {
            return held_in_place(m, j, r - c->row);
        }
    }
    return 0;
}

static int model_ok(const rodgen_model *m)
{
    /* velocities qd [nv]: M, J and the accelerations are velocity-sized (nv < nv with free or spherical joints,
     * whose configurations lie_joints lists) */
    if (m == 0 || m->nq < 1 || RODGEN_NV(m) < 1 || RODGEN_NV(m) > m->nq || (m->nlie > 0 && m->lie_joints == 0)
        || (m->nlie == 0 && RODGEN_NV(m) != m->nq) || m->nu < 0 || m->nconstraints < 0 || m->nrows < 0
        || m->mass_matrix == 0 || m->bias == 0 || (m->nu > 0 && m->input_map == 0)) {
        return 0;
    }
    if (m->nconstraints > 0
        && (m->constraints == 0 || m->constraint_position == 0 || m->constraint_jacobian == 0
            || m->constraint_bias == 0)) {
        return 0;
    }
    return 1;
}

/* The checks of the arguments every entry makes (rodgen_constrained_dynamics, rodgen_impact, rodgen_hybrid_start):
 * the model's table, the entry's own arguments (args_ok: its outputs and scratch given, its options valid), the
 * state q [nq] and velocities qd [nv] given, the inputs u [nu] given when nu > 0 (nu: the model's when the entry
 * reads inputs, else 0), and all of them and the parameters *p finite (*p NULL: the model's defaults, set here).
 * Returns RODGEN_OK, RODGEN_ERR_OPTIONS or RODGEN_ERR_NONFINITE_INPUT. */
static int check_call(const rodgen_model *m, int args_ok, const double *q, const double *qd, const double *u, int nu,
    const double **p)
{
    if (!model_ok(m) || !args_ok || q == 0 || qd == 0 || (nu > 0 && u == 0)) {
        return RODGEN_ERR_OPTIONS;
    }
    if (*p == 0) {
        *p = m->default_p;
    }
    if ((m->np > 0 && *p == 0) || !inputs_finite(q, qd, u, *p, m->nq, RODGEN_NV(m), nu, m->np)) {
        return RODGEN_ERR_NONFINITE_INPUT;
    }
    return RODGEN_OK;
}

/* List the rows of the active blocks (w->rows, trow, coef, nslide); returns their number or -status.
 * A sliding contact holds its gap only, its tangential force coef * normal (the coefficients of a 3-row
 * contact are mu here, their direction set by slide_coefs); hold_all 1 (an impact of rodgen_impact): every
 * row of an active contact held; 2 (an impact of the hybrid simulator): sliding contacts slide.
 * A dry-friction block holds its row while it sticks; while it slips its row is free and its kinetic
 * force (w->frow, fval, nfric) is applied. hold_all (impacts) leaves dry-friction blocks out: a bounded
 * friction force has no impulse. */
static int active_rows(const rodgen_model *m, const double *p, const int *active, int hold_all, scratch *w)
{
    int i, r, k = 0;
    w->nslide = 0;
    w->nfric = 0;
    for (i = 0; i < m->nconstraints; ++i) {
        if (is_friction(m, i)) {
            const int row = m->constraints[i].row;
            if (hold_all || active == 0 || active[i] == 0) {
                continue;
            }
            if (active[i] == RODGEN_STICK) {
                w->rows[k] = row;
                w->trow[k] = -1;
                w->tang[k] = 0;
                w->coef[2 * k] = 0.0;
                w->coef[2 * k + 1] = 0.0;
                k += 1;
                continue;
            }
            if (m->kinetic_friction == 0) {
                return -RODGEN_ERR_OPTIONS;
            }
            if (w->nfric == 0) {
                m->kinetic_friction(p, w->mk);
            }
            if (!(w->mk[i] >= 0.0)) {
                return -RODGEN_ERR_OPTIONS;
            }
            w->frow[w->nfric] = row;
            w->fval[w->nfric] = (active[i] == RODGEN_SLIDE_PLUS ? 1.0 : -1.0) * w->mk[i];
            w->nfric += 1;
            continue;
        }
        if (hold_all != 1 && is_sliding(m, active, i)) {
            const int row = m->constraints[i].row, nt = ntan(m, i);
            /* one tangent: SLIDE_PLUS / SLIDE_MINUS; two: SLIDE (the direction from the velocity, slide_coefs) */
            if (m->constraint_friction == 0 || !(nt == 1 ? active[i] != RODGEN_SLIDE
                                                          : nt == 2 && active[i] == RODGEN_SLIDE)) {
                return -RODGEN_ERR_OPTIONS;
            }
            if (w->nslide == 0) {
                m->constraint_friction(p, w->mu);
            }
            if (!(w->mu[i] >= 0.0)) {
                return -RODGEN_ERR_OPTIONS;
            }
            w->rows[k] = row + nt;
            w->trow[k] = row;
            w->tang[k] = 0;
            w->coef[2 * k] = nt == 1 ? (active[i] == RODGEN_SLIDE_PLUS ? 1.0 : -1.0) * w->mu[i] : w->mu[i];
            w->coef[2 * k + 1] = nt == 1 ? 0.0 : w->mu[i];
            k += 1;
            w->nslide += 1;
        } else if (is_active(m, active, i)) {
            for (r = 0; r < m->constraints[i].nrows; ++r) {
                w->rows[k] = m->constraints[i].row + r;
                w->trow[k] = -1;
                w->tang[k] = held_in_place(m, i, r);
                w->coef[2 * k] = 0.0;
                w->coef[2 * k + 1] = 0.0;
                k += 1;
            }
        }
    }
    return k;
}

/* Factorise M (into w->M), list the rows of the active blocks and fill w->J; returns their number or
 * -status (see active_rows). */
static int prepare(const rodgen_model *m, const double *p, const double *q, const int *active, int hold_all,
    scratch *w)
{
    int k;
    m->mass_matrix(q, p, w->M);
    if (rodgen_cholesky_rel(w->M, RODGEN_NV(m), 0.0) != RODGEN_OK) {
        return -RODGEN_ERR_NOT_POSITIVE_DEFINITE;
    }
    k = active_rows(m, p, active, hold_all, w);
    if (k >= 0 && m->nconstraints > 0) {
        m->constraint_jacobian(q, p, w->J);
    }
    return k;
}

/* c_target of row r: target[r], or (target NULL) a contact's tangential row holds where it is (c), every
 * other row 0. */
static double row_target(const rodgen_model *m, const double *target, const double *c, int r)
{
    if (target != 0) {
        return target[r];
    }
    return tangential_row(m, r) ? c[r] : 0.0;
}

/* x <- S^-1 x for a symmetric positive definite S [k*k], by S = L D L^T (unit L in the strict lower
 * triangle, L D^T in the strict upper one, 1/D on the diagonal: no square roots). Fails (returns 1)
 * when a pivot D_j is <= tol * max diag(S) or not finite: the test of rodgen_cholesky_rel, whose pivots are
 * sqrt(D_j). The small systems of the constrained dynamics in one pass. */
static int spd_solve(double *S, int k, double *x, double tol)
{
    double dmax = 0.0;
    int i, j, c;
    for (i = 0; i < k; ++i) {
        dmax = S[i * k + i] > dmax ? S[i * k + i] : dmax;
    }
    if (!(dmax > 0.0 && dmax < HUGE_VAL)) {
        return 1;
    }
    for (j = 0; j < k; ++j) {
        double *sj = S + j * k;
        double d = sj[j], r, y = x[j];
        for (c = 0; c < j; ++c) {
            const double e = S[c * k + j];   /* L_jc D_c */
            d -= sj[c] * e;
            y -= sj[c] * x[c];
        }
        if (!(d > tol * dmax && d < HUGE_VAL)) {
            return 1;
        }
        r = 1.0 / d;
        sj[j] = r;
        x[j] = y;
        for (i = j + 1; i < k; ++i) {
            double *si = S + i * k;
            double t = si[j];
            for (c = 0; c < j; ++c) {
                t -= si[c] * S[c * k + j];
            }
            sj[i] = t;          /* L_ij D_j */
            si[j] = t * r;      /* L_ij */
        }
    }
    for (i = k - 1; i >= 0; --i) {
        double y = x[i] * S[i * k + i];
        for (c = i + 1; c < k; ++c) {
            y -= S[c * k + i] * x[c];
        }
        x[i] = y;
    }
    return 0;
}

/* The constrained dynamics from the model's constrained_terms (every row's J, c, J qd, J qdd0 + Jdot qd,
 * M^-1 J^T and J M^-1 J^T, the free accelerations qdd0; no factorisation of M at run time):
 *   S lambda = gamma - (J qdd0 + Jdot qd), gamma = -2 alpha J qd - beta^2 (c - target), over the active
 *   rows, S from the rows of J M^-1 J^T (with sliding contacts S_ij = J_i M^-1 W_j^T,
 *   W_j = J_j + coef_j J_t(j)); qdd = qdd0 + M^-1 W^T lambda.
 * When every row is active (k == nrows, nothing slides: a sliding contact holds one row of two) the rows
 * are 0 .. nrows - 1 and S is J M^-1 J^T itself, factorised where the generated code left it. */
static int cfd_terms(const rodgen_model *m, double t, const double *p, const double *q, const double *qd,
    const double *u, const int *active, const double *target, const rodgen_cfd_options *o, double *qdd,
    double *lambda,
    scratch *w)
{
    const int nv = RODGEN_NV(m), nr = m->nrows;
    const double a2 = 2.0 * o->alpha, b2 = o->beta * o->beta;
    double *const d = w->h, *const qdd0 = w->z, *const v = w->w, *const a0 = w->b, *const A = w->Y;
    double *S = w->S, fin0 = 0.0, fin1 = 0.0;
    int k, i, j, bad = 0;
    k = active_rows(m, p, active, 0, w);
    if (k < 0) {
        return -k;
    }
    m->constrained_terms(t, q, qd, u, p, d, qdd0, w->J, w->c, v, a0, A, w->Sf);
    for (i = 0; i < nv; ++i) {
        bad |= !(d[i] > 0.0);
    }
    if (bad) {
        return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
    }
    if (w->nslide > 0 && slide_coefs(k, v, target, w) != RODGEN_OK) {   /* v: J qd of every row */
        return RODGEN_ERR_OPTIONS;
    }
    if (lambda != 0) {
        for (i = 0; i < nr; ++i) {
            lambda[i] = 0.0;
        }
    }
    /* the kinetic forces of slipping dry-friction blocks act like inputs: qdd0 += f M^-1 J_r^T, and the
     * rows' free accelerations a0 += f J M^-1 J_r^T */
    for (j = 0; j < w->nfric; ++j) {
        const int rr = w->frow[j];
        const double f = w->fval[j];
        const double *ar = A + rr * nv;
        for (i = 0; i < nv; ++i) {
            qdd0[i] += f * ar[i];
        }
        for (i = 0; i < nr; ++i) {
            a0[i] += f * w->Sf[i * nr + rr];
        }
        if (lambda != 0) {
            lambda[rr] = f;
        }
    }
    if (k == nr) {
        /* every row: S = J M^-1 J^T as computed, the right-hand side in place of v */
        S = w->Sf;
        for (i = 0; i < k; ++i) {
            const double tgt = target != 0 ? target[i] : (w->tang[i] ? w->c[i] : 0.0);
            v[i] = -a0[i] - a2 * v[i] - b2 * (w->c[i] - tgt);
        }
    } else {
        /* right-hand side into v: the rows are in increasing order (rows[i] >= i), so v[i] is written
         * only after v[rows[i]] has been read */
        for (i = 0; i < k; ++i) {
            const int r = w->rows[i];
            const double *sr = w->Sf + r * nr;
            double *si = S + i * k;
            const double tgt = target != 0 ? target[r] : (w->tang[i] ? w->c[r] : 0.0);
            for (j = 0; j < k; ++j) {
                si[j] = sr[w->rows[j]];
            }
            if (w->nslide > 0) {
                for (j = 0; j < k; ++j) {
                    int tt;
                    for (tt = 0; w->trow[j] >= 0 && tt < w->rows[j] - w->trow[j]; ++tt) {
                        si[j] += w->coef[2 * j + tt] * sr[w->trow[j] + tt];
                    }
                }
            }
            v[i] = -a0[r] - a2 * v[r] - b2 * (w->c[r] - tgt);
        }
    }
    if (k > 0) {
        if (w->nslide > 0) {
            if (lu(S, k, w->piv, o->singular_tol) != 0) {
                return RODGEN_ERR_SINGULAR_CONSTRAINTS;
            }
            lu_solve(S, k, w->piv, v);
        } else if (spd_solve(S, k, v, o->singular_tol) != 0) {
            return RODGEN_ERR_SINGULAR_CONSTRAINTS;
        }
    }
    /* qdd = qdd0 + sum of lambda_i A_rows[i] (+ coef_i lambda_i A_trow[i], the tangential force) */
    for (j = 0; j < nv; ++j) {
        qdd[j] = qdd0[j];
    }
    for (i = 0; i + 1 < k && w->nslide == 0; i += 2) {   /* two rows at a time: qdd read and written once */
        const double li = v[i], lk = v[i + 1];
        const double *ai = A + w->rows[i] * nv, *ak = A + w->rows[i + 1] * nv;
        for (j = 0; j < nv; ++j) {
            qdd[j] += li * ai[j] + lk * ak[j];
        }
        fin0 += li * 0.0;
        fin1 += lk * 0.0;
        if (lambda != 0) {
            lambda[w->rows[i]] = li;
            lambda[w->rows[i + 1]] = lk;
        }
    }
    for (; i < k; ++i) {
        const double li = v[i];
        const double *ai = A + w->rows[i] * nv;
        for (j = 0; j < nv; ++j) {
            qdd[j] += li * ai[j];
        }
        fin0 += li * 0.0;
        if (lambda != 0) {
            lambda[w->rows[i]] = li;
        }
        if (w->trow[i] >= 0) {
            int tt;
            for (tt = 0; tt < w->rows[i] - w->trow[i]; ++tt) {
                const double ft = w->coef[2 * i + tt] * li;
                const double *at = A + (w->trow[i] + tt) * nv;
                for (j = 0; j < nv; ++j) {
                    qdd[j] += ft * at[j];
                }
                if (lambda != 0) {
                    lambda[w->trow[i] + tt] = ft;
                }
            }
        }
    }
    for (j = 0; j + 1 < nv; j += 2) {
        fin0 += qdd[j] * 0.0;
        fin1 += qdd[j + 1] * 0.0;
    }
    if (j < nv) {
        fin0 += qdd[j] * 0.0;
    }
    return fin0 + fin1 == 0.0 ? RODGEN_OK : RODGEN_ERR_NONFINITE_RESULT;
}

/* Whether no block of the active set slides (a sliding contact, a slipping dry-friction block). */
static int none_sliding(const rodgen_model *m, const int *active)
{
    int i;
    for (i = 0; i < m->nconstraints && active != 0; ++i) {
        if (slides(m, active, i)) {
            return 0;
        }
    }
    return 1;
}

/* The constrained dynamics from the model's constrained_solve (qdd and lambda in the generated code; the
 * rows of the active blocks held, the others with lambda 0). The same equations, tests and statuses as
 * cfd_terms: M positive definite (its pivots), S = J M^-1 J^T of the rows held with the pivot test of
 * spd_solve (pivots in the order of the rows, relative to the largest diagonal entry of the rows held).
 * A contact's tangential row without a target holds where it is: its position gain is 0. */
/* The gains k [4 nrows] and targets tg [nrows] of constrained_solve for the active blocks; returns the number
 * of blocks held. */
static int solve_gains(const rodgen_model *m, const int *active, const double *target, const rodgen_cfd_options *o,
    double *kv, double *tg)
{
    const double a2 = 2.0 * o->alpha, b2 = o->beta * o->beta;
    int i, r, held = 0;
    for (i = 0; i < m->nconstraints; ++i) {
        const rodgen_constraint *c = m->constraints + i;
        const double on = is_active(m, active, i) ? 1.0 : 0.0;
        held += on != 0.0;
        for (r = c->row; r < c->row + c->nrows; ++r) {
            kv[4 * r] = on;
            kv[4 * r + 1] = 1.0 - on;
            kv[4 * r + 2] = a2;
            kv[4 * r + 3] = b2;
            tg[r] = target != 0 ? target[r] : 0.0;
        }
        for (r = 0; target == 0 && r < c->nrows; ++r) {
            if (held_in_place(m, i, r)) {
                kv[4 * (c->row + r) + 3] = 0.0;
            }
        }
    }
    return held;
}

/* fac: where constrained_solve stores its factors for constrained_response (RESPONSE_DOUBLES), or NULL: not
 * stored. */
static int cfd_solve(const rodgen_model *m, double t, const double *p, const double *q, const double *qd,
    const double *u, const int *active, const double *target, const rodgen_cfd_options *o, double *qdd,
    double *lambda, double *work, double *fac)
{
    const int nv = RODGEN_NV(m), nr = m->nrows;
    /* its own layout of the scratch (8 nrows + 2 nv doubles, less than size_doubles) */
    double *const kv = work, *const tg = work + 4 * nr, *const s = tg + nr, *const lam = s + 2 * nr;
    double *const a = lam + nr, *const d = a + nv;   /* a, lam: copied to qdd, lambda once they pass the tests */
    double dmax = 0.0, fin0 = 0.0, fin1 = 0.0;
    int i, bad = 0;
    const int held = solve_gains(m, active, target, o, kv, tg);
    m->constrained_solve(t, q, qd, u, p, kv, tg, d, a, lam, s, fac);
    for (i = 0; i < nv; ++i) {
        bad |= !(d[i] > 0.0);
    }
    if (bad) {
        return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
    }
    if (held > 0) {
        for (i = 0; i < nr; ++i) {
            if (kv[4 * i] != 0.0) {
                dmax = s[nr + i] > dmax ? s[nr + i] : dmax;
            }
        }
        if (!(dmax > 0.0 && dmax < HUGE_VAL)) {
            return RODGEN_ERR_SINGULAR_CONSTRAINTS;
        }
        for (i = 0; i < nr; ++i) {
            bad |= kv[4 * i] != 0.0 && !(s[i] > o->singular_tol * dmax && s[i] < HUGE_VAL);
            fin0 += lam[i] * 0.0;
        }
        if (bad) {
            return RODGEN_ERR_SINGULAR_CONSTRAINTS;
        }
    }
    for (i = 0; i + 1 < nv; i += 2) {
        fin0 += a[i] * 0.0;
        fin1 += a[i + 1] * 0.0;
        qdd[i] = a[i];
        qdd[i + 1] = a[i + 1];
    }
    if (i < nv) {
        fin0 += a[i] * 0.0;
        qdd[i] = a[i];
    }
    if (lambda != 0) {
        for (i = 0; i < nr; ++i) {
            lambda[i] = lam[i];
        }
    }
    return fin0 + fin1 == 0.0 ? RODGEN_OK : RODGEN_ERR_NONFINITE_RESULT;
}

/* Y (row i = L^-1 J_{rows[i]}^T) and the Cholesky factor of S = Y Y^T; with sliding contacts
 * also Z (row i = L^-1 W_i^T, W the force directions) and the LU factors of S = Y Z^T. */
static int factor_s(const rodgen_model *m, int k, double tol, scratch *w)
{
    const int nv = RODGEN_NV(m);
    int i, j;
    for (i = 0; i < k; ++i) {
        double *y = w->Y + i * nv;
        for (j = 0; j < nv; ++j) {
            y[j] = w->J[w->rows[i] * nv + j];
        }
        solve_lower(w->M, nv, y);
    }
    if (w->nslide > 0) {
        for (i = 0; i < k; ++i) {
            double *z = w->Z + i * nv;
            int tt;
            for (j = 0; j < nv; ++j) {
                z[j] = w->J[w->rows[i] * nv + j];
            }
            for (tt = 0; w->trow[i] >= 0 && tt < w->rows[i] - w->trow[i]; ++tt) {
                for (j = 0; j < nv; ++j) {
                    z[j] += w->coef[2 * i + tt] * w->J[(w->trow[i] + tt) * nv + j];
                }
            }
            solve_lower(w->M, nv, z);
        }
        for (i = 0; i < k; ++i) {
            for (j = 0; j < k; ++j) {
                w->S[i * k + j] = dot(w->Y + i * nv, w->Z + j * nv, nv);
                w->Sf[i * k + j] = w->S[i * k + j];   /* kept for least_norm_general when the rows are dependent */
            }
        }
        return lu(w->S, k, w->piv, tol) != 0 ? RODGEN_ERR_SINGULAR_CONSTRAINTS : RODGEN_OK;
    }
    for (i = 0; i < k; ++i) {
        for (j = 0; j <= i; ++j) {
            const double s = dot(w->Y + i * nv, w->Y + j * nv, nv);
            w->S[i * k + j] = s;
            w->S[j * k + i] = s;
            w->Sf[i * k + j] = s;   /* kept for least_norm_solve when the rows are dependent */
            w->Sf[j * k + i] = s;
        }
    }
    return k > 0 && rodgen_cholesky_rel(w->S, k, tol) != RODGEN_OK ? RODGEN_ERR_SINGULAR_CONSTRAINTS : RODGEN_OK;
}

/* The least-norm solution of S x = b (x replaces b [k]) for the symmetric positive semidefinite S [k*k] of
 * dependent rows (redundant contact rows: two points of one rigid body, four corners of a sole; the forces
 * are then not unique, the motion is): Cholesky with symmetric pivoting, the largest remaining diagonal entry
 * first, stopped where that is <= tol * max diag(S), gives P S P^T = L L^T with L [k*r] of full column rank r;
 * then x = P^T L (L^T L)^-2 L^T P b, the pseudo-inverse of S applied to b (the least-norm forces, those of the
 * least-norm solution of the whole KKT system, whose accelerations are unique). Fails (returns 1) when b is not
 * in the range of S (the rows held contradict each other: |S x - b| > 1e-8 (|b| + max diag(S) |x|), max norms)
 * or S is 0 or not finite. */
static int least_norm_solve(const double *S, int k, double *b, double tol)
{
    double A[k * k], L[k * k], G[k * k], y[k], x[k], dmax = 0.0, bmax = 0.0, xmax = 0.0, rmax = 0.0;
    int perm[k], i, j, c, r = 0;
    for (i = 0; i < k * k; ++i) {
        A[i] = S[i];
        L[i] = 0.0;
    }
    for (i = 0; i < k; ++i) {
        perm[i] = i;
        dmax = fmax(dmax, S[i * k + i]);
    }
    if (!(dmax > 0.0 && dmax < HUGE_VAL)) {
        return 1;
    }
    for (j = 0; j < k; ++j, ++r) {
        int pj = j;
        double d;
        for (i = j + 1; i < k; ++i) {
            pj = A[i * k + i] > A[pj * k + pj] ? i : pj;
        }
        if (!(A[pj * k + pj] > tol * dmax)) {
            break;   /* the remaining rows depend on those taken */
        }
        if (pj != j) {   /* swap rows and columns j, pj of A, rows j, pj of L (its first j columns) */
            const int tp = perm[j];
            perm[j] = perm[pj];
            perm[pj] = tp;
            for (c = 0; c < k; ++c) {
                const double ta = A[j * k + c];
                A[j * k + c] = A[pj * k + c];
                A[pj * k + c] = ta;
            }
            for (c = 0; c < k; ++c) {
                const double ta = A[c * k + j];
                A[c * k + j] = A[c * k + pj];
                A[c * k + pj] = ta;
            }
            for (c = 0; c < j; ++c) {
                const double tl = L[j * k + c];
                L[j * k + c] = L[pj * k + c];
                L[pj * k + c] = tl;
            }
        }
        d = sqrt(A[j * k + j]);
        L[j * k + j] = d;
        for (i = j + 1; i < k; ++i) {
            L[i * k + j] = A[i * k + j] / d;
        }
        for (i = j + 1; i < k; ++i) {   /* the Schur complement of the rows taken */
            for (c = j + 1; c < k; ++c) {
                A[i * k + c] -= L[i * k + j] * L[c * k + j];
            }
        }
    }
    /* y = L^T P b, G = L^T L (r x r), w = G^-2 y, x = P^T L w */
    for (j = 0; j < r; ++j) {
        y[j] = 0.0;
        for (i = 0; i < k; ++i) {
            y[j] += L[i * k + j] * b[perm[i]];
        }
        for (c = 0; c < r; ++c) {
            G[j * r + c] = 0.0;
            for (i = 0; i < k; ++i) {
                G[j * r + c] += L[i * k + j] * L[i * k + c];
            }
        }
    }
    if (r == 0 || rodgen_cholesky_rel(G, r, 0.0) != RODGEN_OK) {
        return 1;
    }
    rodgen_cholesky_solve(G, y, r);
    rodgen_cholesky_solve(G, y, r);
    for (i = 0; i < k; ++i) {
        double v = 0.0;
        for (j = 0; j < r; ++j) {
            v += L[i * k + j] * y[j];
        }
        x[perm[i]] = v;
    }
    for (i = 0; i < k; ++i) {
        bmax = fmax(bmax, fabs(b[i]));
        xmax = fmax(xmax, fabs(x[i]));
        rmax = fmax(rmax, fabs(dot(S + i * k, x, k) - b[i]));
    }
    if (!(rmax <= 1e-8 * (bmax + dmax * xmax))) {
        return 1;
    }
    for (i = 0; i < k; ++i) {
        b[i] = x[i];
    }
    return 0;
}

/* The least-norm solution of S x = b (x replaces b [k]) for the non-symmetric S = Y Z^T [k*k] of sliding
 * contacts whose held rows are dependent (a box sliding on its four corners: four normal rows of rank 3):
 * x = S^T y, y a solution of S S^T y = b by least_norm_solve. S S^T has the range of S and the null space of
 * S^T, so x is the pseudo-inverse of S applied to b: of the forces that give the motion, the least-norm ones
 * (the same as the least-norm solution of the whole KKT system when the null space of S is that of the
 * force directions W^T, as for a rigid body's redundant points). tol applies to the diagonal of S S^T. Fails
 * (returns 1) as least_norm_solve: b not in the range of S (rows that contradict each other), S 0 or not
 * finite. */
static int least_norm_general(const double *S, int k, double *b, double tol)
{
    double G[k * k], y[k];
    int i, j;
    for (i = 0; i < k * k; ++i) {   /* one loop over the k * k entries, as least_norm_solve's (a VLA) */
        G[i] = dot(S + i / k * k, S + i % k * k, k);
    }
    for (i = 0; i < k; ++i) {
        y[i] = b[i];
    }
    if (least_norm_solve(G, k, y, tol) != 0) {
        return 1;
    }
    for (i = 0; i < k; ++i) {
        double x = 0.0;
        for (j = 0; j < k; ++j) {
            x += S[j * k + i] * y[j];
        }
        b[i] = x;
    }
    return 0;
}

/* The least-norm solution of the k rows' system after factor_s found them dependent: symmetric S (nothing
 * slides) or S = Y Z^T (sliding contacts), both kept in w->Sf. */
static int dependent_solve(const scratch *w, int k, double *b, double tol)
{
    return w->nslide > 0 ? least_norm_general(w->Sf, k, b, tol) : least_norm_solve(w->Sf, k, b, tol);
}

static int cfd_eval(const rodgen_model *m, double t, const double *p, const double *q, const double *qd,
    const double *u, const int *active, const double *target, const rodgen_cfd_options *o, double *qdd,
    double *lambda, void *work, double *fac, int *solved);

int rodgen_constrained_dynamics(const rodgen_model *m, double t, const double *p, const double *q,
    const double *qd, const double *u, const int *active, const double *target, const rodgen_cfd_options *o,
    double *qdd,
    double *lambda, void *work)
{
    rodgen_cfd_options def;
    const int status = check_call(m, qdd != 0 && work != 0, q, qd, u, m != 0 ? m->nu : 0, &p);
    if (status != RODGEN_OK) {
        return status;
    }
    if (o == 0) {
        rodgen_cfd_defaults(&def);
        o = &def;
    }
    return cfd_eval(m, t, p, q, qd, u, active, target, o, qdd, lambda, work, 0, 0);
}

/* rodgen_constrained_dynamics past its checks of the arguments (the hybrid simulation has made them at
 * its start, and keeps its states and inputs finite). fac: see cfd_solve; *solved (when not NULL) is set to 1
 * when the result is constrained_solve's (its factors then in fac), else 0. */
static int cfd_eval(const rodgen_model *m, double t, const double *p, const double *q, const double *qd,
    const double *u, const int *active, const double *target, const rodgen_cfd_options *o, double *qdd,
    double *lambda, void *work, double *fac, int *solved)
{
    const int nv = RODGEN_NV(m), nr = m->nrows;
    scratch w;
    int k, i, j, status, dependent = 0;
    if (solved != 0) {
        *solved = 0;
    }
    if (m->constrained_solve != 0 && nr > 0 && none_sliding(m, active)) {
        status = cfd_solve(m, t, p, q, qd, u, active, target, o, qdd, lambda, (double *)work, fac);
        if (status != RODGEN_ERR_SINGULAR_CONSTRAINTS) {
            if (solved != 0) {
                *solved = status == RODGEN_OK;
            }
            return status;
        }
    } else if (m->constrained_terms != 0) {
        carve(m, work, &w);
        status = cfd_terms(m, t, p, q, qd, u, active, target, o, qdd, lambda, &w);
        if (status != RODGEN_ERR_SINGULAR_CONSTRAINTS) {
            return status;
        }
    }
    /* the dense path: without the generated routines, or for rows they found dependent (least-norm forces) */
    carve(m, work, &w);
    k = prepare(m, p, q, active, 0, &w);
    if (k < 0) {
        return -k;
    }
    if (w.nslide > 0) {
        /* the rows' velocities J qd (into w.c, which constraint_position fills later) for the directions */
        for (i = 0; i < nr; ++i) {
            w.c[i] = dot(w.J + i * nv, qd, nv);
        }
        status = slide_coefs(k, w.c, target, &w);
        if (status != RODGEN_OK) {
            return status;
        }
    }
    /* z = L^-1 (B u - bias) */
    m->bias(t, q, qd, p, w.h);
    for (i = 0; i < nv; ++i) {
        w.z[i] = -w.h[i];
    }
    if (m->nu > 0) {
        m->input_map(q, p, w.B);
        for (i = 0; i < nv; ++i) {
            w.z[i] += dot(w.B + i * m->nu, u, m->nu);
        }
    }
    /* the kinetic forces of slipping dry-friction blocks: B u - bias + f J_r^T */
    for (j = 0; j < w.nfric; ++j) {
        for (i = 0; i < nv; ++i) {
            w.z[i] += w.fval[j] * w.J[w.frow[j] * nv + i];
        }
    }
    solve_lower(w.M, nv, w.z);
    if (lambda != 0) {
        for (i = 0; i < nr; ++i) {
            lambda[i] = 0.0;
        }
        for (j = 0; j < w.nfric; ++j) {
            lambda[w.frow[j]] = w.fval[j];
        }
    }
    if (k > 0) {
        status = factor_s(m, k, o->singular_tol, &w);
        dependent = status == RODGEN_ERR_SINGULAR_CONSTRAINTS;
        if (status != RODGEN_OK && !dependent) {
            return status;
        }
        m->constraint_position(q, p, w.c);
        m->constraint_bias(q, qd, p, w.b);
        /* S lambda = gamma - J M^-1 f, gamma = -Jdot qd - 2 alpha J qd - beta^2 (c - target) */
        for (i = 0; i < k; ++i) {
            const int r = w.rows[i];
            const double tgt = row_target(m, target, w.c, r);
            w.w[i] = -w.b[r] - 2.0 * o->alpha * dot(w.J + r * nv, qd, nv)
                - o->beta * o->beta * (w.c[r] - tgt) - dot(w.Y + i * nv, w.z, nv);
        }
        if (dependent) {
            if (dependent_solve(&w, k, w.w, o->singular_tol) != 0) {
                return RODGEN_ERR_SINGULAR_CONSTRAINTS;
            }
        } else if (w.nslide > 0) {
            lu_solve(w.S, k, w.piv, w.w);
        } else {
            solve_lower(w.S, k, w.w);
            solve_upper(w.S, k, w.w);
        }
        for (i = 0; i < k; ++i) {
            const double *zi = (w.nslide > 0 ? w.Z : w.Y) + i * nv;
            for (j = 0; j < nv; ++j) {
                w.z[j] += w.w[i] * zi[j];
            }
            if (lambda != 0) {
                int tt;
                lambda[w.rows[i]] = w.w[i];
                for (tt = 0; w.trow[i] >= 0 && tt < w.rows[i] - w.trow[i]; ++tt) {
                    lambda[w.trow[i] + tt] = w.coef[2 * i + tt] * w.w[i];
                }
            }
        }
    }
    solve_upper(w.M, nv, w.z);
    for (i = 0; i < nv; ++i) {
        qdd[i] = w.z[i];
    }
    if (!all_finite(qdd, nv) || (k > 0 && !all_finite(w.w, k))) {
        return RODGEN_ERR_NONFINITE_RESULT;
    }
    return RODGEN_OK;
}

/* qd_plus = qd_minus + L^-T sum Lambda_i Y_i (Z_i: the force directions when a contact slides) of the
 * impulses w->w of the k rows solved last. */
static void impact_velocity(const rodgen_model *m, const double *qd_minus, int k, scratch *w, double *qd_plus)
{
    const int nv = RODGEN_NV(m);
    int i, j;
    for (j = 0; j < nv; ++j) {
        w->z[j] = 0.0;
    }
    for (i = 0; i < k; ++i) {
        const double *zi = (w->nslide > 0 ? w->Z : w->Y) + i * nv;
        for (j = 0; j < nv; ++j) {
            w->z[j] += w->w[i] * zi[j];
        }
    }
    solve_upper(w->M, nv, w->z);
    for (j = 0; j < nv; ++j) {
        qd_plus[j] = qd_minus[j] + w->z[j];
    }
}

/* The impulses of the impact on the blocks of w->act (w->w of its k rows; w->b of every row), k or -status. */
static int impact_solve(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
    const double *ref, const rodgen_cfd_options *o, scratch *w)
{
    const int nv = RODGEN_NV(m), nr = m->nrows;
    int k, i, status, dependent;
    k = prepare(m, p, q, w->act, ref != 0 ? 2 : 1, w);
    if (k < 0) {
        return k;
    }
    if (w->nslide > 0) {
        for (i = 0; i < nr; ++i) {
            w->c[i] = dot(w->J + i * nv, qd_minus, nv);   /* the rows' velocities before the impact */
        }
        status = slide_coefs(k, w->c, ref, w);
        if (status != RODGEN_OK) {
            return -status;
        }
    }
    status = factor_s(m, k, o->singular_tol, w);
    dependent = status == RODGEN_ERR_SINGULAR_CONSTRAINTS;
    if (status != RODGEN_OK && !dependent) {
        return -status;
    }
    /* S Lambda = -J qd_minus (in the range of S: dependent rows take the least-norm impulses) */
    for (i = 0; i < k; ++i) {
        w->w[i] = -dot(w->J + w->rows[i] * nv, qd_minus, nv);
    }
    if (dependent) {
        if (dependent_solve(w, k, w->w, o->singular_tol) != 0) {
            return -RODGEN_ERR_SINGULAR_CONSTRAINTS;
        }
    } else if (k > 0 && w->nslide > 0) {
        lu_solve(w->S, k, w->piv, w->w);
    } else if (k > 0) {
        solve_lower(w->S, k, w->w);
        solve_upper(w->S, k, w->w);
    }
    if (!all_finite(w->w, k)) {
        return -RODGEN_ERR_NONFINITE_RESULT;
    }
    for (i = 0; i < nr; ++i) {
        w->b[i] = 0.0;   /* impulses of every row */
    }
    for (i = 0; i < k; ++i) {
        int tt;
        w->b[w->rows[i]] = w->w[i];
        for (tt = 0; w->trow[i] >= 0 && tt < w->rows[i] - w->trow[i]; ++tt) {
            w->b[w->trow[i] + tt] = w->coef[2 * i + tt] * w->w[i];
        }
    }
    return k;
}

/* The held unilateral block of w->act whose normal impulse pulls most (below -1e-12 of the largest
 * impulse of the k rows), or -1. */
static int most_pulling(const rodgen_model *m, int k, const scratch *w)
{
    int i, worst = -1;
    double lmax = 0.0, lworst = 0.0;
    for (i = 0; i < k; ++i) {
        lmax = fmax(lmax, fabs(w->w[i]));
    }
    for (i = 0; i < m->nconstraints; ++i) {
        if (w->act[i] && is_unilateral(m, i)) {
            const double ln = w->b[normal_row(m, i)];
            if (ln < -1e-12 * lmax && ln < lworst) {
                lworst = ln;
                worst = i;
            }
        }
    }
    return worst;
}

/* Whether a block of w->act0 released in w->act moves into the ground at qd_plus (its normal velocity
 * below -tol; w->J holds J(q)). */
static int any_sinking(const rodgen_model *m, const scratch *w, const double *qd_plus, double tol)
{
    const int nv = RODGEN_NV(m);
    int i;
    for (i = 0; i < m->nconstraints; ++i) {
        if (w->act0[i] && !w->act[i] && is_unilateral(m, i)
            && dot(w->J + normal_row(m, i) * nv, qd_plus, nv) < -tol) {
            return 1;
        }
    }
    return 0;
}

static int is_flat(const rodgen_model *m, int i);

/* The largest number of unilateral blocks at an impact whose active sets are enumerated. */
#define IMPACT_ENUMERATE 12

/* The impact's complementarity tolerance: a normal velocity after an impact counts as zero (neither a contact
 * sinking nor one parting) within this fraction of the largest normal speed of its blocks before it. */
#define RODGEN_IMPACT_REST 1e-9

/* The impact with the pulling contacts released one at a time, the most pulling first, from the set in
 * w->act: its row count k, or minus a status. */
static int release_pulling(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
    const double *ref, const rodgen_cfd_options *o, scratch *w)
{
    int pass, k = 0;
    for (pass = 0; pass <= m->nconstraints; ++pass) {
        int worst;
        k = impact_solve(m, p, q, qd_minus, ref, o, w);
        if (k < 0) {
            return k;
        }
        worst = most_pulling(m, k, w);
        if (worst < 0) {
            break;
        }
        w->act[worst] = 0;
    }
    return k;
}

/* The impact map on the blocks of w->act (carved; codes: 0 inactive, RODGEN_STICK, and with ref != NULL a
 * contact's sliding code: it slides during the impact, its tangential impulse coef * normal impulse as in
 * the constrained dynamics, the 3-row direction from the velocity qd_minus and the reference directions of
 * ref), the active-set rule of rodgen_impact applied to w->act. Outputs as rodgen_impact's.
 *
 * The unilateral blocks of w->act are at the ground; the plastic impact with unilateral contacts
 * (Moreau, Glocker) asks of each: normal impulse >= 0 and normal velocity after = 0 (held), or normal
 * impulse 0 and normal velocity after >= 0 (released). Solved with every block held, the one pulling most
 * is released, until none pulls (with no block pulling at first, the impact of every block held). If a
 * released block then moves into the ground (normal velocity below -RODGEN_IMPACT_REST of the largest normal
 * velocity before), the active sets of the unilateral blocks (up to IMPACT_ENUMERATE of them) are tried, the most
 * held first, and the first complementary one is the impact; should none be (a held contact's tangential
 * rows can make a stop need a pull), the set of the releases is kept. */
static int impact_core(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
    const double *ref, const rodgen_cfd_options *o, scratch *w, double *qd_plus, double *impulse,
    double *energy_loss)
{
    const int nv = RODGEN_NV(m), nr = m->nrows, nc = m->nconstraints;
    int k = 0, i, j, nu = 0;
    int uni[IMPACT_ENUMERATE];
    double e_minus, e_plus, tol = 0.0;
    for (i = 0; i < nc; ++i) {
        w->act0[i] = w->act[i];
    }
    k = release_pulling(m, p, q, qd_minus, ref, o, w);
    if (k < 0) {
        return -k;
    }
    impact_velocity(m, qd_minus, k, w, qd_plus);
    for (i = 0; i < nc; ++i) {
        if (w->act0[i] && is_unilateral(m, i)) {
            tol = fmax(tol, fabs(dot(w->J + normal_row(m, i) * nv, qd_minus, nv)));
            if (nu < IMPACT_ENUMERATE) {
                uni[nu] = i;
            }
            nu += 1;
        }
    }
    tol *= RODGEN_IMPACT_REST;
    if (any_sinking(m, w, qd_plus, tol) && nu <= IMPACT_ENUMERATE) {
        int held, mask, found = 0;
        for (held = nu; held >= 0 && !found; --held) {
            for (mask = 0; mask < (1 << nu) && !found; ++mask) {
                int bits = 0;
                for (j = 0; j < nu; ++j) {
                    bits += (mask >> j) & 1;
                }
                if (bits != held) {
                    continue;
                }
                for (j = 0; j < nu; ++j) {
                    w->act[uni[j]] = ((mask >> j) & 1) ? w->act0[uni[j]] : 0;
                }
                k = impact_solve(m, p, q, qd_minus, ref, o, w);
                if (k < 0) {
                    continue;   /* a singular set is not the impact */
                }
                impact_velocity(m, qd_minus, k, w, qd_plus);
                found = most_pulling(m, k, w) < 0 && !any_sinking(m, w, qd_plus, tol);
            }
        }
        if (!found) {
            /* the releases' set again, and the released flat feet that move into the ground held again, the
             * deepest first, until none does: a flat foot (which cannot slide through an impact) is kept out
             * of the ground, held pulling where no set would let it go (the hybrid simulation then lets it
             * rest); a point contact released moving into the ground slides in the Coulomb impact */
            for (i = 0; i < nc; ++i) {
                w->act[i] = w->act0[i];
            }
            k = release_pulling(m, p, q, qd_minus, ref, o, w);
            for (j = 0; k >= 0 && j < nc; ++j) {
                int deepest = -1;
                double vmin = -tol;
                impact_velocity(m, qd_minus, k, w, qd_plus);
                for (i = 0; i < nc; ++i) {
                    if (w->act0[i] && !w->act[i] && is_unilateral(m, i) && is_flat(m, i)
                        && dot(w->J + normal_row(m, i) * nv, qd_plus, nv) < vmin) {
                        vmin = dot(w->J + normal_row(m, i) * nv, qd_plus, nv);
                        deepest = i;
                    }
                }
                if (deepest < 0) {
                    break;
                }
                w->act[deepest] = w->act0[deepest];
                k = impact_solve(m, p, q, qd_minus, ref, o, w);
            }
            if (k < 0) {
                return -k;
            }
        }
    }
    impact_velocity(m, qd_minus, k, w, qd_plus);
    /* kinetic energies |L^T qd|^2 / 2 */
    e_minus = 0.0;
    e_plus = 0.0;
    for (i = 0; i < nv; ++i) {
        double a = 0.0, b = 0.0;
        for (j = i; j < nv; ++j) {
            a += w->M[j * nv + i] * qd_minus[j];
            b += w->M[j * nv + i] * qd_plus[j];
        }
        e_minus += 0.5 * a * a;
        e_plus += 0.5 * b * b;
    }
    if (impulse != 0) {
        for (i = 0; i < nr; ++i) {
            impulse[i] = w->b[i];
        }
    }
    if (energy_loss != 0) {
        *energy_loss = e_minus - e_plus;
    }
    return all_finite(qd_plus, nv) ? RODGEN_OK : RODGEN_ERR_NONFINITE_RESULT;
}

int rodgen_impact(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
    const int *active, const rodgen_cfd_options *o, double *qd_plus, double *impulse, int *active_after,
    double *energy_loss, void *work)
{
    rodgen_cfd_options def;
    scratch w;
    int i, status = check_call(m, qd_plus != 0 && work != 0, q, qd_minus, 0, 0, &p);
    if (status != RODGEN_OK) {
        return status;
    }
    if (o == 0) {
        rodgen_cfd_defaults(&def);
        o = &def;
    }
    carve(m, work, &w);
    for (i = 0; i < m->nconstraints; ++i) {
        w.act[i] = is_active(m, active, i);
    }
    status = impact_core(m, p, q, qd_minus, 0, o, &w, qd_plus, impulse, energy_loss);
    if (status != RODGEN_OK) {
        return status;
    }
    if (active_after != 0) {
        for (i = 0; i < m->nconstraints; ++i) {
            active_after[i] = w.act[i];
        }
    }
    return RODGEN_OK;
}

/* ---- hybrid simulation: the configuration on its manifold ------------------ */

/* dq/dt [nq] of the state's velocities v [nv]: v itself, but for the joints of lie_joints (rodgen_model.h)
 * a free joint's position turns by R(quat) v_lin and its quaternion by 1/2 quat (x) (w, 0), a spherical
 * joint's quaternion likewise, a planar joint's (x, y) by Rz(theta) (vx, vy) (the configuration rate of the
 * generated RHS, from the table; kept here so that this file compiles on its own). */
static void hy_rate(const rodgen_model *m, const double *q, const double *v, double *dq)
{
    int i = 0, iv = 0;
    while (i < m->nq) {
        int f, kind = -1;
        for (f = 0; f < m->nlie; ++f) {
            if (m->lie_joints[3 * f + 1] == i) {
                kind = m->lie_joints[3 * f];
            }
        }
        if (kind < 0) {
            dq[i++] = v[iv++];
        } else if (kind == RODGEN_JOINT_PLANAR) {
            const double c = cos(q[i + 2]), s = sin(q[i + 2]);
            dq[i] = c * v[iv] - s * v[iv + 1];
            dq[i + 1] = s * v[iv] + c * v[iv + 1];
            dq[i + 2] = v[iv + 2];
            i += 3;
            iv += 3;
        } else {
            const double *x = q + i + (kind == RODGEN_JOINT_FREE ? 3 : 0);
            const double *w = v + iv + (kind == RODGEN_JOINT_FREE ? 3 : 0);
            double *r = dq + i + (kind == RODGEN_JOINT_FREE ? 3 : 0);
            if (kind == RODGEN_JOINT_FREE) {   /* R(x) v_lin, R of the quaternion (x, y, z, w) */
                const double a = x[0], b = x[1], c = x[2], d = x[3];
                const double *l = v + iv;
                dq[i] = (1 - 2 * (b * b + c * c)) * l[0] + 2 * (a * b - c * d) * l[1] + 2 * (a * c + b * d) * l[2];
                dq[i + 1] = 2 * (a * b + c * d) * l[0] + (1 - 2 * (a * a + c * c)) * l[1] + 2 * (b * c - a * d) * l[2];
                dq[i + 2] = 2 * (a * c - b * d) * l[0] + 2 * (b * c + a * d) * l[1] + (1 - 2 * (a * a + b * b)) * l[2];
            }
            r[0] = 0.5 * (x[3] * w[0] + x[1] * w[2] - x[2] * w[1]);
            r[1] = 0.5 * (x[3] * w[1] + x[2] * w[0] - x[0] * w[2]);
            r[2] = 0.5 * (x[3] * w[2] + x[0] * w[1] - x[1] * w[0]);
            r[3] = -0.5 * (x[0] * w[0] + x[1] * w[1] + x[2] * w[2]);
            i += kind == RODGEN_JOINT_FREE ? 7 : 4;
            iv += kind == RODGEN_JOINT_FREE ? 6 : 3;
        }
    }
}

/* Each quaternion of q divided by its norm (rodgen_normalize of rodgen_simulate.c). */
static void hy_normalize(const rodgen_model *m, double *q)
{
    int f, k;
    for (f = 0; f < m->nlie; ++f) {
        const int kind = m->lie_joints[3 * f];
        double *x = q + m->lie_joints[3 * f + 1] + (kind == RODGEN_JOINT_FREE ? 3 : 0);
        double n;
        if (kind != RODGEN_JOINT_FREE && kind != RODGEN_JOINT_SPHERICAL) {
            continue;
        }
        n = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
        for (k = 0; k < 4 && n > 0.0; ++k) {
            x[k] /= n;
        }
    }
}

/* ---- hybrid simulation --------------------------------------------------- */

/* The run's buffer: doubles y [ny], target [nr], g [2nc], mu [nc], then the
 * scratch states and vectors below and the memo of the last evaluation; ints
 * active, armed, slipping, act2, after [nc each]; then (aligned) the scratch of
 * the constrained dynamics. */
typedef struct {
    double *y0, *k1, *k2, *k3, *k4, *y1, *yx, *yt, *dy, *u, *uh, *g1, *gx, *lam, *c, *qdp, *imp, *bias, *J;
    double *memo;   /* the last evaluation of hy_dyn, see there: HY_MEMO(m) doubles */
    int *act2, *after;
    int *partner;   /* [nc] a dry-friction block's LIMIT block on the same coordinate, or -1 (set at the start) */
    void *work;   /* for rodgen_constrained_dynamics and rodgen_impact */
} hscratch;

/* Where the rows and events of one call go. */
typedef struct {
    long capacity, n, event_capacity, ne;
    double *t_out, *y_out, *lambda_out, *u_out;
    int *active_out;
    rodgen_event *events_out;
} houtput;

/* Whether a jump finds room for the two rows it stores (the state before it and after it); no output rows
 * (an FMU's event update): always. */
static int jump_room(const houtput *out)
{
    return out->t_out == 0 || out->capacity - out->n >= 2;
}

#define HY_NSTATES 9   /* y0, k1..k4, y1, yx, yt, dy */
/* The memo: its key t, y [ny], active [nc], target [nr]; its values dy [ny], lambda [nr], u [nu]; then whether
 * the factors of its constrained_solve are kept [1], the response's scratch dqdd [nv], dlambda [nr] and those
 * factors [RESPONSE_DOUBLES]. */
#define HY_MEMO(m) (1L + 2L * RODGEN_NY(m) + (m)->nconstraints + 2L * (m)->nrows + ((m)->nu > 0 ? (m)->nu : 1) \
    + 1L + RODGEN_NV(m) + (m)->nrows + RESPONSE_DOUBLES(m))

static long hybrid_doubles(const rodgen_model *m)
{
    const long ny = RODGEN_NY(m), nv = RODGEN_NV(m), nr = m->nrows, nc = m->nconstraints;
    return ny + nr + 3 * nc                                         /* y, target, g, mu */
        + HY_NSTATES * ny + 2 * (m->nu > 0 ? m->nu : 1) + 4 * nc + 4 * nr + nv + nr * nv   /* scratch */
        + HY_MEMO(m);
}

static long hybrid_own_bytes(const rodgen_model *m)
{
    return round_up(hybrid_doubles(m) * (long)sizeof(double) + 6L * m->nconstraints * (long)sizeof(int));
}

long rodgen_hybrid_work_bytes(const rodgen_model *m)
{
    return hybrid_own_bytes(m) + rodgen_contact_work_bytes(m);
}

/* Lay the state arrays of s over the buffer `base`. */
static void hlayout_state(const rodgen_model *m, rodgen_hybrid_state *s, void *base)
{
    const int ny = RODGEN_NY(m), nr = m->nrows, nc = m->nconstraints;
    double *d = (double *)base;
    int *ip = (int *)(void *)(d + hybrid_doubles(m));
    s->scratch = base;
    s->y = d;
    s->target = d + ny;
    s->g = d + ny + nr;
    s->mu = d + ny + nr + 2 * nc;
    s->active = ip;
    s->armed = ip + nc;
    s->slipping = ip + 2 * nc;
}

static void hcarve(const rodgen_model *m, const rodgen_hybrid_state *s, hscratch *w)
{
    const int ny = RODGEN_NY(m), nr = m->nrows, nc = m->nconstraints;
    double *d = (double *)s->scratch + ny + nr + 3 * nc;
    int *ip = (int *)(void *)((double *)s->scratch + hybrid_doubles(m));
    double **seq[HY_NSTATES];
    int i;
    seq[0] = &w->y0;
    seq[1] = &w->k1;
    seq[2] = &w->k2;
    seq[3] = &w->k3;
    seq[4] = &w->k4;
    seq[5] = &w->y1;
    seq[6] = &w->yx;
    seq[7] = &w->yt;
    seq[8] = &w->dy;
    for (i = 0; i < HY_NSTATES; ++i) {
        *seq[i] = d;
        d += ny;
    }
    w->u = d;
    d += m->nu > 0 ? m->nu : 1;
    w->uh = d;
    d += m->nu > 0 ? m->nu : 1;
    w->g1 = d;
    d += 2 * nc;
    w->gx = d;
    d += 2 * nc;
    w->lam = d;
    d += nr;
    w->c = d;
    d += nr;
    w->imp = d;
    d += nr;
    w->bias = d;
    d += nr;
    w->qdp = d;
    d += RODGEN_NV(m);
    w->J = d;
    d += (long)nr * RODGEN_NV(m);
    w->memo = d;
    w->act2 = ip + 3 * nc;
    w->after = ip + 4 * nc;
    w->partner = ip + 5 * nc;
    w->work = (char *)s->scratch + hybrid_own_bytes(m);
}

void rodgen_hybrid_defaults(rodgen_hybrid_options *o)
{
    o->t_end = 0.0;
    o->dt = 0.0;
    o->store_every = 1;
    o->event_tol = 1e-10;
    o->arm_gap = 1e-6;
    o->check_tol = 1e-8;
    o->max_events = 0;
    o->on_slip = RODGEN_SLIP_STOP;
    rodgen_cfd_defaults(&o->cfd);
    o->hold = 0;
}

static int options_ok(const rodgen_hybrid_options *o)
{
    return o != 0 && o->store_every >= 1 && o->event_tol > 0.0 && o->arm_gap >= 0.0 && o->check_tol >= 0.0
        && o->max_events >= 0 && (o->hold == 0 || o->hold == 1)
        && (o->on_slip == RODGEN_SLIP_STOP || o->on_slip == RODGEN_SLIP_CONTINUE || o->on_slip == RODGEN_SLIP_SLIDE)
        && o->cfd.alpha >= 0.0 && o->cfd.beta >= 0.0 && o->cfd.singular_tol >= 0.0;
}

/* u [nu] at (t, y). */
static int hy_input(rodgen_hybrid_state *s, double t, const double *y, double *u)
{
    const rodgen_model *m = s->model;
    int i;
    if (m->nu == 0) {
        return RODGEN_OK;
    }
    if (s->input == 0) {
        for (i = 0; i < m->nu; ++i) {
            u[i] = 0.0;
        }
        return RODGEN_OK;
    }
    if (s->input(s->context, t, y, u) != 0) {
        return RODGEN_ERR_INPUT_FAILED;
    }
    return all_finite(u, m->nu) ? RODGEN_OK : RODGEN_ERR_INPUT_NONFINITE;
}

/* The inputs in force at (t, y) into w->u: the held ones (hold), else the input function's. */
static int hy_law(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t, const double *y)
{
    int i;
    if (!o->hold) {
        return hy_input(s, t, y, w->u);
    }
    for (i = 0; i < s->model->nu; ++i) {
        w->u[i] = w->uh[i];
    }
    return RODGEN_OK;
}

/* hold: sample the input function at (s->t, s->y) into the held inputs. When they change, the memo
 * (keyed without them) is dropped unless hy_dyn can move it to them by the input response (it compares its
 * inputs with the held ones), and the phase is checked again (a new sample can pull a contact or push it
 * out of its friction cone). */
static int hy_sample(rodgen_hybrid_state *s, hscratch *w)
{
    const int nu = s->model->nu;
    int i, changed = 0;
    const int status = hy_input(s, s->t, s->y, w->u);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < nu; ++i) {
        changed = changed || !(w->uh[i] == w->u[i]);   /* NaN before the first sample */
        w->uh[i] = w->u[i];
    }
    s->held = 1;
    if (changed) {
        if (!s->model->constrained_response) {
            w->memo[0] = NAN;
        }
        s->have_g = 0;
        s->settled = 0;
    }
    return RODGEN_OK;
}

/* The constrained dynamics at the state y in the current phase with the inputs in w->u: the checks of
 * rodgen_constrained_dynamics were made at the start of the run (model, options, parameters) and the
 * inputs are checked where they are made; a state that is not finite is found from a result that is not
 * (RODGEN_ERR_NONFINITE_STATE, as rodgen_constrained_dynamics's RODGEN_ERR_NONFINITE_INPUT was). */
static int hy_cfd(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t, const double *y,
    double *qdd, double *lambda, double *fac, int *solved)
{
    const rodgen_model *m = s->model;
    const int status = cfd_eval(m, t, s->p, y, y + m->nq, w->u, s->active, s->target, &o->cfd, qdd, lambda,
        w->work, fac, solved);
    if (status != RODGEN_OK && !(all_finite(y, RODGEN_NY(m)))) {
        return RODGEN_ERR_NONFINITE_STATE;
    }
    return status;
}

/* hold: the memo's evaluation moved to the held inputs w->uh (it was made under mem_u, the same state, rows
 * held and targets) by the model's constrained_response from the factors its constrained_solve kept: qdd and
 * lambda are affine in u. Returns 0 (the memo untouched) where it cannot: no response, no factors kept (the
 * evaluation took another path), or a result that is not finite. */
static int hy_respond(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double *mem_dy,
    double *mem_lam, double *mem_u)
{
    const rodgen_model *m = s->model;
    const int nq = m->nq, nv = RODGEN_NV(m), nr = m->nrows, nu = m->nu;
    double *const kept = mem_u + (nu > 0 ? nu : 1), *const dq = kept + 1, *const dl = dq + nv, *const fac = dl + nr;
    double *const kv = w->work, *const tg = kv + 4 * nr;   /* the contact scratch is free between evaluations */
    int i;
    if (m->constrained_response == 0 || kept[0] != 1.0) {
        return 0;
    }
    for (i = 0; i < nu; ++i) {
        w->u[i] = w->uh[i] - mem_u[i];
    }
    solve_gains(m, s->active, s->target, &o->cfd, kv, tg);
    m->constrained_response(s->p, kv, w->u, fac, dq, dl);
    if (!all_finite(dq, nv) || !all_finite(dl, nr)) {
        return 0;
    }
    for (i = 0; i < nv; ++i) {
        mem_dy[nq + i] += dq[i];
    }
    for (i = 0; i < nr; ++i) {
        mem_lam[i] += dl[i];
    }
    for (i = 0; i < nu; ++i) {
        mem_u[i] = w->uh[i];
    }
    s->responses += 1;
    return 1;
}

/* dy = [qd, qdd] in the current phase; lambda [nrows] may be NULL. Leaves the inputs at (t, y) in w->u.
 * The last successful evaluation is kept in w->memo with its key (t, y, the active set and the targets) and
 * returned again for the same key: the state at the end of an RK4 step is evaluated for the event
 * functions, then for the first stage of the next step and for the stored row, at the same (t, y). Held
 * inputs that changed since (a new sample) move it by the input response (hy_respond), where the model has
 * one, instead of a new evaluation. */
static int hy_dyn(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t, const double *y,
    double *dy, double *lambda)
{
    const rodgen_model *m = s->model;
    const int nq = m->nq, ny = RODGEN_NY(m), nr = m->nrows, nc = m->nconstraints, nu = m->nu;
    double *key_y = w->memo + 1, *key_a = key_y + ny, *key_g = key_a + nc;
    double *mem_dy = key_g + nr, *mem_lam = mem_dy + ny, *mem_u = mem_lam + nr;
    double *const kept = mem_u + (nu > 0 ? nu : 1), *const fac = kept + 1 + RODGEN_NV(m) + nr;
    int i, hit = w->memo[0] == t, status, solved = 0;
    for (i = 0; hit && i < ny; ++i) {
        hit = key_y[i] == y[i];
    }
    for (i = 0; hit && i < nc; ++i) {
        hit = key_a[i] == (double)s->active[i];
    }
    for (i = 0; hit && i < nr; ++i) {
        hit = key_g[i] == s->target[i];
    }
    if (hit && o->hold) {
        int same = 1;
        for (i = 0; same && i < nu; ++i) {
            same = mem_u[i] == w->uh[i];
        }
        hit = same || hy_respond(s, o, w, mem_dy, mem_lam, mem_u);
    }
    if (hit) {
        for (i = 0; i < ny; ++i) {
            dy[i] = mem_dy[i];
        }
        for (i = 0; lambda != 0 && i < nr; ++i) {
            lambda[i] = mem_lam[i];
        }
        for (i = 0; i < nu; ++i) {
            w->u[i] = mem_u[i];
        }
        return RODGEN_OK;
    }
    if (lambda == 0) {
        /* an inner stage of RK4: never evaluated again, so the memo keeps the state it holds (the end of
         * the last step, which event location starts from again) */
        status = hy_law(s, o, w, t, y);
        if (status != RODGEN_OK) {
            return status;
        }
        s->evaluations += 1;
        status = hy_cfd(s, o, w, t, y, dy + nq, 0, 0, 0);
        hy_rate(m, y, y + nq, dy);
        return status;
    }
    w->memo[0] = NAN;
    kept[0] = 0.0;
    status = hy_law(s, o, w, t, y);
    if (status != RODGEN_OK) {
        return status;
    }
    s->evaluations += 1;
    status = hy_cfd(s, o, w, t, y, dy + nq, mem_lam, fac, &solved);
    if (status == RODGEN_ERR_NONFINITE_STATE) {
        return status;
    }
    hy_rate(m, y, y + nq, dy);
    for (i = 0; lambda != 0 && i < nr; ++i) {
        lambda[i] = mem_lam[i];
    }
    if (status == RODGEN_OK) {
        w->memo[0] = t;
        for (i = 0; i < ny; ++i) {
            key_y[i] = y[i];
            mem_dy[i] = dy[i];
        }
        for (i = 0; i < nc; ++i) {
            key_a[i] = (double)s->active[i];
        }
        for (i = 0; i < nr; ++i) {
            key_g[i] = s->target[i];
        }
        for (i = 0; i < nu; ++i) {
            mem_u[i] = w->u[i];
        }
        kept[0] = solved ? 1.0 : 0.0;
    }
    return status;
}

/* One RK4 step of size h from (t, y) to yout (yout may not alias y). */
static int hy_rk4(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t, const double *y,
    double h, double *yout)
{
    const int ny = RODGEN_NY(s->model);
    int i, status;
    status = hy_dyn(s, o, w, t, y, w->k1, 0);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        w->yt[i] = y[i] + 0.5 * h * w->k1[i];
    }
    status = hy_dyn(s, o, w, t + 0.5 * h, w->yt, w->k2, 0);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        w->yt[i] = y[i] + 0.5 * h * w->k2[i];
    }
    status = hy_dyn(s, o, w, t + 0.5 * h, w->yt, w->k3, 0);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        w->yt[i] = y[i] + h * w->k3[i];
    }
    status = hy_dyn(s, o, w, t + h, w->yt, w->k4, 0);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        yout[i] = y[i] + (h / 6.0) * (w->k1[i] + 2.0 * w->k2[i] + 2.0 * w->k3[i] + w->k4[i]);
    }
    hy_normalize(s->model, yout);   /* the step left the unit sphere by O(h^5): back onto it */
    return all_finite(yout, ny) ? RODGEN_OK : RODGEN_ERR_NONFINITE_STATE;
}

/* The tangential force of contact i from its rows' forces (or impulses): the one tangential row of a
 * 2-row contact (signed), the length of the two of a 3-row contact. */
static double tangential_force(const rodgen_model *m, int i, const double *lam)
{
    const int r = m->constraints[i].row;
    return m->constraints[i].nrows == 2 ? lam[r] : sqrt(lam[r] * lam[r] + lam[r + 1] * lam[r + 1]);
}

/* mu * normal - |tangential| of contact i from the rows' forces; of a dry-friction block, its static
 * limit - |force|. */
static double slip_margin(const rodgen_hybrid_state *s, int i, const double *lam)
{
    const int r = s->model->constraints[i].row;
    if (!isfinite(s->mu[i])) {
        return 1.0;
    }
    if (is_friction(s->model, i)) {
        return s->mu[i] - fabs(lam[r]);
    }
    return s->mu[i] * lam[normal_row(s->model, i)] - fabs(tangential_force(s->model, i, lam));   /* the Euclidean cone */
}

/* A flat foot: a contact of 6 rows (a point's three, then the orientation), held whole; it does not slide. */
static int is_flat(const rodgen_model *m, int i)
{
    return m->constraints[i].kind == RODGEN_CONTACT && m->constraints[i].nrows == 6;
}

/* Whether flat foot i has a sole (a rectangle of positive size; all zero: none). */
static int has_sole(const rodgen_model *m, int i)
{
    const double *b = m->constraints[i].sole;
    return is_flat(m, i) && b[1] > b[0] && b[3] > b[2];
}

/* How far the centre of pressure of flat foot i is inside its sole, from its wrench lam [f_t1, f_t2, f_n,
 * m_t1, m_t2, m_n] (about the frame's origin, in the ground's axes): the centre of pressure is
 * (x, y) = (-m_t2 / f_n, m_t1 / f_n), and each side of the sole gives f_n times its distance from it,
 *   f_n x_max + m_t2, -m_t2 - f_n x_min, f_n y_max - m_t1, m_t1 - f_n y_min,
 * the smallest divided by the sole's larger side (a force, as slip_margin's). Negative: it tips over that
 * edge. Without a sole: 1. */
/* A flat foot carries less than this fraction of the normal force of the held contacts: it is unloading. */
#define HY_UNLOADED 0.05

/* Whether flat foot i is unloading at the forces lam: its normal force below HY_UNLOADED of the sum of the
 * normal forces of the held contacts. Its centre of pressure -m_t2/f_n and its cone |f_t| <= mu f_n are
 * then not checked (as f_n -> 0 before a lift-off they are undefined: any leftover ankle moment or
 * tangential force puts them out); the foot lifts off when f_n reaches 0, or its checks resume when it
 * carries HY_UNLOADED of the load again. A foot that carries the load alone is never unloading. */
static int unloading(const rodgen_hybrid_state *s, int i, const double *lam)
{
    const rodgen_model *m = s->model;
    double total = 0.0;
    int j;
    if (!is_flat(m, i)) {
        return 0;
    }
    for (j = 0; j < m->nconstraints; ++j) {
        if (s->active[j] && m->constraints[j].kind == RODGEN_CONTACT) {
            total += fmax(lam[normal_row(m, j)], 0.0);
        }
    }
    return lam[normal_row(m, i)] < HY_UNLOADED * total;
}

static double tip_margin(const rodgen_model *m, int i, const double *lam)
{
    const double *b = m->constraints[i].sole, *w = lam + m->constraints[i].row;
    if (!has_sole(m, i)) {
        return 1.0;
    }
    return fmin(fmin(w[2] * b[1] + w[4], -w[4] - w[2] * b[0]), fmin(w[2] * b[3] - w[3], w[3] - w[2] * b[2]))
        / fmax(b[1] - b[0], b[3] - b[2]);
}

/* Sliding contact (or slipping dry-friction block) i at the state y: its velocity against its friction
 * force, -sign(force) * (tangential velocity), > 0 while it slides; a 3-row contact's tangential velocity
 * along its reference direction (the target's tangential entries) (w->J holds J(y)). */
static double slide_speed(const rodgen_hybrid_state *s, const hscratch *w, const double *y, int i)
{
    const rodgen_model *m = s->model;
    const int r = m->constraints[i].row, nv = RODGEN_NV(m);
    const double vt = dot(w->J + r * nv, y + m->nq, nv);
    if (s->active[i] == RODGEN_SLIDE) {
        return vt * s->target[r] + dot(w->J + (r + 1) * nv, y + m->nq, nv) * s->target[r + 1];
    }
    return s->active[i] == RODGEN_SLIDE_PLUS ? -vt : vt;
}

/* Contact i starts to slide against its tangential force ft [nt] (the force it could not get while
 * sticking, an impulse, or minus its velocity): one tangent SLIDE_PLUS / SLIDE_MINUS by its sign, two SLIDE
 * with the reference direction -f_t/|f_t| (the way the contact moves) in the target's tangential entries. */
static void slide_against(rodgen_hybrid_state *s, int i, const double *ft)
{
    const rodgen_model *m = s->model;
    const int r = m->constraints[i].row;
    if (ntan(m, i) == 1) {
        s->active[i] = ft[0] > 0.0 ? RODGEN_SLIDE_PLUS : RODGEN_SLIDE_MINUS;
    } else {
        const double n = tnorm(ft, 0, 2);
        s->active[i] = RODGEN_SLIDE;
        s->target[r] = (n > 0.0 ? -ft[0] / n : 1.0) * RODGEN_SLIDE_REST;   /* its length: see rest_speed */
        s->target[r + 1] = (n > 0.0 ? -ft[1] / n : 0.0) * RODGEN_SLIDE_REST;
    }
}

/* slide_against the tangential rows of the forces of every row lam [nrows]. */
static void start_slide(rodgen_hybrid_state *s, int i, const double *lam)
{
    slide_against(s, i, lam + s->model->constraints[i].row);
}

/* The speed below which a 3-row sliding contact's friction turns towards its reference direction (the
 * length of the reference vector, its rest speed): mu f_n D dt, D = trace(J_t M^-1 J_t^T) / 2 the mobility of
 * the point in the plane, so mu f_n D is the acceleration the friction gives it and mu f_n D / |s| the rate
 * at which it aligns the motion with the force: explicit RK4 is stable (h * rate <= about 1) where the
 * friction's direction is the velocity's (faster than 4 times this), and below it the direction is held
 * towards the reference. At least RODGEN_SLIDE_REST. fn: the normal force; w->work is scratch. */
static double rest_speed(const rodgen_hybrid_state *s, const rodgen_hybrid_options *o, const hscratch *w, int i,
    double fn)
{
    const rodgen_model *m = s->model;
    const int nv = RODGEN_NV(m), r = m->constraints[i].row;
    scratch c;
    double d = 0.0;
    int k, j;
    if (!(fn > 0.0) || !isfinite(s->mu[i])) {
        return RODGEN_SLIDE_REST;
    }
    carve(m, w->work, &c);
    m->mass_matrix(s->y, s->p, c.M);
    if (rodgen_cholesky_rel(c.M, nv, 0.0) != RODGEN_OK) {
        return RODGEN_SLIDE_REST;
    }
    m->constraint_jacobian(s->y, s->p, c.J);
    for (k = 0; k < 2; ++k) {
        for (j = 0; j < nv; ++j) {
            c.z[j] = c.J[(r + k) * nv + j];
        }
        solve_lower(c.M, nv, c.z);
        d += 0.5 * dot(c.z, c.z, nv);
    }
    return fmax(RODGEN_SLIDE_REST, s->mu[i] * fn * d * o->dt);
}

/* Contact i sticks where it is (w->c holds c(y)): its tangential rows' targets are their positions. */
static void stick_here(rodgen_hybrid_state *s, const hscratch *w, int i)
{
    const int r = s->model->constraints[i].row;
    int k;
    s->active[i] = RODGEN_STICK;
    for (k = 0; k < ntan(s->model, i); ++k) {
        s->target[r + k] = w->c[r + k];
    }
}

static int any_sliding(const rodgen_hybrid_state *s)
{
    int i;
    for (i = 0; i < s->model->nconstraints; ++i) {
        if (slides(s->model, s->active, i)) {
            return 1;
        }
    }
    return 0;
}

/* armed[i] of an inactive unilateral block released at its bound at rest (by a pulling normal force, or by an
 * impact that leaves it at rest or parting so slowly that its gap acceleration turns it back within half a
 * step): it touches down when it is at or below its bound moving into it (touch_margin < 0). A block that
 * lifts off faster, or starts disarmed, passes under the ground until it has risen through arm_gap (the
 * compass gait's scuffing at mid-stance), then is armed (1) by its gap alone. */
#define RELEASED 2
/* armed[i] of an active unilateral block held although its normal force pulls, because released it would
 * move into the ground (a flat foot's normal row coupled to its held tangential and orientation rows: the
 * moments it carries as it unloads pull its normal row down when they vanish): it rests on its bound, and is
 * released once released it would move away (rest_margin < 0). */
#define RESTING 3

/* Whether an inactive block is RELEASED (its touch_margin needs J and J' qd). */
static int any_margins(const rodgen_hybrid_state *s)
{
    int i;
    for (i = 0; i < s->model->nconstraints; ++i) {
        if (!s->active[i] && s->armed[i] == RELEASED) {
            return 1;
        }
    }
    return 0;
}

/* The gap velocity of block i half a step ahead, v_n + a_n dt / 2, from the velocities y + nq and the
 * accelerations qdd at y (w->J and w->bias hold J(y) and J'(y) qd): below 0 the block moves into its bound
 * within half a step, at the resolution of the integration at rest if it turns back within it. */
static double half_step_velocity(const rodgen_hybrid_state *s, const rodgen_hybrid_options *o, const hscratch *w,
    const double *y, const double *qdd, int i)
{
    const rodgen_model *m = s->model;
    const int r = normal_row(m, i), nv = RODGEN_NV(m);
    const double vn = dot(w->J + r * nv, y + m->nq, nv), an = dot(w->J + r * nv, qdd, nv) + w->bias[r];
    return vn + 0.5 * (o->dt > 0.0 ? o->dt : 0.0) * an;
}

/* A block moving into its bound slower than this is at rest (RODGEN_SLIDE_REST along the ground): a RELEASED
 * block touches when it moves in faster, a held block whose normal force pulls rests (RESTING) if released
 * it would; a RESTING block goes when released it would move away. The band between keeps the decisions
 * apart where the velocity is 0 up to rounding. */
#define HY_REST_SPEED RODGEN_SLIDE_REST

/* The event function of a RELEASED block: max(gap, dt * (half_step_velocity + HY_REST_SPEED)), negative when
 * it is at or below its bound and moves into it within half a step (dt only scales a velocity to a gap). */
static double touch_margin(const rodgen_hybrid_state *s, const rodgen_hybrid_options *o, const hscratch *w,
    const double *y, const double *qdd, int i)
{
    return fmax(w->c[normal_row(s->model, i)],
        (o->dt > 0.0 ? o->dt : 1.0) * (half_step_velocity(s, o, w, y, qdd, i) + HY_REST_SPEED));
}

/* Whether active block i, released at (t, y), would move into its bound within a step (*back = 1): at once
 * (its half_step_velocity in the phase with it released below -HY_REST_SPEED), or at the end of one RK4 step
 * of dt in that phase (its touch_margin there below 0: a flat foot whose moments, released, turn it back
 * onto the ground within the step). The step cannot resolve such a flight: the block rests (RESTING) instead
 * of chattering between touchdowns at rest and releases. (w->u: the inputs at (t, y); w->yx, w->k1..k4,
 * w->yt, w->c, w->J, w->bias and the constrained dynamics' scratch are overwritten, hy_dyn's memo is not.) */
static int would_return(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t,
    const double *y, int i, int *back)
{
    const rodgen_model *m = s->model;
    const int saved = s->active[i];
    int status;
    s->active[i] = 0;
    m->constraint_position(y, s->p, w->c);
    m->constraint_jacobian(y, s->p, w->J);
    m->constraint_bias(y, y + m->nq, s->p, w->bias);
    status = hy_cfd(s, o, w, t, y, w->k4 + m->nq, 0, 0, 0);
    s->evaluations += 1;
    *back = status == RODGEN_OK && half_step_velocity(s, o, w, y, w->k4 + m->nq, i) < -HY_REST_SPEED;
    if (status == RODGEN_OK && !*back && o->dt > 0.0) {
        status = hy_rk4(s, o, w, t, y, o->dt, w->yx);
        if (status == RODGEN_OK) {
            status = hy_dyn(s, o, w, t + o->dt, w->yx, w->k4, 0);
        }
        if (status == RODGEN_OK) {
            m->constraint_position(w->yx, s->p, w->c);
            m->constraint_jacobian(w->yx, s->p, w->J);
            m->constraint_bias(w->yx, w->yx + m->nq, s->p, w->bias);
            *back = touch_margin(s, o, w, w->yx, w->k4 + m->nq, i) < 0.0;
        }
    }
    s->active[i] = saved;
    return status;
}

/* Event functions at (t, y), two per block, an event when one turns negative:
 *   g[2i]:   inactive armed unilateral block: its gap (row); released at rest (RELEASED, not yet risen
 *            through arm_gap): touch_margin; active: its normal force (RESTING: see hy_step); else 1
 *   g[2i+1]: sticking contact not slipping: mu * normal - |tangential|; sticking dry-friction block:
 *            static limit - |force|; sliding contact or slipping dry-friction block: its speed against
 *            its friction force; else 1
 * Also leaves c in w->c and lambda in w->lam (and J in w->J when a contact slides). */
static int hy_events(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t,
    const double *y, double *g)
{
    const rodgen_model *m = s->model;
    const int sliding = any_sliding(s), margins = any_margins(s);
    int i, status = hy_dyn(s, o, w, t, y, w->dy, w->lam);
    if (status != RODGEN_OK) {
        return status;
    }
    m->constraint_position(y, s->p, w->c);
    if (sliding || margins) {
        m->constraint_jacobian(y, s->p, w->J);
    }
    if (margins) {
        m->constraint_bias(y, y + m->nq, s->p, w->bias);
    }
    for (i = 0; i < m->nconstraints; ++i) {
        g[2 * i] = 1.0;
        g[2 * i + 1] = 1.0;
        if (is_friction(m, i)) {
            if (s->active[i] == RODGEN_STICK) {
                g[2 * i + 1] = slip_margin(s, i, w->lam);
            } else if (friction_slips(m, s->active, i)) {
                g[2 * i + 1] = slide_speed(s, w, y, i);
            }
            continue;
        }
        if (!is_unilateral(m, i)) {
            continue;
        }
        if (s->active[i]) {
            g[2 * i] = w->lam[normal_row(m, i)];
            if (is_sliding(m, s->active, i)) {
                g[2 * i + 1] = slide_speed(s, w, y, i);
            } else if (m->constraints[i].kind == RODGEN_CONTACT && !s->slipping[i] && !unloading(s, i, w->lam)) {
                g[2 * i + 1] = slip_margin(s, i, w->lam);
            }
            if (is_flat(m, i) && !unloading(s, i, w->lam)) {   /* a flat foot also tips: the first of the two
                                                                  margins to reach 0 */
                g[2 * i + 1] = fmin(g[2 * i + 1], tip_margin(m, i, w->lam));
            }
        } else if (s->armed[i] == RELEASED) {
            g[2 * i] = touch_margin(s, o, w, y, w->dy + m->nq, i);
        } else if (s->armed[i]) {
            g[2 * i] = w->c[normal_row(m, i)];
        }
    }
    return RODGEN_OK;
}

/* Write (t, y) with the phase's lambda, active set and inputs as the next row. */
static void hy_store(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, houtput *out)
{
    const rodgen_model *m = s->model;
    const int ny = RODGEN_NY(m), nr = m->nrows, nc = m->nconstraints;
    const long n = out->n;
    int i, status;
    if (out->t_out == 0) {   /* rodgen_hybrid_event: the jump alone, no rows */
        s->stored = 1;
        return;
    }
    status = hy_dyn(s, o, w, s->t, s->y, w->dy, w->lam);
    out->t_out[n] = s->t;
    for (i = 0; i < ny; ++i) {
        out->y_out[n * ny + i] = s->y[i];
    }
    if (out->lambda_out != 0) {
        for (i = 0; i < nr; ++i) {
            out->lambda_out[n * nr + i] = status == RODGEN_OK ? w->lam[i] : NAN;
        }
    }
    if (out->active_out != 0) {
        for (i = 0; i < nc; ++i) {
            out->active_out[n * nc + i] = s->active[i];
        }
    }
    if (out->u_out != 0) {
        if (status != RODGEN_OK) {   /* else hy_dyn left the inputs at (t, y) in w->u */
            status = hy_law(s, o, w, s->t, s->y);
        }
        for (i = 0; i < m->nu; ++i) {
            out->u_out[n * m->nu + i] = status == RODGEN_OK ? w->u[i] : NAN;
        }
    }
    out->n += 1;
    s->stored = 1;
}

static void hy_log(rodgen_hybrid_state *s, houtput *out, int kind, int block, double i0, double i1, double loss)
{
    s->events += 1;
    if (out->events_out != 0 && out->ne < out->event_capacity) {
        rodgen_event *e = out->events_out + out->ne;
        e->t = s->t;
        e->kind = kind;
        e->block = block;
        e->impulse[0] = i0;
        e->impulse[1] = i1;
        e->energy_loss = loss;
        out->ne += 1;
    }
}

static int release_kind(const rodgen_model *m, int i)
{
    return m->constraints[i].kind == RODGEN_CONTACT ? RODGEN_EVENT_LIFTOFF : RODGEN_EVENT_LIMIT_RELEASE;
}

/* A rate of a dry-friction block's coordinate at most this is rest (it sticks). */
#define RODGEN_FRICTION_REST 1e-9

/* The phase of a dry-friction block from the rate of its coordinate at y: at rest it sticks where it is,
 * else it slips against the rate (w->J and w->c hold J(y) and c(y)). */
static void friction_by_rate(rodgen_hybrid_state *s, hscratch *w, const double *y, int i)
{
    const rodgen_model *m = s->model;
    const int r = m->constraints[i].row;
    const double v = dot(w->J + r * RODGEN_NV(m), y + m->nq, RODGEN_NV(m));
    s->active[i] = v > RODGEN_FRICTION_REST ? RODGEN_SLIDE_MINUS
                 : v < -RODGEN_FRICTION_REST ? RODGEN_SLIDE_PLUS : RODGEN_STICK;
    s->target[r] = w->c[r];
}

/* A dry-friction block idles (0) while a LIMIT block on its coordinate holds it (the two rows would be
 * one), and takes its phase from the rate again when the limit releases. */
static void friction_sync(rodgen_hybrid_state *s, hscratch *w)
{
    const rodgen_model *m = s->model;
    int i, have = 0;
    for (i = 0; i < m->nconstraints; ++i) {
        const int j = w->partner[i];
        if (!is_friction(m, i) || j < 0) {
            continue;
        }
        if (s->active[j]) {
            s->active[i] = 0;
        } else if (s->active[i] == 0) {
            if (!have) {
                m->constraint_position(s->y, s->p, w->c);
                m->constraint_jacobian(s->y, s->p, w->J);
                have = 1;
            }
            friction_by_rate(s, w, s->y, i);
        }
    }
}

/* Release pulling blocks (most negative normal force first, until none pulls; one that released would touch
 * again within a step, would_return, rests instead: RESTING, held), then log contacts outside the friction
 * cone and flat feet whose centre of pressure left their sole.
 * Returns a status; *slip_block receives a contact that slipped, *tip_block a flat foot that tipped (or
 * they stay -1). A flat foot does not slide: with RODGEN_SLIP_SLIDE its slip is logged as with
 * RODGEN_SLIP_STOP. */
static int hy_settle(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, houtput *out,
    int *slip_block, int *tip_block)
{
    const rodgen_model *m = s->model;
    int pass, i, status;
    for (i = 0; i < m->nconstraints; ++i) {
        if (s->active[i] && s->armed[i] == RESTING) {
            s->armed[i] = 1;   /* tested again below */
        }
    }
    for (pass = 0; pass <= 3 * m->nconstraints; ++pass) {
        int worst = -1;
        double lworst = 0.0;
        friction_sync(s, w);
        status = hy_dyn(s, o, w, s->t, s->y, w->dy, w->lam);
        if (status != RODGEN_OK) {
            return status;
        }
        for (i = 0; i < m->nconstraints; ++i) {
            if (s->active[i] && is_unilateral(m, i) && s->armed[i] != RESTING
                && w->lam[normal_row(m, i)] < lworst) {
                lworst = w->lam[normal_row(m, i)];
                worst = i;
            }
        }
        if (worst >= 0) {
            int back;
            status = would_return(s, o, w, s->t, s->y, worst, &back);
            if (status != RODGEN_OK) {
                return status;
            }
            if (back) {
                s->armed[worst] = RESTING;   /* released, it would move into the ground: it rests there */
                continue;
            }
            s->active[worst] = 0;
            s->armed[worst] = RELEASED;   /* released at rest: it touches again when it moves into the ground */
            s->slipping[worst] = 0;
            hy_log(s, out, release_kind(m, worst), worst, 0.0, 0.0, 0.0);
            continue;
        }
        /* stiction: the sticking dry-friction block furthest beyond its static limit slips, its kinetic
         * force in the direction of the force that held it (whatever on_slip says) */
        lworst = 0.0;
        for (i = 0; i < m->nconstraints; ++i) {
            if (is_friction(m, i) && s->active[i] == RODGEN_STICK && slip_margin(s, i, w->lam) < lworst) {
                lworst = slip_margin(s, i, w->lam);
                worst = i;
            }
        }
        if (worst >= 0) {
            const double f = w->lam[m->constraints[worst].row];
            s->active[worst] = f > 0.0 ? RODGEN_SLIDE_PLUS : RODGEN_SLIDE_MINUS;
            hy_log(s, out, RODGEN_EVENT_SLIP, worst, f, 0.0, 0.0);
            continue;
        }
        if (o->on_slip != RODGEN_SLIP_SLIDE) {
            break;
        }
        /* sliding friction: the sticking contact furthest outside its cone starts to slide,
         * its friction force keeping the direction of the sticking force */
        lworst = 0.0;
        for (i = 0; i < m->nconstraints; ++i) {
            if (s->active[i] == RODGEN_STICK && m->constraints[i].kind == RODGEN_CONTACT && !is_flat(m, i)
                && slip_margin(s, i, w->lam) < lworst) {
                lworst = slip_margin(s, i, w->lam);
                worst = i;
            }
        }
        if (worst < 0) {
            break;
        }
        {
            hy_log(s, out, RODGEN_EVENT_SLIP, worst, tangential_force(m, worst, w->lam), w->lam[normal_row(m, worst)],
                0.0);
            start_slide(s, worst, w->lam);
        }
    }
    for (i = 0; i < m->nconstraints; ++i) {
        if (s->active[i] && is_flat(m, i) && !unloading(s, i, w->lam) && tip_margin(m, i, w->lam) < 0.0) {
            /* its centre of pressure (in the frame's tangential axes) left the sole over one edge */
            const double *f = w->lam + m->constraints[i].row;
            hy_log(s, out, RODGEN_EVENT_TIP, i, f[2] != 0.0 ? -f[4] / f[2] : 0.0, f[2] != 0.0 ? f[3] / f[2] : 0.0,
                0.0);
            if (*tip_block < 0) {
                *tip_block = i;
            }
        }
        if (o->on_slip == RODGEN_SLIP_SLIDE && !is_flat(m, i)) {
            continue;
        }
        if (s->active[i] && m->constraints[i].kind == RODGEN_CONTACT && !s->slipping[i]
            && !unloading(s, i, w->lam) && slip_margin(s, i, w->lam) < 0.0) {
            s->slipping[i] = 1;
            hy_log(s, out, RODGEN_EVENT_SLIP, i, tangential_force(m, i, w->lam), w->lam[normal_row(m, i)], 0.0);
            if (*slip_block < 0) {
                *slip_block = i;
            }
        }
    }
    s->have_g = 0;
    return RODGEN_OK;
}

/* The impact of the hybrid simulator at (s->t, s->y) on the blocks of w->act2 (their codes: a sliding
 * contact slides during the impact, its 3-row direction referred to s->target): w->qdp, w->imp, w->after. */
static int hy_impact(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double *loss)
{
    const rodgen_model *m = s->model;
    scratch c;
    int i, status;
    carve(m, w->work, &c);
    for (i = 0; i < m->nconstraints; ++i) {
        c.act[i] = w->act2[i];
    }
    status = impact_core(m, s->p, s->y, s->y + m->nq, s->target, &o->cfd, &c, w->qdp, w->imp, loss);
    for (i = 0; i < m->nconstraints; ++i) {
        w->after[i] = c.act[i];
    }
    return status;
}

/* The tangential velocity of contact i at the velocities qd along its sliding motion (w->J holds J(y)):
 * slide_speed with other velocities. */
static double speed_at(const rodgen_hybrid_state *s, const hscratch *w, const double *qd, int i)
{
    const rodgen_model *m = s->model;
    const int r = m->constraints[i].row, nv = RODGEN_NV(m);
    const double vt = dot(w->J + r * nv, qd, nv);
    if (s->active[i] == RODGEN_SLIDE) {
        return vt * s->target[r] + dot(w->J + (r + 1) * nv, qd, nv) * s->target[r + 1];
    }
    return s->active[i] == RODGEN_SLIDE_PLUS ? -vt : vt;
}

/* A 3-row sliding contact's reference direction re-anchored on its tangential velocity at qd (w->J holds
 * J(y)) when that turned from it (by more than about 4e-5 rad: a straight path keeps its direction), or
 * (always) when always is set; returns 1 when it changed, -1 when the contact is at rest (|v_t| <=
 * RODGEN_SLIDE_REST: no direction of its own). Re-anchored after every step of a turning path, the stop
 * v_t . d = 0 is where |v_t| reaches 0 (up to the turn within one step) rather than where the path has
 * turned through a right angle from an old direction. */
static int reanchor(rodgen_hybrid_state *s, const hscratch *w, const double *qd, int i, int always)
{
    const rodgen_model *m = s->model;
    const int r = m->constraints[i].row, nv = RODGEN_NV(m);
    const double v0 = dot(w->J + r * nv, qd, nv), v1 = dot(w->J + (r + 1) * nv, qd, nv);
    const double n = sqrt(v0 * v0 + v1 * v1), e = tnorm(s->target, r, 2);
    if (!(n > RODGEN_SLIDE_REST)) {
        return -1;
    }
    if (!always && v0 * s->target[r] + v1 * s->target[r + 1] >= (1.0 - 1e-9) * n * e) {
        return 0;
    }
    s->target[r] = v0 / n * (e > 0.0 ? e : RODGEN_SLIDE_REST);   /* the direction, its length kept */
    s->target[r + 1] = v1 / n * (e > 0.0 ? e : RODGEN_SLIDE_REST);
    return 1;
}

/* The Coulomb impact of hy_jump after hy_impact solved it with its touching contacts sticking (w->act2, w->g1,
 * w->imp, w->after, w->qdp as hy_impact leaves them; w->J holds J(y)): a touching contact whose sticking impulse
 * leaves the cone slides during the impact (its tangential impulse mu * normal impulse, against its tangential
 * velocity); so does a touching contact the impact released although it moves into the ground after it (no
 * complementary set holds it sticking: a box landing flat at speed, its back corners pulled down by the front
 * ones' friction, slides on all four), its direction that of its tangential velocity before the impact. The
 * impact is solved again after each pass; a pass switches contacts to sliding only, so at most nc passes. */
static int hy_coulomb_impact(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double *loss)
{
    const rodgen_model *m = s->model;
    const int nc = m->nconstraints, nv = RODGEN_NV(m);
    const double *qd_minus = s->y + m->nq;
    double vn_scale = 0.0;
    int i, pass, redo, status;
    for (i = 0; i < nc; ++i) {
        if (w->g1[i] != 0.0 && is_unilateral(m, i)) {
            vn_scale = fmax(vn_scale, fabs(dot(w->J + normal_row(m, i) * nv, qd_minus, nv)));
        }
    }
    for (pass = 0; pass <= nc; ++pass) {
        redo = 0;
        for (i = 0; i < nc; ++i) {
            const int r = m->constraints[i].row;
            if (w->g1[i] == 0.0 || m->constraints[i].kind != RODGEN_CONTACT || is_flat(m, i)
                || !isfinite(s->mu[i]) || is_sliding(m, w->act2, i)) {
                continue;
            }
            if (w->after[i] && tnorm(w->imp, r, ntan(m, i)) > s->mu[i] * w->imp[r + ntan(m, i)]) {
                start_slide(s, i, w->imp);
            } else if (!w->after[i] && dot(w->J + normal_row(m, i) * nv, w->qdp, nv) < -RODGEN_IMPACT_REST * vn_scale) {
                double mv[2] = {0.0, 0.0};   /* minus the tangential velocity: the friction's way */
                int k;
                for (k = 0; k < ntan(m, i); ++k) {
                    mv[k] = -dot(w->J + (r + k) * nv, qd_minus, nv);
                }
                if (!(tnorm(mv, 0, ntan(m, i)) > RODGEN_SLIDE_REST)) {
                    continue;   /* at rest along the ground: no way to slide */
                }
                slide_against(s, i, mv);
            } else {
                continue;
            }
            w->act2[i] = s->active[i];
            s->active[i] = 0;
            redo = 1;
        }
        if (!redo) {
            break;
        }
        status = hy_impact(s, o, w, loss);
        if (status != RODGEN_OK) {
            return status;
        }
    }
    return RODGEN_OK;
}

/* The blocks an impact released (w->act2 and not w->after; w->qdp the velocities after it, w->J: J(y), the touching
 * blocks' targets set) that part from their bound only at the integration's resolution: their normal velocity after
 * it at most RODGEN_IMPACT_REST of the largest before it (the complementarity's tolerance), or turned back into the
 * ground within half a step by their gap acceleration in the phase after it (half_step_velocity < 0: a biped's
 * stance sole unloaded by the other foot's landing parts at up to 2.7 mm/s while its leg's joint law pulls it back
 * at about 100 m/s^2: -48 mm/s half a step of 1 ms on). They are held (w->after) and the impact is solved again
 * with them held (w->qdp, w->imp, *loss: their velocity 0 after it, a small pull), and hy_settle decides by their
 * normal force whether they stay, rest or go. The others part: they lift off (the compass gait's trailing foot,
 * 0.39 m/s up against -5.1 m/s^2: +0.388 m/s half a step of 2 ms on). */
static int hold_at_rest(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double *loss)
{
    const rodgen_model *m = s->model;
    const int nv = RODGEN_NV(m), nq = m->nq, nc = m->nconstraints;
    double vscale = 0.0;
    int i, j, k, any = 0, again = 0, status;
    scratch c;
    for (i = 0; i < nc; ++i) {
        if (w->act2[i] && is_unilateral(m, i)) {
            vscale = fmax(vscale, fabs(dot(w->J + normal_row(m, i) * nv, s->y + nq, nv)));
            any = any || !w->after[i];
        }
    }
    if (!any) {
        return RODGEN_OK;
    }
    for (i = 0; i < RODGEN_NY(m); ++i) {   /* the state after the impact, in its phase */
        w->yt[i] = i < nq ? s->y[i] : w->qdp[i - nq];
    }
    for (i = 0; i < nc; ++i) {
        if (is_unilateral(m, i)) {
            s->active[i] = w->after[i];   /* the phase after the impact (hy_jump_once sets it so anyway) */
        }
    }
    status = hy_dyn(s, o, w, s->t, w->yt, w->dy, w->lam);
    m->constraint_bias(w->yt, w->qdp, s->p, w->bias);
    for (i = 0; status == RODGEN_OK && i < nc; ++i) {
        if (w->act2[i] && !w->after[i] && is_unilateral(m, i)
            && (dot(w->J + normal_row(m, i) * nv, w->qdp, nv) <= RODGEN_IMPACT_REST * vscale
                || half_step_velocity(s, o, w, w->yt, w->dy + nq, i) < 0.0)) {
            w->after[i] = w->act2[i];
            s->active[i] = w->after[i];
            again = 1;
        }
    }
    if (status != RODGEN_OK || !again) {
        return status;
    }
    carve(m, w->work, &c);
    for (i = 0; i < nc; ++i) {
        c.act[i] = w->after[i];
    }
    k = impact_solve(m, s->p, s->y, s->y + nq, s->target, &o->cfd, &c);
    if (k < 0) {
        return -k;
    }
    impact_velocity(m, s->y + nq, k, &c, w->qdp);
    for (i = 0; i < m->nrows; ++i) {
        w->imp[i] = c.b[i];
    }
    *loss = 0.0;   /* kinetic energies |L^T qd|^2 / 2 */
    for (i = 0; i < nv; ++i) {
        double a = 0.0, b = 0.0;
        for (j = i; j < nv; ++j) {
            a += c.M[j * nv + i] * s->y[nq + j];
            b += c.M[j * nv + i] * w->qdp[j];
        }
        *loss += 0.5 * (a * a - b * b);
    }
    return all_finite(w->qdp, nv) ? RODGEN_OK : RODGEN_ERR_NONFINITE_RESULT;
}

/* How a jump ends the run: a flat foot that tipped (RODGEN_ERR_TIPPED), a contact that slipped unless
 * on_slip is RODGEN_SLIP_CONTINUE (RODGEN_ERR_FRICTION_CONE: with RODGEN_SLIP_SLIDE only a flat foot's slip
 * is logged), else RODGEN_OK; s->block: the block. */
static int stop_status(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, int slip_block, int tip_block)
{
    if (tip_block >= 0) {
        s->block = tip_block;
        return RODGEN_ERR_TIPPED;
    }
    if (slip_block >= 0 && o->on_slip != RODGEN_SLIP_CONTINUE) {
        s->block = slip_block;
        return RODGEN_ERR_FRICTION_CONE;
    }
    return RODGEN_OK;
}

/* One jump at (s->t, s->y), an event located there: impacts, releases, slips. An armed block touches
 * when its gap is below 0, a RELEASED one when its touch_margin is (touch_zero: at or below, for an
 * importer's solver that stops on the root). */
static int hy_jump_once(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, houtput *out,
    int touch_zero)
{
    const rodgen_model *m = s->model;
    const int nq = m->nq, nc = m->nconstraints, sliding = o->on_slip == RODGEN_SLIP_SLIDE;
    int i, touched = 0, status, slip_block = -1, tip_block = -1;
    hy_store(s, o, w, out);   /* the state before the jump, in the old phase */
    status = hy_dyn(s, o, w, s->t, s->y, w->dy, w->lam);   /* the phase's accelerations, for touch_margin */
    if (status != RODGEN_OK) {
        return status;
    }
    m->constraint_position(s->y, s->p, w->c);
    m->constraint_jacobian(s->y, s->p, w->J);
    m->constraint_bias(s->y, s->y + nq, s->p, w->bias);
    if (any_sliding(s)) {
        /* a sliding contact that has stopped (or turned) sticks where it is */
        for (i = 0; i < nc; ++i) {
            if (slides(m, s->active, i) && !(slide_speed(s, w, s->y, i) > 0.0)) {
                if (is_friction(m, i)) {
                    const int r = m->constraints[i].row;
                    s->active[i] = RODGEN_STICK;
                    s->target[r] = w->c[r];
                } else {
                    stick_here(s, w, i);
                }
                hy_log(s, out, RODGEN_EVENT_STICK, i, 0.0, 0.0, 0.0);
            }
        }
    }
    for (i = 0; i < nc; ++i) {
        /* the impact's set: sticking blocks and the touching ones held, sliding contacts sliding */
        const double below = !is_unilateral(m, i) || s->active[i] || !s->armed[i] ? 1.0
            : s->armed[i] == RELEASED ? touch_margin(s, o, w, s->y, w->dy + nq, i) : w->c[normal_row(m, i)];
        w->act2[i] = is_active(m, s->active, i) ? (is_sliding(m, s->active, i) ? s->active[i] : RODGEN_STICK) : 0;
        w->g1[i] = 0.0;
        if (is_unilateral(m, i) && !s->active[i] && (below < 0.0 || (touch_zero && below <= 0.0))) {
            w->act2[i] = RODGEN_STICK;
            w->g1[i] = 1.0;   /* touching now */
            touched = 1;
        }
    }
    if (touched) {
        double loss = 0.0, speed = 0.0;
        for (i = 0; i < nc; ++i) {   /* the touching blocks' largest speed along their rows before the impact */
            int k;
            for (k = 0; w->g1[i] != 0.0 && k < m->constraints[i].nrows; ++k) {
                speed = fmax(speed,
                    fabs(dot(w->J + (m->constraints[i].row + k) * RODGEN_NV(m), s->y + nq, RODGEN_NV(m))));
            }
        }
        status = hy_impact(s, o, w, &loss);
        if (status != RODGEN_OK) {
            return status;
        }
        if (sliding && speed > RODGEN_SLIDE_REST) {   /* an impact at rest: see the slip test below */
            status = hy_coulomb_impact(s, o, w, &loss);
            if (status != RODGEN_OK) {
                return status;
            }
        }
        for (i = 0; i < nc; ++i) {   /* the touching blocks' targets, held or not */
            const int r = m->constraints[i].row;
            int k;
            if (w->g1[i] == 0.0) {
                continue;
            }
            if (m->constraints[i].kind != RODGEN_CONTACT) {
                s->target[r] = 0.0;
                continue;
            }
            for (k = 0; k < m->constraints[i].nrows && !is_sliding(m, w->after, i); ++k) {
                if (held_in_place(m, i, k)) {   /* held where it touched (a flat foot's heading too); a
                                                   sliding one keeps its direction there */
                    s->target[r + k] = w->c[r + k];
                }
            }
            if (is_flat(m, i)) {   /* a flat foot's tilt about the ground's axes: flat on the ground */
                s->target[r + 3] = 0.0;
                s->target[r + 4] = 0.0;
            }
            s->target[normal_row(m, i)] = 0.0;
        }
        status = hold_at_rest(s, o, w, &loss);
        if (status != RODGEN_OK) {
            return status;
        }
        for (i = 0; i < nc; ++i) {
            const int r = m->constraints[i].row;
            const int contact = m->constraints[i].kind == RODGEN_CONTACT;
            if (w->g1[i] != 0.0) {
                const double it = contact ? tangential_force(m, i, w->imp) : w->imp[r];
                const double in = contact ? w->imp[normal_row(m, i)] : 0.0;
                hy_log(s, out, contact ? RODGEN_EVENT_TOUCHDOWN : RODGEN_EVENT_LIMIT, i, it, in, loss);
                if (w->after[i]) {
                    if (contact) {
                        /* an impact at rest (every touching block at most RODGEN_SLIDE_REST: a RELEASED one
                         * touching again in the instant of a jump, hy_jump) has impulses of rounding, whose
                         * ratio tells no slip: hy_settle checks the forces after it */
                        if ((!sliding || is_flat(m, i)) && isfinite(s->mu[i]) && speed > RODGEN_SLIDE_REST
                            && fabs(it) > s->mu[i] * in) {
                            s->slipping[i] = 1;
                            hy_log(s, out, RODGEN_EVENT_SLIP, i, it, in, 0.0);
                            if (slip_block < 0) {
                                slip_block = i;
                            }
                        }
                    }
                }
            }
        }
        for (i = 0; i < nc; ++i) {   /* the releases of the impact, after its touchdowns */
            if (w->act2[i] && !w->after[i]) {
                hy_log(s, out, release_kind(m, i), i, 0.0, 0.0, 0.0);
            }
            if (is_unilateral(m, i)) {
                if (!w->after[i]) {
                    s->armed[i] = 0;   /* released by the impact parting, or left out of it: disarmed until it
                                          rises through arm_gap */
                    s->slipping[i] = 0;
                } else if (s->armed[i] == RESTING) {
                    s->armed[i] = 1;   /* hy_settle tests it again */
                }
                s->active[i] = w->after[i];
            }
        }
        for (i = 0; i < RODGEN_NV(m); ++i) {
            s->y[nq + i] = w->qdp[i];
        }
        /* a contact that slid through the impact goes on sliding the way it moves after it (a 3-row one
         * re-anchored on its new tangential velocity), or sticks where it is if that stopped or turned */
        for (i = 0; i < nc; ++i) {
            if (is_sliding(m, s->active, i)
                && ((s->active[i] == RODGEN_SLIDE && reanchor(s, w, w->qdp, i, 1) < 0)
                    || !(speed_at(s, w, w->qdp, i) > 0.0))) {
                stick_here(s, w, i);
            }
        }
        /* the impact left the dry-friction blocks out: each slips in the direction of its velocity after
         * it, or sticks where it is if that is zero (and slips again at once if it must) */
        for (i = 0; i < nc; ++i) {
            if (is_friction(m, i)) {
                friction_by_rate(s, w, s->y, i);
            }
        }
    }
    if (o->hold) {   /* the phase changed: a digital controller samples again right after the jump */
        status = hy_sample(s, w);
        if (status != RODGEN_OK) {
            return status;
        }
    }
    status = hy_settle(s, o, w, out, &slip_block, &tip_block);
    if (status != RODGEN_OK) {
        return status;
    }
    s->settled = 1;
    hy_store(s, o, w, out);   /* the state after the jump, in the new phase */
    if (s->t - s->last_jump <= o->event_tol) {
        s->quiet_jumps += 1;
    } else {
        s->quiet_jumps = 0;
    }
    s->last_jump = s->t;
    status = stop_status(s, o, slip_block, tip_block);
    if (status != RODGEN_OK) {
        return status;
    }
    if (s->quiet_jumps > 2 * nc + 4 || (o->max_events > 0 && s->events > o->max_events)) {
        return RODGEN_ERR_TOO_MANY_EVENTS;
    }
    return RODGEN_OK;
}

/* Whether a RELEASED block is already at or below its bound moving into it at (s->t, s->y), after blocks were
 * released there (by a jump, or by hy_settle at the start of a run, after a new held sample or after
 * rodgen_hybrid_forget): its event function (touch_margin) is negative already, never turns negative, so it
 * would sink with no event. *sinking: the first such block, or -1. With one, at the limit of jumps at one
 * instant: RODGEN_ERR_TOO_MANY_EVENTS, s->block that block. (hy_events: w->g1, w->c, w->lam overwritten.) */
static int hy_sinking(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, int *sinking)
{
    const rodgen_model *m = s->model;
    int i, status;
    *sinking = -1;
    if (!any_margins(s)) {
        return RODGEN_OK;
    }
    status = hy_events(s, o, w, s->t, s->y, w->g1);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < m->nconstraints && *sinking < 0; ++i) {
        if (!s->active[i] && s->armed[i] == RELEASED && w->g1[2 * i] < 0.0) {
            *sinking = i;
        }
    }
    if (*sinking >= 0 && s->quiet_jumps >= 2 * m->nconstraints + 4) {
        s->block = *sinking;
        return RODGEN_ERR_TOO_MANY_EVENTS;
    }
    return RODGEN_OK;
}

/* The jump at (s->t, s->y): hy_jump_once, then again while a RELEASED block is already at or below its bound
 * moving into it (hy_sinking: an impact that leaves a block sinking or a pulling release can do that), up to
 * the limit of jumps at one instant (RODGEN_ERR_TOO_MANY_EVENTS, s->block the block that would not settle).
 * A jump again that would find no room for its two rows ends the call with RODGEN_SIM_FULL, the phase left
 * to check (s->settled 0): the next call's hy_settle and hy_sinking take it up. */
static int hy_jump(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, houtput *out,
    int touch_zero)
{
    int again;
    do {
        int status = hy_jump_once(s, o, w, out, touch_zero);
        if (status != RODGEN_OK) {
            return status;
        }
        status = hy_sinking(s, o, w, &again);
        if (status != RODGEN_OK) {
            return status;
        }
        if (again >= 0 && !jump_room(out)) {
            s->settled = 0;
            return RODGEN_SIM_FULL;
        }
    } while (again >= 0);
    return RODGEN_OK;
}

/* Locate the sign change of event function e in [t, t + h] from the state y0
 * at t (g0 >= 0 > g1); *tau receives the late end of the final bracket. */
static int hy_locate(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, double t, double h,
    int e, double g0, double g1, double *tau)
{
    double a = t, fa = g0, b = t + h, fb = g1, width3 = h;
    int it, side = 0, status;
    for (it = 0; it < 200; ++it) {
        double x, fx;
        if (b - a <= o->event_tol) {
            *tau = b;
            return RODGEN_OK;
        }
        if (it % 3 == 2 && b - a > 0.5 * width3) {
            x = 0.5 * (a + b);   /* the bracket did not halve in three tries: bisect */
        } else {
            x = b - fb * (b - a) / (fb - fa);
            x = fmax(x, a + 0.5 * o->event_tol);
            x = fmin(x, b - 0.5 * o->event_tol);
        }
        if (it % 3 == 2) {
            width3 = b - a;
        }
        status = hy_rk4(s, o, w, t, w->y0, x - t, w->yx);
        if (status == RODGEN_OK) {
            status = hy_events(s, o, w, x, w->yx, w->gx);
        }
        if (status != RODGEN_OK) {
            return status;
        }
        fx = w->gx[e];
        if (!isfinite(fx)) {
            break;
        }
        if (fx < 0.0) {
            b = x;
            fb = fx;
            if (side == -1) {
                fa *= 0.5;
            }
            side = -1;
        } else {
            a = x;
            fa = fx;
            if (side == 1) {
                fb *= 0.5;
            }
            side = 1;
        }
    }
    s->block = e / 2;
    return RODGEN_ERR_EVENT_NOT_LOCATED;
}

/* One step of size h from (s->t, s->y): accepted, or cut at the first event and the jump applied. */
static int hy_step(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, hscratch *w, houtput *out, double h,
    int *jumped)
{
    const rodgen_model *m = s->model;
    const int ny = RODGEN_NY(m), nc = m->nconstraints;
    const double t = s->t;
    double tau = t + h;
    int i, e, first = -1, status;
    *jumped = 0;
    if (!s->have_g) {
        status = hy_events(s, o, w, t, s->y, s->g);
        if (status != RODGEN_OK) {
            return status;
        }
        s->have_g = 1;
    }
    for (i = 0; i < nc; ++i) {
        /* a 3-row sliding contact's rest speed follows its normal force (w->lam: the forces at (t, y)) */
        if (s->active[i] == RODGEN_SLIDE) {
            const int r = m->constraints[i].row;
            const double e = tnorm(s->target, r, 2), want = rest_speed(s, o, w, i, w->lam[r + 2]);
            if (want > 2.0 * e || want < 0.5 * e) {
                s->target[r] *= want / e;
                s->target[r + 1] *= want / e;
                s->g[2 * i + 1] *= want / e;   /* the speed along the reference, in proportion */
            }
        }
    }
    for (i = 0; i < ny; ++i) {
        w->y0[i] = s->y[i];
    }
    status = hy_rk4(s, o, w, t, w->y0, h, w->y1);
    if (status == RODGEN_OK) {
        status = hy_events(s, o, w, t + h, w->y1, w->g1);
    }
    if (status != RODGEN_OK) {
        return status;
    }
    for (e = 0; e < 2 * nc; ++e) {
        if (s->g[e] >= 0.0 && w->g1[e] < 0.0) {
            double te;
            status = hy_locate(s, o, w, t, h, e, s->g[e], w->g1[e], &te);
            if (status != RODGEN_OK) {
                return status;
            }
            if (first < 0 || te < tau) {
                tau = te;
                first = e;
            }
        }
    }
    if (first < 0) {
        /* no event: accept, arm the blocks that have risen, un-latch slips back inside */
        int changed = 0;
        for (i = 0; i < ny; ++i) {
            s->y[i] = w->y1[i];
        }
        s->t = t + h;
        for (i = 0; i < nc; ++i) {
            if (!is_unilateral(m, i)) {
                continue;
            }
            if (!s->active[i] && s->armed[i] != 1 && w->c[normal_row(m, i)] > o->arm_gap) {
                s->armed[i] = 1;
                changed = 1;
            }
            if (s->active[i] && s->slipping[i] && slip_margin(s, i, w->lam) >= 0.0) {
                s->slipping[i] = 0;
                changed = 1;
            }
            if (s->active[i] && s->armed[i] == RESTING && w->lam[normal_row(m, i)] > 0.0) {
                s->armed[i] = 1;   /* it presses again: held as any other */
                changed = 1;
            }
            /* a 3-row contact sliding along a turning path: its reference direction follows (w->J: J(y1)) */
            if (s->active[i] == RODGEN_SLIDE && reanchor(s, w, s->y + m->nq, i, 0) > 0) {
                changed = 1;
            }
        }
        for (e = 0; e < 2 * nc; ++e) {
            s->g[e] = w->g1[e];
        }
        s->have_g = !changed;
        s->stored = 0;
        s->held = 0;
        for (i = 0; i < nc; ++i) {
            /* a RESTING block still pulling goes at the end of the step where released it would no longer
             * come back within a step (no event function tells that: it is decided at the steps' resolution) */
            if (s->active[i] && s->armed[i] == RESTING && w->lam[normal_row(m, i)] < 0.0) {
                int back;
                status = would_return(s, o, w, s->t, s->y, i, &back);
                if (status != RODGEN_OK) {
                    return status;
                }
                if (!back) {
                    s->have_g = 0;
                    *jumped = 1;
                    return hy_jump(s, o, w, out, 0);
                }
            }
        }
        return RODGEN_OK;
    }
    status = hy_rk4(s, o, w, t, w->y0, tau - t, w->y1);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        s->y[i] = w->y1[i];
    }
    s->t = tau;
    s->have_g = 0;
    *jumped = 1;
    return hy_jump(s, o, w, out, 0);
}

int rodgen_hybrid_start(rodgen_hybrid_state *s, const rodgen_model *m, const double *p,
    rodgen_hybrid_input_fn input, void *context, const rodgen_hybrid_options *o, double t0, const double *y0,
    const int *active0, const int *disarmed0, void *work)
{
    hscratch w;
    int i, nc, status;
    if (s == 0) {
        return RODGEN_ERR_OPTIONS;
    }
    s->block = -1;
    s->model = 0;
    status = check_call(m, options_ok(o) && work != 0 && isfinite(t0), y0, m != 0 && y0 != 0 ? y0 + m->nq : 0, 0,
                        0, &p);
    if (status != RODGEN_OK) {
        return status;
    }
    nc = m->nconstraints;
    for (i = 0; i < nc; ++i) {   /* the events of a contact read its rows as (tangential..., normal[, orientation]) */
        if (m->constraints[i].kind == RODGEN_CONTACT && m->constraints[i].nrows != 2 && m->constraints[i].nrows != 3
            && m->constraints[i].nrows != 6) {
            return RODGEN_ERR_OPTIONS;
        }
        if (is_flat(m, i) && active0 != 0 && active0[i] != 0 && active0[i] != RODGEN_STICK) {
            return RODGEN_ERR_OPTIONS;   /* a flat foot sticks or is free: it does not slide */
        }
    }
    s->model = m;
    s->p = p;
    s->input = input;
    s->context = context;
    s->t0 = t0;
    s->t = t0;
    s->steps = 0;
    s->events = 0;
    s->evaluations = 0;
    s->responses = 0;
    s->block = -1;
    s->stored = 0;
    s->settled = 0;
    s->quiet_jumps = 0;
    s->last_jump = -INFINITY;
    s->have_g = 0;
    s->held = 0;
    hlayout_state(m, s, work);
    hcarve(m, s, &w);
    w.memo[0] = NAN;
    for (i = 0; i < m->nu; ++i) {
        w.uh[i] = NAN;
    }
    for (i = 0; i < RODGEN_NY(m); ++i) {
        s->y[i] = y0[i];
    }
    hy_normalize(m, s->y);
    for (i = 0; i < nc; ++i) {
        s->mu[i] = INFINITY;
    }
    if (nc > 0 && m->constraint_friction != 0) {
        m->constraint_friction(p, w.imp);   /* [nconstraints] <= nrows */
        for (i = 0; i < nc; ++i) {
            s->mu[i] = (m->constraints[i].kind == RODGEN_CONTACT || is_friction(m, i)) && w.imp[i] >= 0.0
                ? w.imp[i] : INFINITY;
        }
    }
    if (nc > 0) {
        m->constraint_position(s->y, p, w.c);
        m->constraint_jacobian(s->y, p, w.J);
    }
    for (i = 0; i < nc; ++i) {   /* a LIMIT block on the coordinate of each dry-friction block */
        int j;
        w.partner[i] = -1;
        for (j = 0; j < nc && is_friction(m, i); ++j) {
            const int nv = RODGEN_NV(m);
            const double *a = w.J + m->constraints[i].row * nv, *b = w.J + m->constraints[j].row * nv;
            int k, same = m->constraints[j].kind == RODGEN_LIMIT;
            for (k = 0; same && k < nv; ++k) {
                same = fabs(fabs(a[k]) - fabs(b[k])) <= 1e-12 * (1.0 + fabs(a[k]));
            }
            if (same && w.partner[i] < 0) {
                w.partner[i] = j;
            }
        }
    }
    for (i = 0; i < m->nrows; ++i) {
        s->target[i] = 0.0;
    }
    for (i = 0; i < nc; ++i) {
        const rodgen_constraint *b = m->constraints + i;
        const int r = b->row;
        s->active[i] = is_active(m, active0, i);
        if (o->on_slip == RODGEN_SLIP_SLIDE && is_sliding(m, active0, i)) {
            s->active[i] = active0[i];
        }
        s->armed[i] = 0;
        s->slipping[i] = 0;
        if (b->kind == RODGEN_CONTACT || b->kind == RODGEN_FRICTION) {
            int k;
            for (k = 0; k < b->nrows; ++k) {
                if (b->kind == RODGEN_FRICTION || held_in_place(m, i, k)) {
                    s->target[r + k] = w.c[r + k];   /* a contact's tangential rows (a flat foot's orientation
                                                        too), a friction block's row */
                }
            }
        }
        if (b->kind == RODGEN_CONTACT && s->active[i] != 0 && s->active[i] != RODGEN_STICK) {
            /* a sliding start: one tangent SLIDE_PLUS/MINUS, two SLIDE in the direction of its velocity */
            if ((s->active[i] == RODGEN_SLIDE) != (b->nrows == 3)) {
                return RODGEN_ERR_OPTIONS;
            }
            if (b->nrows == 3) {
                s->target[r] = 0.0;
                s->target[r + 1] = 0.0;
                if (reanchor(s, &w, s->y + m->nq, i, 1) < 0) {
                    s->block = i;
                    return RODGEN_ERR_INITIAL_STATE;   /* at rest: no direction to slide in */
                }
            }
        }
        if (b->kind == RODGEN_FRICTION) {
            /* stick or slip as given, else from the coordinate's rate: at rest it sticks */
            if (active0 != 0 && (active0[i] == RODGEN_STICK || active0[i] == RODGEN_SLIDE_PLUS
                                 || active0[i] == RODGEN_SLIDE_MINUS)) {
                s->active[i] = active0[i];
            } else {
                friction_by_rate(s, &w, y0, i);
            }
            if (w.partner[i] >= 0 && s->active[w.partner[i]]) {
                s->active[i] = 0;   /* its limit (an earlier block) holds the coordinate */
            }
            if (s->mu[i] == INFINITY || m->kinetic_friction == 0) {
                return RODGEN_ERR_OPTIONS;   /* a dry-friction block needs its static and kinetic limits */
            }
        }
        if (s->active[i]) {
            int k;
            for (k = is_sliding(m, s->active, i) ? b->nrows - 1 : 0; k < b->nrows; ++k) {   /* sliding: its gap */
                if (fabs(w.c[r + k] - s->target[r + k]) > o->check_tol) {
                    s->block = i;
                    return RODGEN_ERR_INITIAL_STATE;
                }
            }
        } else if (is_unilateral(m, i) && !(disarmed0 != 0 && disarmed0[i])) {
            const double gap = w.c[normal_row(m, i)];
            if (gap < -o->check_tol) {
                s->block = i;
                return RODGEN_ERR_INITIAL_STATE;
            }
            s->armed[i] = gap > o->arm_gap;
        }
    }
    return RODGEN_OK;
}

int rodgen_hybrid_simulate(const rodgen_hybrid_options *o, rodgen_hybrid_state *s, long capacity,
    double *t_out, double *y_out, double *lambda_out, int *active_out, double *u_out, long *n_out,
    long event_capacity, rodgen_event *events_out, long *n_events)
{
    const rodgen_model *m;
    houtput out;
    hscratch w;
    long room_events;
    int status, nc;
    if (n_out != 0) {
        *n_out = 0;
    }
    if (n_events != 0) {
        *n_events = 0;
    }
    if (s == 0 || s->model == 0 || !options_ok(o) || !(o->dt > 0.0) || !(o->t_end > s->t0) || capacity < 3
        || t_out == 0 || y_out == 0 || n_out == 0) {
        return RODGEN_ERR_OPTIONS;
    }
    m = s->model;
    nc = m->nconstraints;
    room_events = 3L * nc + 2;
    if (events_out != 0 && (event_capacity < room_events || n_events == 0)) {
        return RODGEN_ERR_OPTIONS;
    }
    out.capacity = capacity;
    out.n = 0;
    out.event_capacity = events_out != 0 ? event_capacity : 0;
    out.ne = 0;
    out.t_out = t_out;
    out.y_out = y_out;
    out.lambda_out = lambda_out;
    out.u_out = u_out;
    out.active_out = active_out;
    out.events_out = events_out;
    hcarve(m, s, &w);
    for (;;) {
        double t_next, h;
        int jumped = 0;
        if (o->hold && !s->held) {
            status = hy_sample(s, &w);
            if (status != RODGEN_OK) {
                break;
            }
        }
        if (!s->settled) {
            int slip_block = -1, tip_block = -1, sinking;
            status = hy_settle(s, o, &w, &out, &slip_block, &tip_block);
            if (status != RODGEN_OK) {
                break;
            }
            s->settled = 1;
            status = stop_status(s, o, slip_block, tip_block);
            if (status != RODGEN_OK) {
                break;
            }
            /* a block it released (at the start, after a new held sample or rodgen_hybrid_forget) already
             * below its bound moving into it touches at once, as after a jump (hy_jump) */
            status = hy_sinking(s, o, &w, &sinking);
            if (status == RODGEN_OK && sinking >= 0) {
                s->have_g = 0;
                if (!jump_room(&out)) {   /* no room for its rows: the next call checks again */
                    s->settled = 0;
                    status = RODGEN_SIM_FULL;
                } else {
                    status = hy_jump(s, o, &w, &out, 0);
                }
            }
            if (status != RODGEN_OK) {
                break;
            }
        }
        if (!s->stored && (s->steps % o->store_every == 0 || s->t >= o->t_end)) {
            hy_store(s, o, &w, &out);
        }
        if (s->t >= o->t_end) {
            status = RODGEN_OK;
            break;
        }
        if (out.capacity - out.n < 3 || (events_out != 0 && out.event_capacity - out.ne < room_events)) {
            status = RODGEN_SIM_FULL;
            break;
        }
        t_next = s->t0 + (double)(s->steps + 1) * o->dt;
        if (t_next > o->t_end - 1e-9 * o->dt) {
            t_next = o->t_end;
        }
        h = t_next - s->t;
        if (h <= 1e-12 * o->dt) {
            /* an event ended exactly on the grid */
            s->t = fmax(s->t, t_next);
            s->steps += 1;
            continue;
        }
        status = hy_step(s, o, &w, &out, h, &jumped);
        if (status != RODGEN_OK) {
            break;
        }
        if (!jumped) {
            s->steps += 1;
        }
    }
    if (status != RODGEN_OK && status != RODGEN_SIM_FULL && !s->stored && out.n < out.capacity) {
        hy_store(s, o, &w, &out);
    }
    *n_out = out.n;
    if (n_events != 0) {
        *n_events = out.ne;
    }
    return status;
}

/* ---- Model Exchange: the importer integrates ------------------------------ */

void rodgen_hybrid_forget(rodgen_hybrid_state *s)
{
    hscratch w;
    if (s == 0 || s->model == 0) {
        return;
    }
    hcarve(s->model, s, &w);
    w.memo[0] = NAN;
    s->have_g = 0;
    s->settled = 0;   /* a block may pull (or slip) under the new inputs: rodgen_hybrid_simulate checks first */
}

int rodgen_hybrid_derivatives(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, double t, const double *y,
    double *dy, double *lambda)
{
    hscratch w;
    int i, status;
    if (s == 0 || s->model == 0 || !options_ok(o) || o->hold) {
        return RODGEN_ERR_OPTIONS;
    }
    hcarve(s->model, s, &w);
    status = hy_dyn(s, o, &w, t, y, dy, w.lam);
    for (i = 0; lambda != 0 && i < s->model->nrows; ++i) {
        lambda[i] = status == RODGEN_OK ? w.lam[i] : NAN;
    }
    return status;
}

int rodgen_hybrid_indicators(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, double t, const double *y,
    double *z)
{
    const rodgen_model *m;
    hscratch w;
    int i, status;
    if (s == 0 || s->model == 0 || !options_ok(o) || o->hold) {
        return RODGEN_ERR_OPTIONS;
    }
    m = s->model;
    hcarve(m, s, &w);
    status = hy_events(s, o, &w, t, y, z);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < m->nconstraints; ++i) {
        if (is_unilateral(m, i) && !s->active[i] && s->armed[i] != 1) {
            z[2 * i] = w.c[normal_row(m, i)] - o->arm_gap;     /* rises through arm_gap: armed */
            if (s->armed[i] == RELEASED) {
                z[2 * i + 1] = touch_margin(s, o, &w, y, w.dy + m->nq, i);   /* at its bound moving into it:
                                                                              touches */
            }
        } else if (s->active[i] == RODGEN_STICK && m->constraints[i].kind == RODGEN_CONTACT && s->slipping[i]) {
            z[2 * i + 1] = slip_margin(s, i, w.lam);           /* back inside its cone: un-latched */
            if (is_flat(m, i)) {
                z[2 * i + 1] = fmin(z[2 * i + 1], tip_margin(m, i, w.lam));
            }
        }
    }
    return RODGEN_OK;
}

int rodgen_hybrid_event(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, double t, double *y, int *changed)
{
    const rodgen_model *m;
    houtput out;
    hscratch w;
    int i, status, ny;
    if (changed != 0) {
        *changed = 0;
    }
    if (s == 0 || s->model == 0 || !options_ok(o) || o->hold || y == 0) {
        return RODGEN_ERR_OPTIONS;
    }
    m = s->model;
    ny = RODGEN_NY(m);
    hcarve(m, s, &w);
    out.capacity = out.n = out.event_capacity = out.ne = 0;
    out.t_out = out.y_out = out.lambda_out = out.u_out = 0;
    out.active_out = 0;
    out.events_out = 0;
    s->t = t;
    for (i = 0; i < ny; ++i) {
        s->y[i] = y[i];
    }
    s->have_g = 0;
    status = hy_dyn(s, o, &w, t, s->y, w.dy, w.lam);
    if (status != RODGEN_OK) {
        return status;
    }
    m->constraint_position(s->y, s->p, w.c);
    for (i = 0; i < m->nconstraints; ++i) {   /* arm the blocks that have risen, un-latch slips back inside */
        if (!is_unilateral(m, i)) {
            continue;
        }
        if (!s->active[i] && s->armed[i] != 1 && w.c[normal_row(m, i)] >= o->arm_gap) {
            s->armed[i] = 1;
        }
        if (s->active[i] && s->slipping[i] && slip_margin(s, i, w.lam) >= 0.0) {
            s->slipping[i] = 0;
        }
    }
    status = hy_jump(s, o, &w, &out, 1);
    for (i = 0; status == RODGEN_OK && i < m->nconstraints; ++i) {
        /* the importer stops on the root: a loaded flat foot whose centre of pressure is on the edge of its sole
         * (a tip margin of 0, which the jump's test < 0 lets pass) tips, as an armed block at the ground touches */
        if (s->active[i] && is_flat(m, i) && w.lam[normal_row(m, i)] > 0.0 && !unloading(s, i, w.lam)
            && tip_margin(m, i, w.lam) <= 0.0) {
            s->block = i;
            status = RODGEN_ERR_TIPPED;
        }
    }
    for (i = 0; status == RODGEN_OK && i < m->nconstraints; ++i) {
        /* likewise a loaded, sticking point contact whose force is on its cone (a slip margin of 0) slips */
        if (s->active[i] == RODGEN_STICK && m->constraints[i].kind == RODGEN_CONTACT && !is_flat(m, i)
            && !s->slipping[i] && w.lam[normal_row(m, i)] > 0.0 && !unloading(s, i, w.lam)
            && slip_margin(s, i, w.lam) <= 0.0) {
            hy_log(s, &out, RODGEN_EVENT_SLIP, i, tangential_force(m, i, w.lam), w.lam[normal_row(m, i)], 0.0);
            if (o->on_slip == RODGEN_SLIP_SLIDE) {
                start_slide(s, i, w.lam);
                continue;
            }
            s->slipping[i] = 1;
            if (o->on_slip != RODGEN_SLIP_CONTINUE) {
                s->block = i;
                status = RODGEN_ERR_FRICTION_CONE;
            }
        }
    }
    for (i = 0; i < ny; ++i) {
        if (changed != 0 && y[i] != s->y[i]) {
            *changed = 1;
        }
        y[i] = s->y[i];
    }
    s->have_g = 0;
    return status;
}

static void copy_bytes(void *to, const void *from, long n)
{
    long i;
    for (i = 0; i < n; ++i) {
        ((unsigned char *)to)[i] = ((const unsigned char *)from)[i];
    }
}

/* The saved run: its scalars, then its own buffer (state arrays, phase, memo) as it is. */
typedef struct {
    double t0, t, last_jump;
    long steps, events, evaluations, responses;
    int block, stored, settled, quiet_jumps, have_g, held;
} hsaved;

long rodgen_hybrid_save_bytes(const rodgen_model *m)
{
    return round_up((long)sizeof(hsaved)) + hybrid_own_bytes(m);
}

void rodgen_hybrid_save(const rodgen_hybrid_state *s, void *buf)
{
    hsaved h;
    h.t0 = s->t0;
    h.t = s->t;
    h.last_jump = s->last_jump;
    h.steps = s->steps;
    h.events = s->events;
    h.evaluations = s->evaluations;
    h.responses = s->responses;
    h.block = s->block;
    h.stored = s->stored;
    h.settled = s->settled;
    h.quiet_jumps = s->quiet_jumps;
    h.have_g = s->have_g;
    h.held = s->held;
    copy_bytes(buf, &h, (long)sizeof(h));
    copy_bytes((char *)buf + round_up((long)sizeof(hsaved)), s->scratch, hybrid_own_bytes(s->model));
}

void rodgen_hybrid_restore(rodgen_hybrid_state *s, const rodgen_model *m, const double *p,
    rodgen_hybrid_input_fn input, void *context, const void *buf, void *work)
{
    hsaved h;
    copy_bytes(&h, buf, (long)sizeof(h));
    copy_bytes(work, (const char *)buf + round_up((long)sizeof(hsaved)), hybrid_own_bytes(m));
    s->model = m;
    s->p = p != 0 ? p : m->default_p;
    s->input = input;
    s->context = context;
    s->t0 = h.t0;
    s->t = h.t;
    s->last_jump = h.last_jump;
    s->steps = h.steps;
    s->events = h.events;
    s->evaluations = h.evaluations;
    s->responses = h.responses;
    s->block = h.block;
    s->stored = h.stored;
    s->settled = h.settled;
    s->quiet_jumps = h.quiet_jumps;
    s->have_g = h.have_g;
    s->held = h.held;
    hlayout_state(m, s, work);
}
