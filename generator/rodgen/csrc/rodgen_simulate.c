/*
 * rodgen_simulate.c: input laws, fixed-step RK4 and adaptive Dormand-Prince 5(4)
 * on any model's `const rodgen_model *` (see rodgen_runtime.h). Pure C99, only
 * <math.h>; no allocation, no globals. Vectors of the size of the model are C99
 * variable-length arrays (a few times 2*nq doubles on the stack); the state of a
 * simulation lives in the caller's storage.
 */
#include <math.h>

#include "rodgen_runtime.h"

static int rodgen_all_finite(const double *x, int n)
{
    int i;
    for (i = 0; i < n; ++i) {
        if (!isfinite(x[i])) {
            return 0;
        }
    }
    return 1;
}

/* Index i of the sample with times[i] <= t < times[i+1] (0 before the first, n-1 after the last). */
static long rodgen_find_sample(const double *times, long n, double t)
{
    long lo = 0, hi = n - 1;
    if (n <= 1 || t <= times[0]) {
        return 0;
    }
    if (t >= times[n - 1]) {
        return n - 1;
    }
    while (hi - lo > 1) {
        const long mid = lo + (hi - lo) / 2;
        if (times[mid] <= t) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Rows of `width` values at the sample times, interpolated linearly at t (constant outside). */
void rodgen_interpolate(const double *times, const double *values, long n, int width, double t,
    double *out)
{
    const long i = rodgen_find_sample(times, n, t);
    int j;
    if (i >= n - 1 || t <= times[0]) {
        for (j = 0; j < width; ++j) {
            out[j] = values[i * width + j];
        }
        return;
    }
    {
        const double s = (t - times[i]) / (times[i + 1] - times[i]);
        for (j = 0; j < width; ++j) {
            out[j] = (1.0 - s) * values[i * width + j] + s * values[(i + 1) * width + j];
        }
    }
}

/* The position error e [nv] = q_ref (-) q of a tracking law: the velocity that takes q to q_ref in unit time
 * (rodgen_difference) with free, spherical or planar joints, else q_ref - q. */
static void rodgen_position_error(const rodgen_model *model, const double *q, const double *q_ref, double *e)
{
    int i;
    if (model->nlie > 0) {
        rodgen_difference(model, q, q_ref, e);
        return;
    }
    for (i = 0; i < model->nq; ++i) {
        e[i] = q_ref[i] - q[i];
    }
}

int rodgen_input_eval(const rodgen_model *model, const rodgen_input *inp, double t, const double *y,
    const double *p, double *u)
{
    /* the reference rows: q_ref [nq], qd_ref [nv], qdd_ref [nv]; errors and forces in the velocities (nv) */
    const int nq = model->nq, n = RODGEN_NV(model), w = nq + 2 * n, m = model->nu;
    const int mu = m > 0 ? m : 1;
    int i, j, k;
    switch (inp->kind) {
    case RODGEN_INPUT_CONSTANT:
        for (j = 0; j < m; ++j) {
            u[j] = inp->u != 0 ? inp->u[j] : 0.0;
        }
        break;
    case RODGEN_INPUT_TABLE:
        rodgen_interpolate(inp->times, inp->values, inp->n, m, t, u);
        break;
    case RODGEN_INPUT_PD: {
        double ref[w], e[n];
        double B[n * mu];
        rodgen_interpolate(inp->times, inp->values, inp->n, w, t, ref);
        rodgen_position_error(model, y, ref, e);
        model->input_map(y, p, B);
        for (j = 0; j < m; ++j) {
            double be = 0.0, bed = 0.0;
            for (i = 0; i < n; ++i) {
                be += B[i * m + j] * e[i];
                bed += B[i * m + j] * (ref[nq + i] - y[nq + i]);
            }
            u[j] = (inp->u != 0 ? inp->u[j] : 0.0) + inp->kp[j] * be + inp->kd[j] * bed;
        }
        break;
    }
    case RODGEN_INPUT_COMPUTED_TORQUE: {
        double ref[w], e[n];
        double a[n], Q[n];
        double B[n * mu];
        double A[mu * mu];
        rodgen_interpolate(inp->times, inp->values, inp->n, w, t, ref);
        rodgen_position_error(model, y, ref, e);
        for (i = 0; i < n; ++i) {
            a[i] = ref[nq + n + i] + inp->kp[i] * e[i] + inp->kd[i] * (ref[nq + i] - y[nq + i]);
        }
        model->inverse_dynamics(t, y, y + nq, a, p, Q);
        model->input_map(y, p, B);
        for (j = 0; j < m; ++j) {
            double s = 0.0;
            for (i = 0; i < n; ++i) {
                s += B[i * m + j] * Q[i];
            }
            u[j] = s;
            for (k = 0; k < m; ++k) {
                double bb = 0.0;
                for (i = 0; i < n; ++i) {
                    bb += B[i * m + j] * B[i * m + k];
                }
                A[j * m + k] = bb;
            }
        }
        if (rodgen_cholesky(A, m) != RODGEN_OK) {
            return RODGEN_ERR_INPUT_FAILED;
        }
        rodgen_cholesky_solve(A, u, m);
        break;
    }
    case RODGEN_INPUT_CALLBACK:
        if (inp->fn == 0 || inp->fn(inp->context, t, y, u) != 0) {
            return RODGEN_ERR_INPUT_FAILED;
        }
        break;
    default:
        return RODGEN_ERR_OPTIONS;
    }
    return rodgen_all_finite(u, m) ? RODGEN_OK : RODGEN_ERR_INPUT_NONFINITE;
}

/* dy = rhs(t, y, u) with the held inputs u [nu]; a non-finite y is reported as a non-finite state. */
static int rodgen_sim_fu(const rodgen_model *m, const double *p, rodgen_sim_state *s, double t, const double *y,
    const double *u, double *dy)
{
    const int status = m->rhs(t, y, u, p, dy);
    s->evaluations += 1;
    return status == RODGEN_ERR_NONFINITE_INPUT ? RODGEN_ERR_NONFINITE_STATE : status;
}

/* dy = rhs(t, y) under the input law, evaluated at (t, y). */
static int rodgen_sim_f(const rodgen_model *m, const rodgen_input *inp, const double *p, rodgen_sim_state *s,
    double t, const double *y, double *dy)
{
    double u[m->nu > 0 ? m->nu : 1];
    int status = rodgen_input_eval(m, inp, t, y, p, u);
    if (status != RODGEN_OK) {
        s->evaluations += 1;
        return status;
    }
    return rodgen_sim_fu(m, p, s, t, y, u, dy);
}

/* One stage of RK4: under the held inputs uh when it is not NULL, else the input law at (t, y). */
static int rodgen_stage(const rodgen_model *m, const rodgen_input *inp, const double *p, rodgen_sim_state *s,
    const double *uh, double t, const double *y, double *dy)
{
    return uh != 0 ? rodgen_sim_fu(m, p, s, t, y, uh, dy) : rodgen_sim_f(m, inp, p, s, t, y, dy);
}

/* Write the state as row n of the outputs, with the inputs at that state (NaN if they fail); they are
 * left in u [nu] (with hold: the inputs held over the next step). */
static int rodgen_sim_store(const rodgen_model *m, const rodgen_input *inp, const double *p, rodgen_sim_state *s,
    long n, double *t_out, double *y_out, double *u_out, double *u)
{
    const int ny = RODGEN_NY(m), nu = m->nu;
    int i, status;
    t_out[n] = s->t;
    for (i = 0; i < ny; ++i) {
        y_out[n * ny + i] = s->y[i];
    }
    status = rodgen_input_eval(m, inp, s->t, s->y, p, u);
    for (i = 0; i < nu; ++i) {
        u_out[n * nu + i] = status == RODGEN_OK ? u[i] : NAN;
    }
    s->stored = 1;
    return status;
}

void rodgen_normalize(const rodgen_model *m, double *q)
{
    int f, k;
    for (f = 0; f < m->nlie; ++f) {
        const int kind = m->lie_joints[3 * f];
        double *x = q + m->lie_joints[3 * f + 1] + (kind == RODGEN_JOINT_FREE ? 3 : 0);
        if (kind != RODGEN_JOINT_FREE && kind != RODGEN_JOINT_SPHERICAL) {
            continue;
        }
        const double norm = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
        if (norm > 0.0) {
            for (k = 0; k < 4; ++k) {
                x[k] /= norm;
            }
        }
    }
}

void rodgen_sim_start(rodgen_sim_state *s, const rodgen_model *m, double t0, const double *y0, double *storage)
{
    const int ny = RODGEN_NY(m);
    int i;
    s->y = storage;
    s->f = storage + ny;
    s->t0 = t0;
    s->t = t0;
    for (i = 0; i < ny; ++i) {
        s->y[i] = y0[i];
        s->f[i] = 0.0;
    }
    rodgen_normalize(m, s->y);
    s->h = 0.0;
    s->steps = 0;
    s->rejected = 0;
    s->evaluations = 0;
    s->have_f = 0;
    s->stored = 0;
}

/* One RK4 step; steps end on the grid t0 + k dt, the last one at t_end. uh [nu]: the inputs held over the
 * step (sampled at its start), or NULL: the input law at every stage. */
static int rodgen_rk4_step(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp,
    const double *p, rodgen_sim_state *s, const double *uh)
{
    const int ny = RODGEN_NY(m);
    double k1[ny], k2[ny], k3[ny], k4[ny], yt[ny];
    const double t = s->t;
    double t_next = s->t0 + (double)(s->steps + 1) * o->dt;
    double h;
    int i, status;
    if (t_next > o->t_end - 1e-9 * o->dt) {
        t_next = o->t_end;
    }
    h = t_next - t;
    status = rodgen_stage(m, inp, p, s, uh, t, s->y, k1);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        yt[i] = s->y[i] + 0.5 * h * k1[i];
    }
    status = rodgen_stage(m, inp, p, s, uh, t + 0.5 * h, yt, k2);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        yt[i] = s->y[i] + 0.5 * h * k2[i];
    }
    status = rodgen_stage(m, inp, p, s, uh, t + 0.5 * h, yt, k3);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        yt[i] = s->y[i] + h * k3[i];
    }
    status = rodgen_stage(m, inp, p, s, uh, t_next, yt, k4);
    if (status != RODGEN_OK) {
        return status;
    }
    for (i = 0; i < ny; ++i) {
        yt[i] = s->y[i] + (h / 6.0) * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]);
    }
    if (!rodgen_all_finite(yt, ny)) {
        return RODGEN_ERR_NONFINITE_STATE;
    }
    for (i = 0; i < ny; ++i) {
        s->y[i] = yt[i];
    }
    rodgen_normalize(m, s->y);   /* the step left the unit sphere by O(h^5): back onto it */
    s->t = t_next;
    s->steps += 1;
    s->have_f = 0;
    s->stored = 0;
    return RODGEN_OK;
}

