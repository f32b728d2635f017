/*
 * rodgen_contact.h: the model-independent C core of walking. Constrained
 * forward dynamics for an active set of constraint blocks, the plastic impact
 * map, and a hybrid simulator (fixed-step RK4 with located events: touchdown,
 * lift-off, friction, limits), all on a `const rodgen_model *`.
 *
 * Pure C99, only <math.h>; no allocation, no globals, reentrant. Scratch
 * memory comes from the caller: every function that needs it takes
 * `void *work` of at least rodgen_contact_work_bytes(model) bytes, aligned as
 * for a double (malloc, or an array of double, gives that). One buffer serves
 * every function here; it must not be shared by two calls running at once.
 * The hybrid simulator keeps its state (the phase) in its own buffer of
 * rodgen_hybrid_work_bytes(model) bytes, which must live as long as the run.
 *
 * Conventions (docs/ARCHITECTURE.md, "Constraints"):
 *   M(q) qdd + bias(q, qd) = B(q) u + J(q)^T lambda
 * with J the rows of the active blocks. q has nq coordinates, qd, qdd, M, J's columns nv
 * (RODGEN_NV(m)): with free, spherical or planar joints (rodgen_model.lie_joints; a floating base) qd
 * is the velocity, not dq/dt, and the hybrid simulator's state [q, qd] moves q by the configuration
 * rate, each quaternion renormalised after every step. lambda of a CONTACT block is
 * [tangential force, normal force] on the foot in the ground frame (the ground
 * reaction; normal >= 0 pushes up; a spatial model's contact [f_t1, f_t2, f_n]); of a LOOP block the force on marker b along
 * x, y (minus that on marker a); of a LIMIT block the generalized force pushing
 * the coordinate back inside (>= 0); of a FRICTION block the friction force (or
 * torque) on its coordinate. LOOP blocks are always active, whatever an
 * active mask says.
 *
 * Dry friction with stiction (FRICTION blocks, one row: the coordinate): with
 * RODGEN_STICK the row is held (lambda: the friction force needed); with
 * RODGEN_SLIDE_PLUS / RODGEN_SLIDE_MINUS the row is free and the kinetic limit
 * mu_k (the model's kinetic_friction) acts as the force +mu_k / -mu_k
 * (SLIDE_PLUS: the coordinate moves towards -, the force pushes +); with 0 the
 * block does nothing. Impacts leave FRICTION blocks out (a bounded force has no
 * impulse).
 */
#ifndef RODGEN_CONTACT_H
#define RODGEN_CONTACT_H

#include "rodgen_model.h"
#include "rodgen_runtime.h"   /* status codes RODGEN_OK, RODGEN_ERR_... (rendered from rodgen's contract) */

