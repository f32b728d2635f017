/*
 * A generated model and rodgen's C runtime under -fsanitize=address,undefined (tests/test_sanitize_models.py).
 * Compiled with the model's folder (rodgen generate) and -DMODEL_HEADER="<prefix>.h" -DMODEL_TABLE=<prefix>_model,
 * for a spatial model also -DFRAMES=<prefix>_frames -DFRAME_JACOBIANS=<prefix>_frame_jacobians
 * -DNFRAMES=<prefix>_nframes. Every array has exactly the size the contract gives it, each its own
 * allocation, so a write or read past its end is reported.
 *
 * argv: the state y0 (2 nq numbers), then "walk" (a hybrid run of 10 s at 1 ms with the first contact held
 * and the second disarmed, 0.02 arm gap, in chunks of 300 rows) or "free" (RK4 and DOPRI5 runs of 1 s in
 * chunks of 50 rows, zero input).
 * Prints: every routine's outputs at y0 (lines "name v1 v2 ..."), then one line per run ("walk status rows
 * events touchdowns t_last th_a_last", "free<method> status rows t_last E_start E_last").
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rodgen_contact.h"
#include "rodgen_runtime.h"
#include MODEL_HEADER

static double *vec(long n)
{
    return calloc(n > 0 ? (size_t)n : 1u, sizeof(double));
}

static void show(const char *name, const double *v, long n)
{
    printf("%s", name);
    for (long i = 0; i < n; ++i) {
        printf(" %.17g", v[i]);
    }
    printf("\n");
}

static int find_block(const rodgen_model *m, int kind, int which)
{
    int seen = 0;
    for (int i = 0; i < m->nconstraints; ++i) {
        if (m->constraints[i].kind == kind && seen++ == which) {
            return i;
        }
    }
    return -1;
}

static void routines(const rodgen_model *m, const double *y0, const double *p)
{
    const int nq = m->nq, nu = m->nu, nr = m->nrows, nc = m->nconstraints;
    double *q = vec(nq), *qd = vec(nq), *u = vec(nu), *y = vec(2 * nq);
    memcpy(q, y0, nq * sizeof *q);
    memcpy(qd, y0 + nq, nq * sizeof *qd);
    memcpy(y, y0, 2 * nq * sizeof *y);
    double *M = vec(nq * nq), *h = vec(nq), *g = vec(nq), *B = vec(nq * nu), *qdd = vec(nq), *Q = vec(nq);
    double *dy = vec(2 * nq), *e = vec(2);
    m->mass_matrix(q, p, M);
    m->bias(0.0, q, qd, p, h);
    m->gravity(q, p, g);
    m->input_map(q, p, B);
    printf("forward_status %d\n", m->forward_dynamics(0.0, q, qd, u, p, qdd));
    m->inverse_dynamics(0.0, q, qd, qdd, p, Q);
    printf("rhs_status %d\n", m->rhs(0.0, y, u, p, dy));
    m->energy(q, qd, p, e);
    show("M", M, nq * nq);
    show("bias", h, nq);
    show("gravity", g, nq);
    show("B", B, nq * nu);
    show("qdd", qdd, nq);
    show("Q", Q, nq);
    show("dy", dy, 2 * nq);
    show("energy", e, 2);
    if (m->npoints > 0) {
        double *r = vec(2 * m->npoints);
        m->points(q, p, r);
        show("points", r, 2 * m->npoints);
        free(r);
    }
    if (m->rhs_jacobian) {
        double *J = vec(4 * nq * nq);
        printf("rhs_jacobian_status %d\n", m->rhs_jacobian(0.0, q, qd, u, p, J));
        show("rhs_jacobian", J, 4 * nq * nq);
        free(J);
    }
    if (nc > 0) {
        double *c = vec(nr), *J = vec(nr * nq), *b = vec(nr), *mu = vec(nc);
        m->constraint_position(q, p, c);
        m->constraint_jacobian(q, p, J);
        m->constraint_bias(q, qd, p, b);
        m->constraint_friction(p, mu);
        show("constraint_position", c, nr);
        show("constraint_jacobian", J, nr * nq);
        show("constraint_bias", b, nr);
        if (m->constrained_terms) {
            double *d = vec(nq), *qdd0 = vec(nq), *Jt = vec(nr * nq), *ct = vec(nr), *v = vec(nr);
            double *a0 = vec(nr), *A = vec(nr * nq), *S = vec(nr * nr), *k = vec(4 * nr), *target = vec(nr);
            double *lam = vec(nr), *s = vec(2 * nr), *qdd2 = vec(nq), *f = vec((nq + RODGEN_NV(m)) * (nq + RODGEN_NV(m)));
            m->constrained_terms(0.0, q, qd, u, p, d, qdd0, Jt, ct, v, a0, A, S);
            for (int i = 0; i < nr; ++i) {
                k[4 * i] = i < 2 ? 1.0 : 0.0;
                k[4 * i + 1] = 1.0 - k[4 * i];
                k[4 * i + 2] = 20.0;
                k[4 * i + 3] = 100.0;
            }
            m->constrained_solve(0.0, q, qd, u, p, k, target, d, qdd2, lam, s, f);
            show("constrained_qdd0", qdd0, nq);
            show("constrained_S", S, nr * nr);
            free(d), free(qdd0), free(Jt), free(ct), free(v), free(a0), free(A), free(S), free(k), free(target);
            free(lam), free(s), free(qdd2), free(f);
        }
        if (m->kinetic_friction) {
            double *mk = vec(nc);
            m->kinetic_friction(p, mk);
            free(mk);
        }
        free(c), free(J), free(b), free(mu);
    }
    if (m->nforces > 0) {
        double *f = vec(2 * m->nforces);
        m->element_forces(0.0, q, qd, u, p, f);
        show("element_forces", f, 2 * m->nforces);
        free(f);
    }
#ifdef FRAMES
    {
        const int nf = NFRAMES();
        double *r = vec(12 * nf), *Jf = vec(6 * nq * nf);
        FRAMES(q, p, r);
        FRAME_JACOBIANS(q, p, Jf);
        show("frames", r, 12 * nf);
        show("frame_jacobians", Jf, 6 * nq * nf);
        free(r), free(Jf);
    }
#endif
    free(q), free(qd), free(u), free(y), free(M), free(h), free(g), free(B), free(qdd), free(Q), free(dy), free(e);
}

static int walk(const rodgen_model *m, const double *y0, const double *p)
{
    const int nq = m->nq, nr = m->nrows, nc = m->nconstraints, nu = m->nu;
    const int stance = find_block(m, RODGEN_CONTACT, 0), swing = find_block(m, RODGEN_CONTACT, 1);
    int *active0 = calloc((size_t)nc, sizeof(int)), *disarmed0 = calloc((size_t)nc, sizeof(int));
    active0[stance] = RODGEN_STICK;
    disarmed0[swing] = 1;
    rodgen_hybrid_options o;
    rodgen_hybrid_defaults(&o);
    o.t_end = 10.0;
    o.dt = 1e-3;
    o.arm_gap = 0.02;
    void *work = malloc((size_t)rodgen_hybrid_work_bytes(m));
    rodgen_hybrid_state s;
    int status = rodgen_hybrid_start(&s, m, p, 0, 0, &o, 0.0, y0, active0, disarmed0, work);
    long rows = 0, touchdowns = 0, total_events = 0;
    const long cap = 300, ecap = 3 * nc + 2;
    double *t = vec(cap), *y = vec(cap * 2 * nq), *lam = vec(cap * nr), *u = vec(cap * nu);
    int *act = calloc((size_t)(cap * nc), sizeof(int));
    rodgen_event *ev = calloc((size_t)ecap, sizeof *ev);
    double last[2] = {0.0, 0.0};
    while (status == RODGEN_OK || status == RODGEN_SIM_FULL) {
        long n = 0, ne = 0;
        status = rodgen_hybrid_simulate(&o, &s, cap, t, y, lam, act, u, &n, ecap, ev, &ne);
        rows += n;
        total_events += ne;
        for (long i = 0; i < ne; ++i) {
            touchdowns += ev[i].kind == RODGEN_EVENT_TOUCHDOWN;
        }
        if (n > 0) {
            last[0] = t[n - 1];
            last[1] = y[(n - 1) * 2 * nq + 2];
        }
        if (status == RODGEN_OK) {
            break;
        }
    }
    printf("walk %d %ld %ld %ld %.17g %.17g\n", status, rows, total_events, touchdowns, last[0], last[1]);
    free(active0), free(disarmed0), free(work), free(t), free(y), free(lam), free(u), free(act), free(ev);
    return status;
}

static int free_run(const rodgen_model *m, const double *y0, const double *p, int method)
{
    const int nq = m->nq, nu = m->nu;
    rodgen_sim_options o;
    memset(&o, 0, sizeof o);
    o.method = method;
    o.t_end = 1.0;
    o.dt = 1e-3;
    o.rtol = 1e-9;
    o.atol = 1e-12;
    o.store_every = 1;
    rodgen_input in;
    memset(&in, 0, sizeof in);
    in.kind = RODGEN_INPUT_CONSTANT;
    double *storage = vec(RODGEN_SIM_STORAGE(nq));
    rodgen_sim_state s;
    rodgen_sim_start(&s, m, 0.0, y0, storage);
    const long cap = 50;
    double *t = vec(cap), *y = vec(cap * 2 * nq), *u = vec(cap * nu), *e = vec(2), *e0 = vec(2);
    m->energy(y0, y0 + nq, p, e0);
    long rows = 0;
    int status = RODGEN_SIM_FULL;
    double tl = 0.0;
    while (status == RODGEN_SIM_FULL) {
        long n = 0;
        status = rodgen_simulate(m, &o, &in, p, &s, cap, t, y, u, &n);
        rows += n;
        if (n > 0) {
            tl = t[n - 1];
            m->energy(y + (n - 1) * 2 * nq, y + (n - 1) * 2 * nq + nq, p, e);
        }
    }
    printf("free%d %d %ld %.17g %.17g %.17g\n", method, status, rows, tl, e0[0] + e0[1], e[0] + e[1]);
    free(storage), free(t), free(y), free(u), free(e), free(e0);
    return status;
}

int main(int argc, char **argv)
{
    const rodgen_model *m = MODEL_TABLE();
    const int nq = m->nq;
    if (argc != 2 * nq + 2) {
        fprintf(stderr, "usage: %s y0[%d] walk|free\n", argv[0], 2 * nq);
        return 2;
    }
    double *y0 = vec(2 * nq), *p = vec(m->np);
    for (int i = 0; i < 2 * nq; ++i) {
        y0[i] = strtod(argv[1 + i], 0);
    }
    memcpy(p, m->default_p, m->np * sizeof *p);
    routines(m, y0, p);
    int status;
    if (strcmp(argv[2 * nq + 1], "walk") == 0) {
        status = walk(m, y0, p);
    } else {
        status = free_run(m, y0, p, RODGEN_RK4);
        if (status == RODGEN_OK) {
            status = free_run(m, y0, p, RODGEN_DOPRI5);
        }
    }
    free(y0), free(p);
    return status == RODGEN_OK ? 0 : 1;
}