/* Root mean square of x / (atol + rtol |y|). */
static double rodgen_rms_scaled(int ny, const double *x, const double *y, double rtol, double atol)
{
    double sum = 0.0;
    int i;
    for (i = 0; i < ny; ++i) {
        const double r = x[i] / (atol + rtol * fabs(y[i]));
        sum += r * r;
    }
    return sqrt(sum / ny);
}

/* First step of DOPRI5 from the size of y, f and an estimate of y'' (Hairer, Norsett, Wanner, II.4). */
static double rodgen_initial_step(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp,
    const double *p, rodgen_sim_state *s, double h_max)
{
    const int ny = RODGEN_NY(m);
    double yt[ny], f1[ny];
    const double d0 = rodgen_rms_scaled(ny, s->y, s->y, o->rtol, o->atol);
    const double d1 = rodgen_rms_scaled(ny, s->f, s->y, o->rtol, o->atol);
    double h0, h1, d2, dm;
    int i;
    h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    h0 = fmin(h0, h_max);
    for (i = 0; i < ny; ++i) {
        yt[i] = s->y[i] + h0 * s->f[i];
    }
    if (rodgen_sim_f(m, inp, p, s, s->t + h0, yt, f1) != RODGEN_OK) {
        return h0;
    }
    for (i = 0; i < ny; ++i) {
        f1[i] -= s->f[i];
    }
    d2 = rodgen_rms_scaled(ny, f1, s->y, o->rtol, o->atol) / h0;
    dm = fmax(d1, d2);
    h1 = dm <= 1e-15 ? fmax(1e-6, h0 * 1e-3) : pow(0.01 / dm, 0.2);
    return fmin(fmin(100.0 * h0, h1), h_max);
}

