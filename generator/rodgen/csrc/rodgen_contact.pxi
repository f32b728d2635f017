# rodgen_contact.pxi: the binding of rodgen_contact.c (constrained dynamics, impact map, hybrid
# simulation), included by _rodgen_runtime.pyx. Use it through rodgen's CompiledModel
# (constrained_dynamics, impact, simulate(contacts=...)), which checks shapes and names blocks.

cdef extern from "rodgen_contact.h" nogil:
    ctypedef struct rodgen_cfd_options:
        double alpha
        double beta
        double singular_tol
    void rodgen_cfd_defaults(rodgen_cfd_options *o)
    long rodgen_contact_work_bytes(const rodgen_model *m)
    int rodgen_constrained_dynamics(const rodgen_model *m, double t, const double *p, const double *q,
                                    const double *qd, const double *u, const int *active, const double *target,
                                    const rodgen_cfd_options *o, double *qdd, double *lam, void *work)
    int rodgen_impact(const rodgen_model *m, const double *p, const double *q, const double *qd_minus,
                      const int *active, const rodgen_cfd_options *o, double *qd_plus, double *impulse,
                      int *active_after, double *energy_loss, void *work)
    ctypedef struct rodgen_event:
        double t
        int kind
        int block
        double impulse[2]
        double energy_loss
    ctypedef int (*rodgen_hybrid_input_fn)(void *context, double t, const double *y, double *u) noexcept
    ctypedef struct rodgen_hybrid_options:
        double t_end
        double dt
        long store_every
        double event_tol
        double arm_gap
        double check_tol
        long max_events
        int on_slip
        rodgen_cfd_options cfd
        int hold
    void rodgen_hybrid_defaults(rodgen_hybrid_options *o)
    ctypedef struct rodgen_hybrid_state:
        double t
        double *y
        int *active
        long steps
        long events
        long evaluations
        long responses
        int block
    long rodgen_hybrid_work_bytes(const rodgen_model *m)
    int rodgen_hybrid_start(rodgen_hybrid_state *s, const rodgen_model *m, const double *p,
                            rodgen_hybrid_input_fn input, void *context, const rodgen_hybrid_options *o, double t0,
                            const double *y0, const int *active0, const int *disarmed0, void *work)
    int rodgen_hybrid_simulate(const rodgen_hybrid_options *o, rodgen_hybrid_state *s, long capacity,
                               double *t_out, double *y_out, double *lambda_out, int *active_out, double *u_out,
                               long *n_out, long event_capacity, rodgen_event *events_out, long *n_events)


cdef void _cfd(rodgen_cfd_options *o, double alpha, double beta, double singular_tol):
    rodgen_cfd_defaults(o)
    if alpha >= 0:
        o.alpha = alpha
    if beta >= 0:
        o.beta = beta
    if singular_tol > 0:
        o.singular_tol = singular_tol


cdef const double *_opt_pointer(double[::1] a, const double *fallback):
    return &a[0] if a is not None and a.shape[0] > 0 else fallback


def constrained_dynamics(Model model, double[::1] q, double[::1] qd, double[::1] u, int[::1] active,
                         double[::1] p, double[::1] qdd, double[::1] lam, double alpha=-1, double beta=-1,
                         double singular_tol=0, double t=0.0):
    """rodgen_constrained_dynamics at time t into qdd [nv], lam [nrows] (u, p may be empty: zero, defaults;
    alpha, beta < 0 and singular_tol <= 0: the defaults). Returns the status."""
    cdef const rodgen_model *m = model.m
    if (q.shape[0] != m.nq or qd.shape[0] != m.nv or qdd.shape[0] != m.nv or lam.shape[0] != m.nrows
            or active.shape[0] != m.nconstraints or (u.shape[0] not in (0, m.nu)) or (p.shape[0] not in (0, m.np))):
        raise ValueError("constrained_dynamics: an array has the wrong length")
    cdef rodgen_cfd_options o
    _cfd(&o, alpha, beta, singular_tol)
    cdef void *work = PyMem_Malloc(rodgen_contact_work_bytes(m) + 8)
    if work == NULL:
        raise MemoryError()
    cdef int status
    cdef double *lp = &lam[0] if lam.shape[0] > 0 else NULL
    cdef const int *ap = &active[0] if active.shape[0] > 0 else NULL
    cdef const double *pp = _opt_pointer(p, model.p0)
    cdef const double *uu = _opt_pointer(u, model.u0)
    try:
        with nogil:
            status = rodgen_constrained_dynamics(m, t, pp, &q[0], &qd[0], uu, ap, NULL, &o, &qdd[0], lp, work)
    finally:
        PyMem_Free(work)
    return status


