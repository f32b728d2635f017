/*
 * rodgen_fmu_core.c: an FMU's model, independent of the FMI version (see rodgen_fmu_core.h). Pure C99,
 * no globals: instances share nothing.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rodgen_fmu_core.h"

static void *rodgen_fmu_alloc(rodgen_fmu *f, size_t n)
{
    return f->alloc(n ? n : 1, sizeof(double));
}

void rodgen_fmu_message(const rodgen_fmu *f, int status, const char *message)
{
    if (f->log != NULL) {
        f->log(f, status, status == RODGEN_FMU_OK ? "logAll" : "logStatusError", message);
    }
}

/* The model's inputs of this instance: the FMU's inputs (RODGEN_FMU_CONTROL 0); the runtime's PD law
 * (RODGEN_INPUT_PD, 1) toward the set point in the controller's parameters [kp (nu), kd (nu), q_ref (nq),
 * qd_ref (nv), qdd_ref (nv)] with the FMU's inputs as its feedforward; or the user's C controller
 * (rodgen.CController, 2) with its parameters and memory, the FMU's inputs added to its output. */
#if RODGEN_FMU_CONTROL == 2
int RODGEN_FMU_CONTROLLER(void *context, double t, const double *y, double *u);

static int rodgen_fmu_input_fn(void *context, double t, const double *y, double *u)
{
    rodgen_fmu *f = (rodgen_fmu *)context;
    int i;
    if (RODGEN_FMU_CONTROLLER(&f->ctl, t, y, u) != 0) {
        return 1;
    }
    for (i = 0; i < f->m->nu; ++i) {
        u[i] += f->u[i];
    }
    return 0;
}
#endif

static void rodgen_fmu_input(rodgen_fmu *f, rodgen_input *inp)
{
    memset(inp, 0, sizeof(*inp));
#if RODGEN_FMU_CONTROL == 1
    inp->kind = RODGEN_INPUT_PD;
    inp->u = f->u;
    inp->n = 1;
    inp->times = &f->t_ref;
    inp->kp = f->c;
    inp->kd = f->c + f->m->nu;
    inp->values = f->c + 2 * f->m->nu;
#elif RODGEN_FMU_CONTROL == 2
    inp->kind = RODGEN_INPUT_CALLBACK;
    inp->fn = rodgen_fmu_input_fn;
    inp->context = f;
    f->ctl.p = f->p;
#else
    inp->kind = RODGEN_INPUT_CONSTANT;
    inp->u = f->u;
#endif
}

#if RODGEN_FMU_HYBRID
/* Whether a hybrid run's status ends it as robot.simulate ends (the importer is asked to terminate; the state
 * is where it stopped) rather than failing: a flat foot's tip, a slip with on_slip stop, too many events. Logs
 * why, naming the block. */
static int rodgen_fmu_run_ends(rodgen_fmu *f, int status)
{
    char text[200];
    const int b = f->hs.block;
    const char *name = b >= 0 && b < f->m->nconstraints ? f->m->constraints[b].name : "?";
    if (status == RODGEN_ERR_TIPPED) {
        snprintf(text, sizeof text, "the flat foot '%s' tipped at t = %.17g (its centre of pressure left its "
                 "sole): the run ends", name, f->hs.t);
    } else if (status == RODGEN_ERR_FRICTION_CONE) {
        snprintf(text, sizeof text, "the force of contact '%s' left its friction cone at t = %.17g (on_slip "
                 "'stop'): the run ends", name, f->hs.t);
    } else if (status == RODGEN_ERR_TOO_MANY_EVENTS) {
        snprintf(text, sizeof text, "too many events (max_events) at t = %.17g: the run ends", f->hs.t);
    } else {
        return 0;
    }
    rodgen_fmu_message(f, RODGEN_FMU_WARNING, text);
    return 1;
}

static int rodgen_fmu_hybrid_input(void *context, double t, const double *y, double *u)
{
    rodgen_fmu *f = (rodgen_fmu *)context;
    rodgen_input inp;
    rodgen_fmu_input(f, &inp);
    return rodgen_input_eval(f->m, &inp, t, y, f->p, u);
}

/* The hybrid run from (t, y) in the FMU's initial phase, unless it runs already. Its RK4 step (Co-Simulation)
 * is set by the first DoStep: fmu.max_step, else that communication step's size. */