#ifdef __cplusplus
extern "C" {
#endif


/* ---- Constrained forward dynamics --------------------------------------- */

/* Drift control (Baumgarte): the active rows are held by
 *     J qdd = -Jdot qd - 2 alpha J qd - beta^2 (c(q) - c_target)
 * so a violation e = c - c_target obeys e'' + 2 alpha e' + beta^2 e = 0
 * (critically damped for alpha = beta, time constant 1/beta). */
typedef struct {
    double alpha;          /* velocity gain, 1/s; default 10 (0: no velocity correction) */
    double beta;           /* position gain, 1/s; default 10 (0: no position correction) */
    double singular_tol;   /* rows are dependent when a Cholesky pivot of S <= singular_tol * max diag(S)
                              (then the least-norm solve, see rodgen_constrained_dynamics); default 1e-10 */
} rodgen_cfd_options;

void rodgen_cfd_defaults(rodgen_cfd_options *o);

/* Bytes of scratch memory for rodgen_constrained_dynamics and rodgen_impact. */
long rodgen_contact_work_bytes(const rodgen_model *m);

/* Values of an active mask (RODGEN_STICK ... in rodgen_runtime.h, from rodgen's contract): 0 inactive,
 * RODGEN_STICK active (a contact sticks), and for a contact sliding with Coulomb friction: its gap is held
 * and its tangential force is +mu * normal (RODGEN_SLIDE_PLUS; the foot slides towards -t) or -mu * normal
 * (RODGEN_SLIDE_MINUS) along the one tangent of a 2-row contact, or on the cone's edge against its motion in
 * the plane for a 3-row contact (RODGEN_SLIDE).
 * A 3-row contact sliding in the ground plane: its normal row is held and its tangential force is
 * -mu * normal * s/|s| (the Euclidean cone's edge), s = v_t (the tangential velocity J_t qd) while
 * |v_t| >= 4e, and below that s = v_t + e (1 - |v_t|/(4e))^2 d, turned towards d. d (a unit direction:
 * the sliding motion's) and e (a speed, at least RODGEN_SLIDE_REST) are the direction and length of the
 * contact's two tangential entries of `target` (the hybrid simulator keeps there the direction of the
 * sticking force it could not get at a slip, re-anchored on v_t/|v_t| after each step of a turning path,
 * with e = mu f_n D dt, D = trace(J_t M^-1 J_t^T)/2: the speed below which explicit RK4 could not follow
 * the friction's turn of the motion), or v_t/|v_t| and RODGEN_SLIDE_REST when no target is given (then
 * v_t = 0 is RODGEN_ERR_OPTIONS). A motion that reverses along d (v_t . d < 0, past the stop in a trial
 * step) has the component of s along d mirrored (the force stays against d and continuous through the
 * stop, which the hybrid simulator locates as v_t . d = 0). A 2-row (planar) contact slides with
 * RODGEN_SLIDE_PLUS / RODGEN_SLIDE_MINUS, a 3-row one only with RODGEN_SLIDE. */
#define RODGEN_SLIDE_REST 1e-6

/* qdd [nv] and lambda [nrows] (may be NULL; 0 in the rows of inactive blocks) at time t (the time of
 * the force elements' expressions; any value for a model without them) for the blocks with active[i] != 0 (active may be NULL: none but the loops).
 * u [nu] (NULL when nu == 0), p [np] (NULL: the model's defaults).
 * target [nrows]: c_target of every row (NULL: a contact's tangential row holds
 * its current position, every other row 0). o NULL: defaults.
 * Factorisation: with the model's constrained_solve (rodgen_model.h) and no
 * contact sliding, the generated code solves for qdd and lambda of the rows of
 * the active blocks (M and J M^-1 J^T of those rows factorised in it); the
 * pivot tests below are made on the pivots it returns. Else, with the model's
 * constrained_terms, M is factorised in the generated code, which also gives
 * M^-1 J^T and J M^-1 J^T of every row; the rows of the active blocks are
 * taken from them. Without either:
 * M = L L^T (Cholesky), Y = L^-1 J_A^T, S = Y^T Y = J M^-1 J^T (range space).
 * S is factorised (L D L^T or Cholesky) with the pivot test above.
 * Dependent rows (a pivot fails the test on any path: two contact points of one rigid body, four corners of
 * a sole, a loop closed twice) have a unique motion but not unique forces: the solve falls back to the path
 * without the generated routines and takes the least-norm lambda (that of the least-norm solution of the
 * whole KKT system), by Cholesky with symmetric pivoting of S stopped at the pivot test; rows that
 * contradict each other (no motion holds them all: the residual of S lambda = rhs above 1e-8 of its scale)
 * remain RODGEN_ERR_SINGULAR_CONSTRAINTS. With
 * sliding contacts S = J M^-1 W^T (W: the force directions, J_n + coef J_t for a
 * sliding contact) is not symmetric and is factorised by LU with partial
 * pivoting (singular when a pivot <= singular_tol * max |S|). A sliding contact
 * needs the model's constraint_friction and mu >= 0, else RODGEN_ERR_OPTIONS.
 * Returns RODGEN_OK, RODGEN_ERR_NONFINITE_INPUT, RODGEN_ERR_NOT_POSITIVE_DEFINITE,
 * RODGEN_ERR_SINGULAR_CONSTRAINTS or RODGEN_ERR_NONFINITE_RESULT. */
int rodgen_constrained_dynamics(const rodgen_model *m, double t, const double *p, const double *q,
    const double *qd, const double *u, const int *active, const double *target, const rodgen_cfd_options *o, double *qdd,
    double *lambda, void *work);

/* ---- Impact map --------------------------------------------------------- */

/* Plastic impact onto the blocks with active[i] != 0 (the active set after the
 * impact, the touching contacts or limits included):
 *     M (qd_plus - qd_minus) = J_A^T Lambda,   J_A qd_plus = 0.
 * Active-set rule: while a unilateral block (contact, limit) of A has a pulling
 * normal impulse (Lambda_n < -1e-12 max|Lambda|), the block with the most
 * negative one is released and the impact solved again.
 * Outputs: qd_plus [nv], impulse [nrows] (0 outside A; may be NULL),
 * active_after [nconstraints] (A after the releases; may be NULL), energy_loss
 * (kinetic energy before minus after, >= 0; may be NULL). Dependent rows take the least-norm impulses (as
 * rodgen_constrained_dynamics its forces). Returns as rodgen_constrained_dynamics. */
int rodgen_impact(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
    const int *active, const rodgen_cfd_options *o, double *qd_plus, double *impulse, int *active_after,
    double *energy_loss, void *work);

/* ---- Hybrid simulation -------------------------------------------------- */

/* Kinds of event (RODGEN_EVENT_TOUCHDOWN, _LIFTOFF, _SLIP, _LIMIT, _LIMIT_RELEASE, _STICK, _TIP) and what a
 * slip does (RODGEN_SLIP_STOP, _CONTINUE, _SLIDE: see below) are in rodgen_runtime.h, rendered from rodgen's
 * contract with their names in Python. */

typedef struct {
    double t;              /* time */
    int kind;              /* RODGEN_EVENT_... */
    int block;             /* index of the constraint block */
    double impulse[2];     /* TOUCHDOWN, LIMIT: the block's impulse rows (contact: tangential, normal; a
                              3-row contact: the Euclidean norm of its two tangential rows, normal);
                              SLIP: the block's force (or impulse at an impact), likewise; TIP: the centre of
                              pressure (x, y) in the flat foot's tangential axes; otherwise 0 */
    double energy_loss;    /* TOUCHDOWN, LIMIT: kinetic energy lost in the impact; otherwise 0 */
} rodgen_event;

/* Inputs u [nu] at time t and state y = [q, qd]; returns 0 (else the run stops
 * with RODGEN_ERR_INPUT_FAILED). NULL: zero inputs. The same function type as
 * the runtime's rodgen_input_fn (its input laws plug in). */
typedef int (*rodgen_hybrid_input_fn)(void *context, double t, const double *y, double *u);

/* Friction: mu of a contact from the model's constraint_friction; a contact
 * with mu < 0 (or a model without constraint_friction) has no friction limit. */
typedef struct {
    double t_end;          /* end time */
    double dt;             /* RK4 step; steps end on t0 + k dt (and at events, and at t_end) */
    long store_every;      /* store every k-th grid step (1: all); first, last and event states always */
    double event_tol;      /* an event is located in time to within event_tol (s); default 1e-10 */
    double arm_gap;        /* an inactive unilateral block is armed once its row exceeds this; default 1e-6 */
    double check_tol;      /* initial state: tolerance of |c| of held rows, of a gap below 0; default 1e-8 */
    long max_events;       /* stop with RODGEN_ERR_TOO_MANY_EVENTS after this many (0: no limit) */
    int on_slip;           /* RODGEN_SLIP_STOP (default), RODGEN_SLIP_CONTINUE or RODGEN_SLIP_SLIDE */
    rodgen_cfd_options cfd;   /* drift control and the singularity test */
    int hold;              /* 1: zero-order hold, the input function is called once at the start of each
                              step and right after each jump, its inputs held until the next sample (the
                              phase is checked again when they change); 0 (default): at every stage */
} rodgen_hybrid_options;

/* Defaults for everything but t_end and dt (set to 0) ; store_every = 1. */
void rodgen_hybrid_defaults(rodgen_hybrid_options *o);

/* The run's state. Fields are read-only for the caller. */
typedef struct {
    const rodgen_model *model;
    const double *p;
    rodgen_hybrid_input_fn input;
    void *context;
    double t0;             /* start time */
    double t;              /* time of y */
    double *y;             /* [nq + nv] state [q, qd] */
    double *target;        /* [nrows] c_target of the rows (contact: touchdown position, 0; a 3-row contact
                              sliding: its sliding direction times its rest speed in the tangential rows) */
    int *active;           /* [nconstraints] the phase: 0 inactive, RODGEN_STICK, RODGEN_SLIDE_PLUS/MINUS,
                              RODGEN_SLIDE */
    int *armed;            /* [nconstraints] inactive unilateral blocks that may touch down */
    int *slipping;         /* [nconstraints] a slip event was logged and the contact is still outside */
    long steps;            /* completed grid steps */
    long events;           /* events so far */
    long evaluations;      /* evaluations of the constrained dynamics */
    long responses;        /* hold: evaluations replaced by the model's constrained_response (a new sample at
                              the state of the last evaluation) */
    int block;             /* the block of the last error (INITIAL_STATE, FRICTION_CONE, EVENT_NOT_LOCATED), -1 */
    int stored;            /* y has been written to the outputs */
    int settled;           /* the phase has been checked for pulling forces at t */
    int quiet_jumps;       /* jumps since time last advanced by more than event_tol */
    double last_jump;      /* time of the last jump */
    int have_g;            /* g holds the event functions at (t, y) */
    double *g;             /* [2 nconstraints] event functions at (t, y) */
    double *mu;            /* [nconstraints] friction coefficients (inf: none) */
    int held;              /* hold: the held inputs were sampled at (t, y) */
    void *scratch;         /* the caller's buffer, past the state arrays */
} rodgen_hybrid_state;

/* Bytes of the buffer of a run (state and scratch). */
long rodgen_hybrid_work_bytes(const rodgen_model *m);

/* Start a run at t0 from y0 [nq + nv] in the phase active0 [nconstraints]
 * (nonzero: active, a contact sticking; with RODGEN_SLIP_SLIDE a 2-row contact may
 * start with RODGEN_SLIDE_PLUS or RODGEN_SLIDE_MINUS, a 3-row one with RODGEN_SLIDE in the direction of
 * its tangential velocity, which must not be 0; NULL: none but the loops). disarmed0 [nconstraints]
 * (NULL: none): inactive blocks that are allowed below their bound at the
 * start (they are armed once above it, see below).
 * Checks the initial state, returning RODGEN_ERR_INITIAL_STATE with
 * s->block set when an active block or a loop has |c - target| > check_tol
 * (contact: |gap| > check_tol; loop: either row), or an inactive block that is
 * not disarmed lies below its bound by more than check_tol; RODGEN_ERR_OPTIONS
 * for a model without constraint functions but with blocks, or bad options.
 *
 * Arming rule: an inactive contact or limit can touch down only once armed;
 * it is armed at the end of a step where its gap (limit: its row) exceeds
 * o->arm_gap. A block that starts inactive with a gap below arm_gap, or
 * is left inactive by an impact it took no part in, is disarmed: before it
 * has risen, a foot passing under the ground (the compass gait's scuffing at
 * mid-stance) is ignored, as is one an impact releases with a separating
 * velocity still positive half a step on (v_n + a_n dt / 2). One the impact
 * leaves at rest at that resolution stays held. A block released by a
 * pulling normal force touches down again as soon as it is at or below its
 * bound moving into it (faster than RODGEN_SLIDE_REST half a step on); a
 * pulling block that released would move into its bound within a step rests
 * (held) until that is no longer so (docs/simulation.md, "Arming"). */
int rodgen_hybrid_start(rodgen_hybrid_state *s, const rodgen_model *m, const double *p,
    rodgen_hybrid_input_fn input, void *context, const rodgen_hybrid_options *o, double t0, const double *y0,
    const int *active0, const int *disarmed0, void *work);

/* Integrate towards o->t_end by RK4 on the constrained dynamics of the phase.
 * Events are tested at the end of each step; a step where an event function
 * changes sign is integrated again from its start (one RK4 step to the trial
 * time) while the root is bracketed by the Illinois method (with bisection
 * safeguards) down to o->event_tol; the state at the late end of the bracket
 * takes the jump:
 *   touchdown / limit: gap (row) of an armed inactive block < 0 -> impact with
 *     the block added (every block below its bound at that time together),
 *     the active-set rule of rodgen_impact; the contact holds its tangential
 *     position at touchdown and gap 0 (Baumgarte target);
 *   lift-off / limit release: the normal force of an active block < 0 -> the
 *     block is released (most negative first, again until none pulls);
 *   slip: mu * normal - |tangential| < 0 on a sticking contact (|.|: the Euclidean norm of a 3-row
 *     contact's two tangential rows, the friction cone) -> logged, then
 *     o->on_slip; with RODGEN_SLIP_SLIDE the contact slides, its friction force
 *     in the direction of the sticking force it could not get (a 3-row contact: RODGEN_SLIDE, that
 *     direction its reference; after each step of a turning path the reference is re-anchored on the
 *     tangential velocity);
 *   flat foot (a 6-row CONTACT: a point's rows, then the orientation): touchdown, lift-off and slip as
 *     above on its point's rows (its impact on all six, its orientation held where it touched); it does not
 *     slide (its slip stops the run with RODGEN_ERR_FRICTION_CONE also with RODGEN_SLIP_SLIDE); with a sole
 *     (rodgen_constraint.sole) its centre of pressure (-m_t2/f_n, m_t1/f_n) leaving the sole -> tip
 *     (RODGEN_EVENT_TIP), the run stops with RODGEN_ERR_TIPPED (s->block: the foot);
 *   stick (RODGEN_SLIP_SLIDE): the tangential velocity of a sliding contact
 *     turns (a 3-row contact: its component along the reference direction) -> it sticks where it is
 *     (and slides again at once if it must).
 *   dry friction (FRICTION blocks, whatever on_slip says): a sticking block
 *     whose force exceeds its static limit (static - |lambda| < 0) slips
 *     (RODGEN_EVENT_SLIP, impulse[0] the force that held it), its kinetic force
 *     in the direction of that force; a slipping block whose rate turns sticks
 *     where it is (RODGEN_EVENT_STICK) and slips again at once if the force to
 *     hold it exceeds the static limit. A block starts as active0 says (STICK,
 *     SLIDE_PLUS or SLIDE_MINUS), else sticking when its rate is at rest
 *     (|rate| <= 1e-9) and slipping against its rate otherwise; after an
 *     impact (which leaves it out) it slips against its new rate, or sticks
 *     at rest. While a LIMIT block on the same coordinate (its Jacobian row
 *     equal up to sign at the start) is active, the FRICTION block idles
 *     (phase 0: the stop holds the coordinate); when the limit releases it
 *     takes its phase from the rate again.
 * Impacts hold every sticking contact; with RODGEN_SLIP_SLIDE they are Coulomb impacts: a sliding contact
 * slides through the impact (its tangential impulse mu times its normal impulse, against its tangential
 * velocity before it), and so does a touching contact whose sticking impulse would leave the cone (the
 * impact solved again with it sliding); after the impact such a contact slides on the way it moves, or
 * sticks where it is if its tangential velocity stopped or turned.
 * Rows written: t_out [capacity], y_out [capacity*(nq+nv)],
 * lambda_out [capacity*nrows] (0 for inactive rows), active_out
 * [capacity*nconstraints] (the codes of s->active), u_out [capacity*nu]; all
 * but t_out and y_out may be NULL; capacity >= 3. An event writes the state
 * before and after its jump (same time). events_out [event_capacity] (may be
 * NULL: not logged; else event_capacity >= 3 nconstraints + 2, the most one
 * jump can log). *n_out, *n_events: rows and events written by this call.
 * Returns RODGEN_OK at t_end, RODGEN_SIM_FULL when rows or the event log are
 * full (call again with fresh arrays: the run continues), or an error (the
 * state where it stopped is the last row; start a new run to go on). */
int rodgen_hybrid_simulate(const rodgen_hybrid_options *o, rodgen_hybrid_state *s, long capacity,
    double *t_out, double *y_out, double *lambda_out, int *active_out, double *u_out, long *n_out,
    long event_capacity, rodgen_event *events_out, long *n_events);

/* ---- Model Exchange: the importer integrates the phase's dynamics -------- */

/* A run started with rodgen_hybrid_start (o->hold 0) can be driven by another solver (an FMU's importer):
 * it integrates y' = rodgen_hybrid_derivatives in the current phase, watches the sign of the event
 * indicators and calls rodgen_hybrid_event where one changes sign. s->y and s->t follow only the events;
 * the caller holds the state it integrates. */

/* Drop the memo of the last evaluation (after the inputs or parameters changed under the run); the next
 * rodgen_hybrid_simulate checks the phase first (a block that pulls is released, a slip handled; a released block
 * left below its bound moving into it touches at once) as at the start. */
void rodgen_hybrid_forget(rodgen_hybrid_state *s);

/* dy [nq + nv] = [dq/dt, qdd] and lambda [nrows] (may be NULL) at (t, y) in the current phase. */
int rodgen_hybrid_derivatives(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, double t, const double *y,
    double *dy, double *lambda);

/* The event indicators z [2 nconstraints] at (t, y), continuous within a phase, an event where one changes
 * sign: the event functions of rodgen_hybrid_simulate (an armed inactive block's gap, an active block's
 * normal force, a sticking contact's friction margin, a sliding one's speed; 1 where none applies), and for
 * an inactive unilateral block not armed its gap minus o->arm_gap (it is armed when that turns >= 0), for
 * a contact whose slip was logged its friction margin (its latch is released when that turns >= 0). */
int rodgen_hybrid_indicators(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, double t, const double *y,
    double *z);

/* The event at (t, y) [nq + nv]: arms the blocks risen to o->arm_gap, releases slip latches, then the jump of
 * rodgen_hybrid_simulate (an armed block at or below its bound touches: impact; pulling blocks released;
 * slips, sticks). y receives the state after the jump (*changed: 1 if an impact changed it; may be NULL).
 * Returns as rodgen_hybrid_simulate (RODGEN_ERR_FRICTION_CONE with on_slip stop, RODGEN_ERR_TOO_MANY_EVENTS). */
int rodgen_hybrid_event(rodgen_hybrid_state *s, const rodgen_hybrid_options *o, double t, double *y, int *changed);

/* The run's state as bytes (rodgen_hybrid_save_bytes(m) of them, any alignment of a double): saved, and
 * restored into a run of the same model (its buffer `work` of rodgen_hybrid_work_bytes, p, input and
 * context those of the run that goes on). */
long rodgen_hybrid_save_bytes(const rodgen_model *m);
void rodgen_hybrid_save(const rodgen_hybrid_state *s, void *buf);
void rodgen_hybrid_restore(rodgen_hybrid_state *s, const rodgen_model *m, const double *p,
    rodgen_hybrid_input_fn input, void *context, const void *buf, void *work);

#ifdef __cplusplus
}
#endif

#endif /* RODGEN_CONTACT_H */