/* One accepted DOPRI5 step (rejected attempts are retried with a smaller step). */
static int rodgen_dopri5_step(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp,
    const double *p, rodgen_sim_state *s)
{
    static const double c2 = 1.0 / 5.0, c3 = 3.0 / 10.0, c4 = 4.0 / 5.0, c5 = 8.0 / 9.0;
    static const double a21 = 1.0 / 5.0;
    static const double a31 = 3.0 / 40.0, a32 = 9.0 / 40.0;
    static const double a41 = 44.0 / 45.0, a42 = -56.0 / 15.0, a43 = 32.0 / 9.0;
    static const double a51 = 19372.0 / 6561.0, a52 = -25360.0 / 2187.0, a53 = 64448.0 / 6561.0,
        a54 = -212.0 / 729.0;
    static const double a61 = 9017.0 / 3168.0, a62 = -355.0 / 33.0, a63 = 46732.0 / 5247.0, a64 = 49.0 / 176.0,
        a65 = -5103.0 / 18656.0;
    static const double a71 = 35.0 / 384.0, a73 = 500.0 / 1113.0, a74 = 125.0 / 192.0, a75 = -2187.0 / 6784.0,
        a76 = 11.0 / 84.0;
    static const double e1 = 71.0 / 57600.0, e3 = -71.0 / 16695.0, e4 = 71.0 / 1920.0, e5 = -17253.0 / 339200.0,
        e6 = 22.0 / 525.0, e7 = -1.0 / 40.0;
    const double eps = 2.220446049250313e-16;
    const double h_max = o->h_max > 0.0 ? o->h_max : o->t_end - s->t0;
    const int ny = RODGEN_NY(m);
    double k2[ny], k3[ny], k4[ny], k5[ny], k6[ny], k7[ny];
    double yt[ny], yn[ny], err[ny];
    const double *k1 = s->f;
    int i, status, rejected_here = 0;
    if (!s->have_f) {
        status = rodgen_sim_f(m, inp, p, s, s->t, s->y, s->f);
        if (status != RODGEN_OK) {
            return status;
        }
        s->have_f = 1;
    }
    if (!(s->h > 0.0)) {
        s->h = o->dt > 0.0 ? o->dt : rodgen_initial_step(m, o, inp, p, s, h_max);
    }
    for (;;) {
        const double t = s->t;
        const double h_min = fmax(o->h_min, 16.0 * eps * fabs(t));
        double h = fmin(s->h, h_max), e, fac;
        int last = 0;
        if (t + 1.01 * h >= o->t_end) {
            h = o->t_end - t;
            last = 1;
        }
        if (h < h_min && !last) {
            return RODGEN_ERR_STEP_UNDERFLOW;
        }
        if (o->max_steps > 0 && s->steps + s->rejected >= o->max_steps) {
            return RODGEN_ERR_MAX_STEPS;
        }
        for (i = 0; i < ny; ++i) {
            yt[i] = s->y[i] + h * a21 * k1[i];
        }
        status = rodgen_sim_f(m, inp, p, s, t + c2 * h, yt, k2);
        if (status == RODGEN_OK) {
            for (i = 0; i < ny; ++i) {
                yt[i] = s->y[i] + h * (a31 * k1[i] + a32 * k2[i]);
            }
            status = rodgen_sim_f(m, inp, p, s, t + c3 * h, yt, k3);
        }
        if (status == RODGEN_OK) {
            for (i = 0; i < ny; ++i) {
                yt[i] = s->y[i] + h * (a41 * k1[i] + a42 * k2[i] + a43 * k3[i]);
            }
            status = rodgen_sim_f(m, inp, p, s, t + c4 * h, yt, k4);
        }
        if (status == RODGEN_OK) {
            for (i = 0; i < ny; ++i) {
                yt[i] = s->y[i] + h * (a51 * k1[i] + a52 * k2[i] + a53 * k3[i] + a54 * k4[i]);
            }
            status = rodgen_sim_f(m, inp, p, s, t + c5 * h, yt, k5);
        }
        if (status == RODGEN_OK) {
            for (i = 0; i < ny; ++i) {
                yt[i] = s->y[i] + h * (a61 * k1[i] + a62 * k2[i] + a63 * k3[i] + a64 * k4[i] + a65 * k5[i]);
            }
            status = rodgen_sim_f(m, inp, p, s, t + h, yt, k6);
        }
        if (status == RODGEN_OK) {
            for (i = 0; i < ny; ++i) {
                yn[i] = s->y[i] + h * (a71 * k1[i] + a73 * k3[i] + a74 * k4[i] + a75 * k5[i] + a76 * k6[i]);
            }
            status = rodgen_sim_f(m, inp, p, s, t + h, yn, k7);
        }
        if (status == RODGEN_ERR_INPUT_FAILED || status == RODGEN_ERR_OPTIONS) {
            return status;
        }
        e = NAN;
        if (status == RODGEN_OK) {
            for (i = 0; i < ny; ++i) {
                err[i] = h * (e1 * k1[i] + e3 * k3[i] + e4 * k4[i] + e5 * k5[i] + e6 * k6[i] + e7 * k7[i]);
                yt[i] = fmax(fabs(s->y[i]), fabs(yn[i]));
            }
            e = rodgen_rms_scaled(ny, err, yt, o->rtol, o->atol);
        }
        if (e <= 1.0) {
            fac = e > 0.0 ? 0.9 * pow(e, -0.2) : 5.0;
            fac = fmin(fmax(fac, 0.2), rejected_here ? 1.0 : 5.0);
            for (i = 0; i < ny; ++i) {
                s->y[i] = yn[i];
                s->f[i] = k7[i];
            }
            if (m->nlie > 0) {   /* back onto the unit sphere; f is then evaluated at the normalised state */
                rodgen_normalize(m, s->y);
                s->have_f = 0;
            }
            s->t = last ? o->t_end : t + h;
            if (!last) {
                s->h = h * fac;
            }
            s->steps += 1;
            s->stored = 0;
            return RODGEN_OK;
        }
        /* rejected: a too large error, or a stage that failed (a singular M or a
         * non-finite value at a trial state); the failure is reported once the
         * step cannot shrink any further */
        s->rejected += 1;
        rejected_here = 1;
        fac = (e == e) ? fmax(0.2, 0.9 * pow(e, -0.2)) : 0.25;
        s->h = h * fac;
        if (status != RODGEN_OK && s->h < h_min) {
            return status;
        }
    }
}

