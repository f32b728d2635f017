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
#define RODGEN_ERR_SINGULAR_CONSTRAINTS 11   /* the active constraint set is singular (dependent constraint rows) */
#define RODGEN_ERR_EVENT_NOT_LOCATED 12   /* an event could not be located to tolerance */
#define RODGEN_ERR_FRICTION_CONE 13   /* a contact force left its friction cone */
#define RODGEN_ERR_INITIAL_STATE 14   /* the initial state violates a constraint (a contact point below the ground or a loop not closed) */
#define RODGEN_ERR_TOO_MANY_EVENTS 15   /* too many events in one step or run */

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
#define RODGEN_INPUT_PD 2   /* times, values [n*3*nq], kp, kd [nu], u: feedforward or NULL */
#define RODGEN_INPUT_COMPUTED_TORQUE 3   /* times, values [n*3*nq], kp, kd [nq] */
#define RODGEN_INPUT_CALLBACK 4   /* fn(context, t, y, u) fills u[nu], returns 0 (else: failed) */

/* Doubles of the caller's storage of a simulation of nq coordinates (y and f of rodgen_sim_state). */
#define RODGEN_SIM_STORAGE(nq) (4 * (nq))

/* rodgen_input_fn: fills u [nu] at (t, y); returns 0, anything else is a failure. */
typedef int (*rodgen_input_fn)(void *context, double t, const double *y, double *u);

/* An input law, evaluated at every stage of the integrators. */
typedef struct {
    int kind;                    /* RODGEN_INPUT_... */
    const double *u;             /* CONSTANT: [nu] inputs; PD: [nu] feedforward; NULL for none */
    long n;                      /* number of samples (TABLE, PD, COMPUTED_TORQUE), at least 1 */
    const double *times;         /* [n] sample times, strictly increasing */
    const double *values;        /* TABLE: [n*nu]; PD, COMPUTED_TORQUE: [n*3*nq] rows q_ref, qd_ref, qdd_ref */
    const double *kp;            /* PD: [nu]; COMPUTED_TORQUE: [nq] */
    const double *kd;            /* PD: [nu]; COMPUTED_TORQUE: [nq] */
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
} rodgen_sim_options;

/* The state of a simulation; y and f point into the caller's storage (rodgen_sim_start). */
typedef struct {
    double t0;                   /* start time */
    double t;                    /* time of the state y */
    double *y;                   /* [2*nq] state [q, qd] */
    double *f;                   /* [2*nq] its derivative (valid when have_f) */
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

/* Cholesky factorisation A = L L^T in place (A n x n, row-major, symmetric; L in its lower triangle).
 * Returns RODGEN_OK, or RODGEN_ERR_NOT_POSITIVE_DEFINITE when a pivot falls below RODGEN_PIVOT_RTOL
 * times its diagonal entry. */
int rodgen_cholesky(double *A, int n);

/* Solve L L^T x = b in place (b is overwritten by x), L from rodgen_cholesky. */
void rodgen_cholesky_solve(const double *L, double *b, int n);

/* Start a simulation at time t0 from the state y0 [2*nq]; storage [RODGEN_SIM_STORAGE(nq)] doubles,
 * owned by the caller, holds s->y and s->f for the life of the simulation. */
void rodgen_sim_start(rodgen_sim_state *s, const rodgen_model *m, double t0, const double *y0, double *storage);

/* Integrate from s->t towards o->t_end, writing at most capacity rows: t_out [capacity], y_out
 * [capacity*2*nq], u_out [capacity*nu] (the inputs at the stored states). *n_out receives the number
 * of rows written. Returns RODGEN_OK at t_end, RODGEN_SIM_FULL when the arrays are full (call again
 * with fresh arrays), or an error code; on an error the state holds the last good step (written as the
 * last row). */
int rodgen_simulate(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp, const double *p, rodgen_sim_state *s, long capacity, double *t_out, double *y_out, double *u_out, long *n_out);

/* The inputs u [nu] of an input law at time t and state y. Returns RODGEN_OK or an error code. */
int rodgen_input_eval(const rodgen_model *m, const rodgen_input *inp, double t, const double *y, const double *p, double *u);

#ifdef __cplusplus
}
#endif

#endif /* RODGEN_RUNTIME_H */