static int rodgen_fmu_hybrid_begin(rodgen_fmu *f)
{
    static const int active0[RODGEN_FMU_NBLOCKS] = RODGEN_FMU_ACTIVE0;
    static const int disarmed0[RODGEN_FMU_NBLOCKS] = RODGEN_FMU_DISARMED0;
    int status;
    if (f->hstarted) {
        return RODGEN_OK;
    }
    rodgen_hybrid_defaults(&f->ho);
    f->ho.t_end = f->t;
    f->ho.dt = 0.0;
    f->ho.store_every = 1;
    if (RODGEN_FMU_EVENT_TOL > 0.0) {
        f->ho.event_tol = RODGEN_FMU_EVENT_TOL;
    }
    if (RODGEN_FMU_ARM_GAP > 0.0) {
        f->ho.arm_gap = RODGEN_FMU_ARM_GAP;
    }
    f->ho.on_slip = RODGEN_FMU_ON_SLIP;
    f->ho.max_events = RODGEN_FMU_MAX_EVENTS;
    status = rodgen_hybrid_start(&f->hs, f->m, f->p, f->m->nu > 0 ? rodgen_fmu_hybrid_input : NULL, f, &f->ho,
                                 f->t, f->y, active0, disarmed0, f->hwork);
    f->status = status;
    if (status != RODGEN_OK) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the hybrid simulation could not start: a contact point below "
                                                "the ground, an active block not closed, or bad options");
        return status;
    }
    f->hstarted = 1;
    return RODGEN_OK;
}
#endif

/* The state at which the model is evaluated: y, with the quaternion of each free or spherical joint divided
 * by its norm (in f->yq). The configuration rate 1/2 quat (x) (w, 0) is orthogonal to quat, so the norm of a
 * quaternion is constant along the exact flow of Model Exchange's states; an external solver's error moves it
 * by its tolerance, which the dynamics do not see; the event update puts the states back onto the unit
 * sphere (rodgen_fmu_event_update). */
static const double *rodgen_fmu_state(rodgen_fmu *f)
{
    int i;
    if (f->m->nlie == 0) {
        return f->y;
    }
    for (i = 0; i < RODGEN_FMU_NY(f); ++i) {
        f->yq[i] = f->y[i];
    }
    rodgen_normalize(f->m, f->yq);
    return f->yq;
}

/* dy (and lambda) at (t, y): the rhs with the input law, or the constrained dynamics of the hybrid run's phase. */
static int rodgen_fmu_derivatives(rodgen_fmu *f)
{
    if (!f->fresh) {
        const double *y = rodgen_fmu_state(f);
        int s;
#if RODGEN_FMU_HYBRID
        s = rodgen_fmu_hybrid_begin(f);
        if (s == RODGEN_OK) {
            s = rodgen_hybrid_derivatives(&f->hs, &f->ho, f->t, y, f->dy, f->lam);
        }
#else
        double u[f->m->nu ? f->m->nu : 1];
        rodgen_input inp;
        rodgen_fmu_input(f, &inp);
        s = rodgen_input_eval(f->m, &inp, f->t, y, f->p, u);
        if (s == RODGEN_OK) {
            s = f->m->rhs(f->t, y, u, f->p, f->dy);
        }
#endif
        f->status = s;
        if (s != RODGEN_OK) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the model's dynamics failed (mass matrix not positive "
                                                    "definite, singular constraints, or a value not finite)");
            return s;
        }
        f->fresh = 1;
    }
    return RODGEN_OK;
}

static void rodgen_fmu_outputs_at(rodgen_fmu *f, const double *y, double *out)
{
    const int np = 2 * f->m->npoints + 3 * RODGEN_FMU_NFRAMES;
    double e[2];
    if (f->m->npoints > 0) {
        f->m->points(y, f->p, out);
    }
#if RODGEN_FMU_NFRAMES > 0
    {
        double r[12 * RODGEN_FMU_NFRAMES];
        int k;
        RODGEN_FMU_FRAMES(y, f->p, r);
        for (k = 0; k < RODGEN_FMU_NFRAMES; ++k) {
            out[2 * f->m->npoints + 3 * k] = r[12 * k];
            out[2 * f->m->npoints + 3 * k + 1] = r[12 * k + 1];
            out[2 * f->m->npoints + 3 * k + 2] = r[12 * k + 2];
        }
    }
#endif
    f->m->energy(y, y + f->m->nq, f->p, e);
    out[np] = e[0];
    out[np + 1] = e[1];
    out[np + 2] = e[0] + e[1];
}