int rodgen_simulate(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_input *inp,
    const double *p, rodgen_sim_state *s,
    long capacity, double *t_out, double *y_out, double *u_out, long *n_out)
{
    const int nu = m->nu > 0 ? m->nu : 1;
    double uh[nu];   /* with hold: the inputs at (s->t, s->y), held over the next step */
    int have_uh = 0;
    long n = 0;
    int status;
    *n_out = 0;
    if ((o->method != RODGEN_RK4 && o->method != RODGEN_DOPRI5) || !(o->t_end > s->t0) || o->store_every < 1
        || capacity < 1 || (o->method == RODGEN_RK4 && !(o->dt > 0.0)) || (o->hold != 0 && o->hold != 1)
        || (o->hold && o->method != RODGEN_RK4)
        || (o->method == RODGEN_DOPRI5 && (!(o->rtol >= 0.0) || !(o->atol >= 0.0) || !(o->rtol + o->atol > 0.0)
                                             || !(o->dt >= 0.0) || !(o->h_min >= 0.0) || !(o->h_max >= 0.0)))) {
        return RODGEN_ERR_OPTIONS;
    }
    for (;;) {
        const int due = !s->stored && (s->steps % o->store_every == 0 || s->t >= o->t_end);
        if (due) {
            if (n >= capacity) {
                status = RODGEN_SIM_FULL;
                break;
            }
            status = rodgen_sim_store(m, inp, p, s, n, t_out, y_out, u_out, uh);
            n += 1;
            if (status != RODGEN_OK) {
                break;
            }
            have_uh = o->hold;
        }
        if (s->t >= o->t_end) {
            status = RODGEN_OK;
            break;
        }
        if (n >= capacity) {   /* keep a row free for the state a failure stops at */
            status = RODGEN_SIM_FULL;
            break;
        }
        if (o->max_steps > 0 && s->steps + s->rejected >= o->max_steps) {
            status = RODGEN_ERR_MAX_STEPS;
        } else if (o->method == RODGEN_RK4) {
            status = RODGEN_OK;
            if (o->hold && !have_uh) {
                status = rodgen_input_eval(m, inp, s->t, s->y, p, uh);
            }
            if (status == RODGEN_OK) {
                status = rodgen_rk4_step(m, o, inp, p, s, o->hold ? uh : 0);
            }
            have_uh = 0;
        } else {
            status = rodgen_dopri5_step(m, o, inp, p, s);
        }
        if (status != RODGEN_OK) {
            if (!s->stored) {
                (void)rodgen_sim_store(m, inp, p, s, n, t_out, y_out, u_out, uh);
                n += 1;
            }
            break;
        }
    }
    *n_out = n;
    return status;
}

