/*
 * rodgen_collocation.c: direct collocation of a compiled model's dynamics y' = f(t, y, u, p), y = [q, qd],
 * as a nonlinear program for IPOPT's C interface. Model independent: the model is reached through its
 * rodgen_model table (rhs, rhs_jacobian, mass_matrix, input_map); the problem's own expressions (the
 * objective's integrand and terminal term, the path constraints, with their gradients) come from the
 * generated rodopt_problem.c. Every NLP function evaluates all points in one call.
 *
 * Variables: per point j (the nodes; with Hermite-Simpson also the interval midpoints, points 2k+1)
 * z_j = [q (n), qd (n), u (nu)], then the duration T when it is free, then the free parameters (their values
 * written into p before every evaluation; the defects' derivatives by them dqdd/dp = -M^-1 dg/dp from the
 * model's parameter_partials, appended after every other entry of the constraint Jacobian).
 * Constraints, in this order:
 *   defects      per interval k and defect set s: sum over the set's terms (point o, alpha, beta) of
 *                alpha y_{k*step+o} + beta h f_{k*step+o}, h = T / nint (2n rows each);
 *                trapezoidal: y_b - y_a - h/2 (f_a + f_b);
 *                Hermite-Simpson: y_b - y_a - h/6 (f_a + 4 f_m + f_b) and y_m - (y_a + y_b)/2 - h/8 (f_a - f_b);
 *                backward Euler: y_b - y_a - h f_b;
 *   path         per point, the problem's npath expressions;
 *   periodicity  y_last[i] - y_0[i] for the listed state entries i (the bounds hold the shift);
 *   boundary     the problem's expressions of the first and the last point and T.
 * Objective: sum_j w_j h L(z_j) + Phi(z_last, T) (trapezoidal or Simpson weights w_j; backward Euler: 1 at every
 * node but the first).
 * Hessian of the Lagrangian: with rodopt_hessian_available(), one lower triangle per point (the problem's
 * second derivatives and those of q'' weighted by the defects' multipliers), the duration's row and the
 * boundary constraints' entries (between the first and the last point and T; IPOPT adds repeated entries);
 * else IPOPT's limited-memory approximation. rodopt_hessian_available() == 2: the points' blocks are central
 * differences of each point's exact Lagrangian gradient (point_gradient: the model's Jacobian or the
 * constrained dynamics' derivatives, the problem's gradients chained through lambda), symmetrised; 3: forward
 * differences of it (one gradient per column and the point's own, step sqrt(machine epsilon)).
 *
 * Contacts held (a model with constraint blocks, given its active mask): f is the constrained dynamics
 * with the active blocks held, its derivatives and those of the contact forces lambda [nrows] from
 * rodgen_constrained_derivatives (rodgen_cderiv.c); the problem's integrand and path constraints read
 * lambda after the point's variables (w = [z, lambda]) and their derivatives by lambda are chained through
 * d lambda/d z (a path row that reads lambda depends on the whole point). After the boundary rows come the
 * start rows: the listed constraint rows' positions c_r(q) and velocities (J qd)_r at the first node
 * (d (J qd)_r/dq = 1/2 d (Jdot qd)_r/dqd, from constraint_partials).
 * Rows held at every point (hr [nh]): in interval k's defect sets, the q row of coordinate hc[i] is replaced by
 * the held row's position at the set's own point as at the first node, c_r(q_b) - c_r(q_0), and its qd row by
 * the velocity (J qd_b)_r (b: the interval's end node for the node-to-node set, its midpoint for Hermite-Simpson's
 * interpolation set): the held points stay where they start, at rest, at every point, not only to the
 * collocation's accuracy of J qdd + Jdot qd = 0. Replacing rather than adding keeps the rows
 * independent (the dynamics keep the constraints to first order already): it is Posa et al. (2016)'s velocity
 * slacks along the coordinates hc (columns of J's held rows that are independent) with the slacks eliminated.
 * Their Jacobian entries come after every other (the replaced rows' own entries are zeros; IPOPT sums repeats).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rodgen_model.h"
#include "rodgen_runtime.h"
#include "rodgen_contact.h"
#include "rodgen_cderiv.h"
#include "IpStdCInterface.h"

/* generated (rodopt_problem.c) */
int rodopt_npath(void);
int rodopt_path_structure(int *row, int *col);
int rodopt_integrand(double t, const double *z, const double *p, double *L, double *grad);
int rodopt_terminal(const double *z, double T, const double *p, double *phi, double *grad);
int rodopt_path(double t, const double *z, const double *p, double *c);
int rodopt_path_jacobian(double t, const double *z, const double *p, double *v);
int rodopt_hessian_available(void);
int rodopt_nboundary(void);
int rodopt_boundary_structure(int *row, int *col);
int rodopt_boundary(const double *z, const double *ze, double T, const double *p, double *c);
int rodopt_boundary_jacobian(const double *z, const double *ze, double T, const double *p, double *v);
int rodopt_hessian_point(double t, const double *z, const double *p, double sL, const double *mu, const double *lam,
                         double *H);
int rodopt_hessian_terminal(const double *z, double T, const double *p, double *H);
int rodopt_boundary_hessian_structure(int *row, int *col);
int rodopt_free_parameters(int *index);
int rodopt_integrand_p(double t, const double *z, const double *p, double *g);
int rodopt_terminal_p(const double *z, double T, const double *p, double *g);
int rodopt_path_p(double t, const double *z, const double *p, double *v);
int rodopt_boundary_p(const double *z, const double *ze, double T, const double *p, double *v);
int rodopt_boundary_hessian(const double *z, const double *ze, double T, const double *p, const double *bl,
                            double *H);

#define MAXTERM 3
typedef struct {
    int nterm;
    int off[MAXTERM];
    double alpha[MAXTERM], beta[MAXTERM];
} defect_set;

static const defect_set TRAPEZOIDAL[1] = {{2, {0, 1}, {-1.0, 1.0}, {-0.5, -0.5}}};
static const defect_set HERMITE_SIMPSON[2] = {
    {3, {0, 1, 2}, {-1.0, 0.0, 1.0}, {-1.0 / 6.0, -4.0 / 6.0, -1.0 / 6.0}},
    {3, {0, 1, 2}, {-0.5, 1.0, -0.5}, {-0.125, 0.0, 0.125}},
};
static const defect_set BACKWARD_EULER[1] = {{2, {0, 1}, {-1.0, 1.0}, {0.0, -1.0}}};

typedef struct rodopt_ctx {
    const rodgen_model *m;
    double *p;
    int n, nu, nz, ny;
    int npts, nint, step, nset, method;
    const defect_set *sets;
    int free_T;
    double T;
    int npath, path_nnz;
    int *path_row, *path_col;
    int nbnd, bnd_nnz;
    int *bnd_row, *bnd_col;
    int nper;
    int *per;
    int nvar, ncon, nnz, nnz_h, exact;
    int bh_nnz;                /* the boundary constraints' Hessian entries, as indices of x (row >= column) */
    int nfp, pofs;             /* free parameters: how many, their first variable */
    int *fp;                   /* their indices into p [nfp] */
    double *Pd;                /* per point dqdd/dp [n * nfp] */
    double *dgp;               /* scratch: parameter_partials' dg [n * np] */
    int nnz_hp;                /* the Hessian's rows of the free parameters (every column up to the diagonal) */
    int *jr, *jc;              /* with free parameters and a Hessian: the Jacobian's pattern [nnz], */
    double *jv, *xp, *gp, *gm, *cp;   /* its values [nnz], x [nvar], gradients [nvar], columns [nfp * nvar] */
    int *bh_row, *bh_col;
    double *w;                 /* quadrature weights [npts] */
    double *f, *J, *Bu;        /* per point: f [ny], rhs Jacobian [ny*ny], dqdd/du [n*nu] */
    double *Mw, *Bw;           /* [n*n], [n*nu] */
    double *xf, *xj;           /* the x at which f and J were evaluated */
    int have_f, have_j;
    int iterations;
    int status;                /* RODGEN_OK or the model's failure code at the last evaluation */
    /* contacts: the active mask [nconstraints] (NULL: the model's rhs), lambda per point [npts*nlam],
     * D per point [(n + nlam) * nz] (rodgen_constrained_derivatives' layout), a point's w = [z, lambda] */
    int *active;
    int nlam;
    double *lam, *D, *wz, *work;
    int *path_dense;           /* per path row: 1 when it reads lambda (its row is the whole point) */
    int path_out;              /* the path rows' nonzeros per point in the NLP's Jacobian */
    int nsp, nsv;              /* start rows: constraint positions, constraint velocities */
    int *sp, *sv;
    int nh;                    /* rows held at every node: how many */
    int *hr, *hc;              /* the held rows [nh], the coordinates whose node-to-node defects they replace [nh] */
    int *hq;                   /* per coordinate: 1 + its index in hc, or 0 [n] */
    double *cw;                /* scratch: c [nrows], Jc [nrows*n], dg [2 n n], dk [2 nrows n] */
} rodopt_ctx;