void rodgen_fmu_reset(rodgen_fmu *f)
{
    const rodgen_model *m = f->m;
    int i;
    static const double ctrl[RODGEN_FMU_NCTRL > 0 ? RODGEN_FMU_NCTRL : 1] = RODGEN_FMU_CTRL_START;
    static const double mem[RODGEN_FMU_NSTATE > 0 ? RODGEN_FMU_NSTATE : 1] = RODGEN_FMU_STATE_START;
    f->t = 0.0;
    for (i = 0; i < m->nq; ++i) {
        f->y[i] = m->initial_q[i];
    }
    for (i = m->nq; i < RODGEN_NY(m); ++i) {
        f->y[i] = 0.0;
    }
    for (i = 0; i < f->m->nu; ++i) {
        f->u[i] = 0.0;
    }
    for (i = 0; i < f->m->np; ++i) {
        f->p[i] = m->default_p[i];
    }
    for (i = 0; i < f->nc; ++i) {
        f->c[i] = ctrl[i];
    }
    for (i = 0; i < RODGEN_FMU_NSTATE; ++i) {
        f->mem[i] = mem[i];
    }
    f->t_ref = 0.0;
    f->ctl.model = m;
    f->ctl.p = f->p;
    f->ctl.params = f->c;
    f->ctl.nparams = f->nc;
    f->ctl.state = f->mem;
    f->ctl.nstate = RODGEN_FMU_NSTATE;
    f->max_step = 0.0;
    f->terminated = 0;
    f->fresh = 0;
#if RODGEN_FMU_HYBRID
    f->hstarted = 0;
#endif
    f->status = RODGEN_OK;
}

rodgen_fmu *rodgen_fmu_new(const char *name, int cs, void *(*alloc)(size_t, size_t), void (*release)(void *),
                           rodgen_fmu_log_fn log, void *env, void (*logger)(void))
{
    const rodgen_model *m = RODGEN_FMU_TABLE();
    rodgen_fmu *f = (rodgen_fmu *)alloc(1, sizeof(rodgen_fmu));
    if (f == NULL) {
        return NULL;
    }
    f->m = m;
    f->alloc = alloc;
    f->release = release;
    f->log = log;
    f->env = env;
    f->logger = logger;
    f->name = name;
    f->cs = cs;
    f->nc = RODGEN_FMU_NCTRL;
    f->nout = 2 * m->npoints + 3 * RODGEN_FMU_NFRAMES + 3;
    f->nlam = RODGEN_FMU_HYBRID ? m->nrows : 0;
    f->nz = RODGEN_FMU_HYBRID ? 2 * m->nconstraints : 0;
    f->nvr = RODGEN_FMU_VR_OUT(f) + f->nout + f->nlam + f->nz + 2;
    f->y = (double *)rodgen_fmu_alloc(f, (size_t)RODGEN_NY(m));
    f->dy = (double *)rodgen_fmu_alloc(f, (size_t)RODGEN_NY(m));
    f->yq = (double *)rodgen_fmu_alloc(f, (size_t)RODGEN_NY(m));
    f->lam = (double *)rodgen_fmu_alloc(f, (size_t)f->nlam);
    f->u = (double *)rodgen_fmu_alloc(f, (size_t)m->nu);
    f->p = (double *)rodgen_fmu_alloc(f, (size_t)m->np);
    f->c = (double *)rodgen_fmu_alloc(f, (size_t)f->nc);
    f->out = (double *)rodgen_fmu_alloc(f, (size_t)(2 * f->nout));
    f->work = (double *)rodgen_fmu_alloc(f, (size_t)(RODGEN_SIM_STORAGE(m->nq) + 4 * (1 + 2 * m->nq + m->nu)
                                                     + 5 * m->nq * m->nq + m->nq * m->nu + f->nz));
    f->mem = (double *)rodgen_fmu_alloc(f, (size_t)RODGEN_FMU_NSTATE);
#if RODGEN_FMU_HYBRID
    f->hwork = (double *)rodgen_fmu_alloc(f, (size_t)(rodgen_hybrid_work_bytes(m) / (long)sizeof(double) + 2));
    if (!f->hwork) {
        rodgen_fmu_free(f);
        return NULL;
    }
#endif
    if (!f->mem || !f->y || !f->dy || !f->yq || !f->lam || !f->u || !f->p || !f->c || !f->out || !f->work) {
        rodgen_fmu_free(f);
        return NULL;
    }
    rodgen_fmu_reset(f);
    return f;
}

void rodgen_fmu_free(rodgen_fmu *f)
{
    if (f == NULL) {
        return;
    }
    f->release(f->y);
    f->release(f->dy);
    f->release(f->yq);
    f->release(f->lam);
    f->release(f->u);
    f->release(f->p);
    f->release(f->c);
    f->release(f->out);
    f->release(f->work);
    f->release(f->mem);
#if RODGEN_FMU_HYBRID
    f->release(f->hwork);
#endif
    f->release(f);
}

void rodgen_fmu_set_time(rodgen_fmu *f, double t)
{
    f->t = t;
    f->fresh = 0;
}

/* The input law is evaluated at the start state once, as rodgen_simulate does when it stores its first row
 * (a C controller's memory sees the same calls: the start, every RK4 stage, the end of every step). */
int rodgen_fmu_exit_initialization(rodgen_fmu *f)
{
    double u[f->m->nu ? f->m->nu : 1];
    rodgen_input inp;
    rodgen_fmu_input(f, &inp);
    if (rodgen_input_eval(f->m, &inp, f->t, f->y, f->p, u) != RODGEN_OK) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the input law failed at the start state");
        return RODGEN_FMU_ERROR;
    }
    return RODGEN_FMU_OK;
}

