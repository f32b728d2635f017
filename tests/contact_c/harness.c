/*
 * Test harness of rodgen_contact.c: two hand-written rodgen_model tables and
 * flat wrappers for ctypes (tests/test_contact_c.py).
 *
 * Compass gait (Goswami): q = [x, y, th1, th2], the hip at (x, y), leg i from
 * the hip to its foot at hip + l (sin th_i, -cos th_i), l = a + b, a point mass
 * m on each leg at distance b from the hip, m_H at the hip. Contacts: foot 1,
 * foot 2 on a ground line through the origin at angle `slope`. Input: a torque
 * u between the legs (+u on th1, -u on th2).
 * p = [m, mH, a, b, g, slope, mu].
 *
 * Four-bar: a chain of three links from the origin, absolute angles th_k from
 * the downward vertical, point masses m_k at the link ends; a loop holds the
 * end of link 3 at (px, py); a limit th1 >= lower. Input: a torque on th1.
 * p = [l1, l2, l3, m1, m2, m3, g, px, py, lower].
 * The second table repeats the loop (redundant rows: S singular, the least-norm forces).
 *
 * Point mass m on a slope: q = [x, y], one contact at the point, a force u
 * along x. p = [m, g, slope, mu].
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rodgen_contact.h"

/* ---- compass gait ---- */

static void cg_mass(const double *q, const double *p, double *M)
{
    const double m = p[0], mH = p[1], b = p[3], mt = mH + 2.0 * m;
    const double c1 = cos(q[2]), s1 = sin(q[2]), c2 = cos(q[3]), s2 = sin(q[3]);
    const double v[16] = {mt, 0.0, m * b * c1, m * b * c2, 0.0, mt, m * b * s1, m * b * s2, m * b * c1, m * b * s1,
        m * b * b, 0.0, m * b * c2, m * b * s2, 0.0, m * b * b};
    memcpy(M, v, sizeof v);
}

static void cg_bias(double t, const double *q, const double *qd, const double *p, double *h)
{
    (void)t;
    const double m = p[0], mH = p[1], b = p[3], g = p[4], mt = mH + 2.0 * m;
    const double c1 = cos(q[2]), s1 = sin(q[2]), c2 = cos(q[3]), s2 = sin(q[3]);
    const double w1 = qd[2] * qd[2], w2 = qd[3] * qd[3];
    h[0] = -m * b * (w1 * s1 + w2 * s2);
    h[1] = m * b * (w1 * c1 + w2 * c2) + mt * g;
    h[2] = m * b * g * s1;
    h[3] = m * b * g * s2;
}

static void cg_gravity(const double *q, const double *p, double *G)
{
    const double zero[4] = {0.0, 0.0, 0.0, 0.0};
    cg_bias(0.0, q, zero, p, G);
}

static void cg_input_map(const double *q, const double *p, double *B)
{
    (void)q;
    (void)p;
    B[0] = 0.0;
    B[1] = 0.0;
    B[2] = 1.0;
    B[3] = -1.0;
}

static void cg_energy(const double *q, const double *qd, const double *p, double *e)
{
    double M[16], Mqd[4];
    int i, j;
    const double m = p[0], mH = p[1], b = p[3], g = p[4];
    cg_mass(q, p, M);
    e[0] = 0.0;
    for (i = 0; i < 4; ++i) {
        Mqd[i] = 0.0;
        for (j = 0; j < 4; ++j) {
            Mqd[i] += M[i * 4 + j] * qd[j];
        }
        e[0] += 0.5 * qd[i] * Mqd[i];
    }
    e[1] = g * ((mH + 2.0 * m) * q[1] - m * b * (cos(q[2]) + cos(q[3])));
}

static void cg_points(const double *q, const double *p, double *r)
{
    const double l = p[2] + p[3];
    r[0] = q[0];
    r[1] = q[1];
    r[2] = q[0] + l * sin(q[2]);
    r[3] = q[1] - l * cos(q[2]);
    r[4] = q[0] + l * sin(q[3]);
    r[5] = q[1] - l * cos(q[3]);
}

static void cg_cpos(const double *q, const double *p, double *c)
{
    const double l = p[2] + p[3], ct = cos(p[5]), st = sin(p[5]);
    int i;
    for (i = 0; i < 2; ++i) {
        const double fx = q[0] + l * sin(q[2 + i]), fy = q[1] - l * cos(q[2 + i]);
        c[2 * i] = ct * fx + st * fy;
        c[2 * i + 1] = -st * fx + ct * fy;
    }
}