cdef int _take_mask(object x, Py_buffer *v, Py_ssize_t width) except -1:
    """1 when x is a 1-D C-contiguous buffer of `width` C ints (then held in v), else 0 (nothing held)."""
    if x is None or not PyObject_CheckBuffer(x):
        return 0
    try:
        PyObject_GetBuffer(x, v, PyBUF_STRIDES | PyBUF_FORMAT)
    except (BufferError, ValueError, TypeError):
        return 0
    if (v.ndim == 1 and v.shape[0] == width and v.itemsize == sizeof(int) and v.strides[0] == sizeof(int)
            and v.format != NULL and v.format[0] == b"i" and v.format[1] == 0):
        return 1
    PyBuffer_Release(v)
    return 0


def one_constrained_dynamics(Model model, object q, object qd, object u, object p, object active, double alpha,
                             double beta, double t):
    """rodgen_constrained_dynamics for one state, the path of CompiledModel.constrained_dynamics: (status, qdd
    [nv], lam [nrows]), or None when q, qd, u, p (u, p: None for zero and the defaults) are not 1-D
    C-contiguous float64 arrays of their lengths or ``active`` not one of nconstraints C ints (the caller
    then takes the checked path). alpha, beta < 0: the defaults."""
    cdef const rodgen_model *m = model.m
    cdef Py_buffer bq, bqd, bu, bp, ba, bqdd, blam
    cdef int hq = 0, hqd = 0, hu = 0, hp = 0, ha = 0, hqdd = 0, hlam = 0
    cdef int status = 0
    cdef const double *du = model.u0
    cdef const double *dp = model.p0
    cdef const int *da = NULL
    cdef double *dlam = NULL
    cdef rodgen_cfd_options o
    cdef void *work = NULL
    res = None
    try:
        hq = _take(q, &bq, m.nq)
        hqd = _take(qd, &bqd, m.nv)
        if not (hq and hqd):
            return None
        if u is not None:
            hu = _take(u, &bu, m.nu)
            if not hu:
                return None
            du = <const double *>bu.buf
        if p is not None:
            hp = _take(p, &bp, m.np)
            if not hp:
                return None
            dp = <const double *>bp.buf
        ha = _take_mask(active, &ba, m.nconstraints)
        if not ha:
            return None
        if m.nconstraints > 0:
            da = <const int *>ba.buf
        qdd, lam = _empty(m.nv), _empty(m.nrows)
        PyObject_GetBuffer(qdd, &bqdd, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)
        hqdd = 1
        PyObject_GetBuffer(lam, &blam, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)
        hlam = 1
        if m.nrows > 0:
            dlam = <double *>blam.buf
        _cfd(&o, alpha, beta, 0.0)
        work = PyMem_Malloc(rodgen_contact_work_bytes(m) + 8)
        if work == NULL:
            raise MemoryError()
        with nogil:
            status = rodgen_constrained_dynamics(m, t, dp, <const double *>bq.buf, <const double *>bqd.buf, du, da,
                                                 NULL, &o, <double *>bqdd.buf, dlam, work)
        res = (status, qdd, lam)
    finally:
        PyMem_Free(work)
        if hq:
            PyBuffer_Release(&bq)
        if hqd:
            PyBuffer_Release(&bqd)
        if hu:
            PyBuffer_Release(&bu)
        if hp:
            PyBuffer_Release(&bp)
        if ha:
            PyBuffer_Release(&ba)
        if hqdd:
            PyBuffer_Release(&bqdd)
        if hlam:
            PyBuffer_Release(&blam)
    return res


