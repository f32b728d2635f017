# rodgen_lie.pxi: the binding of rodgen_lie.c (integrate and difference of configurations with free,
# spherical and planar joints), included by _rodgen_runtime.pyx. Use it through CompiledModel.integrate and
# CompiledModel.difference, which check shapes.

def lie_integrate(Model model, const double[::1] q, const double[::1] v, double dt, double[::1] out):
    """out [nq] = q (+) v dt (rodgen_integrate)."""
    if q.shape[0] != model.nq or v.shape[0] != model.nv or out.shape[0] != model.nq:
        raise ValueError("lie_integrate: q, out [nq] and v [nv] expected")
    rodgen_integrate(model.m, &q[0], &v[0], dt, &out[0])


def lie_difference(Model model, const double[::1] q0, const double[::1] q1, double[::1] out):
    """out [nv] = the velocity that takes q0 to q1 in unit time (rodgen_difference)."""
    if q0.shape[0] != model.nq or q1.shape[0] != model.nq or out.shape[0] != model.nv:
        raise ValueError("lie_difference: q0, q1 [nq] and out [nv] expected")
    rodgen_difference(model.m, &q0[0], &q1[0], &out[0])