static void cg_cjac(const double *q, const double *p, double *J)
{
    const double l = p[2] + p[3], ct = cos(p[5]), st = sin(p[5]);
    int i;
    memset(J, 0, 16 * sizeof(double));
    for (i = 0; i < 2; ++i) {
        const double ci = cos(q[2 + i]), si = sin(q[2 + i]);
        double *jt = J + (2 * i) * 4, *jn = J + (2 * i + 1) * 4;
        jt[0] = ct;
        jt[1] = st;
        jt[2 + i] = l * (ct * ci + st * si);
        jn[0] = -st;
        jn[1] = ct;
        jn[2 + i] = l * (-st * ci + ct * si);
    }
}

static void cg_cbias(const double *q, const double *qd, const double *p, double *b)
{
    const double l = p[2] + p[3], ct = cos(p[5]), st = sin(p[5]);
    int i;
    for (i = 0; i < 2; ++i) {
        const double ci = cos(q[2 + i]), si = sin(q[2 + i]), w = l * qd[2 + i] * qd[2 + i];
        /* foot acceleration without qdd: l thd^2 (-sin, cos) */
        b[2 * i] = w * (-ct * si + st * ci);
        b[2 * i + 1] = w * (st * si + ct * ci);
    }
}

static void cg_friction(const double *p, double *mu)
{
    mu[0] = p[6];
    mu[1] = p[6];
}

static const rodgen_constraint cg_blocks[2] = {
    {"foot1", RODGEN_CONTACT, 0, 2, {0.0, 0.0, 0.0, 0.0}},
    {"foot2", RODGEN_CONTACT, 2, 2, {0.0, 0.0, 0.0, 0.0}},
};
static const double cg_p[7] = {5.0, 10.0, 0.5, 0.5, 9.81, -0.05235987755982988, 0.8};
static const double cg_q0[4] = {0.0, 1.0, 0.0, 0.0};

static const rodgen_model cg_model = {
    .name = "compass", .nq = 4, .nv = 4, .nu = 1, .np = 7, .npoints = 3, .nconstraints = 2, .nrows = 4,
    .constraints = cg_blocks, .default_p = cg_p, .initial_q = cg_q0,
    .mass_matrix = cg_mass, .bias = cg_bias, .gravity = cg_gravity, .input_map = cg_input_map, .energy = cg_energy,
    .points = cg_points, .constraint_position = cg_cpos, .constraint_jacobian = cg_cjac,
    .constraint_bias = cg_cbias, .constraint_friction = cg_friction,
};

/* ---- four-bar ---- */

static double fb_msum(const double *p, int k)
{
    double s = 0.0;
    int j;
    for (j = k; j < 3; ++j) {
        s += p[3 + j];
    }
    return s;
}

static void fb_mass(const double *q, const double *p, double *M)
{
    int i, j;
    for (i = 0; i < 3; ++i) {
        for (j = 0; j < 3; ++j) {
            M[i * 3 + j] = p[i] * p[j] * cos(q[i] - q[j]) * fb_msum(p, i > j ? i : j);
        }
    }
}

static void fb_bias(double t, const double *q, const double *qd, const double *p, double *h)
{
    (void)t;
    int i, j;
    for (i = 0; i < 3; ++i) {
        h[i] = p[6] * p[i] * sin(q[i]) * fb_msum(p, i);
        for (j = 0; j < 3; ++j) {
            h[i] += p[i] * p[j] * sin(q[i] - q[j]) * qd[j] * qd[j] * fb_msum(p, i > j ? i : j);
        }
    }
}

static void fb_gravity(const double *q, const double *p, double *G)
{
    const double zero[3] = {0.0, 0.0, 0.0};
    fb_bias(0.0, q, zero, p, G);
}

static void fb_input_map(const double *q, const double *p, double *B)
{
    (void)q;
    (void)p;
    B[0] = 1.0;
    B[1] = 0.0;
    B[2] = 0.0;
}

static void fb_points(const double *q, const double *p, double *r)
{
    double x = 0.0, y = 0.0;
    int k;
    for (k = 0; k < 3; ++k) {
        x += p[k] * sin(q[k]);
        y -= p[k] * cos(q[k]);
        r[2 * k] = x;
        r[2 * k + 1] = y;
    }
}

