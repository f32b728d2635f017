// Native timing of rodgen's generated derivatives against Pinocchio's C++ library, same states, same run.
//
// Compiled once by benchmarks/bench_derivatives.py (g++ with the flags it reports) and linked per robot with
// a small C glue file that includes the generated <prefix>.c (so its static inverse-dynamics partials and
// tangent are reachable) and exposes the bench_* functions below. Pinocchio's algorithms are instantiated
// in this translation unit (no PINOCCHIO_ENABLE_TEMPLATE_INSTANTIATION), so both sides see the same flags.
//
// Usage: derivatives_harness <data file> <rounds>
// The data file (written by the script): the Pinocchio model file (binary serialisation), then
// "nq nv nu np nstates", the map vi (rodgen velocity i is Pinocchio's velocity vi[i]), the parameters p,
// and per state Pinocchio's q v tau a then rodgen's q v u a. Prints "diff <name> <max abs difference>"
// lines, then "time <name> <rodgen ns> <pinocchio ns>" (minimum over rounds of the mean per call).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#include <pinocchio/multibody.hpp>
#include <pinocchio/serialization.hpp>

extern "C" {
int bench_forward(const double *q, const double *v, const double *u, const double *p, double *qdd);
void bench_mass(const double *q, const double *p, double *M);
int bench_jacobian(const double *q, const double *v, const double *u, const double *p, double *J);
int bench_jacobian_per_column(const double *q, const double *v, const double *u, const double *p, double *J);
void bench_id_derivatives(const double *q, const double *v, const double *a, const double *p, double *dq,
                          double *dv);
}

namespace {

volatile double sink = 0.0;

struct State {
    Eigen::VectorXd pq, pv, ptau, pa;
    std::vector<double> q, v, u, a;
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
        std::cerr << "usage: derivatives_harness <data file> <rounds>\n";
        return 2;
    }
    std::ifstream in(argv[1]);
    const int rounds = std::atoi(argv[2]);
    std::string model_file;
    int nq, nv, nu, np, ns;
    in >> model_file >> nq >> nv >> nu >> np >> ns;
    pinocchio::Model model;
    model.loadFromBinary(model_file);
    if (model.nq != nq || model.nv != nv) {
        std::cerr << "Pinocchio model has nq=" << model.nq << " nv=" << model.nv << ", expected " << nq << " "
                  << nv << "\n";
        return 3;
    }
    pinocchio::Data data(model);
    std::vector<int> vi(nv);
    for (auto &x : vi) in >> x;
    std::vector<double> p(std::max(np, 1), 0.0);
    for (int i = 0; i < np; ++i) in >> p[i];
    std::vector<State> st(ns);
    for (auto &s : st) {
        s.pq.resize(nq); s.pv.resize(nv); s.ptau.resize(nv); s.pa.resize(nv);
        for (int i = 0; i < nq; ++i) in >> s.pq[i];
        for (int i = 0; i < nv; ++i) in >> s.pv[i];
        for (int i = 0; i < nv; ++i) in >> s.ptau[i];
        for (int i = 0; i < nv; ++i) in >> s.pa[i];
        s.q.resize(nq); s.v.resize(nv); s.u.resize(std::max(nu, 1), 0.0); s.a.resize(nv);
        for (auto &x : s.q) in >> x;
        for (auto &x : s.v) in >> x;
        for (int i = 0; i < nu; ++i) in >> s.u[i];
        for (auto &x : s.a) in >> x;
    }
    if (!in) {
        std::cerr << "data file " << argv[1] << " is short\n";
        return 3;
    }
    const int n = nv;
    std::vector<double> qdd(n), M(n * n), J(4 * n * n), dq(n * n), dv(n * n);

