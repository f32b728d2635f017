/*
 * rodgen_lie.c: configurations of free, spherical and planar joints (rodgen_model.lie_joints):
 * q (+) v dt and its inverse, as Pinocchio's integrate and difference. A free joint moves by the
 * exponential map of SE(3) (M1 = M0 exp(v dt), the quaternion kept in the start's hemisphere), a
 * spherical joint by that of SO(3), a planar joint by that of SE(2); every other coordinate by
 * q + v dt. Pure C99, only <math.h>, no allocation. The same numbers as rodgen.runtime.liegroups.
 */
#include <math.h>

#include "rodgen_runtime.h"

#define RODGEN_LIE_SMALL 1e-6

static int rodgen_lie_nq(int kind)
{
    return kind == RODGEN_JOINT_FREE ? 7 : kind == RODGEN_JOINT_SPHERICAL ? 4 : 3;
}

static int rodgen_lie_nv(int kind)
{
    return kind == RODGEN_JOINT_FREE ? 6 : 3;
}

/* a (x) b of quaternions (x, y, z, w) */
static void rodgen_quat_mul(const double *a, const double *b, double *out)
{
    out[0] = a[3] * b[0] + b[3] * a[0] + a[1] * b[2] - a[2] * b[1];
    out[1] = a[3] * b[1] + b[3] * a[1] + a[2] * b[0] - a[0] * b[2];
    out[2] = a[3] * b[2] + b[3] * a[2] + a[0] * b[1] - a[1] * b[0];
    out[3] = a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2];
}

/* R(q) x for the unit quaternion q; R^T x when transpose */
static void rodgen_quat_rotate(const double *q, const double *x, int transpose, double *out)
{
    const double a = q[0], b = q[1], c = q[2], w = q[3];
    const double R[9] = {1 - 2 * (b * b + c * c), 2 * (a * b - c * w), 2 * (a * c + b * w),
                         2 * (a * b + c * w), 1 - 2 * (a * a + c * c), 2 * (b * c - a * w),
                         2 * (a * c - b * w), 2 * (b * c + a * w), 1 - 2 * (a * a + b * b)};
    int i;
    for (i = 0; i < 3; ++i) {
        out[i] = transpose ? R[i] * x[0] + R[3 + i] * x[1] + R[6 + i] * x[2]
                           : R[3 * i] * x[0] + R[3 * i + 1] * x[1] + R[3 * i + 2] * x[2];
    }
}

static void rodgen_cross(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* exp of the angular velocity w: the quaternion dq; with v, the translation V(w) v into p */
static void rodgen_exp_se3(const double *v, const double *w, double *p, double *dq)
{
    const double t = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
    const double a = t < RODGEN_LIE_SMALL ? 0.5 - t * t / 24.0 : (1.0 - cos(t)) / (t * t);
    const double b = t < RODGEN_LIE_SMALL ? 1.0 / 6.0 - t * t / 120.0 : (t - sin(t)) / (t * t * t);
    const double s = t < RODGEN_LIE_SMALL ? 0.5 - t * t / 48.0 : sin(0.5 * t) / t;
    double wv[3], wwv[3];
    int i;
    if (v != 0) {
        rodgen_cross(w, v, wv);
        rodgen_cross(w, wv, wwv);
        for (i = 0; i < 3; ++i) {
            p[i] = v[i] + a * wv[i] + b * wwv[i];
        }
    }
    for (i = 0; i < 3; ++i) {
        dq[i] = s * w[i];
    }
    dq[3] = cos(0.5 * t);
}

/* the twist (v, w) of exp = (p, q); v only when p is given */
static void rodgen_log_se3(const double *p, const double *q_in, double *v, double *w)
{
    double q[4], wp[3], wwp[3];
    const double sign = q_in[3] < 0 ? -1.0 : 1.0;
    double n, t, k, c;
    int i;
    for (i = 0; i < 4; ++i) {
        q[i] = sign * q_in[i];
    }
    n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
    t = 2.0 * atan2(n, q[3]);
    k = n < RODGEN_LIE_SMALL ? 2.0 + n * n / 3.0 : t / n;
    for (i = 0; i < 3; ++i) {
        w[i] = k * q[i];
    }
    if (p == 0) {
        return;
    }
    c = t < RODGEN_LIE_SMALL ? 1.0 / 12.0 + t * t / 720.0
                             : (1.0 - t * sin(t) / (2.0 * (1.0 - cos(t)))) / (t * t);
    rodgen_cross(w, p, wp);
    rodgen_cross(w, wp, wwp);
    for (i = 0; i < 3; ++i) {
        v[i] = p[i] - 0.5 * wp[i] + c * wwp[i];
    }
}

static void rodgen_planar_ab(double t, double *a, double *b)
{
    if (fabs(t) < RODGEN_LIE_SMALL) {
        *a = 1.0 - t * t / 6.0;
        *b = t / 2.0 - t * t * t / 24.0;
    } else {
        *a = sin(t) / t;
        *b = (1.0 - cos(t)) / t;
    }
}

static void rodgen_normalize4(double *x)
{
    const double n = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2] + x[3] * x[3]);
    int k;
    if (n > 0.0) {
        for (k = 0; k < 4; ++k) {
            x[k] /= n;
        }
    }
}

