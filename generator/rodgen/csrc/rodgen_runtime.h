/*
 * rodgen_runtime.h: rodgen's model-independent C runtime (status codes, Cholesky,
 * input laws, the RK4 and Dormand-Prince 5(4) integrators) on any model's
 * `const rodgen_model *` table (rodgen_model.h).
 * Rendered from rodgen/contract.py (templates/c/runtime.h.jinja).
 * Do not edit: change the contract and render it again (python -m rodgen.codegen.runtime).
 *
 * Pure C99 (only <math.h>), reentrant: no globals, no allocation. Temporaries of
 * the size of a model (stage vectors, B(q), ...) are C99 variable-length arrays
 * on the stack, a few times 2*nq doubles; the state of a simulation lives in
 * storage the caller owns (rodgen_sim_start).
 *
 *     rodgen_sim_state s;
 *     double storage[RODGEN_SIM_STORAGE(NQ)];
 *     rodgen_sim_start(&s, m, t0, y0, storage);
 *     do {
 *         status = rodgen_simulate(m, &options, &input, p, &s, capacity, t_out, y_out, u_out, &n);
 *         ... use the n rows of t_out, y_out, u_out ...
 *     } while (status == RODGEN_SIM_FULL);
 */
#ifndef RODGEN_RUNTIME_H
#define RODGEN_RUNTIME_H

#include "rodgen_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes of the model's routines and of the runtime. */
#define RODGEN_OK 0   /* success */
#define RODGEN_ERR_NONFINITE_INPUT 1   /* the state, the inputs or the parameters hold inf or NaN */
#define RODGEN_ERR_NOT_POSITIVE_DEFINITE 2   /* the mass matrix is not positive definite */
#define RODGEN_ERR_NONFINITE_RESULT 3   /* the accelerations are not finite */
#define RODGEN_ERR_NONFINITE_STATE 4   /* the state became inf or NaN */
#define RODGEN_ERR_STEP_UNDERFLOW 5   /* the step size fell below its minimum */
#define RODGEN_ERR_MAX_STEPS 6   /* the number of steps reached max_steps */
#define RODGEN_ERR_INPUT_NONFINITE 7   /* the inputs are inf or NaN */
#define RODGEN_ERR_INPUT_FAILED 8   /* the input law failed (callback error, B^T B singular) */
#define RODGEN_ERR_OPTIONS 9   /* invalid options */
#define RODGEN_SIM_FULL 10   /* not an error: the output arrays are full, call again */
#define RODGEN_ERR_SINGULAR_CONSTRAINTS 11   /* the active constraint set is singular (dependent constraint rows that no motion satisfies together, or a singular system of sliding contacts) */
#define RODGEN_ERR_EVENT_NOT_LOCATED 12   /* an event could not be located to tolerance */
#define RODGEN_ERR_FRICTION_CONE 13   /* a contact force left its friction cone */
#define RODGEN_ERR_INITIAL_STATE 14   /* the initial state violates a constraint (a contact point below the ground or a loop not closed) */
#define RODGEN_ERR_TOO_MANY_EVENTS 15   /* too many events in one step or run */
#define RODGEN_ERR_TIPPED 16   /* a flat foot tipped: its centre of pressure left its sole */

/* Smallest accepted ratio of a Cholesky pivot to its diagonal entry. */
#ifndef RODGEN_PIVOT_RTOL
#define RODGEN_PIVOT_RTOL 1e-14
#endif

/* Integration methods. */
#define RODGEN_RK4 0   /* classical Runge-Kutta, fixed step dt (the last step ends at t_end) */
#define RODGEN_DOPRI5 1   /* Dormand-Prince 5(4), local extrapolation, FSAL, step-size control */

/* Kinds of input. Tracking laws read reference rows [q_ref, qd_ref, qdd_ref] (3*nq values),
 * interpolated linearly in time and held constant outside the sample times:
 *   PD:               u = u_ff + Kp .* (B(q)^T (q_ref - q)) + Kd .* (B(q)^T (qd_ref - qd))   gains [nu]
 *   COMPUTED_TORQUE:  Q = inverse_dynamics(q, qd, qdd_ref + Kp .* (q_ref - q) + Kd .* (qd_ref - qd))
 *                     u = (B^T B)^-1 B^T Q   (B u = Q when every coordinate is actuated)   gains [nq] */