void rodopt_jac_structure(const rodopt_ctx *c, int *iRow, int *jCol);

/* The point whose held rows replace defect set ks = k * nset + s: interval k's end node (s = 0), its midpoint
 * (s = 1, Hermite-Simpson). */
static int held_point(const struct rodopt_ctx *c, int ks)
{
    int k = ks / c->nset, s = ks % c->nset;
    return k * c->step + (s == 0 ? c->step : 1);
}

static double duration(const rodopt_ctx *c, const double *x)
{
    return c->free_T ? x[c->npts * c->nz] : c->T;
}

static double point_time(const rodopt_ctx *c, const double *x, int j)
{
    return duration(c, x) * (double)j / (double)(c->npts - 1);
}

void rodopt_free(rodopt_ctx *c)
{
    if (!c) {
        return;
    }
    free(c->p); free(c->path_row); free(c->path_col); free(c->bnd_row); free(c->bnd_col); free(c->per); free(c->w);
    free(c->f); free(c->J); free(c->Bu); free(c->Mw); free(c->Bw); free(c->xf); free(c->xj);
    free(c->active); free(c->lam); free(c->D); free(c->wz); free(c->work); free(c->path_dense); free(c->sp);
    free(c->sv); free(c->cw); free(c->bh_row); free(c->bh_col); free(c->fp); free(c->Pd); free(c->dgp);
    free(c->jr); free(c->jc); free(c->jv); free(c->xp); free(c->gp); free(c->gm); free(c->cp);
    free(c->hr); free(c->hc); free(c->hq);
    free(c);
}

/* method 0: trapezoidal, 1: Hermite-Simpson, 2: backward Euler; nodes >= 2; per: state indices (0 .. 2n-1)
 * held periodic; active: NULL (the model's rhs) or the mask of the blocks held [nconstraints]; sp, sv: the
 * constraint rows whose position and velocity are held at the first node; hr, hc: the rows held at every later
 * node and the coordinates whose node-to-node defect rows they replace [nh]. */
rodopt_ctx *rodopt_new(const rodgen_model *m, const double *p, int nodes, int method, int free_T, double T,
                       int nper, const int *per, const int *active, int nsp, const int *sp, int nsv, const int *sv,
                       int nh, const int *hr, const int *hc)
{
    rodopt_ctx *c = (rodopt_ctx *)calloc(1, sizeof(rodopt_ctx));
    int j, k, s;
    if (!c) {
        return NULL;
    }
    c->m = m;
    c->n = m->nq;
    c->nu = m->nu;
    c->ny = 2 * c->n;
    c->nz = c->ny + c->nu;
    c->method = method;
    c->nint = nodes - 1;
    c->step = method == 1 ? 2 : 1;
    c->npts = c->nint * c->step + 1;
    c->sets = method == 1 ? HERMITE_SIMPSON : method == 2 ? BACKWARD_EULER : TRAPEZOIDAL;
    c->nset = method == 1 ? 2 : 1;
    c->free_T = free_T;
    c->T = T;
    c->npath = rodopt_npath();
    c->path_nnz = rodopt_path_structure(NULL, NULL);
    c->nbnd = rodopt_nboundary();
    c->bnd_nnz = rodopt_boundary_structure(NULL, NULL);
    c->bnd_row = (int *)malloc(sizeof(int) * (size_t)(c->bnd_nnz + 1));
    c->bnd_col = (int *)malloc(sizeof(int) * (size_t)(c->bnd_nnz + 1));
    c->nper = nper;
    c->p = (double *)malloc(sizeof(double) * (size_t)(m->np > 0 ? m->np : 1));
    c->path_row = (int *)malloc(sizeof(int) * (size_t)(c->path_nnz + 1));
    c->path_col = (int *)malloc(sizeof(int) * (size_t)(c->path_nnz + 1));
    c->per = (int *)malloc(sizeof(int) * (size_t)(nper + 1));
    c->w = (double *)malloc(sizeof(double) * (size_t)c->npts);
    c->f = (double *)malloc(sizeof(double) * (size_t)(c->npts * c->ny));
    c->J = (double *)malloc(sizeof(double) * (size_t)(c->npts * c->ny * c->ny));
    c->Bu = (double *)malloc(sizeof(double) * (size_t)(c->npts * c->n * (c->nu > 0 ? c->nu : 1)));
    c->Mw = (double *)malloc(sizeof(double) * (size_t)(c->n * c->n));
    c->Bw = (double *)malloc(sizeof(double) * (size_t)(c->n * (c->nu > 0 ? c->nu : 1)));
    c->nfp = rodopt_free_parameters(NULL);
    c->pofs = c->npts * c->nz + (free_T ? 1 : 0);
    c->nh = active ? nh : 0;
    c->nvar = c->pofs + c->nfp;
    c->fp = (int *)malloc(sizeof(int) * (size_t)(c->nfp + 1));
    c->Pd = (double *)malloc(sizeof(double) * (size_t)(c->npts * c->n * c->nfp + 1));
    c->dgp = (double *)malloc(sizeof(double) * (size_t)(c->n * (m->np > 0 ? m->np : 1)));
    if (!c->fp || !c->Pd || !c->dgp || (c->nfp > 0 && !m->parameter_partials)) {
        rodopt_free(c);
        return NULL;
    }
    rodopt_free_parameters(c->fp);
    c->nlam = active ? m->nrows : 0;
    c->nsp = active ? nsp : 0;
    c->nsv = active ? nsv : 0;
    c->path_dense = (int *)calloc((size_t)(c->npath + 1), sizeof(int));
    c->sp = (int *)malloc(sizeof(int) * (size_t)(c->nsp + 1));
    c->sv = (int *)malloc(sizeof(int) * (size_t)(c->nsv + 1));
    c->hr = (int *)malloc(sizeof(int) * (size_t)(c->nh + 1));
    c->hc = (int *)malloc(sizeof(int) * (size_t)(c->nh + 1));
    c->hq = (int *)calloc((size_t)(c->n + 1), sizeof(int));
    c->wz = (double *)malloc(sizeof(double) * (size_t)(c->nz + c->nlam + 1));
    if (active) {
        long wb = rodgen_cderiv_work_bytes(m);
        c->active = (int *)malloc(sizeof(int) * (size_t)(m->nconstraints + 1));
        c->lam = (double *)malloc(sizeof(double) * (size_t)(c->npts * c->nlam + 1));
        c->D = (double *)malloc(sizeof(double) * (size_t)(c->npts * (c->n + c->nlam) * c->nz));
        c->work = (double *)malloc((size_t)(wb > 0 ? wb : 1) + sizeof(double));
        c->cw = (double *)malloc(sizeof(double) * (size_t)(c->nlam + c->nlam * c->n + 2 * c->n * c->n
                                                           + 2 * c->nlam * c->n + 1));
        if (!c->active || !c->lam || !c->D || !c->work || !c->cw) {
            rodopt_free(c);
            return NULL;
        }
        for (j = 0; j < m->nconstraints; ++j) {
            c->active[j] = active[j];
        }
    }
    if (!c->path_dense || !c->sp || !c->sv || !c->wz || !c->hr || !c->hc || !c->hq) {
        rodopt_free(c);
        return NULL;
    }
    for (j = 0; j < c->nsp; ++j) {
        c->sp[j] = sp[j];
    }
    for (j = 0; j < c->nsv; ++j) {
        c->sv[j] = sv[j];
    }
    for (j = 0; j < c->nh; ++j) {
        c->hr[j] = hr[j];
        c->hc[j] = hc[j];
        c->hq[hc[j]] = j + 1;
    }
    c->xf = (double *)malloc(sizeof(double) * (size_t)c->nvar);
    c->xj = (double *)malloc(sizeof(double) * (size_t)c->nvar);
    if (!c->p || !c->bnd_row || !c->bnd_col || !c->path_row || !c->path_col || !c->per || !c->w || !c->f || !c->J || !c->Bu || !c->Mw
        || !c->Bw || !c->xf || !c->xj) {
        rodopt_free(c);
        return NULL;
    }
    if (m->np > 0) {
        memcpy(c->p, p, sizeof(double) * (size_t)m->np);
    }
    rodopt_path_structure(c->path_row, c->path_col);
    rodopt_boundary_structure(c->bnd_row, c->bnd_col);
    c->path_out = 0;
    for (j = 0; j < c->path_nnz; ++j) {
        if (c->path_col[j] >= c->nz) {
            c->path_dense[c->path_row[j]] = 1;
        }
    }
    for (j = 0; j < c->path_nnz; ++j) {
        c->path_out += c->path_dense[c->path_row[j]] ? 0 : 1;
    }
    for (k = 0; k < c->npath; ++k) {
        c->path_out += c->path_dense[k] ? c->nz : 0;
    }
    for (j = 0; j < nper; ++j) {
        c->per[j] = per[j];
    }
    /* quadrature weights (times h) */
    for (j = 0; j < c->npts; ++j) {
        c->w[j] = 0.0;
    }
    for (k = 0; k < c->nint; ++k) {
        if (method == 1) {
            c->w[2 * k] += 1.0 / 6.0;
            c->w[2 * k + 1] += 4.0 / 6.0;
            c->w[2 * k + 2] += 1.0 / 6.0;
        } else if (method == 2) {
            c->w[k + 1] += 1.0;
        } else {
            c->w[k] += 0.5;
            c->w[k + 1] += 0.5;
        }
    }
    c->ncon = c->nint * c->nset * c->ny + c->npts * c->npath + nper + c->nbnd + c->nsp + c->nsv;
    c->nnz = 0;
    for (s = 0; s < c->nset; ++s) {
        c->nnz += c->nint * (c->sets[s].nterm * (2 * c->n + c->n * c->nz) + (free_T ? c->ny : 0));
    }
    c->nnz += c->npts * c->path_out + 2 * nper + c->bnd_nnz + c->nsp * c->n + c->nsv * 2 * c->n;
    c->nnz += c->nint * c->nset * c->nh * 4 * c->n;
    c->nnz += (c->nint * c->nset * c->n + c->npts * c->npath + c->nbnd) * c->nfp;
    c->exact = rodopt_hessian_available();
    c->bh_nnz = rodopt_boundary_hessian_structure(NULL, NULL);
    c->bh_row = (int *)malloc(sizeof(int) * (size_t)(c->bh_nnz + 1));
    c->bh_col = (int *)malloc(sizeof(int) * (size_t)(c->bh_nnz + 1));
    if (!c->bh_row || !c->bh_col) {
        rodopt_free(c);
        return NULL;
    }
    rodopt_boundary_hessian_structure(c->bh_row, c->bh_col);
    for (j = 0; j < c->bh_nnz; ++j) {
        /* [z, ze, T] -> x: the first point, the last point, the duration */
        int *ix[2] = {&c->bh_row[j], &c->bh_col[j]};
        for (k = 0; k < 2; ++k) {
            int i = *ix[k];
            *ix[k] = i < c->nz ? i : i < 2 * c->nz ? (c->npts - 1) * c->nz + i - c->nz : c->npts * c->nz;
        }
        if (c->bh_row[j] < c->bh_col[j]) {
            k = c->bh_row[j]; c->bh_row[j] = c->bh_col[j]; c->bh_col[j] = k;
        }
    }
    c->nnz_hp = c->nfp * c->pofs + c->nfp * (c->nfp + 1) / 2;
    c->nnz_h = c->exact ? c->npts * c->nz * (c->nz + 1) / 2 + (free_T ? c->npts * c->nz + 1 : 0) + c->bh_nnz
                          + c->nnz_hp : 0;
    if (c->exact && c->nfp > 0) {
        c->jr = (int *)malloc(sizeof(int) * (size_t)c->nnz);
        c->jc = (int *)malloc(sizeof(int) * (size_t)c->nnz);
        c->jv = (double *)malloc(sizeof(double) * (size_t)c->nnz);
        c->xp = (double *)malloc(sizeof(double) * (size_t)c->nvar);
        c->gp = (double *)malloc(sizeof(double) * (size_t)c->nvar);
        c->gm = (double *)malloc(sizeof(double) * (size_t)c->nvar);
        c->cp = (double *)malloc(sizeof(double) * (size_t)(c->nvar * c->nfp));
        if (!c->jr || !c->jc || !c->jv || !c->xp || !c->gp || !c->gm || !c->cp) {
            rodopt_free(c);
            return NULL;
        }
        rodopt_jac_structure(c, c->jr, c->jc);
    }
    return c;
}