static void fb_energy(const double *q, const double *qd, const double *p, double *e)
{
    double vx = 0.0, vy = 0.0, y = 0.0;
    int k;
    e[0] = 0.0;
    e[1] = 0.0;
    for (k = 0; k < 3; ++k) {
        vx += p[k] * cos(q[k]) * qd[k];
        vy += p[k] * sin(q[k]) * qd[k];
        y -= p[k] * cos(q[k]);
        e[0] += 0.5 * p[3 + k] * (vx * vx + vy * vy);
        e[1] += p[3 + k] * p[6] * y;
    }
}

/* rows: loop x, loop y, [loop x, loop y,] limit */
static void fb_cpos_n(const double *q, const double *p, double *c, int loops)
{
    double r[6];
    int k;
    fb_points(q, p, r);
    for (k = 0; k < loops; ++k) {
        c[2 * k] = r[4] - p[7];
        c[2 * k + 1] = r[5] - p[8];
    }
    c[2 * loops] = q[0] - p[9];
}

static void fb_cjac_n(const double *q, const double *p, double *J, int loops)
{
    int k, j;
    for (k = 0; k < loops; ++k) {
        for (j = 0; j < 3; ++j) {
            J[(2 * k) * 3 + j] = p[j] * cos(q[j]);
            J[(2 * k + 1) * 3 + j] = p[j] * sin(q[j]);
        }
    }
    J[(2 * loops) * 3 + 0] = 1.0;
    J[(2 * loops) * 3 + 1] = 0.0;
    J[(2 * loops) * 3 + 2] = 0.0;
}

static void fb_cbias_n(const double *q, const double *qd, const double *p, double *b, int loops)
{
    double bx = 0.0, by = 0.0;
    int k, j;
    for (j = 0; j < 3; ++j) {
        bx -= p[j] * sin(q[j]) * qd[j] * qd[j];
        by += p[j] * cos(q[j]) * qd[j] * qd[j];
    }
    for (k = 0; k < loops; ++k) {
        b[2 * k] = bx;
        b[2 * k + 1] = by;
    }
    b[2 * loops] = 0.0;
}

static void fb_cpos(const double *q, const double *p, double *c) { fb_cpos_n(q, p, c, 1); }
static void fb_cjac(const double *q, const double *p, double *J) { fb_cjac_n(q, p, J, 1); }
static void fb_cbias(const double *q, const double *qd, const double *p, double *b) { fb_cbias_n(q, qd, p, b, 1); }
static void fb2_cpos(const double *q, const double *p, double *c) { fb_cpos_n(q, p, c, 2); }
static void fb2_cjac(const double *q, const double *p, double *J) { fb_cjac_n(q, p, J, 2); }
static void fb2_cbias(const double *q, const double *qd, const double *p, double *b) { fb_cbias_n(q, qd, p, b, 2); }

static const rodgen_constraint fb_blocks[2] = {
    {"loop", RODGEN_LOOP, 0, 2, {0.0, 0.0, 0.0, 0.0}},
    {"th1_lower", RODGEN_LIMIT, 2, 1, {0.0, 0.0, 0.0, 0.0}},
};
static const rodgen_constraint fb2_blocks[3] = {
    {"loop", RODGEN_LOOP, 0, 2, {0.0, 0.0, 0.0, 0.0}},
    {"loop_again", RODGEN_LOOP, 2, 2, {0.0, 0.0, 0.0, 0.0}},
    {"th1_lower", RODGEN_LIMIT, 4, 1, {0.0, 0.0, 0.0, 0.0}},
};
static const double fb_p[10] = {1.0, 1.0, 1.0, 1.0, 2.0, 1.5, 9.81, 1.2, 0.0, -0.3};
static const double fb_q0[3] = {0.5, 1.5, -0.5};

static const rodgen_model fb_model = {
    .name = "fourbar", .nq = 3, .nv = 3, .nu = 1, .np = 10, .npoints = 3, .nconstraints = 2, .nrows = 3,
    .constraints = fb_blocks, .default_p = fb_p, .initial_q = fb_q0,
    .mass_matrix = fb_mass, .bias = fb_bias, .gravity = fb_gravity, .input_map = fb_input_map, .energy = fb_energy,
    .points = fb_points, .constraint_position = fb_cpos, .constraint_jacobian = fb_cjac,
    .constraint_bias = fb_cbias, .constraint_friction = 0,
};
static const rodgen_model fb2_model = {
    .name = "fourbar_twice", .nq = 3, .nv = 3, .nu = 1, .np = 10, .npoints = 3, .nconstraints = 3, .nrows = 5,
    .constraints = fb2_blocks, .default_p = fb_p, .initial_q = fb_q0,
    .mass_matrix = fb_mass, .bias = fb_bias, .gravity = fb_gravity, .input_map = fb_input_map, .energy = fb_energy,
    .points = fb_points, .constraint_position = fb2_cpos, .constraint_jacobian = fb2_cjac,
    .constraint_bias = fb2_cbias, .constraint_friction = 0,
};

