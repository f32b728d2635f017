// Native timing of rodgen's derivatives of the constrained dynamics (rodgen_constrained_derivatives over the
// generated library) against Pinocchio's constraintDynamics followed by computeConstraintDynamicsDerivatives,
// same states, same run.
//
// Compiled once by benchmarks/bench_cderiv_native.py (g++ with the flags it reports) and linked per robot with a
// C glue file over the generated library exposing the bench_* functions below. Pinocchio's algorithms are
// instantiated in this translation unit, so both sides see the same flags.
//
// Usage: cderiv_harness <data file> <rounds> [rodgen|pinocchio]
// The data file (written by the script): the Pinocchio model file (binary serialisation), then
// "nq nv nc nstates", per contact "parent_joint tx ty tz r00 r01 r02 r10 ... r22" (a CONTACT_3D in
// LOCAL_WORLD_ALIGNED), the map vi (rodgen velocity i is Pinocchio's velocity vi[i]), and per state
// Pinocchio's q v tau then rodgen's q v u. Prints "diff <name> <max abs difference> <max abs of Pinocchio's>"
// lines first (q̈, λ and their six derivatives), then "time derivatives <rodgen ns> <pinocchio ns>" (minimum over
// interleaved rounds of the mean per call).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <pinocchio/algorithm/constrained-dynamics-derivatives.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/multibody.hpp>
#include <pinocchio/serialization.hpp>

extern "C" {
int bench_setup(void);
int bench_nrows(void);
int bench_nu(void);
int bench_derivatives(const double *q, const double *v, const double *u, double *qdd, double *lambda, double *D);
}

namespace {

volatile double sink = 0.0;

struct State {
    Eigen::VectorXd pq, pv, ptau;
    std::vector<double> q, v, u;
};

template <class F>
double per_call_ns(F &&f, int nstates, int reps) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
        for (int s = 0; s < nstates; ++s) f(s);
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / (double(reps) * nstates);
}

