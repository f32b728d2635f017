/*
 * rodgen_linalg.c: dense Cholesky factorisations and solves, shared by the
 * forward dynamics of the generated models and by the runtime (the constrained
 * dynamics of rodgen_contact.c and its derivatives in rodgen_cderiv.c). Pure C99.
 */
#include <math.h>

#include "rodgen_runtime.h"

int rodgen_cholesky(double *A, int n)
{
    int i, j, k;
    for (j = 0; j < n; ++j) {
        double d = A[j * n + j];
        const double scale = fabs(d);
        for (k = 0; k < j; ++k) {
            d -= A[j * n + k] * A[j * n + k];
        }
        if (!(d > RODGEN_PIVOT_RTOL * scale)) {
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
    int i, j, k;
    for (i = 0; i < n; ++i) {
        if (A[i * n + i] > dmax) {
            dmax = A[i * n + i];
        }
    }
    if (n > 0 && (!(dmax > 0.0) || !isfinite(dmax))) {
        return RODGEN_ERR_NOT_POSITIVE_DEFINITE;
    }
    for (j = 0; j < n; ++j) {
        double d = A[j * n + j];
        for (k = 0; k < j; ++k) {
            d -= A[j * n + k] * A[j * n + k];
        }
        if (!(d > tol * dmax)) {
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

void rodgen_cholesky_solve_block(const double *L, int n, double *X, int w)
{
    int i, k, c;
    for (i = 0; i < n; ++i) {
        double *xi = X + i * w;
        const double inv = 1.0 / L[i * n + i];
        for (k = 0; k < i; ++k) {
            const double lik = L[i * n + k];
            const double *xk = X + k * w;
            for (c = 0; c < w; ++c) {
                xi[c] -= lik * xk[c];
            }
        }
        for (c = 0; c < w; ++c) {
            xi[c] *= inv;
        }
    }
    for (i = n - 1; i >= 0; --i) {
        double *xi = X + i * w;
        const double inv = 1.0 / L[i * n + i];
        for (k = i + 1; k < n; ++k) {
            const double lki = L[k * n + i];
            const double *xk = X + k * w;
            for (c = 0; c < w; ++c) {
                xi[c] -= lki * xk[c];
            }
        }
        for (c = 0; c < w; ++c) {
            xi[c] *= inv;
        }
    }
}
