# rodgen_cderiv.pxi: the binding of rodgen_cderiv.c (derivatives of the constrained dynamics and of
# the impact map), included by _rodgen_runtime.pyx. Use it through rodgen's CompiledModel
# (constrained_dynamics_derivatives, impact_derivatives, constraint_partials), which checks shapes and names
# blocks.

cdef extern from "rodgen_cderiv.h" nogil:
    long rodgen_cderiv_work_bytes(const rodgen_model *m)
    int rodgen_constrained_derivatives(const rodgen_model *m, double t, const double *p, const double *q,
                                       const double *qd, const double *u, const int *active, double *qdd,
                                       double *lam, double *D, void *work)
    int rodgen_impact_derivatives(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
                                  const int *active, double *qd_plus, double *impulse, double *D, void *work)


def constrained_derivatives(Model model, double[::1] q, double[::1] qd, double[::1] u, int[::1] active,
                            double[::1] p, double t, double[::1] qdd, double[::1] lam, double[:, ::1] D):
    """rodgen_constrained_derivatives into qdd [nv], lam [nrows], D [(nv + nrows), (2 nv + nu)]. Returns the
    status."""
    cdef const rodgen_model *m = model.m
    if (q.shape[0] != m.nq or qd.shape[0] != m.nv or u.shape[0] != m.nu or active.shape[0] != m.nconstraints
            or qdd.shape[0] != m.nv or lam.shape[0] != m.nrows or D.shape[0] != m.nv + m.nrows
            or D.shape[1] != 2 * m.nv + m.nu or (p.shape[0] not in (0, m.np))):
        raise ValueError("constrained_derivatives: an array has the wrong length")
    cdef void *work = PyMem_Malloc(rodgen_cderiv_work_bytes(m) + 8)
    if work == NULL:
        raise MemoryError()
    cdef int status
    cdef const double *up = &u[0] if u.shape[0] > 0 else NULL
    cdef double *lp = &lam[0] if lam.shape[0] > 0 else NULL
    cdef const int *ap = &active[0] if active.shape[0] > 0 else NULL
    cdef const double *pp = _opt_pointer(p, model.p0)
    try:
        with nogil:
            status = rodgen_constrained_derivatives(m, t, pp, &q[0], &qd[0], up, ap, &qdd[0], lp, &D[0, 0], work)
    finally:
        PyMem_Free(work)
    return status


def one_constrained_derivatives(Model model, object q, object qd, object u, int[::1] active, object p, double t):
    """rodgen_constrained_derivatives for one state with fewer checks (the one-state path of
    CompiledModel.constrained_dynamics_derivatives): (status, block), the block one float64 array holding qdd [nv],
    lam [nrows] and D [(nv + nrows) x (2 nv + nu)] row-major (the routine's scratch memory is the model's, kept
    between calls; a call while another thread holds it takes its own); None when q, qd, u
    or p is not a 1-D C-contiguous float64 array of its length (u, p may be None: zero inputs, the defaults) or
    active has not nconstraints entries."""
    cdef const rodgen_model *m = model.m
    if active.shape[0] != m.nconstraints:
        return None
    cdef Py_buffer b_q, b_qd, b_u, b_p
    cdef int h_q = 0, h_qd = 0, h_u = 0, h_p = 0, status = 0
    cdef const double *d_u = model.u0
    cdef const double *d_p = model.p0
    cdef const int *ap = &active[0] if active.shape[0] > 0 else NULL
    cdef Py_ssize_t n = m.nv, r = m.nrows, w = 2 * m.nv + m.nu
    cdef Py_ssize_t nres = n + r + (n + r) * w
    cdef double[::1] block
    cdef double *d
    cdef void *work = NULL
    cdef int own = 0
    try:
        h_q = _take(q, &b_q, m.nq)
        if not h_q:
            return None
        h_qd = _take(qd, &b_qd, n)
        if not h_qd:
            return None
        if u is not None:
            h_u = _take(u, &b_u, m.nu)
            if not h_u:
                return None
            d_u = <const double *>b_u.buf
        if p is not None:
            h_p = _take(p, &b_p, m.np)
            if not h_p:
                return None
            d_p = <const double *>b_p.buf
        if model.cd_work == NULL:
            model.cd_work = PyMem_Malloc(rodgen_cderiv_work_bytes(m) + 8)
            if model.cd_work == NULL:
                raise MemoryError()
        if model.cd_busy:       # another thread is in a call on this model: memory of its own
            work = PyMem_Malloc(rodgen_cderiv_work_bytes(m) + 8)
            if work == NULL:
                raise MemoryError()
            own = 1
        else:
            work = model.cd_work
            model.cd_busy = 1
        res = _empty(nres)
        block = res
        d = &block[0]
        with nogil:
            status = rodgen_constrained_derivatives(m, t, d_p, <const double *>b_q.buf, <const double *>b_qd.buf,
                                                    d_u, ap, d, d + n, d + n + r, work)
    finally:
        if own:
            PyMem_Free(work)
        elif work != NULL:
            model.cd_busy = 0
        if h_q:
            PyBuffer_Release(&b_q)
        if h_qd:
            PyBuffer_Release(&b_qd)
        if h_u:
            PyBuffer_Release(&b_u)
        if h_p:
            PyBuffer_Release(&b_p)
    return status, res