void rodopt_sizes(const rodopt_ctx *c, int *out)
{
    out[0] = c->nvar;
    out[1] = c->ncon;
    out[2] = c->nnz;
    out[3] = c->npts;
    out[4] = c->status;
    out[5] = c->iterations;
    out[6] = c->nnz_h;
}

/* With contacts: f, its Jacobian, dqdd/du, lambda and its derivatives at every point from the constrained
 * dynamics' derivatives (both caches). */
static int eval_contact_all(rodopt_ctx *c, const double *x)
{
    int j, a, r, n = c->n, nu = c->nu, ny = c->ny, nz = c->nz;
    if (c->have_f && c->have_j && memcmp(c->xf, x, sizeof(double) * (size_t)c->nvar) == 0
        && memcmp(c->xj, x, sizeof(double) * (size_t)c->nvar) == 0) {
        return 1;
    }
    c->have_f = c->have_j = 0;
    for (j = 0; j < c->npts; ++j) {
        const double *z = x + j * nz;
        double *f = c->f + j * ny, *Jp = c->J + j * ny * ny, *Bp = c->Bu + j * n * nu;
        double *D = c->D + j * (n + c->nlam) * nz;
        int st = rodgen_constrained_derivatives(c->m, point_time(c, x, j), c->p, z, z + n, z + ny, c->active,
                                                f + n, c->lam + j * c->nlam, D, c->work);
        if (st != RODGEN_OK) {
            c->status = st;
            return 0;
        }
        for (r = 0; r < n; ++r) {
            f[r] = z[n + r];
            for (a = 0; a < ny; ++a) {
                Jp[r * ny + a] = a == n + r ? 1.0 : 0.0;
                Jp[(n + r) * ny + a] = D[r * nz + a];
            }
            for (a = 0; a < nu; ++a) {
                Bp[r * nu + a] = D[r * nz + ny + a];
            }
        }
    }
    memcpy(c->xf, x, sizeof(double) * (size_t)c->nvar);
    memcpy(c->xj, x, sizeof(double) * (size_t)c->nvar);
    c->have_f = c->have_j = 1;
    c->status = RODGEN_OK;
    return 1;
}

/* A point's w = [z, lambda] for the problem's routines (z itself without contacts); after eval_f_all. */
static const double *point_w(rodopt_ctx *c, const double *x, int j)
{
    if (!c->nlam) {
        return x + j * c->nz;
    }
    memcpy(c->wz, x + j * c->nz, sizeof(double) * (size_t)c->nz);
    memcpy(c->wz + c->nz, c->lam + j * c->nlam, sizeof(double) * (size_t)c->nlam);
    return c->wz;
}

/* The derivative of a point's expression by z from its derivative by w = [z, lambda]: out[a] = gw[a] +
 * sum_r gw[nz + r] d lambda_r/d z_a (out may be gw). */
static void chain_D(const rodopt_ctx *c, const double *Dp, const double *gw, double *out)
{
    int a, r, nz = c->nz;
    const double *D = Dp + c->n * nz;
    double acc[nz];
    for (a = 0; a < nz; ++a) {
        acc[a] = gw[a];
    }
    for (r = 0; r < c->nlam; ++r) {
        if (gw[nz + r] != 0.0) {
            for (a = 0; a < nz; ++a) {
                acc[a] += gw[nz + r] * D[r * nz + a];
            }
        }
    }
    for (a = 0; a < nz; ++a) {
        out[a] = acc[a];
    }
}

static void chain_lambda(const rodopt_ctx *c, int j, const double *gw, double *out)
{
    chain_D(c, c->D + j * (c->n + c->nlam) * c->nz, gw, out);
}

/* The free parameters' values of x written into p. */
static void set_parameters(rodopt_ctx *c, const double *x)
{
    int k;
    for (k = 0; k < c->nfp; ++k) {
        c->p[c->fp[k]] = x[c->pofs + k];
    }
}