int rodgen_fmu_get(rodgen_fmu *f, const unsigned int vr[], size_t nvr, double value[])
{
    const unsigned ny = (unsigned)RODGEN_FMU_NY(f), u0 = (unsigned)RODGEN_FMU_VR_U(f);
    const unsigned p0 = (unsigned)RODGEN_FMU_VR_P(f), c0 = (unsigned)RODGEN_FMU_VR_CTRL(f);
    const unsigned out0 = (unsigned)RODGEN_FMU_VR_OUT(f), lam0 = (unsigned)RODGEN_FMU_VR_LAM(f);
    const unsigned z0 = (unsigned)RODGEN_FMU_VR_Z(f);
    int outputs = 0, indicators = 0;
    size_t i;
    for (i = 0; i < nvr; ++i) {
        unsigned r = vr[i];
        if (r >= (unsigned)f->nvr) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "get: unknown value reference");
            return RODGEN_FMU_ERROR;
        }
        if (r < ny) {
            value[i] = f->y[r];
        } else if (r < u0 || (r >= lam0 && r < z0)) {
            if (rodgen_fmu_derivatives(f) != RODGEN_OK) {
                return RODGEN_FMU_ERROR;
            }
            value[i] = r < u0 ? f->dy[r - ny] : f->lam[r - lam0];
        } else if (r < p0) {
            value[i] = f->u[r - u0];
        } else if (r < c0) {
            value[i] = f->p[r - p0];
        } else if (r < out0) {
            value[i] = f->c[r - c0];
        } else if (r < lam0) {
            if (!outputs) {
                rodgen_fmu_outputs_at(f, rodgen_fmu_state(f), f->out);
                outputs = 1;
            }
            value[i] = f->out[r - out0];
        } else if (r < (unsigned)RODGEN_FMU_VR_MAX_STEP(f)) {
            double *z = f->work;     /* [nz] <= the row buffers */
            if (!indicators && rodgen_fmu_get_indicators(f, z, (size_t)f->nz) != RODGEN_FMU_OK) {
                return RODGEN_FMU_ERROR;
            }
            indicators = 1;
            value[i] = z[r - z0];
        } else if (r == (unsigned)RODGEN_FMU_VR_MAX_STEP(f)) {
            value[i] = f->max_step;
        } else {
            value[i] = f->t;
        }
    }
    return RODGEN_FMU_OK;
}

int rodgen_fmu_set(rodgen_fmu *f, const unsigned int vr[], size_t nvr, const double value[])
{
    const unsigned ny = (unsigned)RODGEN_FMU_NY(f), u0 = (unsigned)RODGEN_FMU_VR_U(f);
    const unsigned p0 = (unsigned)RODGEN_FMU_VR_P(f), c0 = (unsigned)RODGEN_FMU_VR_CTRL(f);
    const unsigned out0 = (unsigned)RODGEN_FMU_VR_OUT(f);
    size_t i;
    for (i = 0; i < nvr; ++i) {
        unsigned r = vr[i];
        if (r < ny) {
            f->y[r] = value[i];
            f->terminated = 0;
#if RODGEN_FMU_HYBRID
            f->hstarted = 0;
#endif
        } else if (r >= u0 && r < p0) {
            f->u[r - u0] = value[i];
        } else if (r >= p0 && r < c0) {
            f->p[r - p0] = value[i];
        } else if (r >= c0 && r < out0) {
            f->c[r - c0] = value[i];
        } else if (r == (unsigned)RODGEN_FMU_VR_MAX_STEP(f)) {
            f->max_step = value[i];
        } else {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "set: the value reference is not settable");
            return RODGEN_FMU_ERROR;
        }
    }
    f->fresh = 0;
#if RODGEN_FMU_HYBRID
    if (f->hstarted) {
        rodgen_hybrid_forget(&f->hs);   /* inputs or parameters changed under the run */
    }
#endif
    return RODGEN_FMU_OK;
}

/* ---- Model Exchange ------------------------------------------------------- */

size_t rodgen_fmu_nx(const rodgen_fmu *f) { return (size_t)RODGEN_FMU_NY(f); }
size_t rodgen_fmu_nz(const rodgen_fmu *f) { return (size_t)f->nz; }

int rodgen_fmu_get_states(rodgen_fmu *f, double x[], size_t nx)
{
    size_t i;
    if (nx != rodgen_fmu_nx(f)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the number of states is not nq + nv");
        return RODGEN_FMU_ERROR;
    }
    for (i = 0; i < nx; ++i) {
        x[i] = f->y[i];
    }
    return RODGEN_FMU_OK;
}

