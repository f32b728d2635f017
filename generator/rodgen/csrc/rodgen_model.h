/*
 * rodgen_model.h: the table of a compiled model's functions, the one contract
 * between the generated code of a model and rodgen's model-independent C
 * runtime (integrators, constrained dynamics, impacts, hybrid simulation).
 *
 * Every generated model defines `const rodgen_model *<prefix>_model(void);`
 * returning a static table of its sizes and functions. The runtime takes a
 * `const rodgen_model *` and never names a model. Pure C99; no allocation.
 *
 * Arrays are double, matrices row-major. Sizes: nq coordinates, nu inputs,
 * np parameters, npoints marker points, nconstraints constraint blocks with
 * nrows rows in all. Velocities (qd, qdd, generalized forces; M is nv x nv)
 * have nv entries, nq except for models with free joints (floating bases:
 * 7 coordinates [x y z qx qy qz qw], 6 velocities); the state y = [q, qd]
 * has nq + nv (RODGEN_NY(m) in rodgen_runtime.h). The routines
 * that evaluate forces take the time t first (the force elements' expressions
 * may depend on it; a model without such expressions ignores it).
 */
#ifndef RODGEN_MODEL_H
#define RODGEN_MODEL_H

#ifdef __cplusplus
extern "C" {
#endif

/* Kinds of constraint block. Rows of each block, as the generated
 * <prefix>_constraint_position returns them:
 *   CONTACT  d rows (nrows: 2 in a planar model, 3 in a spatial one): the tangential rows
 *                    [0 .. d-2], the point's position along the ground (tangent t; in space t1, t2),
 *                    then [d-1] its height above the ground along the normal n (the gap; > 0 above);
 *                    a flat foot (6 rows, spatial) has a point's 3 rows, then the frame's orientation
 *                    error against the ground's axes.
 *            Unilateral: when active, all rows are held (the point sticks at its
 *            touchdown position); the normal force must stay >= 0 and
 *            |tangential force| <= mu * normal force (mu from <prefix>_constraint_friction).
 *            Sliding (rodgen_contact.h) handles 2- and 3-row contacts, the hybrid simulation's events
 *            2-, 3- and 6-row ones (a flat foot sticks or is free; its centre of pressure stays in its sole).
 *   LOOP     2 rows (plane): position of marker b minus position of marker a (x, y); 3 or 6 rows
 *            (space): frame b's origin minus frame a's (x, y, z), then the orientation error.
 *            Bilateral, always active: the loop is closed when all rows are zero.
 *   LIMIT    1 row: distance of a coordinate from its limit, >= 0 inside the allowed range
 *            (q - lower, or upper - q). Unilateral, active only while at the limit.
 *   FRICTION 1 row: a coordinate with dry friction and stiction. While it sticks the row is held
 *            (its force, the friction force or torque, must stay within the static limit, the block's
 *            constraint_friction); while it slips the row is free and the force is the kinetic limit
 *            (kinetic_friction) against the motion. */
#define RODGEN_CONTACT 0
#define RODGEN_LOOP 1
#define RODGEN_LIMIT 2
#define RODGEN_FRICTION 3

/* Joints with a configuration of their own (rodgen_model.lie_joints):
 *   FREE       q [x y z qx qy qz qw] (position in the parent frame, unit quaternion), qd [vx vy vz wx wy wz]
 *              (the link's linear and angular velocity in its own frame);
 *   SPHERICAL  q [qx qy qz qw], qd [wx wy wz] (angular velocity in the link's frame);
 *   PLANAR     q [x y theta] in the joint frame's xy plane, qd [vx vy wz] (in the link's frame). */
#define RODGEN_JOINT_FREE 0
#define RODGEN_JOINT_SPHERICAL 1
#define RODGEN_JOINT_PLANAR 2

typedef struct {
    const char *name;   /* the contact's, loop's or limit's name in the model */
    int kind;           /* RODGEN_CONTACT, RODGEN_LOOP, RODGEN_LIMIT or RODGEN_FRICTION */
    int row;            /* its first row in the constraint arrays */
    int nrows;          /* CONTACT 2, 3 or 6; LOOP 2, 3 or 6; LIMIT 1; FRICTION 1 */
    double sole[4];     /* a flat foot's sole (6-row CONTACT): x_min, x_max, y_min, y_max of the rectangle in
                           the frame's tangential axes its centre of pressure must stay in; all 0: none */
} rodgen_constraint;

typedef struct rodgen_model {
    const char *name;
    int nq, nv, nu, np, npoints;
    int nconstraints, nrows;
    int nforces;                            /* force elements (element_forces fills RODGEN_FDIM(m)*nforces) */
    const rodgen_constraint *constraints;   /* [nconstraints], NULL when there are none */
    const double *default_p;                /* [np] default parameter values */
    const double *initial_q;                /* [nq] initial coordinates */
    int nlie;                               /* joints whose velocities are not their coordinates' rates */
    const int *lie_joints;                  /* [3*nlie] per such joint: RODGEN_JOINT_FREE, _SPHERICAL or
                                             * _PLANAR, the index of its first coordinate in q and of its
                                             * first velocity in qd; NULL if none */

    /* M(q) qdd + bias(t, q, qd) = B(q) u */
    void (*mass_matrix)(const double *q, const double *p, double *M);              /* M [nq*nq] */
    void (*bias)(double t, const double *q, const double *qd, const double *p,
                 double *h);                                                       /* h [nq] */
    void (*gravity)(const double *q, const double *p, double *g);                  /* g [nq] */
    void (*input_map)(const double *q, const double *p, double *B);                /* B [nq*nu] */
    int  (*forward_dynamics)(double t, const double *q, const double *qd, const double *u, const double *p,
                             double *qdd);                                         /* status */
    void (*inverse_dynamics)(double t, const double *q, const double *qd, const double *qdd, const double *p,
                             double *Q);                                           /* Q [nq] */
    int  (*rhs)(double t, const double *y, const double *u, const double *p, double *dy);
    void (*energy)(const double *q, const double *qd, const double *p, double *e);  /* e [2]: T, V */
    void (*points)(const double *q, const double *p, double *r);                   /* r [2*npoints] */
    int  (*rhs_jacobian)(double t, const double *q, const double *qd, const double *u, const double *p,
                         double *J);                                               /* NULL if not generated */

    /* Constraints (all NULL when nconstraints == 0). Each fills every row. */
    void (*constraint_position)(const double *q, const double *p, double *c);      /* c [nrows] */
    void (*constraint_jacobian)(const double *q, const double *p, double *J);      /* J [nrows*nv] = dc/dq */
    void (*constraint_bias)(const double *q, const double *qd, const double *p,
                            double *b);                                            /* b [nrows] = Jdot qd */
    void (*constraint_friction)(const double *p, double *mu);                      /* mu [nconstraints] */
    /* All constraint rows at once, with shared subexpressions (NULL when not generated; the
     * runtime then uses the routines above with M and a dense Cholesky factorisation):
     * d [nv] pivots of P M P^T = L D L^T (M positive definite iff all > 0; the other outputs are
     * valid only then), qdd0 [nv] = M^-1 (B u - bias), J [nrows*nv], c [nrows], v [nrows] = J qd,
     * a0 [nrows] = J qdd0 + Jdot qd, A [nrows*nv] (row i = M^-1 J_i^T), S [nrows*nrows] = J M^-1 J^T. */
    void (*constrained_terms)(double t, const double *q, const double *qd, const double *u, const double *p,
                              double *d, double *qdd0, double *J, double *c, double *v, double *a0,
                              double *A, double *S);
    /* The constrained dynamics for the rows held, in one routine (NULL when not generated; generated
     * with constrained_terms): k [4*nrows] per row: held and 1 - held (1.0 and 0.0; not held: 0.0 and
     * 1.0, its lambda 0), the Baumgarte gains 2 alpha and beta^2; target [nrows] c_target; a row held by
     * J qdd = -Jdot qd - k[4i+2] J qd - k[4i+3] (c - target). Range space on the factorisation of
     * constrained_terms (d [nv] its pivots): S = J M^-1 J^T of the rows held as L D L^T in the order of
     * the rows, one backward substitution for qdd [nv]; lam [nrows] (lambda); s [2*nrows]: the pivots
     * of S (1 for a row not held), then the diagonal of J M^-1 J^T. qdd and lambda are valid when every
     * d[i] > 0 and the pivots of the rows held pass the caller's singularity test. */
    void (*constrained_solve)(double t, const double *q, const double *qd, const double *u, const double *p,
                              const double *k, const double *target, double *d, double *qdd, double *lam,
                              double *s);

    /* Force elements (NULL when nforces == 0): the force of each on its point, ground frame. */
    void (*element_forces)(double t, const double *q, const double *qd, const double *u, const double *p,
                           double *f);                             /* f [RODGEN_FDIM(m)*nforces] */

    /* Dry friction (NULL when the model has no FRICTION block): the kinetic limit of each block. */
    void (*kinetic_friction)(const double *p, double *mu_k);            /* mu_k [nconstraints] */

    /* Partials of the KKT system of the constrained dynamics (NULL when not generated: generated with the
     * RHS Jacobian when the model has constraints and nq = nv): with g = M qdd + bias - B u - J^T lam and
     * k = J qdd + Jdot qd, dg [nv*2nv] = dg/d[q, qd] and dk [nrows*2nv] = dk/d[q, qd], row-major, at fixed
     * qdd [nv], u [nu] and lam [nrows]. */
    void (*constraint_partials)(double t, const double *q, const double *qd, const double *qdd,
                                const double *u, const double *lam, const double *p, double *dg, double *dk);

    /* Names and provenance, for bindings and tools (NULL where a list is empty). */
    const char *const *coordinate_names;    /* [nq] */
    const char *const *input_names;         /* [nu] */
    const char *const *parameter_names;     /* [np] */
    const char *const *point_names;         /* [npoints] */
    const char *const *force_names;         /* [nforces] */
    const char *prefix;                     /* prefix of the model's C functions and files */
    const char *version;                    /* version of rodgen that generated the model */
    const char *method;                     /* derivation method */
    const char *forward;                    /* forward dynamics: "aba" or "cholesky" */
    const char *content_hash;               /* hash of the generated code */
} rodgen_model;

#ifdef __cplusplus
}
#endif

#endif /* RODGEN_MODEL_H */