#define RODGEN_INPUT_CONSTANT 0   /* u (NULL: zero) */
#define RODGEN_INPUT_TABLE 1   /* values [n*nu] at times [n], linear interpolation */
#define RODGEN_INPUT_PD 2   /* times, values [n*(nq+2*nv)], kp, kd [nu], u: feedforward or NULL */
#define RODGEN_INPUT_COMPUTED_TORQUE 3   /* times, values [n*(nq+2*nv)], kp, kd [nv] */
#define RODGEN_INPUT_CALLBACK 4   /* fn(context, t, y, u) fills u[nu], returns 0 (else: failed) */

/* The phase of a constraint block in an active mask (rodgen_contact.h; 0: inactive). */
#define RODGEN_STICK 1   /* active: a contact sticks (every row held), a dry-friction block sticks */
#define RODGEN_SLIDE_PLUS 2   /* a 2-row contact slides towards -t, its tangential force +mu normal; a dry-friction block slips towards -, its kinetic force + */
#define RODGEN_SLIDE_MINUS 3   /* a 2-row contact slides towards +t, its tangential force -mu normal; a dry-friction block slips towards +, its kinetic force - */
#define RODGEN_SLIDE 4   /* a 3-row contact slides in the ground plane, its tangential force on the cone's edge against its motion */

/* Kinds of event of the hybrid simulation (rodgen_event.kind, rodgen_contact.h). */
#define RODGEN_EVENT_TOUCHDOWN 0   /* an armed contact reached the ground: plastic impact, now active */
#define RODGEN_EVENT_LIFTOFF 1   /* an active contact released: normal force or impulse would pull */
#define RODGEN_EVENT_SLIP 2   /* |tangential| > mu * normal (force, or impulse at an impact) */
#define RODGEN_EVENT_LIMIT 3   /* a limit reached: plastic impact, now active */
#define RODGEN_EVENT_LIMIT_RELEASE 4   /* an active limit released: its force or impulse would pull */
#define RODGEN_EVENT_STICK 5   /* a sliding contact stopped (its tangential velocity turned): sticks */
#define RODGEN_EVENT_TIP 6   /* a flat foot's centre of pressure left its sole: the run stops */

/* What a slip (a contact force leaving its friction cone) does (rodgen_hybrid_options.on_slip). */
#define RODGEN_SLIP_STOP 0   /* log the event, stop with RODGEN_ERR_FRICTION_CONE (default) */
#define RODGEN_SLIP_CONTINUE 1   /* log the event and keep the contact sticking */
#define RODGEN_SLIP_SLIDE 2   /* log the event and let it slide with Coulomb friction */

/* Doubles of the caller's storage of a simulation of nq coordinates (y and f of rodgen_sim_state). */
#define RODGEN_SIM_STORAGE(nq) (4 * (nq))

/* Velocity size of a model (m: const rodgen_model *): number of velocities (qd, qdd, generalized forces); nq except with free, spherical joints. */
#define RODGEN_NV(m) ((m)->nv)

/* State size of a model: size of the state y = [q, qd], nq + nv (at most 2 nq: RODGEN_SIM_STORAGE(nq) holds y and f). */
#define RODGEN_NY(m) ((m)->nq + (m)->nv)
/* Force components of a model (m: const rodgen_model *): components of a force element's force: 2 (planar model), 3 (spatial model). */
#define RODGEN_FDIM(m) ((m)->npoints > 0 ? 2 : 3)

/* rodgen_input_fn: fills u [nu] at (t, y); returns 0, anything else is a failure. */
typedef int (*rodgen_input_fn)(void *context, double t, const double *y, double *u);