int rodgen_fmu_set_states(rodgen_fmu *f, const double x[], size_t nx)
{
    size_t i;
    if (nx != rodgen_fmu_nx(f)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the number of states is not nq + nv");
        return RODGEN_FMU_ERROR;
    }
    for (i = 0; i < nx; ++i) {
        f->y[i] = x[i];
    }
    f->fresh = 0;
    return RODGEN_FMU_OK;
}

int rodgen_fmu_get_derivatives(rodgen_fmu *f, double dx[], size_t nx)
{
    size_t i;
    if (nx != rodgen_fmu_nx(f)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the number of states is not nq + nv");
        return RODGEN_FMU_ERROR;
    }
    if (rodgen_fmu_derivatives(f) != RODGEN_OK) {
        return RODGEN_FMU_ERROR;
    }
    for (i = 0; i < nx; ++i) {
        dx[i] = f->dy[i];
    }
    return RODGEN_FMU_OK;
}

int rodgen_fmu_get_indicators(rodgen_fmu *f, double z[], size_t nz)
{
    if (nz != rodgen_fmu_nz(f)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the number of event indicators is not 2 nconstraints");
        return RODGEN_FMU_ERROR;
    }
#if RODGEN_FMU_HYBRID
    if (nz > 0) {
        int s = rodgen_fmu_hybrid_begin(f);
        if (s == RODGEN_OK) {
            s = rodgen_hybrid_indicators(&f->hs, &f->ho, f->t, rodgen_fmu_state(f), z);
        }
        f->status = s;
        if (s != RODGEN_OK) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the event indicators failed (the constrained dynamics)");
            return RODGEN_FMU_ERROR;
        }
    }
#else
    (void)z;
#endif
    return RODGEN_FMU_OK;
}

int rodgen_fmu_event_update(rodgen_fmu *f, int *changed, int *terminate)
{
    int i;
    *changed = 0;
    *terminate = 0;
    if (f->m->nlie > 0) {   /* the quaternions back onto the unit sphere (see rodgen_fmu_state) */
        const double *y = rodgen_fmu_state(f);
        for (i = 0; i < f->m->nq; ++i) {
            *changed |= y[i] != f->y[i];
            f->y[i] = y[i];
        }
        f->fresh = 0;
    }
#if RODGEN_FMU_HYBRID
    {
        int jumped = 0;
        int s = rodgen_fmu_hybrid_begin(f);
        if (s == RODGEN_OK) {
            s = rodgen_hybrid_event(&f->hs, &f->ho, f->t, f->y, &jumped);
        }
        *changed |= jumped;
        f->status = s;
        f->fresh = 0;
        if (rodgen_fmu_run_ends(f, s)) {
            *terminate = 1;
            return RODGEN_FMU_OK;
        }
        if (s != RODGEN_OK) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the event's jump failed (an impact with singular "
                                                    "constraints, or a value not finite)");
            return RODGEN_FMU_ERROR;
        }
    }
#endif
    return RODGEN_FMU_OK;
}

/* ---- Co-Simulation -------------------------------------------------------- */

#if RODGEN_FMU_HYBRID
/* Co-Simulation of a model with constraint blocks: one hybrid run (rodgen_contact.c: RK4 of the constrained
 * dynamics, located touchdown, lift-off, slip and limit events, impacts) from the first communication point
 * (or the last time the states were set), continued to the end of every communication step. Its RK4 grid is
 * t0 + k dt, dt = fmu.max_step (0: the first communication step size). */
static int rodgen_fmu_hybrid_step(rodgen_fmu *f, double t, double h)
{
    const int ny = RODGEN_FMU_NY(f);
    double *rows = f->work + RODGEN_SIM_STORAGE(f->m->nq);
    long n, ne;
    int status, i;
    f->t = t;
    if (rodgen_fmu_hybrid_begin(f) != RODGEN_OK) {
        return RODGEN_FMU_ERROR;
    }
    if (!(f->ho.dt > 0.0)) {
        f->ho.dt = f->max_step > 0.0 ? f->max_step : h;
    }
    f->ho.t_end = t + h;
    do {
        status = rodgen_hybrid_simulate(&f->ho, &f->hs, 4, rows, rows + 4, NULL, NULL, NULL, &n, 0, NULL, &ne);
    } while (status == RODGEN_SIM_FULL);
    f->status = status;
    f->fresh = 0;
    for (i = 0; i < ny; ++i) {
        f->y[i] = f->hs.y[i];
    }
    f->t = f->hs.t;
    if (rodgen_fmu_run_ends(f, status)) {
        f->terminated = 1;   /* the state where the run stopped, its phase kept for the outputs */
        return RODGEN_FMU_OK;
    }
    if (status != RODGEN_OK) {
        f->hstarted = 0;
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "DoStep: the hybrid simulation failed (an event not located, a "
                                                "contact force outside its friction cone, singular constraints, "
                                                "too many events)");
        return RODGEN_FMU_ERROR;
    }
    return RODGEN_FMU_OK;
}
#endif