/* The lie_joints entry starting at q index i, or -1. */
static int rodgen_lie_at(const rodgen_model *m, int i)
{
    int f;
    for (f = 0; f < m->nlie; ++f) {
        if (m->lie_joints[3 * f + 1] == i) {
            return f;
        }
    }
    return -1;
}

void rodgen_integrate(const rodgen_model *m, const double *q, const double *v, double dt, double *out)
{
    int i = 0, iv = 0, k;
    while (i < m->nq) {
        const int f = rodgen_lie_at(m, i);
        if (f < 0) {
            out[i] = q[i] + dt * v[iv];
            ++i;
            ++iv;
            continue;
        }
        {
            const int kind = m->lie_joints[3 * f];
            double vs[6], p[3], dq[4], q1[4], rp[3];
            for (k = 0; k < rodgen_lie_nv(kind); ++k) {
                vs[k] = dt * v[iv + k];
            }
            if (kind == RODGEN_JOINT_FREE) {
                rodgen_exp_se3(vs, vs + 3, p, dq);
                rodgen_quat_mul(q + i + 3, dq, q1);
                rodgen_normalize4(q1);
                if (q1[0] * q[i + 3] + q1[1] * q[i + 4] + q1[2] * q[i + 5] + q1[3] * q[i + 6] < 0.0) {
                    for (k = 0; k < 4; ++k) {
                        q1[k] = -q1[k];
                    }
                }
                rodgen_quat_rotate(q + i + 3, p, 0, rp);
                for (k = 0; k < 3; ++k) {
                    out[i + k] = q[i + k] + rp[k];
                }
                for (k = 0; k < 4; ++k) {
                    out[i + 3 + k] = q1[k];
                }
            } else if (kind == RODGEN_JOINT_SPHERICAL) {
                rodgen_exp_se3(0, vs, 0, dq);
                rodgen_quat_mul(q + i, dq, q1);
                rodgen_normalize4(q1);
                for (k = 0; k < 4; ++k) {
                    out[i + k] = q1[k];
                }
            } else {
                double a, b, c = cos(q[i + 2]), s = sin(q[i + 2]), tx, ty;
                rodgen_planar_ab(vs[2], &a, &b);
                tx = a * vs[0] - b * vs[1];
                ty = b * vs[0] + a * vs[1];
                out[i] = q[i] + c * tx - s * ty;
                out[i + 1] = q[i + 1] + s * tx + c * ty;
                out[i + 2] = q[i + 2] + vs[2];
            }
            i += rodgen_lie_nq(kind);
            iv += rodgen_lie_nv(kind);
        }
    }
}

void rodgen_difference(const rodgen_model *m, const double *q0, const double *q1, double *v)
{
    int i = 0, iv = 0, k;
    while (i < m->nq) {
        const int f = rodgen_lie_at(m, i);
        if (f < 0) {
            v[iv] = q1[i] - q0[i];
            ++i;
            ++iv;
            continue;
        }
        {
            const int kind = m->lie_joints[3 * f];
            double a[4], b[4], ac[4], rel[4], d[3], p[3];
            if (kind == RODGEN_JOINT_FREE || kind == RODGEN_JOINT_SPHERICAL) {
                const int j = kind == RODGEN_JOINT_FREE ? i + 3 : i;
                for (k = 0; k < 4; ++k) {
                    a[k] = q0[j + k];
                    b[k] = q1[j + k];
                }
                rodgen_normalize4(a);
                rodgen_normalize4(b);
                ac[0] = -a[0];
                ac[1] = -a[1];
                ac[2] = -a[2];
                ac[3] = a[3];
                rodgen_quat_mul(ac, b, rel);
                if (kind == RODGEN_JOINT_FREE) {
                    for (k = 0; k < 3; ++k) {
                        d[k] = q1[i + k] - q0[i + k];
                    }
                    rodgen_quat_rotate(a, d, 1, p);
                    rodgen_log_se3(p, rel, v + iv, v + iv + 3);
                } else {
                    rodgen_log_se3(0, rel, 0, v + iv);
                }
            } else {
                const double dt = atan2(sin(q1[i + 2] - q0[i + 2]), cos(q1[i + 2] - q0[i + 2]));
                const double c = cos(q0[i + 2]), s = sin(q0[i + 2]);
                const double dx = q1[i] - q0[i], dy = q1[i + 1] - q0[i + 1];
                const double px = c * dx + s * dy, py = -s * dx + c * dy;
                double aa, bb, den;
                rodgen_planar_ab(dt, &aa, &bb);
                den = aa * aa + bb * bb;
                v[iv] = (aa * px + bb * py) / den;
                v[iv + 1] = (-bb * px + aa * py) / den;
                v[iv + 2] = dt;
            }
            i += rodgen_lie_nq(kind);
            iv += rodgen_lie_nv(kind);
        }
    }
}