/* An input law, evaluated at every stage of the integrators (or once a step: hold). */
typedef struct {
    int kind;                    /* RODGEN_INPUT_... */
    const double *u;             /* CONSTANT: [nu] inputs; PD: [nu] feedforward; NULL for none */
    long n;                      /* number of samples (TABLE, PD, COMPUTED_TORQUE), at least 1 */
    const double *times;         /* [n] sample times, strictly increasing */
    const double *values;        /* TABLE: [n*nu]; PD, COMPUTED_TORQUE: [n*(nq+2*nv)] rows q_ref [nq], qd_ref, qdd_ref [nv] (the position error q_ref (-) q of rodgen_difference) */
    const double *kp;            /* PD: [nu]; COMPUTED_TORQUE: [nv] */
    const double *kd;            /* PD: [nu]; COMPUTED_TORQUE: [nv] */
    rodgen_input_fn fn;          /* CALLBACK */
    void *context;               /* CALLBACK: passed to fn */
} rodgen_input;

/* Options of rodgen_simulate. */
typedef struct {
    int method;                  /* RODGEN_RK4 or RODGEN_DOPRI5 */
    double t_end;                /* end time */
    double dt;                   /* RK4: the step; DOPRI5: the first step (0: chosen from the RHS) */
    double rtol;                 /* DOPRI5: relative tolerance, per component atol + rtol |y| */
    double atol;                 /* DOPRI5: absolute tolerance */
    double h_min;                /* DOPRI5: smallest step (0: 16 eps |t|) */
    double h_max;                /* DOPRI5: largest step (0: t_end - t0) */
    long max_steps;              /* most steps, accepted and rejected (0: no limit) */
    long store_every;            /* store every k-th accepted step (1: all) */
    int hold;                    /* RK4 only: 1 samples the input law once at the start of each step and holds it over the stages (zero-order hold); 0 evaluates it at every stage */
} rodgen_sim_options;

/* The state of a simulation; y and f point into the caller's storage (rodgen_sim_start). */
typedef struct {
    double t0;                   /* start time */
    double t;                    /* time of the state y */
    double *y;                   /* [nq+nv] state [q, qd] */
    double *f;                   /* [nq+nv] its derivative (valid when have_f) */
    double h;                    /* DOPRI5: next step size */
    long steps;                  /* accepted steps */
    long rejected;               /* rejected steps (DOPRI5) */
    long evaluations;            /* calls of the model's rhs */
    int have_f;                  /* f holds the derivative at y */
    int stored;                  /* y has been written to the outputs */
} rodgen_sim_state;

/* The context of a controller written in C (rodgen.CController): a rodgen_input_fn of a CALLBACK input gets a pointer to it as its context. */
typedef struct {
    const rodgen_model *model;   /* the simulated model's table (sizes, routines, constraint blocks) */
    const double *p;             /* [model->np] the model's parameters of the run */
    const double *params;        /* [nparams] the controller's parameters */
    long nparams;                /* number of params */
    double *state;               /* [nstate] the controller's memory, kept between calls (set at the start) */
    long nstate;                 /* number of state entries */
} rodgen_controller;

/* A mixed problem: the prescribed coordinates and their motion as samples (the other coordinates are free); q_p, qd_p, qdd_p are interpolated linearly in time and held constant outside the sample times. */
typedef struct {
    int npres;                   /* number of prescribed coordinates, 1 to nq - 1 */
    const int *pres;             /* [npres] their indices in q, distinct */
    long n;                      /* number of samples, at least 1 */
    const double *times;         /* [n] sample times, strictly increasing */
    const double *values;        /* [n*3*npres] rows q_p, qd_p, qdd_p */
} rodgen_mixed;