def impact(Model model, double[::1] q, double[::1] qd_minus, int[::1] active, double[::1] p, double[::1] qd_plus,
           double[::1] impulse, int[::1] active_after, double alpha=-1, double beta=-1, double singular_tol=0):
    """rodgen_impact into qd_plus [nv], impulse [nrows], active_after [nconstraints].
    Returns (status, energy loss)."""
    cdef const rodgen_model *m = model.m
    if (q.shape[0] != m.nq or qd_minus.shape[0] != m.nv or qd_plus.shape[0] != m.nv
            or impulse.shape[0] != m.nrows or active.shape[0] != m.nconstraints
            or active_after.shape[0] != m.nconstraints or (p.shape[0] not in (0, m.np))):
        raise ValueError("impact: an array has the wrong length")
    cdef rodgen_cfd_options o
    _cfd(&o, alpha, beta, singular_tol)
    cdef void *work = PyMem_Malloc(rodgen_contact_work_bytes(m) + 8)
    if work == NULL:
        raise MemoryError()
    cdef int status
    cdef double loss = 0.0
    cdef double *ip = &impulse[0] if impulse.shape[0] > 0 else NULL
    cdef const int *ap = &active[0] if active.shape[0] > 0 else NULL
    cdef int *aa = &active_after[0] if active_after.shape[0] > 0 else NULL
    cdef const double *pp = _opt_pointer(p, model.p0)
    try:
        with nogil:
            status = rodgen_impact(m, pp, &q[0], &qd_minus[0], ap, &o, &qd_plus[0], ip, aa, &loss, work)
    finally:
        PyMem_Free(work)
    return status, loss


ctypedef struct _hybrid_law:
    const rodgen_model *m
    const rodgen_input *inp
    const double *p


cdef int _hybrid_input(void *context, double t, const double *y, double *u) noexcept nogil:
    """The input law of a Hybrid run: the runtime's laws (compiled ones stay in C; CALLBACK takes the GIL)."""
    cdef _hybrid_law *law = <_hybrid_law *>context
    return rodgen_input_eval(law.m, law.inp, t, y, law.p, u)


