/*
 * rodgen_cderiv.h: derivatives of the constrained forward dynamics and of the
 * plastic impact map for a fixed active set of constraint blocks, on a
 * `const rodgen_model *` whose table holds constraint_partials (generated with
 * the RHS Jacobian for a model with constraints). Derivatives by q are on the
 * tangent space where the model has free, spherical or planar joints (nq != nv):
 * along q (+) dq, as the RHS Jacobian's.
 *
 * The constrained dynamics (rodgen_contact.h, without drift control)
 *     M qdd + bias = B u + J^T lambda,   J qdd + Jdot qd = 0   (active rows)
 * is the KKT system g = 0, k = 0 of constraint_partials; differentiated
 * (implicit function theorem),
 *     [M  -J^T] [d qdd   ]     [dg/dx]
 *     [J    0 ] [d lambda] = - [dk/dx]      (x = q, qd; for u: dg/du = -B, dk/du = 0).
 * The impact map M (qd+ - qd-) = J^T Lambda, J qd+ = 0 the same way, its
 * partials by q from constraint_partials at qd = 0 (see
 * rodgen/symbolic/constrained_derivative.py).
 *
 * Pure C99 (GNU vector extensions where AVX is on), only <math.h>; no
 * allocation, no globals, reentrant. Scratch memory comes from the caller:
 * `void *work` of rodgen_cderiv_work_bytes(model) bytes, aligned as for a
 * double.
 */
#ifndef RODGEN_CDERIV_H
#define RODGEN_CDERIV_H

#include "rodgen_model.h"
#include "rodgen_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of scratch memory for rodgen_constrained_derivatives and rodgen_impact_derivatives. */
long rodgen_cderiv_work_bytes(const rodgen_model *m);

/* The constrained dynamics at (t, q, qd, u) with the blocks of `active` [nconstraints] held
 * (RODGEN_STICK, or 0 for a block left out; LOOP blocks always held; no drift control) and its
 * derivatives: qdd [nv], lambda [nrows] (0 in the rows of blocks left out) and D [(nv + nrows) x
 * (2 nv + nu)], row-major: rows 0..nv-1 d qdd/d[q, qd, u], rows nv + i d lambda_i/d[q, qd, u] (0 for
 * rows left out). Returns RODGEN_OK, RODGEN_ERR_OPTIONS (no constraint_partials in the table,
 * a sliding mode in `active`), RODGEN_ERR_NONFINITE_INPUT, RODGEN_ERR_NOT_POSITIVE_DEFINITE,
 * RODGEN_ERR_SINGULAR_CONSTRAINTS or RODGEN_ERR_NONFINITE_RESULT. */
int rodgen_constrained_derivatives(const rodgen_model *m, double t, const double *p, const double *q,
                                   const double *qd, const double *u, const int *active, double *qdd,
                                   double *lam, double *D, void *work);

/* The plastic impact onto the blocks of `active` (the set after the impact; FRICTION blocks left
 * out, none released): M (qd_plus - qd_minus) = J^T impulse, J qd_plus = 0, and its derivatives:
 * qd_plus [nv], impulse [nrows] and D [(nv + nrows) x 2 nv], row-major: rows 0..nv-1
 * d qd_plus/d[q, qd_minus], rows nv + i d impulse_i/d[q, qd_minus]. Statuses as above. */
int rodgen_impact_derivatives(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
                              const int *active, double *qd_plus, double *impulse, double *D, void *work);

#ifdef __cplusplus
}
#endif

#endif /* RODGEN_CDERIV_H */