/* A batch of trajectories for rodgen_simulate_batch: trajectory i starts from y0 + i*y0_stride with the parameters p + i*p_stride (a stride of 0 shares one row). */
typedef struct {
    long n;                      /* number of trajectories */
    double t0;                   /* start time of every trajectory */
    const double *y0;            /* initial states, rows of [nq+nv] */
    long y0_stride;              /* nq+nv, or 0: one state for all */
    const double *p;             /* parameters, rows of [np] */
    long p_stride;               /* np, or 0: one parameter vector for all */
    const rodgen_input *input;   /* the input law of every trajectory */
    const double *u;             /* rows of input->u per trajectory (CONSTANT: [nu] inputs, PD: [nu] feedforward), or NULL: input->u for all */
    long u_stride;               /* nu (or 0) */
    void **contexts;             /* CALLBACK: [n] context of each trajectory, or NULL: input->context for all */
    long capacity;               /* rows stored per trajectory (final_only: unused) */
    int final_only;              /* store only the final state (one row per trajectory) */
    double *t_out;               /* [n*capacity] times (final_only: [n]) */
    double *y_out;               /* [n*capacity*(nq+nv)] states (final_only: [n*(nq+nv)]) */
    double *u_out;               /* [n*capacity*nu] inputs at the stored states (final_only: [n*nu]) */
    long *rows;                  /* [n] rows written per trajectory */
    int *status;                 /* [n] status of each trajectory (RODGEN_OK at t_end) */
    long *steps;                 /* [n] accepted steps, or NULL */
    long *evaluations;           /* [n] rhs evaluations, or NULL */
} rodgen_batch;

/* Cholesky factorisation A = L L^T in place (A n x n, row-major, symmetric; L in its lower triangle).
 * Returns RODGEN_OK, or RODGEN_ERR_NOT_POSITIVE_DEFINITE when a pivot falls below RODGEN_PIVOT_RTOL
 * times its diagonal entry. */
int rodgen_cholesky(double *A, int n);

/* Solve L L^T x = b in place (b is overwritten by x), L from rodgen_cholesky. */
void rodgen_cholesky_solve(const double *L, double *b, int n);

/* Cholesky factorisation A = L L^T in place as rodgen_cholesky, but a pivot must exceed tol times the
 * largest diagonal entry of A (the test of the constraint systems J M^-1 J^T, whose rows may be
 * dependent). Returns RODGEN_OK, or RODGEN_ERR_NOT_POSITIVE_DEFINITE when a pivot is not above it or
 * the largest diagonal entry is not positive and finite (n = 0 is RODGEN_OK). */
int rodgen_cholesky_rel(double *A, int n, double tol);

/* Solve L L^T X = B in place for the w columns of X (n x w, row-major; B on entry), L from
 * rodgen_cholesky or rodgen_cholesky_rel: row by row, four contiguous columns at a time held in
 * registers. */
void rodgen_cholesky_solve_block(const double *L, int n, double *X, int w);

/* Start a simulation at time t0 from the state y0 [nq+nv]; storage [RODGEN_SIM_STORAGE(nq)] doubles,
 * owned by the caller, holds s->y and s->f for the life of the simulation. The quaternions of y0 are
 * normalised (rodgen_normalize). */
void rodgen_sim_start(rodgen_sim_state *s, const rodgen_model *m, double t0, const double *y0, double *storage);

/* Divide the quaternion of each free and spherical joint of q [nq] by its norm (a quaternion of norm 0
 * is left as it is). The integrators call it on the state after every accepted step. */
void rodgen_normalize(const rodgen_model *m, double *q);

/* Integrate from s->t towards o->t_end, writing at most capacity rows: t_out [capacity], y_out
 * [capacity*(nq+nv)], u_out [capacity*nu] (the inputs at the stored states). *n_out receives the
 * number of rows written. Returns RODGEN_OK at t_end, RODGEN_SIM_FULL when the arrays are full (call
 * again with fresh arrays), or an error code; on an error the state holds the last good step (written
 * as the last row). */
int rodgen_simulate(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp, const double *p, rodgen_sim_state *s, long capacity, double *t_out, double *y_out, double *u_out, long *n_out);

/* out [nq] = q (+) v dt: a free joint moved by the exponential map of SE(3), a spherical joint by that
 * of SO(3), a planar joint by that of SE(2) (Pinocchio's integrate), every other coordinate by q + v
 * dt; q [nq], v [nv] (rodgen_lie.c). */
void rodgen_integrate(const rodgen_model *m, const double *q, const double *v, double dt, double *out);

/* v [nv]: the velocity that takes q0 to q1 in unit time, rodgen_integrate(q0, v, 1) = q1 (Pinocchio's
 * difference; a planar joint's angle difference in (-pi, pi]). */
void rodgen_difference(const rodgen_model *m, const double *q0, const double *q1, double *v);