/* f at every point (cached for x) */
static int eval_f_all(rodopt_ctx *c, const double *x)
{
    int j;
    if (c->active) {
        return eval_contact_all(c, x);
    }
    if (c->have_f && memcmp(c->xf, x, sizeof(double) * (size_t)c->nvar) == 0) {
        return 1;
    }
    c->have_f = 0;
    for (j = 0; j < c->npts; ++j) {
        const double *z = x + j * c->nz;
        int st = c->m->rhs(point_time(c, x, j), z, z + c->ny, c->p, c->f + j * c->ny);
        if (st != RODGEN_OK) {
            c->status = st;
            return 0;
        }
    }
    memcpy(c->xf, x, sizeof(double) * (size_t)c->nvar);
    c->have_f = 1;
    c->status = RODGEN_OK;
    return 1;
}

/* rhs Jacobian and dqdd/du = M^-1 B at every point (cached for x) */
static int eval_jac_all(rodopt_ctx *c, const double *x)
{
    int j, a, b, n = c->n, nu = c->nu;
    if (c->active) {
        return eval_contact_all(c, x);
    }
    if (c->have_j && memcmp(c->xj, x, sizeof(double) * (size_t)c->nvar) == 0) {
        return 1;
    }
    if (c->nfp > 0 && !eval_f_all(c, x)) {
        return 0;
    }
    c->have_j = 0;
    for (j = 0; j < c->npts; ++j) {
        const double *z = x + j * c->nz;
        double *Bu = c->Bu + j * n * nu;
        int st = c->m->rhs_jacobian(point_time(c, x, j), z, z + n, z + c->ny, c->p, c->J + j * c->ny * c->ny);
        if (st != RODGEN_OK) {
            c->status = st;
            return 0;
        }
        if (nu == 0 && c->nfp == 0) {
            continue;
        }
        c->m->mass_matrix(z, c->p, c->Mw);
        st = rodgen_cholesky(c->Mw, n);
        if (st != RODGEN_OK) {
            c->status = st;
            return 0;
        }
        if (c->nfp > 0) {      /* dqdd/dp = -M^-1 dg/dp at the point's qdd */
            int np = c->m->np, k;
            double *P = c->Pd + j * n * c->nfp;
            c->m->parameter_partials(point_time(c, x, j), z, z + n, c->f + j * c->ny + n, z + c->ny, c->p, c->dgp);
            for (k = 0; k < c->nfp; ++k) {
                double col[n];
                for (a = 0; a < n; ++a) {
                    col[a] = -c->dgp[a * np + c->fp[k]];
                }
                rodgen_cholesky_solve(c->Mw, col, n);
                for (a = 0; a < n; ++a) {
                    P[a * c->nfp + k] = col[a];
                }
            }
        }
        c->m->input_map(z, c->p, c->Bw);
        for (b = 0; b < nu; ++b) {
            double col[n];
            for (a = 0; a < n; ++a) {
                col[a] = c->Bw[a * nu + b];
            }
            rodgen_cholesky_solve(c->Mw, col, n);
            for (a = 0; a < n; ++a) {
                Bu[a * nu + b] = col[a];
            }
        }
    }
    memcpy(c->xj, x, sizeof(double) * (size_t)c->nvar);
    c->have_j = 1;
    c->status = RODGEN_OK;
    return 1;
}

int rodopt_eval_f(rodopt_ctx *c, const double *x, double *obj)
{
    int j;
    double T = duration(c, x), h = T / c->nint, sum = 0.0, L, phi;
    set_parameters(c, x);
    if (c->nlam && !eval_f_all(c, x)) {
        return 0;
    }
    for (j = 0; j < c->npts; ++j) {
        if (!rodopt_integrand(point_time(c, x, j), point_w(c, x, j), c->p, &L, NULL)) {
            return 0;
        }
        sum += c->w[j] * L;
    }
    if (!rodopt_terminal(x + (c->npts - 1) * c->nz, T, c->p, &phi, NULL)) {
        return 0;
    }
    *obj = h * sum + phi;
    return isfinite(*obj);
}

int rodopt_eval_grad_f(rodopt_ctx *c, const double *x, double *grad)
{
    int j, i, nz = c->nz;
    double T = duration(c, x), h = T / c->nint, L, phi, sumL = 0.0;
    double gl[nz + c->nlam + 1];
    set_parameters(c, x);
    if (c->nlam && !eval_jac_all(c, x)) {
        return 0;
    }
    for (j = 0; j < c->npts; ++j) {
        if (!rodopt_integrand(point_time(c, x, j), point_w(c, x, j), c->p, &L, gl)) {
            return 0;
        }
        if (c->nlam) {
            chain_lambda(c, j, gl, gl);
        }
        for (i = 0; i < nz; ++i) {
            grad[j * nz + i] = c->w[j] * h * gl[i];
        }
        sumL += c->w[j] * L;
    }
    if (!rodopt_terminal(x + (c->npts - 1) * nz, T, c->p, &phi, gl)) {
        return 0;
    }
    for (i = 0; i < nz; ++i) {
        grad[(c->npts - 1) * nz + i] += gl[i];
    }
    if (c->free_T) {
        grad[c->npts * nz] = sumL / c->nint + gl[nz];
    }
    if (c->nfp > 0) {
        double gp[c->nfp];
        for (i = 0; i < c->nfp; ++i) {
            grad[c->pofs + i] = 0.0;
        }
        for (j = 0; j < c->npts; ++j) {
            if (!rodopt_integrand_p(point_time(c, x, j), x + j * nz, c->p, gp)) {
                return 0;
            }
            for (i = 0; i < c->nfp; ++i) {
                grad[c->pofs + i] += c->w[j] * h * gp[i];
            }
        }
        if (!rodopt_terminal_p(x + (c->npts - 1) * nz, T, c->p, gp)) {
            return 0;
        }
        for (i = 0; i < c->nfp; ++i) {
            grad[c->pofs + i] += gp[i];
        }
    }
    return 1;
}

int rodopt_eval_g(rodopt_ctx *c, const double *x, double *g)
{
    int k, s, t, r, j, i, row = 0, ny = c->ny, nz = c->nz;
    double h = duration(c, x) / c->nint;
    set_parameters(c, x);
    if (!eval_f_all(c, x)) {
        return 0;
    }
    for (k = 0; k < c->nint; ++k) {
        for (s = 0; s < c->nset; ++s) {
            const defect_set *d = &c->sets[s];
            for (r = 0; r < ny; ++r) {
                double v = 0.0;
                for (t = 0; t < d->nterm; ++t) {
                    int pt = k * c->step + d->off[t];
                    v += d->alpha[t] * x[pt * nz + r] + d->beta[t] * h * c->f[pt * ny + r];
                }
                g[row++] = v;
            }
        }
    }
    for (j = 0; j < c->npts; ++j) {
        if (c->npath > 0 && !rodopt_path(point_time(c, x, j), point_w(c, x, j), c->p, g + row)) {
            return 0;
        }
        row += c->npath;
    }
    for (i = 0; i < c->nper; ++i) {
        g[row++] = x[(c->npts - 1) * nz + c->per[i]] - x[c->per[i]];
    }
    if (c->nbnd > 0 && !rodopt_boundary(x, x + (c->npts - 1) * nz, duration(c, x), c->p, g + row)) {
        return 0;
    }
    row += c->nbnd;
    if (c->nsp + c->nsv > 0) {
        double *cc = c->cw, *Jc = c->cw + c->nlam;
        c->m->constraint_position(x, c->p, cc);
        c->m->constraint_jacobian(x, c->p, Jc);
        for (i = 0; i < c->nsp; ++i) {
            g[row++] = cc[c->sp[i]];
        }
        for (i = 0; i < c->nsv; ++i) {
            double v = 0.0;
            for (j = 0; j < c->n; ++j) {
                v += Jc[c->sv[i] * c->n + j] * x[c->n + j];
            }
            g[row++] = v;
        }
    }
    if (c->nh > 0) {
        double *cc = c->cw, *Jc = c->cw + c->nlam, c0[c->nlam];
        c->m->constraint_position(x, c->p, c0);
        for (k = 0; k < c->nint * c->nset; ++k) {
            const double *z = x + held_point(c, k) * nz;
            c->m->constraint_position(z, c->p, cc);
            c->m->constraint_jacobian(z, c->p, Jc);
            for (i = 0; i < c->nh; ++i) {          /* in place of the defects of coordinate hc[i] */
                double v = 0.0;
                for (j = 0; j < c->n; ++j) {
                    v += Jc[c->hr[i] * c->n + j] * z[c->n + j];
                }
                g[k * ny + c->hc[i]] = cc[c->hr[i]] - c0[c->hr[i]];
                g[k * ny + c->n + c->hc[i]] = v;
            }
        }
    }
    for (i = 0; i < row; ++i) {
        if (!isfinite(g[i])) {
            return 0;
        }
    }
    return 1;
}