cdef class Hybrid:
    """One hybrid run (rodgen_hybrid_start / rodgen_hybrid_simulate) on a Model; use it through
    CompiledModel.simulate(contacts=...).

    Hybrid(law, p, t0, t_end, dt, store_every, event_tol, arm_gap, check_tol, max_events, on_slip, alpha, beta,
    singular_tol, y0, active0, disarmed0, hold=0): ``law`` a Simulation holding the input law (its integrator options
    are not used), tolerances <= 0 (alpha, beta < 0): the C defaults. ``status`` holds the start's status.
    """
    cdef rodgen_hybrid_options opt
    cdef rodgen_hybrid_state st
    cdef _hybrid_law law
    cdef void *work
    cdef readonly Simulation input_law
    cdef readonly Model model
    cdef readonly int status
    cdef double[::1] p
    cdef object keep

    def __cinit__(self):
        self.work = NULL

    def __init__(self, Simulation law, double[::1] p, double t0, double t_end, double dt, long store_every,
                 double event_tol, double arm_gap, double check_tol, long max_events, int on_slip, double alpha,
                 double beta, double singular_tol, double[::1] y0, int[::1] active0, int[::1] disarmed0,
                 int hold=0):
        cdef Model model = law.model
        cdef const rodgen_model *m = model.m
        if y0.shape[0] != m.nq + m.nv or p.shape[0] != m.np or active0.shape[0] != m.nconstraints \
                or disarmed0.shape[0] != m.nconstraints:
            raise ValueError("y0, p, active0 or disarmed0 has the wrong length")
        self.model = model
        self.input_law = law
        self.p = p
        self.keep = (p, y0, active0, disarmed0)
        rodgen_hybrid_defaults(&self.opt)
        self.opt.t_end = t_end
        self.opt.dt = dt
        self.opt.store_every = store_every
        if event_tol > 0:
            self.opt.event_tol = event_tol
        if arm_gap > 0:
            self.opt.arm_gap = arm_gap
        if check_tol > 0:
            self.opt.check_tol = check_tol
        self.opt.max_events = max_events
        self.opt.on_slip = on_slip
        self.opt.hold = hold
        _cfd(&self.opt.cfd, alpha, beta, singular_tol)
        self.work = PyMem_Malloc(rodgen_hybrid_work_bytes(m) + 8)
        if self.work == NULL:
            raise MemoryError()
        self.law.m = m
        self.law.inp = &law.inp
        self.law.p = _opt_pointer(p, model.p0)
        cdef rodgen_hybrid_input_fn fn = NULL
        if m.nu > 0:
            fn = _hybrid_input
        self.status = rodgen_hybrid_start(&self.st, m, self.law.p, fn, <void *>&self.law, &self.opt, t0, &y0[0],
                                          &active0[0] if m.nconstraints > 0 else NULL,
                                          &disarmed0[0] if m.nconstraints > 0 else NULL, self.work)

    def __dealloc__(self):
        PyMem_Free(self.work)

    def run(self, double[::1] t_out, double[::1] y_out, double[::1] lam_out, int[::1] active_out,
            double[::1] u_out, long event_capacity):
        """Integrate until t_end, a failure, or full arrays: (status, rows written, events as a list of
        (t, kind, block, impulse_t, impulse_n, energy_loss))."""
        cdef const rodgen_model *m = self.model.m
        cdef long cap = t_out.shape[0]
        if (cap < 3 or y_out.shape[0] != cap * (m.nq + m.nv) or lam_out.shape[0] != cap * m.nrows
                or active_out.shape[0] != cap * m.nconstraints or u_out.shape[0] != cap * m.nu
                or event_capacity < 3 * m.nconstraints + 2):
            raise ValueError("Hybrid.run: output arrays do not match (capacity >= 3 rows, events >= 3 nc + 2)")
        cdef rodgen_event *ev = <rodgen_event *>PyMem_Malloc(event_capacity * sizeof(rodgen_event))
        if ev == NULL:
            raise MemoryError()
        cdef long n = 0
        cdef long ne = 0
        cdef int status
        cdef double *lp = &lam_out[0] if lam_out.shape[0] > 0 else NULL
        cdef int *ap = &active_out[0] if active_out.shape[0] > 0 else NULL
        cdef double *up = &u_out[0] if u_out.shape[0] > 0 else NULL
        cdef long i
        try:
            with nogil:
                status = rodgen_hybrid_simulate(&self.opt, &self.st, cap, &t_out[0], &y_out[0], lp, ap, up, &n,
                                                event_capacity, ev, &ne)
            events = [(ev[i].t, ev[i].kind, ev[i].block, ev[i].impulse[0], ev[i].impulse[1], ev[i].energy_loss)
                      for i in range(ne)]
        finally:
            PyMem_Free(ev)
        return status, n, events

    @property
    def t(self):
        return self.st.t

    @property
    def y(self):
        return [self.st.y[i] for i in range(self.model.nq + self.model.nv)]

    @property
    def block(self):
        """The block of the last error (initial state, friction cone, event not located), or -1."""
        return self.st.block

    @property
    def active(self):
        return [self.st.active[i] for i in range(self.model.nconstraints)]

    @property
    def counts(self):
        """(grid steps, events, evaluations of the constrained dynamics, input responses in their place)."""
        return self.st.steps, self.st.events, self.st.evaluations, self.st.responses
