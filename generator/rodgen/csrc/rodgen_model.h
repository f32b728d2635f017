/*
 * rodgen_model.h: the table of a compiled model's functions, the one contract
 * between the generated code of a model and rodgen's model-independent C
 * runtime (integrators, constrained dynamics, impacts, hybrid simulation).
 * Rendered from rodgen/contract.py (templates/c/model_table.h.jinja).
 * Do not edit: change the contract and render it again (python -m rodgen.codegen.runtime).
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

/* Kinds of constraint block (rodgen_constraint.kind) and the rows of each, as the generated
 * <prefix>_constraint_position returns them. */
/* CONTACT: d rows (2 in a planar model, 3 in a spatial one): the tangential rows [0 .. d-2], the point's position
 * along the ground (tangent t; in space t1, t2), then [d-1] its height above the ground along the normal n (the
 * gap; > 0 above); a flat foot (6 rows, spatial) has a point's 3 rows, then the frame's orientation error against
 * the ground's axes. Unilateral: when active, all rows are held (the point sticks at its touchdown position); the
 * normal force must stay >= 0 and |tangential force| <= mu * normal force (mu from constraint_friction). Sliding
 * (rodgen_contact.h) handles 2- and 3-row contacts, the hybrid simulation's events 2-, 3- and 6-row ones (a flat
 * foot sticks or is free; its centre of pressure stays in its sole). */
#define RODGEN_CONTACT 0
/* LOOP: 2 rows (plane): position of marker b minus position of marker a (x, y); 3 or 6 rows (space): frame b's
 * origin minus frame a's (x, y, z), then the orientation error. Bilateral, always active: the loop is closed when
 * all rows are zero. */
#define RODGEN_LOOP 1
/* LIMIT: 1 row: distance of a coordinate from its limit, >= 0 inside the allowed range (q - lower, or upper - q).
 * Unilateral, active only while at the limit. */
#define RODGEN_LIMIT 2
/* FRICTION: 1 row: a coordinate with dry friction and stiction. While it sticks the row is held (its force, the
 * friction force or torque, must stay within the static limit, the block's constraint_friction); while it slips
 * the row is free and the force is the kinetic limit (kinetic_friction) against the motion. */
#define RODGEN_FRICTION 3

/* Joints with a configuration of their own (rodgen_model.lie_joints). */
/* JOINT_FREE: q [x y z qx qy qz qw] (position in the parent frame, unit quaternion), qd [vx vy vz wx wy wz] (the
 * link's linear and angular velocity in its own frame). */
#define RODGEN_JOINT_FREE 0
/* JOINT_SPHERICAL: q [qx qy qz qw], qd [wx wy wz] (angular velocity in the link's frame). */
#define RODGEN_JOINT_SPHERICAL 1
/* JOINT_PLANAR: q [x y theta] in the joint frame's xy plane, qd [vx vy wz] (in the link's frame). */
#define RODGEN_JOINT_PLANAR 2

/* One constraint block of a model's table. */
typedef struct {
    /* the contact's, loop's, limit's or friction's name in the model */
    const char *name;
    /* RODGEN_CONTACT, RODGEN_LOOP, RODGEN_LIMIT or RODGEN_FRICTION */
    int kind;
    /* its first row in the constraint arrays */
    int row;
    /* CONTACT 2, 3 or 6; LOOP 2, 3 or 6; LIMIT 1; FRICTION 1 */
    int nrows;
    /* a flat foot's sole (6-row CONTACT): x_min, x_max, y_min, y_max of the rectangle in the frame's tangential
     * axes its centre of pressure must stay in; all 0: none */
    double sole[4];
} rodgen_constraint;

/* The table of a model: its sizes, its constraint blocks, defaults, its routines (NULL where optional and not
 * generated) and its names. */