/* The sparsity pattern, in the order rodopt_eval_jac fills the values. */
void rodopt_jac_structure(const rodopt_ctx *c, int *iRow, int *jCol)
{
    int k, s, t, r, a, j, i, e = 0, row0 = 0, n = c->n, ny = c->ny, nz = c->nz;
    for (k = 0; k < c->nint; ++k) {
        for (s = 0; s < c->nset; ++s) {
            const defect_set *d = &c->sets[s];
            for (t = 0; t < d->nterm; ++t) {
                int col0 = (k * c->step + d->off[t]) * nz;
                for (r = 0; r < n; ++r) {                   /* q rows: alpha on q_r, beta h on qd_r */
                    iRow[e] = row0 + r; jCol[e++] = col0 + r;
                    iRow[e] = row0 + r; jCol[e++] = col0 + n + r;
                }
                for (r = 0; r < n; ++r) {                   /* qd rows: the whole point */
                    for (a = 0; a < nz; ++a) {
                        iRow[e] = row0 + n + r; jCol[e++] = col0 + a;
                    }
                }
            }
            if (c->free_T) {
                for (r = 0; r < ny; ++r) {
                    iRow[e] = row0 + r; jCol[e++] = c->npts * nz;
                }
            }
            row0 += ny;
        }
    }
    for (j = 0; j < c->npts; ++j) {
        int k2;
        for (k2 = 0; k2 < c->npath; ++k2) {
            if (c->path_dense[k2]) {
                for (a = 0; a < nz; ++a) {
                    iRow[e] = row0 + k2; jCol[e++] = j * nz + a;
                }
                continue;
            }
            for (i = 0; i < c->path_nnz; ++i) {
                if (c->path_row[i] == k2) {
                    iRow[e] = row0 + k2; jCol[e++] = j * nz + c->path_col[i];
                }
            }
        }
        row0 += c->npath;
    }
    for (i = 0; i < c->nper; ++i) {
        iRow[e] = row0; jCol[e++] = (c->npts - 1) * nz + c->per[i];
        iRow[e] = row0; jCol[e++] = c->per[i];
        row0 += 1;
    }
    for (i = 0; i < c->bnd_nnz; ++i) {   /* [z of the first node, z of the last, T] */
        int v = c->bnd_col[i];
        iRow[e] = row0 + c->bnd_row[i];
        jCol[e++] = v < nz ? v : v < 2 * nz ? (c->npts - 1) * nz + v - nz : c->npts * nz;
    }
    row0 += c->nbnd;
    for (i = 0; i < c->nsp; ++i) {          /* c_r(q) of the first node: its q */
        for (a = 0; a < n; ++a) {
            iRow[e] = row0; jCol[e++] = a;
        }
        row0 += 1;
    }
    for (i = 0; i < c->nsv; ++i) {          /* (J qd)_r of the first node: its q and qd */
        for (a = 0; a < 2 * n; ++a) {
            iRow[e] = row0; jCol[e++] = a;
        }
        row0 += 1;
    }
    for (k = 0; k < c->nint * c->nset; ++k) {   /* at point b: c_r(q_b) - c_r(q_0) (q_b, q_0), (J qd_b)_r (q_b, qd_b) */
        int b = held_point(c, k) * nz;
        for (i = 0; i < c->nh; ++i) {
            int rq = k * ny + c->hc[i];
            for (a = 0; a < n; ++a) {
                iRow[e] = rq; jCol[e++] = b + a;
            }
            for (a = 0; a < n; ++a) {
                iRow[e] = rq; jCol[e++] = a;
            }
        }
        for (i = 0; i < c->nh; ++i) {
            for (a = 0; a < 2 * n; ++a) {
                iRow[e] = k * ny + n + c->hc[i]; jCol[e++] = b + a;
            }
        }
    }
    /* the free parameters' columns: the defects' qd rows, the path rows at every point, the boundary rows */
    if (c->nfp > 0) {
        int nd = c->nint * c->nset * ny, kp;
        for (k = 0; k < c->nint * c->nset; ++k) {
            for (r = 0; r < n; ++r) {
                for (kp = 0; kp < c->nfp; ++kp) {
                    iRow[e] = k * ny + n + r; jCol[e++] = c->pofs + kp;
                }
            }
        }
        for (i = 0; i < c->npts * c->npath + c->nbnd; ++i) {
            int row = i < c->npts * c->npath ? nd + i : nd + c->npts * c->npath + c->nper + (i - c->npts * c->npath);
            for (kp = 0; kp < c->nfp; ++kp) {
                iRow[e] = row; jCol[e++] = c->pofs + kp;
            }
        }
    }
}

/* The free parameters' entries of the constraint Jacobian (after eval_jac_all), in rodopt_jac_structure's
 * order; how many. */
static int param_jacobian(rodopt_ctx *c, const double *x, double *v)
{
    int k, s, t, r, j, kp, e = 0, n = c->n, nz = c->nz;
    double h = duration(c, x) / c->nint;
    for (k = 0; k < c->nint; ++k) {
        for (s = 0; s < c->nset; ++s) {
            const defect_set *d = &c->sets[s];
            for (r = 0; r < n; ++r) {
                for (kp = 0; kp < c->nfp; ++kp) {
                    double sum = 0.0;
                    for (t = 0; t < d->nterm; ++t) {
                        int pt = k * c->step + d->off[t];
                        sum += d->beta[t] * h * c->Pd[pt * n * c->nfp + r * c->nfp + kp];
                    }
                    v[e++] = sum;
                }
            }
        }
    }
    for (j = 0; j < c->npts && c->npath > 0; ++j) {
        if (!rodopt_path_p(point_time(c, x, j), x + j * nz, c->p, v + e)) {
            return -1;
        }
        e += c->npath * c->nfp;
    }
    if (c->nbnd > 0) {
        if (!rodopt_boundary_p(x, x + (c->npts - 1) * nz, duration(c, x), c->p, v + e)) {
            return -1;
        }
        e += c->nbnd * c->nfp;
    }
    return e;
}