/* The inputs u [nu] of an input law at time t and state y. Returns RODGEN_OK or an error code. */
int rodgen_input_eval(const rodgen_model *m, const rodgen_input *inp, double t, const double *y, const double *p, double *u);

/* Rows of width values at n sample times (strictly increasing), interpolated linearly at t and held
 * constant outside: out [width]. The reference of the tracking input laws and the motion of a mixed
 * problem. */
void rodgen_interpolate(const double *times, const double *values, long n, int width, double t, double *out);

/* A mixed problem at time t and one state: the coordinates pres [npres] (1 to nq - 1 distinct indices)
 * move with the accelerations qdd_p [npres], the others are free. With M q'' + bias = B u split into
 * free (f) and prescribed (p) blocks, solves M_ff qdd_f = B_f u - bias_f - M_fp qdd_p (Cholesky of
 * M_ff) and fills qdd [nq] (free and prescribed) and tau [npres] = M_pf qdd_f + M_pp qdd_p + bias_p -
 * B_p u, the generalized forces the prescribed coordinates need. q, qd [nq]; u [nu] or NULL (zero).
 * Returns RODGEN_OK, RODGEN_ERR_OPTIONS (a bad pres), RODGEN_ERR_NONFINITE_INPUT,
 * RODGEN_ERR_NOT_POSITIVE_DEFINITE (M_ff) or RODGEN_ERR_NONFINITE_RESULT. */
int rodgen_mixed_accelerations(const rodgen_model *m, double t, int npres, const int *pres, const double *q, const double *qd, const double *qdd_p, const double *u, const double *p, double *qdd, double *tau);

/* The RK4 grid of rodgen_mixed_simulate: returns the number of steps K (steps end at t0 + k dt, the
 * last one at t_end), or -1 for bad arguments; times [2K+1] (or NULL) receives every time the
 * integrator evaluates the motion at: t0, then the midpoint and the end of each step. Sampling the
 * prescribed motion at these times makes its interpolation exact at every stage. */
long rodgen_mixed_grid(double t0, double t_end, double dt, double *times);

/* Integrate the free coordinates of a mixed problem with RK4 (fixed step dt, grid of
 * rodgen_mixed_grid) from the free state y0 [2*nfree] = [q_f, qd_f] (free coordinates in model order)
 * at t0 to t_end, the prescribed coordinates following mx, the inputs from the input law inp at the
 * full state (NULL: zero). Writes every step: t_out [capacity], y_out [capacity*2*nq] (full state),
 * qdd_out [capacity*nq], tau_out [capacity*npres] (forces at the prescribed coordinates, as
 * rodgen_mixed_accelerations), u_out [capacity*nu] or NULL (the inputs at the stored states; the input
 * law may be any rodgen_input: constant, table, callback such as a C controller); capacity must hold K
 * + 1 rows. *n_out receives the rows written. Returns RODGEN_OK, RODGEN_ERR_OPTIONS (bad split, grid,
 * capacity or sample times), RODGEN_ERR_NONFINITE_INPUT (samples, y0 or p), or the error that stopped
 * the run (the last row holds the last good state). */
int rodgen_mixed_simulate(const rodgen_model *m, const rodgen_mixed *mx, const rodgen_input *inp, const double *p, double t0, double t_end, double dt, const double *y0, long capacity, double *t_out, double *y_out, double *qdd_out, double *tau_out, double *u_out, long *n_out);

/* Simulate trajectories first, first + stride, ... of the batch b from b->t0 to o->t_end, each as
 * rodgen_simulate does (the same numbers), writing its rows (the rows it does not reach are set to
 * NaN), status and counts; a trajectory whose start state, parameters or inputs are not finite gets
 * RODGEN_ERR_NONFINITE_INPUT and no rows. work [RODGEN_SIM_STORAGE(nq)] doubles is the caller's;
 * concurrent calls on disjoint trajectories (one work array each) are safe, so threads share a batch
 * by first = k, stride = threads. */
void rodgen_simulate_batch(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_batch *b, long first, long stride, double *work);

#ifdef __cplusplus
}
#endif

#endif /* RODGEN_RUNTIME_H */