int rodgen_fmu_do_step(rodgen_fmu *f, double t, double h)
{
    const int ny = RODGEN_FMU_NY(f);
    double *rows = f->work + RODGEN_SIM_STORAGE(f->m->nq);
    rodgen_sim_options o;
    rodgen_sim_state s;
    rodgen_input inp;
    long n, steps = 1;
    int status, i;
    if (!(h > 0.0)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "DoStep: the step size must be positive");
        return RODGEN_FMU_ERROR;
    }
    if (f->terminated) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "DoStep: the hybrid run has ended (a tip, a slip or too many "
                                                "events); reset the FMU, set its states or an FMU state to go on");
        return RODGEN_FMU_ERROR;
    }
    if (f->max_step > 0.0) {
        steps = (long)ceil(h / f->max_step - 1e-9);
        if (steps < 1) {
            steps = 1;
        }
    }
#if RODGEN_FMU_HYBRID
    (void)o; (void)inp; (void)s; (void)steps; (void)n; (void)status; (void)i; (void)ny; (void)rows;
    return rodgen_fmu_hybrid_step(f, t, h);
#else
    memset(&o, 0, sizeof(o));
    o.method = RODGEN_RK4;
    o.t_end = t + h;
    o.dt = h / (double)steps;
    o.store_every = 1;
    rodgen_fmu_input(f, &inp);
    rodgen_sim_start(&s, f->m, t, f->y, f->work);
    s.stored = 1;   /* the state at the communication point was the end of the last step */
    do {
        status = rodgen_simulate(f->m, &o, &inp, f->p, &s, 4, rows, rows + 4, rows + 4 + 4 * ny, &n);
    } while (status == RODGEN_SIM_FULL);
    f->status = status;
    f->fresh = 0;
    if (status != RODGEN_OK) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "DoStep: the integration failed (mass matrix not positive "
                                                "definite, a state not finite, or the input law failed)");
        return RODGEN_FMU_ERROR;
    }
    for (i = 0; i < ny; ++i) {
        f->y[i] = s.y[i];
    }
    f->t = o.t_end;
    return RODGEN_FMU_OK;
#endif
}

/* ---- FMU states ------------------------------------------------------------ */

/* A saved state: its size in bytes, then doubles [t, y (nq + nv), u, p, c, mem, t_ref, max_step, hstarted,
 * the hybrid options' dt], then the hybrid run (rodgen_hybrid_save). */
#define RODGEN_FMU_MAGIC 0x52474653u   /* "RGFS" */

static size_t rodgen_fmu_state_doubles(const rodgen_fmu *f)
{
    return (size_t)(1 + RODGEN_FMU_NY(f) + f->m->nu + f->m->np + f->nc + RODGEN_FMU_NSTATE + 4);
}

static size_t rodgen_fmu_state_bytes(const rodgen_fmu *f)
{
    size_t n = 2 * sizeof(double) + rodgen_fmu_state_doubles(f) * sizeof(double);
#if RODGEN_FMU_HYBRID
    n += (size_t)rodgen_hybrid_save_bytes(f->m);
#endif
    return n;
}

static void rodgen_fmu_save(rodgen_fmu *f, double *d)
{
    size_t k = 2;
    int i;
    d[0] = (double)RODGEN_FMU_MAGIC;
    d[1] = (double)rodgen_fmu_state_bytes(f);
    d[k++] = f->t;
    for (i = 0; i < RODGEN_FMU_NY(f); ++i) {
        d[k++] = f->y[i];
    }
    for (i = 0; i < f->m->nu; ++i) {
        d[k++] = f->u[i];
    }
    for (i = 0; i < f->m->np; ++i) {
        d[k++] = f->p[i];
    }
    for (i = 0; i < f->nc; ++i) {
        d[k++] = f->c[i];
    }
    for (i = 0; i < RODGEN_FMU_NSTATE; ++i) {
        d[k++] = f->mem[i];
    }
    d[k++] = f->t_ref;
    d[k++] = f->max_step;
#if RODGEN_FMU_HYBRID
    d[k++] = (double)f->hstarted;
    d[k++] = f->ho.dt;
    if (f->hstarted) {
        rodgen_hybrid_save(&f->hs, d + k);
    }
#else
    d[k++] = 0.0;
    d[k++] = 0.0;
#endif
}