int rodopt_eval_jac(rodopt_ctx *c, const double *x, double *v)
{
    int k, s, t, r, a, j, i, e = 0, n = c->n, nu = c->nu, ny = c->ny, nz = c->nz;
    double h = duration(c, x) / c->nint;
    set_parameters(c, x);
    if (!eval_jac_all(c, x) || (c->free_T && !eval_f_all(c, x))) {
        return 0;
    }
    for (k = 0; k < c->nint; ++k) {
        for (s = 0; s < c->nset; ++s) {
            const defect_set *d = &c->sets[s];
            for (t = 0; t < d->nterm; ++t) {
                int pt = k * c->step + d->off[t];
                double al = d->alpha[t], bh = d->beta[t] * h;
                const double *Jp = c->J + pt * ny * ny, *Bp = c->Bu + pt * n * nu;
                for (r = 0; r < n; ++r) {
                    int held = c->hq[r];                  /* a row replaced by a held row: zeros here */
                    v[e++] = held ? 0.0 : al;
                    v[e++] = held ? 0.0 : bh;
                }
                for (r = 0; r < n; ++r) {
                    const double *Jrow = Jp + (n + r) * ny;
                    double on = c->hq[r] ? 0.0 : 1.0;
                    for (a = 0; a < ny; ++a) {
                        v[e++] = on * ((a == n + r ? al : 0.0) + bh * Jrow[a]);
                    }
                    for (a = 0; a < nu; ++a) {
                        v[e++] = on * bh * Bp[r * nu + a];
                    }
                }
            }
            if (c->free_T) {
                for (r = 0; r < ny; ++r) {
                    double sum = 0.0;
                    for (t = 0; t < d->nterm; ++t) {
                        int pt = k * c->step + d->off[t];
                        sum += d->beta[t] * c->f[pt * ny + r];
                    }
                    v[e++] = c->hq[r < n ? r : r - n] ? 0.0 : sum / c->nint;
                }
            }
        }
    }
    /* the defects do not depend on the points' times except through T: a model whose forces depend on t
     * gets the derivative of f by t left out (rodgen's rhs_jacobian is at fixed t) */
    for (j = 0; j < c->npts; ++j) {
        double pv[c->path_nnz + 1], gw[nz + c->nlam + 1];
        int k2;
        if (c->path_nnz > 0 && !rodopt_path_jacobian(point_time(c, x, j), point_w(c, x, j), c->p, pv)) {
            return 0;
        }
        for (k2 = 0; k2 < c->npath; ++k2) {
            if (c->path_dense[k2]) {
                for (a = 0; a < nz + c->nlam; ++a) {
                    gw[a] = 0.0;
                }
                for (i = 0; i < c->path_nnz; ++i) {
                    if (c->path_row[i] == k2) {
                        gw[c->path_col[i]] = pv[i];
                    }
                }
                chain_lambda(c, j, gw, v + e);
                e += nz;
                continue;
            }
            for (i = 0; i < c->path_nnz; ++i) {
                if (c->path_row[i] == k2) {
                    v[e++] = pv[i];
                }
            }
        }
    }
    for (i = 0; i < c->nper; ++i) {
        v[e++] = 1.0;
        v[e++] = -1.0;
    }
    if (c->bnd_nnz > 0 && !rodopt_boundary_jacobian(x, x + (c->npts - 1) * nz, duration(c, x), c->p, v + e)) {
        return 0;
    }
    e += c->bnd_nnz;
    if (c->nsp + c->nsv > 0) {
        double *Jc = c->cw + c->nlam, *dg = Jc + c->nlam * n, *dk = dg + 2 * n * n, zero[nz + c->nlam + 1];
        for (i = 0; i < nz + c->nlam + 1; ++i) {
            zero[i] = 0.0;
        }
        c->m->constraint_jacobian(x, c->p, Jc);
        /* (J qd)_r = qd^T grad c_r: its derivative by q is H_r qd = 1/2 d (qd^T H_r qd)/d qd */
        c->m->constraint_partials(0.0, x, x + n, zero, zero, zero, c->p, dg, dk);
        for (i = 0; i < c->nsp; ++i) {
            for (a = 0; a < n; ++a) {
                v[e++] = Jc[c->sp[i] * n + a];
            }
        }
        for (i = 0; i < c->nsv; ++i) {
            for (a = 0; a < n; ++a) {
                v[e++] = 0.5 * dk[c->sv[i] * 2 * n + n + a];
            }
            for (a = 0; a < n; ++a) {
                v[e++] = Jc[c->sv[i] * n + a];
            }
        }
    }
    if (c->nh > 0) {
        double *Jc = c->cw + c->nlam, *dg = Jc + c->nlam * n, *dk = dg + 2 * n * n, zero[nz + c->nlam + 1], J0[c->nlam * n];
        for (i = 0; i < nz + c->nlam + 1; ++i) {
            zero[i] = 0.0;
        }
        c->m->constraint_jacobian(x, c->p, J0);
        for (k = 0; k < c->nint * c->nset; ++k) {
            const double *z = x + held_point(c, k) * nz;
            c->m->constraint_jacobian(z, c->p, Jc);
            c->m->constraint_partials(0.0, z, z + n, zero, zero, zero, c->p, dg, dk);
            for (i = 0; i < c->nh; ++i) {
                for (a = 0; a < n; ++a) {
                    v[e++] = Jc[c->hr[i] * n + a];
                }
                for (a = 0; a < n; ++a) {
                    v[e++] = -J0[c->hr[i] * n + a];
                }
            }
            for (i = 0; i < c->nh; ++i) {
                for (a = 0; a < n; ++a) {
                    v[e++] = 0.5 * dk[c->hr[i] * 2 * n + n + a];
                }
                for (a = 0; a < n; ++a) {
                    v[e++] = Jc[c->hr[i] * n + a];
                }
            }
        }
    }
    if (c->nfp > 0) {
        int added = param_jacobian(c, x, v + e);
        if (added < 0) {
            return 0;
        }
        e += added;
    }
    for (i = 0; i < e; ++i) {
        if (!isfinite(v[i])) {
            return 0;
        }
    }
    return 1;
}

/* The Hessian of the Lagrangian sigma f + lambda^T g, lower triangle: per point its z block (row by row),
 * then with a free duration the row of T (every z, then T itself). Only with rodopt_hessian_available(). */
void rodopt_hess_structure(const rodopt_ctx *c, int *iRow, int *jCol)
{
    int j, r, a, e = 0, nz = c->nz;
    for (j = 0; j < c->npts; ++j) {
        for (r = 0; r < nz; ++r) {
            for (a = 0; a <= r; ++a) {
                iRow[e] = j * nz + r; jCol[e++] = j * nz + a;
            }
        }
    }
    if (c->free_T) {
        for (a = 0; a <= c->npts * nz; ++a) {
            iRow[e] = c->npts * nz; jCol[e++] = a;
        }
    }
    for (a = 0; a < c->bh_nnz; ++a) {
        iRow[e] = c->bh_row[a]; jCol[e++] = c->bh_col[a];
    }
    for (r = 0; r < c->nfp; ++r) {          /* the free parameters' rows: every column up to the diagonal */
        for (a = 0; a <= c->pofs + r; ++a) {
            iRow[e] = c->pofs + r; jCol[e++] = a;
        }
    }
}

/* The Lagrangian's gradient sigma grad f + J^T lam at x (exact), into out [nvar]. */
static int lagrangian_gradient(rodopt_ctx *c, const double *x, double sigma, const double *lam, double *out)
{
    int i;
    if (!rodopt_eval_grad_f(c, x, out) || !rodopt_eval_jac(c, x, c->jv)) {
        return 0;
    }
    for (i = 0; i < c->nvar; ++i) {
        out[i] *= sigma;
    }
    for (i = 0; i < c->nnz; ++i) {
        out[c->jc[i]] += c->jv[i] * lam[c->jr[i]];
    }
    return 1;
}

/* The free parameters' rows of the Hessian (rodopt_hess_structure's order) by central differences of the
 * Lagrangian's exact gradient in each parameter (every term: defects, path, boundary, objective); the
 * parameters' own block symmetrised. Leaves p at x's values. */
static int parameter_hessian(rodopt_ctx *c, const double *x, double sigma, const double *lam, double *v)
{
    int k, a, e = 0, nv = c->nvar;
    memcpy(c->xp, x, sizeof(double) * (size_t)nv);
    for (k = 0; k < c->nfp; ++k) {
        int b = c->pofs + k;
        double step = 6.0554544523933395e-06 * (fabs(x[b]) > 1.0 ? fabs(x[b]) : 1.0), up, down;
        c->xp[b] = x[b] + step;
        up = c->xp[b] - x[b];
        if (!lagrangian_gradient(c, c->xp, sigma, lam, c->gp)) {
            return 0;
        }
        c->xp[b] = x[b] - step;
        down = x[b] - c->xp[b];
        if (!lagrangian_gradient(c, c->xp, sigma, lam, c->gm)) {
            return 0;
        }
        c->xp[b] = x[b];
        for (a = 0; a < nv; ++a) {
            c->cp[k * nv + a] = (c->gp[a] - c->gm[a]) / (up + down);
        }
    }
    set_parameters(c, x);
    for (k = 0; k < c->nfp; ++k) {
        for (a = 0; a <= c->pofs + k; ++a) {
            v[e++] = a < c->pofs ? c->cp[k * nv + a]
                                 : 0.5 * (c->cp[k * nv + a] + c->cp[(a - c->pofs) * nv + c->pofs + k]);
        }
    }
    return 1;
}

/* A point's exact Lagrangian gradient by z at (t, z): sL dL/dz + sum_i mu_i dqdd_i/dz + sum_k lp_k dpath_k/dz
 * (L and the path chained through lambda(z) with contacts), and at the first point with contacts the start
 * rows' ls [nsp + nsv] times their gradients; at a node with the rows held at the nodes, lh [2 nh] times the
 * gradients of their positions c_r(q) and velocities (J qd)_r. dyn = 0 (only without contacts): the dynamics'
 * term left out. */
