/*
 * rodgen_linalg.c: dense Cholesky factorisations and solves, shared by the
 * forward dynamics of the generated models and by the runtime (the constrained
 * dynamics of rodgen_contact.c and its derivatives in rodgen_cderiv.c). Pure C99.
 */
#include <math.h>

#include "rodgen_runtime.h"

/* A = L L^T in place (L in the lower triangle), a pivot refused when not above tol times dmax, or, with
 * dmax = 0, tol times the column's own diagonal entry before the factorisation. */
static int cholesky(double *A, int n, double tol, double dmax)
{
    int i, j, k;
    for (j = 0; j < n; ++j) {
        double d = A[j * n + j];
        const double lim = tol * (dmax > 0.0 ? dmax : fabs(d));
        for (k = 0; k < j; ++k) {
            d -= A[j * n + k] * A[j * n + k];
        }
        if (!(d > lim)) {
            return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
        }
        d = sqrt(d);
        A[j * n + j] = d;
        for (i = j + 1; i < n; ++i) {
            double s = A[i * n + j];
            for (k = 0; k < j; ++k) {
                s -= A[i * n + k] * A[j * n + k];
            }
            A[i * n + j] = s / d;
        }
    }
    return RODGEN_OK;
}

int rodgen_cholesky(double *A, int n)
{
    return cholesky(A, n, RODGEN_PIVOT_RTOL, 0.0);
}

void rodgen_cholesky_solve(const double *L, double *b, int n)
{
    int i, k;
    for (i = 0; i < n; ++i) {
        double s = b[i];
        for (k = 0; k < i; ++k) {
            s -= L[i * n + k] * b[k];
        }
        b[i] = s / L[i * n + i];
    }
    for (i = n - 1; i >= 0; --i) {
        double s = b[i];
        for (k = i + 1; k < n; ++k) {
            s -= L[k * n + i] * b[k];
        }
        b[i] = s / L[i * n + i];
    }
}

int rodgen_cholesky_rel(double *A, int n, double tol)
{
    double dmax = 0.0;
    int i;
    for (i = 0; i < n; ++i) {
        if (A[i * n + i] > dmax) {
            dmax = A[i * n + i];
        }
    }
    if (n > 0 && (!(dmax > 0.0) || !isfinite(dmax))) {
        return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
    }
    return cholesky(A, n, tol, dmax);
}

/* One row of a triangular block solve: x[c] <- (x[c] - sum_k l[k * ls] X[k][c]) * inv over k in [k0, k1), four
 * columns at a time held in registers over k (a column at a time, each update stored and reloaded, is about
 * four times slower), then the last columns one by one; the same operations in the same order per column. */
static void solve_row(const double *l, int ls, const double *X, int w, int k0, int k1, double inv, double *xi)
{
    int c, k;
    for (c = 0; c + 4 <= w; c += 4) {
        double a0 = xi[c], a1 = xi[c + 1], a2 = xi[c + 2], a3 = xi[c + 3];
        for (k = k0; k < k1; ++k) {
            const double lk = l[k * ls];
            const double *xk = X + k * w + c;
            a0 -= lk * xk[0];
            a1 -= lk * xk[1];
            a2 -= lk * xk[2];
            a3 -= lk * xk[3];
        }
        xi[c] = a0 * inv;
        xi[c + 1] = a1 * inv;
        xi[c + 2] = a2 * inv;
        xi[c + 3] = a3 * inv;
    }
    for (; c < w; ++c) {
        double a = xi[c];
        for (k = k0; k < k1; ++k) {
            a -= l[k * ls] * X[k * w + c];
        }
        xi[c] = a * inv;
    }
}

void rodgen_cholesky_solve_block(const double *L, int n, double *X, int w)
{
    int i;
    for (i = 0; i < n; ++i) {
        solve_row(L + i * n, 1, X, w, 0, i, 1.0 / L[i * n + i], X + i * w);
    }
    for (i = n - 1; i >= 0; --i) {
        solve_row(L + i, n, X, w, i + 1, n, 1.0 / L[i * n + i], X + i * w);
    }
}