static int rodgen_fmu_load(rodgen_fmu *f, const double *d)
{
    size_t k = 2;
    int i;
    if (d[0] != (double)RODGEN_FMU_MAGIC || d[1] != (double)rodgen_fmu_state_bytes(f)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "the FMU state is not one of this model");
        return RODGEN_FMU_ERROR;
    }
    f->t = d[k++];
    for (i = 0; i < RODGEN_FMU_NY(f); ++i) {
        f->y[i] = d[k++];
    }
    for (i = 0; i < f->m->nu; ++i) {
        f->u[i] = d[k++];
    }
    for (i = 0; i < f->m->np; ++i) {
        f->p[i] = d[k++];
    }
    for (i = 0; i < f->nc; ++i) {
        f->c[i] = d[k++];
    }
    for (i = 0; i < RODGEN_FMU_NSTATE; ++i) {
        f->mem[i] = d[k++];
    }
    f->t_ref = d[k++];
    f->max_step = d[k++];
#if RODGEN_FMU_HYBRID
    f->hstarted = d[k++] != 0.0;
    if (f->hstarted) {
        rodgen_hybrid_defaults(&f->ho);
        if (RODGEN_FMU_EVENT_TOL > 0.0) {
            f->ho.event_tol = RODGEN_FMU_EVENT_TOL;
        }
        if (RODGEN_FMU_ARM_GAP > 0.0) {
            f->ho.arm_gap = RODGEN_FMU_ARM_GAP;
        }
        f->ho.on_slip = RODGEN_FMU_ON_SLIP;
        f->ho.max_events = RODGEN_FMU_MAX_EVENTS;
        f->ho.dt = d[k];
        f->ho.t_end = f->t;
        rodgen_hybrid_restore(&f->hs, f->m, f->p, f->m->nu > 0 ? rodgen_fmu_hybrid_input : NULL, f, d + k + 1,
                              f->hwork);
    }
#endif
    f->terminated = 0;
    f->fresh = 0;
    return RODGEN_FMU_OK;
}

int rodgen_fmu_get_state(rodgen_fmu *f, void **state)
{
    if (*state == NULL) {
        *state = f->alloc(1, rodgen_fmu_state_bytes(f));
        if (*state == NULL) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "out of memory for the FMU state");
            return RODGEN_FMU_ERROR;
        }
    }
    rodgen_fmu_save(f, (double *)*state);
    return RODGEN_FMU_OK;
}

int rodgen_fmu_set_state(rodgen_fmu *f, const void *state)
{
    if (state == NULL) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "no FMU state");
        return RODGEN_FMU_ERROR;
    }
    return rodgen_fmu_load(f, (const double *)state);
}

int rodgen_fmu_free_state(rodgen_fmu *f, void **state)
{
    if (state != NULL && *state != NULL) {
        f->release(*state);
        *state = NULL;
    }
    return RODGEN_FMU_OK;
}

size_t rodgen_fmu_serialized_size(const rodgen_fmu *f, const void *state)
{
    (void)state;
    return rodgen_fmu_state_bytes(f);
}

int rodgen_fmu_serialize(rodgen_fmu *f, const void *state, unsigned char *bytes, size_t size)
{
    if (state == NULL || size < rodgen_fmu_state_bytes(f)) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "serialize: no state, or the buffer is too small");
        return RODGEN_FMU_ERROR;
    }
    memcpy(bytes, state, rodgen_fmu_state_bytes(f));
    return RODGEN_FMU_OK;
}

int rodgen_fmu_deserialize(rodgen_fmu *f, const unsigned char *bytes, size_t size, void **state)
{
    double head[2];
    const size_t n = rodgen_fmu_state_bytes(f);
    if (size != n) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "deserialize: the bytes are not an FMU state of this model");
        return RODGEN_FMU_ERROR;
    }
    memcpy(head, bytes, sizeof(head));
    if (head[0] != (double)RODGEN_FMU_MAGIC || head[1] != (double)n) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "deserialize: the bytes are not an FMU state of this model");
        return RODGEN_FMU_ERROR;
    }
    if (*state == NULL) {
        *state = f->alloc(1, n);
        if (*state == NULL) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "out of memory for the FMU state");
            return RODGEN_FMU_ERROR;
        }
    }
    memcpy(*state, bytes, n);
    return RODGEN_FMU_OK;
}

/* ---- Directional derivatives ------------------------------------------------ */