struct Diff {
    double d = 0, ref = 0;
    void add(double ours, double theirs) {
        d = std::max(d, std::abs(ours - theirs));
        ref = std::max(ref, std::abs(theirs));
    }
};

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::cerr << "usage: cderiv_harness <data file> <rounds> [rodgen|pinocchio]\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    const int rounds = std::atoi(argv[2]);
    const bool only_rodgen = argc > 3 && std::string(argv[3]) == "rodgen";
    const bool only_pin = argc > 3 && std::string(argv[3]) == "pinocchio";
    std::string model_file;
    int nq, nv, nc, ns;
    in >> model_file >> nq >> nv >> nc >> ns;
    pinocchio::Model model;
    model.loadFromBinary(model_file);
    if (model.nq != nq || model.nv != nv) {
        std::cerr << "Pinocchio model has nq=" << model.nq << " nv=" << model.nv << "\n";
        return 3;
    }
    pinocchio::Data data(model);
    typedef pinocchio::RigidConstraintModel CM;
    typedef pinocchio::RigidConstraintData CD;
    PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(CM) cms;
    PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(CD) cds;
    for (int c = 0; c < nc; ++c) {
        int joint;
        Eigen::Vector3d t;
        Eigen::Matrix3d R;
        in >> joint >> t[0] >> t[1] >> t[2];
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) in >> R(i, j);
        cms.push_back(CM(pinocchio::CONTACT_3D, model, joint, pinocchio::SE3(R, t), pinocchio::LOCAL_WORLD_ALIGNED));
    }
    for (auto &cm : cms) cds.push_back(CD(cm));
    std::vector<int> vi(nv);
    for (auto &x : vi) in >> x;
    if (bench_setup() != 0) {
        std::cerr << "bench_setup failed\n";
        return 5;
    }
    const int nrows = bench_nrows(), nu = bench_nu(), w = 2 * nv + nu;
    std::vector<State> st(ns);
    for (auto &s : st) {
        s.pq.resize(nq), s.pv.resize(nv), s.ptau.resize(nv);
        s.q.resize(nq), s.v.resize(nv), s.u.resize(std::max(nu, 1));
        for (int i = 0; i < nq; ++i) in >> s.pq[i];
        for (int i = 0; i < nv; ++i) in >> s.pv[i];
        for (int i = 0; i < nv; ++i) in >> s.ptau[i];
        for (int i = 0; i < nq; ++i) in >> s.q[i];
        for (int i = 0; i < nv; ++i) in >> s.v[i];
        for (int i = 0; i < nu; ++i) in >> s.u[i];
    }
    if (!in) {
        std::cerr << "the data file is short\n";
        return 4;
    }
    if (nrows != 3 * nc) {
        std::cerr << "rodgen's model has " << nrows << " constraint rows, Pinocchio's contacts " << 3 * nc << "\n";
        return 6;
    }
    pinocchio::initConstraintDynamics(model, data, cms, cds);
    pinocchio::ProximalSettings prox(1e-14, 0.0, 1);
    std::vector<double> qdd(nv), lam(std::max(nrows, 1)), D((nv + nrows) * w);
    // the actuated velocities: rodgen's input j drives its velocity nv - nu + j
    Diff d_qdd, d_lam, d_qdd_dq, d_qdd_dv, d_qdd_du, d_lam_dq, d_lam_dv, d_lam_du;
    int status = 0;
    for (auto &s : st) {
        status |= bench_derivatives(s.q.data(), s.v.data(), s.u.data(), qdd.data(), lam.data(), D.data());
        pinocchio::constraintDynamics(model, data, s.pq, s.pv, s.ptau, cms, cds, prox);
        pinocchio::computeConstraintDynamicsDerivatives(model, data, cms, cds, prox);
        for (int i = 0; i < nv; ++i) {
            d_qdd.add(qdd[i], data.ddq[vi[i]]);
            for (int j = 0; j < nv; ++j) {
                d_qdd_dq.add(D[i * w + j], data.ddq_dq(vi[i], vi[j]));
                d_qdd_dv.add(D[i * w + nv + j], data.ddq_dv(vi[i], vi[j]));
            }
            for (int j = 0; j < nu; ++j) d_qdd_du.add(D[i * w + 2 * nv + j], data.ddq_dtau(vi[i], vi[nv - nu + j]));
        }
        for (int r = 0; r < nrows; ++r) {
            const double *Dr = D.data() + (nv + r) * w;
            d_lam.add(lam[r], data.lambda_c[r]);
            for (int j = 0; j < nv; ++j) {
                d_lam_dq.add(Dr[j], data.dlambda_dq(r, vi[j]));
                d_lam_dv.add(Dr[nv + j], data.dlambda_dv(r, vi[j]));
            }
            for (int j = 0; j < nu; ++j) d_lam_du.add(Dr[2 * nv + j], data.dlambda_dtau(r, vi[nv - nu + j]));
        }
    }
    std::printf("status %d\n", status);
    const std::pair<const char *, Diff *> diffs[] = {
        {"qdd", &d_qdd}, {"lambda", &d_lam}, {"dqdd_dq", &d_qdd_dq}, {"dqdd_dv", &d_qdd_dv},
        {"dqdd_du", &d_qdd_du}, {"dlambda_dq", &d_lam_dq}, {"dlambda_dv", &d_lam_dv}, {"dlambda_du", &d_lam_du}};
    for (const auto &d : diffs) std::printf("diff %s %.3e %.3e\n", d.first, d.second->d, d.second->ref);
    std::fflush(stdout);
    const int reps = 100;
    double t_r = 1e300, t_p = 1e300;
    for (int r = 0; r < rounds; ++r) {
        if (!only_pin) {
            t_r = std::min(t_r, per_call_ns([&](int i) {
                bench_derivatives(st[i].q.data(), st[i].v.data(), st[i].u.data(), qdd.data(), lam.data(), D.data());
                sink += D[0];
            }, ns, reps));
        }
        if (!only_rodgen) {
            t_p = std::min(t_p, per_call_ns([&](int i) {
                pinocchio::constraintDynamics(model, data, st[i].pq, st[i].pv, st[i].ptau, cms, cds, prox);
                pinocchio::computeConstraintDynamicsDerivatives(model, data, cms, cds, prox);
                sink += data.ddq_dq(0, 0);
            }, ns, reps));
        }
    }
    std::printf("time derivatives %.2f %.2f\n", t_r, t_p);
    return 0;
}