    // agreement on every state before any timing
    double d_fd = 0, d_m = 0, d_jq = 0, d_jv = 0, d_tq = 0, d_tv = 0, d_pc = 0;
    std::vector<double> J2(4 * n * n);
    int bad = 0;
    for (auto &s : st) {
        bad |= bench_forward(s.q.data(), s.v.data(), s.u.data(), p.data(), qdd.data());
        pinocchio::aba(model, data, s.pq, s.pv, s.ptau);
        for (int i = 0; i < n; ++i) d_fd = std::max(d_fd, std::fabs(qdd[i] - data.ddq[vi[i]]));
        bench_mass(s.q.data(), p.data(), M.data());
        pinocchio::crba(model, data, s.pq);
        data.M.triangularView<Eigen::StrictlyLower>() = data.M.transpose().triangularView<Eigen::StrictlyLower>();
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < n; ++k) d_m = std::max(d_m, std::fabs(M[i * n + k] - data.M(vi[i], vi[k])));
        bad |= bench_jacobian(s.q.data(), s.v.data(), s.u.data(), p.data(), J.data());
        pinocchio::computeABADerivatives(model, data, s.pq, s.pv, s.ptau);
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < n; ++k) {
                d_jq = std::max(d_jq, std::fabs(J[(n + i) * 2 * n + k] - data.ddq_dq(vi[i], vi[k])));
                d_jv = std::max(d_jv, std::fabs(J[(n + i) * 2 * n + n + k] - data.ddq_dv(vi[i], vi[k])));
            }
        bad |= bench_jacobian_per_column(s.q.data(), s.v.data(), s.u.data(), p.data(), J2.data());
        for (int i = 2 * n * n; i < 4 * n * n; ++i) d_pc = std::max(d_pc, std::fabs(J2[i] - J[i]));
        bench_id_derivatives(s.q.data(), s.v.data(), s.a.data(), p.data(), dq.data(), dv.data());
        pinocchio::computeRNEADerivatives(model, data, s.pq, s.pv, s.pa);
        for (int i = 0; i < n; ++i)
            for (int k = 0; k < n; ++k) {
                d_tq = std::max(d_tq, std::fabs(dq[i * n + k] - data.dtau_dq(vi[i], vi[k])));
                d_tv = std::max(d_tv, std::fabs(dv[i * n + k] - data.dtau_dv(vi[i], vi[k])));
            }
    }
    std::printf("status %d\n", bad);
    std::printf("diff forward %.3e\ndiff mass %.3e\ndiff aba_dq %.3e\ndiff aba_dv %.3e\n"
                "diff rnea_dq %.3e\ndiff rnea_dv %.3e\ndiff jacobian_per_column %.3e\n", d_fd, d_m, d_jq, d_jv, d_tq, d_tv,
                d_pc);

    // timing: each pair interleaved within every round; the minimum over rounds of the mean per call
    const int NW = 5;
    const char *names[NW] = {"forward", "mass", "jacobian", "id_derivatives", "jacobian_per_column"};
    double best[NW][2];
    for (auto &b : best) b[0] = b[1] = 1e300;
    // repetitions per round: about 2 ms of the slower side
    int reps[NW];
    for (int w = 0; w < NW; ++w) reps[w] = 1;
    for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < NW; ++w) {
            double tr = 0, tp = 0;
            switch (w) {
            case 0:
                tr = per_call_ns([&](int i) { bench_forward(st[i].q.data(), st[i].v.data(), st[i].u.data(),
                                                            p.data(), qdd.data()); sink += qdd[0]; }, ns, reps[w]);
                tp = per_call_ns([&](int i) { pinocchio::aba(model, data, st[i].pq, st[i].pv, st[i].ptau);
                                              sink += data.ddq[0]; }, ns, reps[w]);
                break;
            case 1:
                tr = per_call_ns([&](int i) { bench_mass(st[i].q.data(), p.data(), M.data()); sink += M[0]; },
                                 ns, reps[w]);
                tp = per_call_ns([&](int i) { pinocchio::crba(model, data, st[i].pq); sink += data.M(0, 0); },
                                 ns, reps[w]);
                break;
            case 2:
                tr = per_call_ns([&](int i) { bench_jacobian(st[i].q.data(), st[i].v.data(), st[i].u.data(),
                                                             p.data(), J.data()); sink += J[2 * n * n]; },
                                 ns, reps[w]);
                tp = per_call_ns([&](int i) {
                    pinocchio::computeABADerivatives(model, data, st[i].pq, st[i].pv, st[i].ptau);
                    sink += data.ddq_dq(0, 0); }, ns, reps[w]);
                break;
            case 4:   // the Jacobian as generated before the block solve (one solve per column), same Pinocchio side
                tr = per_call_ns([&](int i) { bench_jacobian_per_column(st[i].q.data(), st[i].v.data(),
                                                                        st[i].u.data(), p.data(), J.data());
                                              sink += J[2 * n * n]; }, ns, reps[w]);
                tp = per_call_ns([&](int i) {
                    pinocchio::computeABADerivatives(model, data, st[i].pq, st[i].pv, st[i].ptau);
                    sink += data.ddq_dq(0, 0); }, ns, reps[w]);
                break;
            default:
                tr = per_call_ns([&](int i) { bench_id_derivatives(st[i].q.data(), st[i].v.data(), st[i].a.data(),
                                                                   p.data(), dq.data(), dv.data());
                                              sink += dq[0]; }, ns, reps[w]);
                tp = per_call_ns([&](int i) {
                    pinocchio::computeRNEADerivatives(model, data, st[i].pq, st[i].pv, st[i].pa);
                    sink += data.dtau_dq(0, 0); }, ns, reps[w]);
            }
            if (r == 0) {   // calibrate: the first round is a warm-up, later rounds take about 2 ms per side
                reps[w] = std::max(1, int(2e6 / (std::max(tr, tp) * ns)));
                continue;
            }
            best[w][0] = std::min(best[w][0], tr);
            best[w][1] = std::min(best[w][1], tp);
        }
    }
    for (int w = 0; w < NW; ++w) std::printf("time %s %.2f %.2f\n", names[w], best[w][0], best[w][1]);
    return 0;
}