int rodgen_fmu_directional(rodgen_fmu *f, const unsigned int unknowns[], size_t nunknowns,
                           const unsigned int knowns[], size_t nknowns, const double seed[], double sensitivity[])
{
#if RODGEN_FMU_JACOBIAN
    const int nq = f->m->nq, nu = f->m->nu, ny = 2 * nq;   /* nq = nv: not compiled in with such joints */
    const unsigned u0 = (unsigned)RODGEN_FMU_VR_U(f), out0 = (unsigned)RODGEN_FMU_VR_OUT(f), lam0 = (unsigned)RODGEN_FMU_VR_LAM(f);
    double *dy = f->work;                 /* [2 nq] the direction in the states */
    double *du = dy + ny;                 /* [nu] in the inputs */
    double *ddy = du + (nu ? nu : 1);     /* [2 nq] the derivatives' change */
    double *yp = ddy + ny;                /* [2 nq] */
    double *J = f->work + RODGEN_SIM_STORAGE(nq) + 4 * (1 + 2 * nq + nu);   /* [ny * ny], then M, B */
    double scale = 0.0, ymax = 1.0;
    size_t i;
    int a, b, any_u = 0, any_out = 0, status;
    for (a = 0; a < ny; ++a) {
        dy[a] = 0.0;
    }
    for (a = 0; a < nu; ++a) {
        du[a] = 0.0;
    }
    for (i = 0; i < nknowns; ++i) {
        const unsigned r = knowns[i];
        if (r < (unsigned)ny) {
            dy[r] += seed[i];
        } else if (r >= u0 && r < u0 + (unsigned)nu) {
            du[r - u0] += seed[i];
            any_u = 1;
        } else {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "directional derivative: a known is not a state or an input");
            return RODGEN_FMU_ERROR;
        }
    }
    for (i = 0; i < nunknowns; ++i) {
        const unsigned r = unknowns[i];
        if (r >= out0 && r < lam0) {
            any_out = 1;
        } else if (!(r >= (unsigned)ny && r < (unsigned)(2 * ny))) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "directional derivative: an unknown is not a state "
                                                    "derivative or an output");
            return RODGEN_FMU_ERROR;
        }
    }
    if (f->m->rhs_jacobian == NULL) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "directional derivative: the model has no RHS Jacobian");
        return RODGEN_FMU_ERROR;
    }
    if (rodgen_fmu_derivatives(f) != RODGEN_OK) {
        return RODGEN_FMU_ERROR;
    }
    /* d[qd, qdd] = A dy + [0; M^-1 B du], A the exact Jacobian d[qd, qdd]/d[q, qd] at constant u */
    status = f->m->rhs_jacobian(f->t, f->y, f->y + nq, f->u, f->p, J);
    if (status != RODGEN_OK) {
        rodgen_fmu_message(f, RODGEN_FMU_ERROR, "directional derivative: the RHS Jacobian failed");
        return RODGEN_FMU_ERROR;
    }
    for (a = 0; a < ny; ++a) {
        double s = 0.0;
        for (b = 0; b < ny; ++b) {
            s += J[a * ny + b] * dy[b];
        }
        ddy[a] = s;
    }
    if (any_u) {
        double *M = J + ny * ny, *B = M + nq * nq, *x = ddy + nq;
        double *bu = yp;
        f->m->mass_matrix(f->y, f->p, M);
        f->m->input_map(f->y, f->p, B);
        if (rodgen_cholesky(M, nq) != RODGEN_OK) {
            rodgen_fmu_message(f, RODGEN_FMU_ERROR, "directional derivative: the mass matrix is not positive "
                                                    "definite");
            return RODGEN_FMU_ERROR;
        }
        for (a = 0; a < nq; ++a) {
            double s = 0.0;
            for (b = 0; b < nu; ++b) {
                s += B[a * nu + b] * du[b];
            }
            bu[a] = s;
        }
        rodgen_cholesky_solve(M, bu, nq);
        for (a = 0; a < nq; ++a) {
            x[a] += bu[a];
        }
    }
    if (any_out) {
        /* the outputs (positions, energies) depend on the states alone: central differences along dy */
        double *op = f->out + f->nout;
        for (a = 0; a < ny; ++a) {
            scale = fmax(scale, fabs(dy[a]));
            ymax = fmax(ymax, fabs(f->y[a]));
        }
        if (scale > 0.0) {
            const double h = 1e-6 * ymax / scale;
            for (a = 0; a < ny; ++a) {
                yp[a] = f->y[a] + h * dy[a];
            }
            rodgen_fmu_outputs_at(f, yp, op);
            for (a = 0; a < ny; ++a) {
                yp[a] = f->y[a] - h * dy[a];
            }
            rodgen_fmu_outputs_at(f, yp, f->out);
            for (a = 0; a < f->nout; ++a) {
                op[a] = (op[a] - f->out[a]) / (2.0 * h);
            }
        } else {
            for (a = 0; a < f->nout; ++a) {
                op[a] = 0.0;
            }
        }
    }
    for (i = 0; i < nunknowns; ++i) {
        const unsigned r = unknowns[i];
        sensitivity[i] = r < (unsigned)(2 * ny) ? ddy[r - ny] : f->out[f->nout + (r - out0)];
    }
    return RODGEN_FMU_OK;
#else
    (void)unknowns; (void)nunknowns; (void)knowns; (void)nknowns; (void)seed; (void)sensitivity;
    rodgen_fmu_message(f, RODGEN_FMU_ERROR, "this FMU provides no directional derivatives (exported without the "
                                            "RHS Jacobian, or with a controller or constraint blocks)");
    return RODGEN_FMU_ERROR;
#endif
}