/* ---- a point mass on a slope: q = [x, y], one contact, a force u along x ---- */

static void pm_mass(const double *q, const double *p, double *M)
{
    (void)q;
    M[0] = p[0];
    M[1] = 0.0;
    M[2] = 0.0;
    M[3] = p[0];
}

static void pm_bias(double t, const double *q, const double *qd, const double *p, double *h)
{
    (void)t;
    (void)q;
    (void)qd;
    h[0] = 0.0;
    h[1] = p[0] * p[1];
}

static void pm_gravity(const double *q, const double *p, double *G)
{
    const double zero[2] = {0.0, 0.0};
    pm_bias(0.0, q, zero, p, G);
}

static void pm_input_map(const double *q, const double *p, double *B)
{
    (void)q;
    (void)p;
    B[0] = 1.0;
    B[1] = 0.0;
}

static void pm_energy(const double *q, const double *qd, const double *p, double *e)
{
    e[0] = 0.5 * p[0] * (qd[0] * qd[0] + qd[1] * qd[1]);
    e[1] = p[0] * p[1] * q[1];
}

static void pm_points(const double *q, const double *p, double *r)
{
    (void)p;
    r[0] = q[0];
    r[1] = q[1];
}

static void pm_cpos(const double *q, const double *p, double *c)
{
    c[0] = cos(p[2]) * q[0] + sin(p[2]) * q[1];
    c[1] = -sin(p[2]) * q[0] + cos(p[2]) * q[1];
}

static void pm_cjac(const double *q, const double *p, double *J)
{
    (void)q;
    J[0] = cos(p[2]);
    J[1] = sin(p[2]);
    J[2] = -sin(p[2]);
    J[3] = cos(p[2]);
}

static void pm_cbias(const double *q, const double *qd, const double *p, double *b)
{
    (void)q;
    (void)qd;
    (void)p;
    b[0] = 0.0;
    b[1] = 0.0;
}

static void pm_friction(const double *p, double *mu)
{
    mu[0] = p[3];
}

static const rodgen_constraint pm_blocks[1] = {{"point", RODGEN_CONTACT, 0, 2, {0.0, 0.0, 0.0, 0.0}}};
static const double pm_p[4] = {2.0, 9.81, -0.3490658503988659, 0.2};
static const double pm_q0[2] = {0.0, 0.0};
static const rodgen_model pm_model = {
    .name = "point", .nq = 2, .nv = 2, .nu = 1, .np = 4, .npoints = 1, .nconstraints = 1, .nrows = 2,
    .constraints = pm_blocks, .default_p = pm_p, .initial_q = pm_q0,
    .mass_matrix = pm_mass, .bias = pm_bias, .gravity = pm_gravity, .input_map = pm_input_map,
    .energy = pm_energy, .points = pm_points, .constraint_position = pm_cpos, .constraint_jacobian = pm_cjac,
    .constraint_bias = pm_cbias, .constraint_friction = pm_friction,
};

/* ---- wrappers for ctypes ---- */

static const rodgen_model *model_of(int id)
{
    return id == 0 ? &cg_model : id == 1 ? &fb_model : id == 2 ? &fb2_model : &pm_model;
}

int h_sizes(int id, int *out)
{
    const rodgen_model *m = model_of(id);
    out[0] = m->nq;
    out[1] = m->nu;
    out[2] = m->np;
    out[3] = m->nconstraints;
    out[4] = m->nrows;
    return 0;
}

/* M [nq*nq], h [nq], B [nq*nu], c, b [nrows], J [nrows*nq], e [2], r [2*npoints] */
int h_eval(int id, const double *p, const double *q, const double *qd, double *M, double *h, double *B, double *c,
    double *J, double *b, double *e, double *r)
{
    const rodgen_model *m = model_of(id);
    m->mass_matrix(q, p, M);
    m->bias(0.0, q, qd, p, h);
    m->input_map(q, p, B);
    m->constraint_position(q, p, c);
    m->constraint_jacobian(q, p, J);
    m->constraint_bias(q, qd, p, b);
    m->energy(q, qd, p, e);
    m->points(q, p, r);
    return 0;
}