/* One trajectory of a batch: its own input law (per-trajectory inputs and controller context)
 * over the batch's template; outputs at its row block (or only its final state). */
static int rodgen_batch_one(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_batch *b, long i,
    double *work, long *rows)
{
    const int ny = RODGEN_NY(m), nu = m->nu;
    const double *y0 = b->y0 + i * b->y0_stride;
    const double *p = b->p + i * b->p_stride;
    rodgen_input inp = *b->input;
    rodgen_sim_state s;
    long n = 0;
    int status, j;
    *rows = 0;
    if (b->u != 0) {
        inp.u = b->u + i * b->u_stride;
    }
    if (b->contexts != 0) {
        inp.context = b->contexts[i];
    }
    if (!rodgen_all_finite(y0, ny) || !rodgen_all_finite(p, m->np)
        || (inp.u != 0 && (inp.kind == RODGEN_INPUT_CONSTANT || inp.kind == RODGEN_INPUT_PD)
            && !rodgen_all_finite(inp.u, nu))) {
        return RODGEN_ERR_NONFINITE_INPUT;
    }
    rodgen_sim_start(&s, m, b->t0, y0, work);
    if (b->final_only) {
        /* rows 0 (the start) and 1 (the end, or the state a failure stops at) of a scratch block */
        rodgen_sim_options fo = *o;
        double t_s[2], y_s[2 * ny], u_s[2 * (nu > 0 ? nu : 1)];
        fo.store_every = 2147483647L;   /* at most LONG_MAX everywhere; a longer run refills the scratch */
        do {
            status = rodgen_simulate(m, &fo, &inp, p, &s, 2, t_s, y_s, u_s, &n);
        } while (status == RODGEN_SIM_FULL);
        if (n > 0) {
            b->t_out[i] = t_s[n - 1];
            for (j = 0; j < ny; ++j) {
                b->y_out[i * ny + j] = y_s[(n - 1) * ny + j];
            }
            for (j = 0; j < nu; ++j) {
                b->u_out[i * nu + j] = u_s[(n - 1) * nu + j];
            }
            *rows = 1;
        }
    } else {
        const long c = b->capacity;
        status = rodgen_simulate(m, o, &inp, p, &s, c, b->t_out + i * c, b->y_out + i * c * ny,
            nu > 0 ? b->u_out + i * c * nu : b->u_out, &n);
        *rows = n;
    }
    if (b->steps != 0) {
        b->steps[i] = s.steps;
    }
    if (b->evaluations != 0) {
        b->evaluations[i] = s.evaluations;
    }
    return status;
}

/* NaN in the rows of trajectory i from row `from` on (the rows it did not write). */
static void rodgen_batch_blank(const rodgen_model *m, const rodgen_batch *b, long i, long from)
{
    const int ny = RODGEN_NY(m), nu = m->nu;
    const long c = b->final_only ? 1 : b->capacity;
    long r;
    int j;
    for (r = from; r < c; ++r) {
        b->t_out[i * c + r] = NAN;
        for (j = 0; j < ny; ++j) {
            b->y_out[(i * c + r) * ny + j] = NAN;
        }
        for (j = 0; j < nu; ++j) {
            b->u_out[(i * c + r) * nu + j] = NAN;
        }
    }
}

void rodgen_simulate_batch(const rodgen_model *m, const rodgen_sim_options *o, const rodgen_batch *b, long first,
    long stride, double *work)
{
    long i;
    for (i = first; i < b->n; i += stride) {
        b->status[i] = rodgen_batch_one(m, o, b, i, work, &b->rows[i]);
        rodgen_batch_blank(m, b, i, b->rows[i]);
    }
}
