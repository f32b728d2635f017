// Native timing of rodgen's generated forward and constrained dynamics against Pinocchio's aba and
// constraintDynamics, same states, same run.
//
// Compiled once by benchmarks/bench_floating_native.py (g++ with the flags it reports) and linked per robot with
// a C glue file over the generated library exposing the bench_* functions below. Pinocchio's algorithms are
// instantiated in this translation unit, so both sides see the same flags.
//
// Usage: constrained_harness <data file> <rounds>
// The data file (written by the script): the Pinocchio model file (binary serialisation), then
// "nq nv nc nstates", per contact "parent_joint tx ty tz r00 r01 r02 r10 ... r22" (a CONTACT_3D in
// LOCAL_WORLD_ALIGNED), the map vi (rodgen velocity i is Pinocchio's velocity vi[i]), and per state
// Pinocchio's q v tau then rodgen's q v u. Prints "diff <name> <max abs difference>" lines first, then
// "time <name> <rodgen ns> <pinocchio ns>" (minimum over interleaved rounds of the mean per call).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/multibody.hpp>
#include <pinocchio/serialization.hpp>

extern "C" {
int bench_setup(void);
int bench_nrows(void);
int bench_forward(const double *q, const double *v, const double *u, double *qdd);
int bench_constrained(const double *q, const double *v, const double *u, double *qdd, double *lambda);
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

}  // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::cerr << "usage: constrained_harness <data file> <rounds>\n";
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
    pinocchio::Data data(model), data_aba(model);   // aba leaves its own traces: a Data each
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
    const int nu = nv - 6;
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
    if (bench_setup() != 0) {
        std::cerr << "bench_setup failed\n";
        return 5;
    }
    const int nrows = bench_nrows();
    pinocchio::initConstraintDynamics(model, data, cms, cds);
    pinocchio::ProximalSettings prox(1e-12, 1e-12, 1);
    std::vector<double> qdd(nv), lam(std::max(nrows, 1));
    double d_fd = 0, d_cd = 0, d_lam = 0;
    int status = 0;
    for (auto &s : st) {
        status |= bench_forward(s.q.data(), s.v.data(), s.u.data(), qdd.data());
        const Eigen::VectorXd a = pinocchio::aba(model, data_aba, s.pq, s.pv, s.ptau);
        for (int i = 0; i < nv; ++i) d_fd = std::max(d_fd, std::abs(qdd[i] - a[vi[i]]));
        if (nc) {
            status |= bench_constrained(s.q.data(), s.v.data(), s.u.data(), qdd.data(), lam.data());
            const Eigen::VectorXd b = pinocchio::constraintDynamics(model, data, s.pq, s.pv, s.ptau, cms, cds, prox);
            for (int i = 0; i < nv; ++i) d_cd = std::max(d_cd, std::abs(qdd[i] - b[vi[i]]));
            double plus = 0, minus = 0;   // the sign convention of the forces may differ
            for (int i = 0; i < nrows && i < data.lambda_c.size(); ++i) {
                plus = std::max(plus, std::abs(lam[i] - data.lambda_c[i]));
                minus = std::max(minus, std::abs(lam[i] + data.lambda_c[i]));
            }
            d_lam = std::max(d_lam, std::min(plus, minus));
        }
    }
    std::printf("status %d\n", status);
    std::printf("diff forward %.3e\n", d_fd);
    if (nc) {
        std::printf("diff constrained_qdd %.3e\n", d_cd);
        std::printf("diff constrained_lambda %.3e\n", d_lam);
    }
    std::fflush(stdout);
    const int reps = 200;
    double fd_r = 1e300, fd_p = 1e300, cd_r = 1e300, cd_p = 1e300;
    for (int r = 0; r < rounds; ++r) {
        if (!only_pin) {
            fd_r = std::min(fd_r, per_call_ns([&](int i) {
                bench_forward(st[i].q.data(), st[i].v.data(), st[i].u.data(), qdd.data());
                sink += qdd[0];
            }, ns, reps));
        }
        if (!only_rodgen) {
            fd_p = std::min(fd_p, per_call_ns([&](int i) {
                pinocchio::aba(model, data_aba, st[i].pq, st[i].pv, st[i].ptau);
                sink += data_aba.ddq[0];
            }, ns, reps));
        }
        if (!nc) continue;
        if (!only_pin) {
            cd_r = std::min(cd_r, per_call_ns([&](int i) {
                bench_constrained(st[i].q.data(), st[i].v.data(), st[i].u.data(), qdd.data(), lam.data());
                sink += qdd[0];
            }, ns, reps));
        }
        if (!only_rodgen) {
            cd_p = std::min(cd_p, per_call_ns([&](int i) {
                pinocchio::constraintDynamics(model, data, st[i].pq, st[i].pv, st[i].ptau, cms, cds, prox);
                sink += data.ddq[0];
            }, ns, reps));
        }
    }
    std::printf("time forward %.2f %.2f\n", fd_r, fd_p);
    if (nc) std::printf("time constrained %.2f %.2f\n", cd_r, cd_p);
    return 0;
}