static int point_gradient(rodopt_ctx *c, double t, const double *z, double sL, const double *mu, const double *lp,
                          const double *ls, const double *lh, int dyn, double *G)
{
    int i, a, k, r, n = c->n, nu = c->nu, ny = c->ny, nz = c->nz, nw = nz + c->nlam;
    double w[nw + 1], gw[nw + 1], pv[c->path_nnz + 1], L;
    double J[c->nlam ? 1 : ny * ny], B[c->nlam ? 1 : n * (nu > 0 ? nu : 1)];
    double D[c->nlam ? (n + c->nlam) * nz : 1];
    for (a = 0; a < nz; ++a) {
        w[a] = z[a];
        G[a] = 0.0;
    }
    if (c->nlam) {
        double qdd[n];
        int st = rodgen_constrained_derivatives(c->m, t, c->p, z, z + n, z + ny, c->active, qdd, w + nz, D, c->work);
        if (st != RODGEN_OK) {
            c->status = st;
            return 0;
        }
        for (i = 0; i < n; ++i) {
            for (a = 0; a < nz; ++a) {
                G[a] += mu[i] * D[i * nz + a];
            }
        }
    } else if (dyn) {
        int st = c->m->rhs_jacobian(t, z, z + n, z + ny, c->p, J);
        if (st != RODGEN_OK) {
            c->status = st;
            return 0;
        }
        for (i = 0; i < n; ++i) {
            for (a = 0; a < ny; ++a) {
                G[a] += mu[i] * J[(n + i) * ny + a];
            }
        }
        if (nu > 0) {
            double Mw[n * n], Bw[n * nu], col[n];
            c->m->mass_matrix(z, c->p, Mw);
            st = rodgen_cholesky(Mw, n);
            if (st != RODGEN_OK) {
                c->status = st;
                return 0;
            }
            c->m->input_map(z, c->p, Bw);
            for (k = 0; k < nu; ++k) {
                for (a = 0; a < n; ++a) {
                    col[a] = Bw[a * nu + k];
                }
                rodgen_cholesky_solve(Mw, col, n);
                for (a = 0; a < n; ++a) {
                    B[a * nu + k] = col[a];
                }
            }
            for (i = 0; i < n; ++i) {
                for (k = 0; k < nu; ++k) {
                    G[ny + k] += mu[i] * B[i * nu + k];
                }
            }
        }
    }
    for (a = 0; a < nw; ++a) {
        gw[a] = 0.0;
    }
    if (sL != 0.0) {
        if (!rodopt_integrand(t, w, c->p, &L, gw)) {
            return 0;
        }
        for (a = 0; a < nw; ++a) {
            gw[a] *= sL;
        }
    }
    if (c->path_nnz > 0) {
        if (!rodopt_path_jacobian(t, w, c->p, pv)) {
            return 0;
        }
        for (i = 0; i < c->path_nnz; ++i) {
            gw[c->path_col[i]] += lp[c->path_row[i]] * pv[i];
        }
    }
    if (c->nlam) {
        chain_D(c, D, gw, gw);
    }
    for (a = 0; a < nz; ++a) {
        G[a] += gw[a];
    }
    if (ls || lh) {
        double *Jc = c->cw + c->nlam, *dg = Jc + c->nlam * n, *dk = dg + 2 * n * n, zero[nw + 1];
        for (i = 0; i < nw + 1; ++i) {
            zero[i] = 0.0;
        }
        c->m->constraint_jacobian(z, c->p, Jc);
        c->m->constraint_partials(0.0, z, z + n, zero, zero, zero, c->p, dg, dk);
        for (i = 0; lh && i < c->nh; ++i) {
            r = c->hr[i];
            for (a = 0; a < n; ++a) {
                G[a] += lh[i] * Jc[r * n + a] + lh[c->nh + i] * 0.5 * dk[r * 2 * n + n + a];
                G[n + a] += lh[c->nh + i] * Jc[r * n + a];
            }
        }
        for (i = 0; ls && i < c->nsp; ++i) {
            for (a = 0; a < n; ++a) {
                G[a] += ls[i] * Jc[c->sp[i] * n + a];
            }
        }
        for (i = 0; ls && i < c->nsv; ++i) {
            r = c->sv[i];
            for (a = 0; a < n; ++a) {
                G[a] += ls[c->nsp + i] * 0.5 * dk[r * 2 * n + n + a];
                G[n + a] += ls[c->nsp + i] * Jc[r * n + a];
            }
        }
    }
    return 1;
}

/* A point's Hessian block (lower triangle, row by row, into H) by central differences of point_gradient, each
 * column's step cbrt(machine epsilon) times max(1, |z_b|), or with forward != 0 by forward differences from the
 * point's own gradient, step sqrt(machine epsilon) times max(1, |z_b|); symmetrised. Without contacts q'' is
 * linear in u (M^-1 (B u - bias)), so the input columns difference only the problem's own terms: the dynamics'
 * part of the (u, u) block is zero and that of the (u, y) blocks comes from the state columns' input rows. */
static int hessian_differences(rodopt_ctx *c, double t, const double *z, double sL, const double *mu,
                               const double *lp, const double *ls, const double *lh, int forward, double *H)
{
    int a, b, nz = c->nz;
    double zp[nz], Gp[nz], Gm[nz], G0[nz], G0u[nz], Hd[nz * nz];
    for (a = 0; a < nz; ++a) {
        zp[a] = z[a];
    }
    if (forward && (!point_gradient(c, t, z, sL, mu, lp, ls, lh, 1, G0)
                    || (!c->nlam && c->nu > 0 && !point_gradient(c, t, z, sL, mu, lp, ls, lh, 0, G0u)))) {
        return 0;
    }
    for (b = 0; b < nz; ++b) {
        double step = (forward ? 1.4901161193847656e-08 : 6.0554544523933395e-06)
                      * (fabs(z[b]) > 1.0 ? fabs(z[b]) : 1.0);
        double up, down = 0.0;
        int dyn = c->nlam || b < c->ny;
        zp[b] = z[b] + step;
        up = zp[b] - z[b];
        if (!point_gradient(c, t, zp, sL, mu, lp, ls, lh, dyn, Gp)) {
            return 0;
        }
        if (forward) {
            memcpy(Gm, dyn ? G0 : G0u, sizeof(double) * (size_t)nz);
        } else {
            zp[b] = z[b] - step;
            down = z[b] - zp[b];
            if (!point_gradient(c, t, zp, sL, mu, lp, ls, lh, dyn, Gm)) {
                return 0;
            }
        }
        zp[b] = z[b];
        for (a = 0; a < nz; ++a) {
            Hd[a * nz + b] = (Gp[a] - Gm[a]) / (up + down);
        }
    }
    for (a = 0; a < nz; ++a) {
        for (b = 0; b <= a; ++b) {
            int partial = !c->nlam && a >= c->ny && b < c->ny;   /* column a lacks the dynamics' term */
            *H++ = partial ? Hd[a * nz + b] : 0.5 * (Hd[a * nz + b] + Hd[b * nz + a]);
        }
    }
    return 1;
}