typedef struct rodgen_model {
    /* the model's name */
    const char *name;
    /* coordinates, the length of q */
    int nq;
    /* velocities (qd, qdd, generalized forces; M is nv x nv): nq but with free, spherical or planar joints (0 in a
     * table written before the field: RODGEN_NV(m) reads it) */
    int nv;
    /* inputs */
    int nu;
    /* parameters */
    int np;
    /* marker points of a planar model (the points routine) */
    int npoints;
    /* constraint blocks */
    int nconstraints;
    /* constraint rows of all blocks */
    int nrows;
    /* force elements (element_forces fills RODGEN_FDIM(m)*nforces) */
    int nforces;
    /* [nconstraints], NULL when there are none */
    const rodgen_constraint *constraints;
    /* [np] default parameter values */
    const double *default_p;
    /* [nq] initial coordinates */
    const double *initial_q;
    /* joints whose velocities are not their coordinates' rates */
    int nlie;
    /* [3*nlie] per such joint: RODGEN_JOINT_FREE, _SPHERICAL or _PLANAR, the index of its first coordinate in q
     * and of its first velocity in qd; NULL if none */
    const int *lie_joints;

    /* Mass matrix M(q), symmetric positive definite. */
    void (*mass_matrix)(const double *q, const double *p, double *M);

    /* Bias forces h + G + K + D, as in M(q) qdd + bias = B(q) u. NULL when not generated. */
    void (*bias)(double t, const double *q, const double *qd, const double *p, double *h);

    /* Gravity forces G(q) (part of the bias). NULL when not generated. */
    void (*gravity)(const double *q, const double *p, double *g);

    /* Input map B(q): generalized forces = B u. */
    void (*input_map)(const double *q, const double *p, double *B);

    /* Forward dynamics qdd = M^-1 (B u - bias). Returns a status. */
    int (*forward_dynamics)(double t, const double *q, const double *qd, const double *u, const double *p, double *qdd);

    /* Inverse dynamics Q = M(q) qdd + bias(q, qd). NULL when not generated. */
    void (*inverse_dynamics)(double t, const double *q, const double *qd, const double *qdd, const double *p, double *Q);

    /* Right-hand side of y' = f(t, y), y = [q, qd] (nq + nv numbers; dq/dt = qd where nq = nv, else the
     * configuration derivative of each joint: a free joint's quaternion turns by 1/2 q (0, w)). Returns a status. */
    int (*rhs)(double t, const double *y, const double *u, const double *p, double *dy);

    /* Kinetic and potential energy: e[0] = T, e[1] = V. NULL when not generated. */
    void (*energy)(const double *q, const double *qd, const double *p, double *e);

    /* Positions of the marker points: r[2*i] = x, r[2*i+1] = y. NULL when not generated. */
    void (*points)(const double *q, const double *p, double *r);

    /* Exact Jacobian of the right-hand side at constant u (with free, spherical or planar joints: on the tangent
     * space, d[v, qdd]/d[dq, v] with q moved by q + dq along the joints' exponential map). Returns a status. NULL
     * when not generated. */
    int (*rhs_jacobian)(double t, const double *q, const double *qd, const double *u, const double *p, double *J);

    /* Positions of the constraint rows c(q). NULL when not generated. */
    void (*constraint_position)(const double *q, const double *p, double *c);

    /* Jacobian of the constraint rows dc/dq (with free, spherical or planar joints: of the velocities, J qd =
     * dc/dt). NULL when not generated. */
    void (*constraint_jacobian)(const double *q, const double *p, double *J);

    /* Velocity product of the constraint rows Jdot qd. NULL when not generated. */
    void (*constraint_bias)(const double *q, const double *qd, const double *p, double *b);

    /* Friction coefficient of each constraint block. NULL when not generated. */
    void (*constraint_friction)(const double *p, double *mu);

    /* Everything the constrained dynamics needs at one state, with shared subexpressions: the pivots of a sparse L
     * D L^T factorisation of M (valid when all are > 0), the free accelerations qdd0, and of every constraint row
     * J, c, J qd, the free row acceleration J qdd0 + Jdot qd, M^-1 J^T and J M^-1 J^T. NULL when not generated. */
    void (*constrained_terms)(double t, const double *q, const double *qd, const double *u, const double *p, double *d, double *qdd0, double *J, double *c, double *v, double *a0, double *A, double *S);

    /* The constrained dynamics for the rows held (k[4i] = 1, k[4i+1] = 0; not held: 0, 1, lambda_i = 0), range
     * space on the factorisation of constrained_terms with one backward substitution: J qdd = -Jdot qd - k[4i+2] J
     * qd - k[4i+3] (c - target) row by row; qdd and lambda are valid when every d[i] > 0 and the pivots s[i] of
     * the rows held pass the caller's test (s[nrows ..]: the diagonal of J M^-1 J^T in the rows held, 0 in the
     * others). NULL when not generated. */
    void (*constrained_solve)(double t, const double *q, const double *qd, const double *u, const double *p, const double *k, const double *target, double *d, double *qdd, double *lam, double *s, double *f);

    /* Force of each force element on its point, ground frame: f[d*i + c], d = RODGEN_FDIM(m) (2 in a planar model:
     * x, y; 3 in a spatial one: x, y, z). NULL when not generated. */
    void (*element_forces)(double t, const double *q, const double *qd, const double *u, const double *p, double *f);

    /* Kinetic friction limit of each dry-friction block (RODGEN_FRICTION; 0 for the other blocks); its static
     * limit is the block's constraint_friction. NULL when not generated. */
    void (*kinetic_friction)(const double *p, double *mu_k);

    /* Partials of the constrained dynamics' KKT system g = M qdd + bias - B u - J^T lam and k = J qdd + Jdot qd by
     * [q, qd] at fixed qdd, u and lam (every constraint row; by q on the tangent space where nq != nv; generated
     * with the RHS Jacobian), from which rodgen_constrained_derivatives and rodgen_impact_derivatives solve the
     * derivatives of qdd, lambda and the impact map. NULL when not generated. */
    void (*constraint_partials)(double t, const double *q, const double *qd, const double *qdd, const double *u, const double *lam, const double *p, double *dg, double *dk);

    /* Partial derivative of g = M qdd + bias - B u by the parameters p at fixed q, qd, qdd and u; at the forward
     * dynamics' qdd, d qdd/dp = -M^-1 dg (generated on request: CodegenOptions(parameter_derivatives=True)). NULL
     * when not generated. */
    void (*parameter_partials)(double t, const double *q, const double *qd, const double *qdd, const double *u, const double *p, double *dg);

    /* How the constrained_solve call that stored f changes with its inputs u -> u + du (the same state, rows held,
     * gains and targets: qdd and lambda are affine in u), from that call's factorisations; generated where the
     * input map B holds parameters only. NULL when not generated. */
    void (*constrained_response)(const double *p, const double *k, const double *du, const double *f, double *qdd, double *lam);

    /* [nq] */
    const char *const *coordinate_names;
    /* [nu] */
    const char *const *input_names;
    /* [np] */
    const char *const *parameter_names;
    /* [npoints] */
    const char *const *point_names;
    /* [nforces] */
    const char *const *force_names;
    /* prefix of the model's C functions and files */
    const char *prefix;
    /* version of rodgen that generated the model */
    const char *version;
    /* derivation method */
    const char *method;
    /* forward dynamics: "aba" or "cholesky" */
    const char *forward;
    /* hash of the generated code */
    const char *content_hash;
} rodgen_model;

#ifdef __cplusplus
}
#endif

#endif /* RODGEN_MODEL_H */