int h_cfd(int id, const double *p, const double *q, const double *qd, const double *u, const int *active,
    const double *target, double alpha, double beta, double *qdd, double *lambda)
{
    const rodgen_model *m = model_of(id);
    rodgen_cfd_options o;
    void *work = malloc((size_t)rodgen_contact_work_bytes(m));
    int status;
    rodgen_cfd_defaults(&o);
    o.alpha = alpha;
    o.beta = beta;
    status = rodgen_constrained_dynamics(m, 0.0, p, q, qd, u, active, target, &o, qdd, lambda, work);
    free(work);
    return status;
}

int h_impact(int id, const double *p, const double *q, const double *qdm, const int *active, double *qdp,
    double *impulse, int *after, double *loss)
{
    const rodgen_model *m = model_of(id);
    void *work = malloc((size_t)rodgen_contact_work_bytes(m));
    int status = rodgen_impact(m, p, q, qdm, active, 0, qdp, impulse, after, loss, work);
    free(work);
    return status;
}

static int constant_input(void *context, double t, const double *y, double *u)
{
    (void)t;
    (void)y;
    u[0] = *(const double *)context;
    return 0;
}

/* opts: [t_end, dt, event_tol, alpha, beta, arm_gap, check_tol, u, max_events]; iopts: [on_slip,
 * store_every, chunk]. Runs in chunks of `chunk` rows (and 3 nc + 2 events), appending to the outputs of
 * capacity `capacity` / `ecap`. Events: ev_t, ev_kind, ev_block, ev_imp [2], ev_loss.
 * info: [rows, events, block, calls, steps]; returns the last status. */
int h_simulate(int id, const double *p, const double *opts, const int *iopts, const double *y0, const int *active0,
    const int *disarmed0, long capacity, double *t_out, double *y_out, double *lam_out, int *act_out,
    double *u_out, long ecap, double *ev_t, int *ev_kind, int *ev_block, double *ev_imp, double *ev_loss,
    long *info)
{
    const rodgen_model *m = model_of(id);
    const int ny = 2 * m->nq, nr = m->nrows, nc = m->nconstraints;
    const long chunk = iopts[2];
    const long echunk = 3L * nc + 2;
    rodgen_hybrid_options o;
    rodgen_hybrid_state s;
    rodgen_event *ev = malloc((size_t)echunk * sizeof(rodgen_event));
    double u = opts[7];
    void *work = malloc((size_t)rodgen_hybrid_work_bytes(m));
    long n = 0, ne = 0, calls = 0;
    int status;
    rodgen_hybrid_defaults(&o);
    o.t_end = opts[0];
    o.dt = opts[1];
    o.event_tol = opts[2];
    o.cfd.alpha = opts[3];
    o.cfd.beta = opts[4];
    o.arm_gap = opts[5];
    o.check_tol = opts[6];
    o.max_events = (long)opts[8];
    o.on_slip = iopts[0];
    o.store_every = iopts[1];
    status = rodgen_hybrid_start(&s, m, p, u != 0.0 ? constant_input : 0, &u, &o, 0.0, y0, active0, disarmed0,
        work);
    while (status == RODGEN_OK || status == RODGEN_SIM_FULL) {
        long k, j, got = 0, gotev = 0;
        const long cap = capacity - n < chunk ? capacity - n : chunk;
        if (cap < 3 || ecap - ne < echunk) {
            status = -1;   /* the harness's arrays are full */
            break;
        }
        status = rodgen_hybrid_simulate(&o, &s, cap, t_out + n, y_out + n * ny, lam_out + n * nr,
            act_out + n * nc, u_out + n * m->nu, &got, echunk, ev, &gotev);
        calls += 1;
        for (k = 0; k < gotev; ++k, ++ne) {
            ev_t[ne] = ev[k].t;
            ev_kind[ne] = ev[k].kind;
            ev_block[ne] = ev[k].block;
            for (j = 0; j < 2; ++j) {
                ev_imp[2 * ne + j] = ev[k].impulse[j];
            }
            ev_loss[ne] = ev[k].energy_loss;
        }
        n += got;
        if (status != RODGEN_SIM_FULL) {
            break;
        }
    }
    info[0] = n;
    info[1] = ne;
    info[2] = s.block;
    info[3] = calls;
    info[4] = s.steps;
    free(work);
    free(ev);
    return status;
}