int rodopt_eval_h(rodopt_ctx *c, const double *x, double sigma, const double *lam, double *v)
{
    int k, s, t, r, a, j, i, n = c->n, nu = c->nu, ny = c->ny, nz = c->nz, tri = nz * (nz + 1) / 2;
    int nd = c->nint * c->nset * ny, last = c->npts - 1;
    double T = duration(c, x), h = T / c->nint, L;
    double mu[c->npts * n], muT[c->npts * ny], Ht[(nz + 1) * (nz + 2) / 2], gl[nz + c->nlam + 1];
    set_parameters(c, x);
    if (!c->exact || ((c->free_T || c->exact >= 2) && !eval_jac_all(c, x))) {
        return 0;
    }
    for (i = 0; i < c->npts * n; ++i) {
        mu[i] = 0.0;
    }
    for (i = 0; i < c->npts * ny; ++i) {
        muT[i] = 0.0;
    }
    /* the defects' multipliers gathered per point: rows of q'' (second derivatives), all rows (by T) */
    for (k = 0; k < c->nint; ++k) {
        for (s = 0; s < c->nset; ++s) {
            const defect_set *d = &c->sets[s];
            const double *lr = lam + (k * c->nset + s) * ny;
            for (t = 0; t < d->nterm; ++t) {
                int pt = k * c->step + d->off[t];
                for (i = 0; i < n; ++i) {
                    mu[pt * n + i] += c->hq[i] ? 0.0 : lr[n + i] * d->beta[t] * h;
                }
                for (r = 0; r < ny; ++r) {
                    muT[pt * ny + r] += c->hq[r < n ? r : r - n] ? 0.0 : lr[r] * d->beta[t] / c->nint;
                }
            }
        }
    }
    /* the rows held at the points: their multipliers per point (point 0: minus the positions' sum, for c_r(q_0)) */
    double lh[c->npts * 2 * (c->nh > 0 ? c->nh : 1)];
    if (c->nh > 0) {
        for (i = 0; i < 2 * c->nh; ++i) {
            lh[i] = 0.0;
        }
        for (k = 0; k < c->nint * c->nset; ++k) {
            const double *lr = lam + k * ny;
            int b = held_point(c, k);
            for (i = 0; i < c->nh; ++i) {
                lh[b * 2 * c->nh + i] = lr[c->hc[i]];
                lh[b * 2 * c->nh + c->nh + i] = lr[n + c->hc[i]];
                lh[i] -= lr[c->hc[i]];
            }
        }
    }
    for (j = 0; j < c->npts; ++j) {
        if (c->exact >= 2) {
            const double *ls = j == 0 && c->nsp + c->nsv > 0 ? lam + nd + c->npts * c->npath + c->nper + c->nbnd
                                                              : NULL;
            const double *lhj = c->nh > 0 ? lh + j * 2 * c->nh : NULL;
            if (!hessian_differences(c, point_time(c, x, j), x + j * nz, sigma * c->w[j] * h, mu + j * n,
                                     lam + nd + j * c->npath, ls, lhj, c->exact == 3, v + j * tri)) {
                return 0;
            }
        } else if (!rodopt_hessian_point(point_time(c, x, j), x + j * nz, c->p, sigma * c->w[j] * h, mu + j * n,
                                         lam + nd + j * c->npath, v + j * tri)) {
            return 0;
        }
    }
    if (!rodopt_hessian_terminal(x + last * nz, T, c->p, Ht)) {
        return 0;
    }
    for (i = 0; i < tri; ++i) {
        v[last * tri + i] += sigma * Ht[i];
    }
    if (c->free_T) {
        double *vT = v + c->npts * tri;
        for (j = 0; j < c->npts; ++j) {
            const double *Jp = c->J + j * ny * ny, *Bp = c->Bu + j * n * nu, *m = muT + j * ny;
            if (!rodopt_integrand(point_time(c, x, j), point_w(c, x, j), c->p, &L, gl)) {
                return 0;
            }
            if (c->nlam) {
                chain_lambda(c, j, gl, gl);
            }
            for (a = 0; a < nz; ++a) {
                double sum = sigma * c->w[j] * gl[a] / c->nint;
                if (a >= n && a < ny) {
                    sum += m[a - n];                       /* d qd_r / d qd_r = 1 */
                }
                for (i = 0; i < n; ++i) {
                    sum += m[n + i] * (a < ny ? Jp[(n + i) * ny + a] : Bp[i * nu + (a - ny)]);
                }
                vT[j * nz + a] = sum;
            }
        }
        for (a = 0; a < nz; ++a) {
            vT[last * nz + a] += sigma * Ht[tri + a];
        }
        vT[c->npts * nz] = sigma * Ht[tri + nz];
    }
    if (c->bh_nnz > 0 && !rodopt_boundary_hessian(x, x + last * nz, T, c->p, lam + nd + c->npts * c->npath + c->nper,
                                                  v + c->nnz_h - c->nnz_hp - c->bh_nnz)) {
        return 0;
    }
    if (c->nfp > 0 && !parameter_hessian(c, x, sigma, lam, v + c->nnz_h - c->nnz_hp)) {
        return 0;
    }
    for (i = 0; i < c->nnz_h; ++i) {
        if (!isfinite(v[i])) {
            return 0;
        }
    }
    return 1;
}

/* IPOPT callbacks */
static bool cb_f(ipindex n, ipnumber *x, bool new_x, ipnumber *obj, UserDataPtr ud)
{
    (void)n; (void)new_x;
    return rodopt_eval_f((rodopt_ctx *)ud, x, obj) != 0;
}

static bool cb_grad_f(ipindex n, ipnumber *x, bool new_x, ipnumber *grad, UserDataPtr ud)
{
    (void)n; (void)new_x;
    return rodopt_eval_grad_f((rodopt_ctx *)ud, x, grad) != 0;
}

static bool cb_g(ipindex n, ipnumber *x, bool new_x, ipindex m, ipnumber *g, UserDataPtr ud)
{
    (void)n; (void)new_x; (void)m;
    return rodopt_eval_g((rodopt_ctx *)ud, x, g) != 0;
}

static bool cb_jac(ipindex n, ipnumber *x, bool new_x, ipindex m, ipindex nele, ipindex *iRow, ipindex *jCol,
                   ipnumber *values, UserDataPtr ud)
{
    (void)n; (void)new_x; (void)m; (void)nele;
    if (values == NULL) {
        rodopt_jac_structure((rodopt_ctx *)ud, iRow, jCol);
        return true;
    }
    return rodopt_eval_jac((rodopt_ctx *)ud, x, values) != 0;
}

/* IPOPT's C interface needs a Hessian callback even under hessian_approximation=limited-memory (which never
 * calls it): without the exact Hessian this one reports that there is none. */
static bool cb_h(ipindex n, ipnumber *x, bool new_x, ipnumber obj_factor, ipindex m, ipnumber *lambda,
                 bool new_lambda, ipindex nele, ipindex *iRow, ipindex *jCol, ipnumber *values, UserDataPtr ud)
{
    rodopt_ctx *c = (rodopt_ctx *)ud;
    (void)n; (void)new_x; (void)m; (void)new_lambda; (void)nele;
    if (!c->exact) {
        return false;
    }
    if (values == NULL) {
        rodopt_hess_structure(c, iRow, jCol);
        return true;
    }
    return rodopt_eval_h(c, x, obj_factor, lambda, values) != 0;
}

static bool cb_iter(ipindex alg_mod, ipindex iter, ipnumber obj, ipnumber inf_pr, ipnumber inf_du, ipnumber mu,
                    ipnumber d_norm, ipnumber reg, ipnumber alpha_du, ipnumber alpha_pr, ipindex ls, UserDataPtr ud)
{
    (void)alg_mod; (void)obj; (void)inf_pr; (void)inf_du; (void)mu; (void)d_norm; (void)reg; (void)alpha_du;
    (void)alpha_pr; (void)ls;
    ((rodopt_ctx *)ud)->iterations = iter;
    return true;
}

/* Solve from x (overwritten by the solution). Options: keys, values as text, kinds 0 text, 1 number, 2 integer.
 * Returns IPOPT's ApplicationReturnStatus, or -1000 when the problem or an option could not be set. */
int rodopt_solve(rodopt_ctx *c, double *x, double *xl, double *xu, double *gl, double *gu, int nopt,
                 char **keys, char **values, const int *kinds, double *g, double *mult_g,
                 double *zl, double *zu, double *obj)
{
    int i, status;
    bool ok = true;
    IpoptProblem nlp = CreateIpoptProblem(c->nvar, xl, xu, c->ncon, gl, gu, c->nnz, c->nnz_h, 0, cb_f, cb_g, cb_grad_f,
                                          cb_jac, cb_h);
    if (nlp == NULL) {
        return -1000;
    }
    ok = ok && AddIpoptStrOption(nlp, "hessian_approximation", c->exact ? "exact" : "limited-memory");
    ok = ok && AddIpoptStrOption(nlp, "sb", "yes");
    ok = ok && AddIpoptIntOption(nlp, "print_level", 0);
    if (!c->exact) {
        /* the limited-memory Hessian's low-rank part as extra rows of the factored system instead of
         * Sherman-Morrison solves (docs/optimize.md, "IPOPT's options"); the options below may set it back */
        ok = ok && AddIpoptStrOption(nlp, "limited_memory_aug_solver", "extended");
    }
    for (i = 0; i < nopt && ok; ++i) {
        if (kinds[i] == 1) {
            ok = AddIpoptNumOption(nlp, keys[i], strtod(values[i], NULL));
        } else if (kinds[i] == 2) {
            ok = AddIpoptIntOption(nlp, keys[i], (ipindex)strtol(values[i], NULL, 10));
        } else {
            ok = AddIpoptStrOption(nlp, keys[i], values[i]);
        }
    }
    if (!ok) {
        FreeIpoptProblem(nlp);
        return -1000 - i;
    }
    SetIntermediateCallback(nlp, cb_iter);
    c->iterations = 0;
    c->have_f = c->have_j = 0;
    status = (int)IpoptSolve(nlp, x, g, obj, mult_g, zl, zu, c);
    FreeIpoptProblem(nlp);
    return status;
}

/* The contact forces lambda [npts * nrows] at x (0 in the rows not held); 0 when the evaluation fails. */
int rodopt_contact_forces(rodopt_ctx *c, const double *x, double *out)
{
    if (!c->nlam || !eval_f_all(c, x)) {
        return 0;
    }
    memcpy(out, c->lam, sizeof(double) * (size_t)(c->npts * c->nlam));
    return 1;
}