def impact_derivatives(Model model, double[::1] q, double[::1] qd_minus, int[::1] active, double[::1] p,
                       double[::1] qd_plus, double[::1] impulse, double[:, ::1] D):
    """rodgen_impact_derivatives into qd_plus [nv], impulse [nrows], D [(nv + nrows), 2 nv]. Returns the
    status."""
    cdef const rodgen_model *m = model.m
    if (q.shape[0] != m.nq or qd_minus.shape[0] != m.nv or active.shape[0] != m.nconstraints
            or qd_plus.shape[0] != m.nv or impulse.shape[0] != m.nrows or D.shape[0] != m.nv + m.nrows
            or D.shape[1] != 2 * m.nv or (p.shape[0] not in (0, m.np))):
        raise ValueError("impact_derivatives: an array has the wrong length")
    cdef void *work = PyMem_Malloc(rodgen_cderiv_work_bytes(m) + 8)
    if work == NULL:
        raise MemoryError()
    cdef int status
    cdef double *ip = &impulse[0] if impulse.shape[0] > 0 else NULL
    cdef const int *ap = &active[0] if active.shape[0] > 0 else NULL
    cdef const double *pp = _opt_pointer(p, model.p0)
    try:
        with nogil:
            status = rodgen_impact_derivatives(m, pp, &q[0], &qd_minus[0], ap, &qd_plus[0], ip, &D[0, 0], work)
    finally:
        PyMem_Free(work)
    return status


def constraint_partials(Model model, double t, double[::1] q, double[::1] qd, double[::1] qdd, double[::1] u,
                        double[::1] lam, double[::1] p, double[:, ::1] dg, double[:, ::1] dk):
    """The model's constraint_partials at one state: dg [nv, 2 nv] = d(M qdd + bias - B u - J^T lam)/d[q, qd]
    and dk [nrows, 2 nv] = d(J qdd + Jdot qd)/d[q, qd] at fixed qdd, u and lam. Returns 0, or -1 when the
    table has no constraint_partials."""
    cdef const rodgen_model *m = model.m
    if (q.shape[0] != m.nq or qd.shape[0] != m.nv or qdd.shape[0] != m.nv or u.shape[0] != m.nu
            or lam.shape[0] != m.nrows or dg.shape[0] != m.nv or dg.shape[1] != 2 * m.nv
            or dk.shape[0] != m.nrows or dk.shape[1] != 2 * m.nv or (p.shape[0] not in (0, m.np))):
        raise ValueError("constraint_partials: an array has the wrong length")
    if m.constraint_partials == NULL:
        return -1
    cdef const double *up = &u[0] if u.shape[0] > 0 else NULL
    cdef const double *lp = &lam[0] if lam.shape[0] > 0 else NULL
    cdef double *kp = &dk[0, 0] if dk.shape[0] > 0 else NULL
    cdef const double *pp = _opt_pointer(p, model.p0)
    with nogil:
        m.constraint_partials(t, &q[0], &qd[0], &qdd[0], up, lp, pp, &dg[0, 0], kp)
    return 0
