/*
 * rodgen_linalg.c: dense Cholesky factorisation and solve, shared by the
 * forward dynamics of the generated models and by the runtime. Pure C99.
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
