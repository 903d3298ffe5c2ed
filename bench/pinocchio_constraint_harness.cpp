/* Race of mechgen's generated parallel-mechanism step against Pinocchio's constraintDynamics on
   the same mechanism, both timed inside compiled loops, interleaved, in one process. Built and
   driven by bench/pinocchio_constraint_race.py, which documents what is measured; the model is
   described by bench/pinocchio_constraint_model.py (to_text). usage: harness CONFIG.

   Compiled twice (as bench/pinocchio_harness.cpp is):
   - without MECHGEN_GLUE: the Pinocchio side and main() (slow to compile, once per flag set);
   - with -DMECHGEN_GLUE -DMECHGEN_MECH=mechgen_<name> -DMECHGEN_HEADER="path/<name>.h":
     ours_step() and ours_step_batch(), calling <prefix>_step / <prefix>_step_batch of the
     generated C file (compiled as C and linked), and ours_accel() / ours_accel_batch(), calling
     the lean <prefix>_step_accel / <prefix>_step_accel_batch (xdot and qdd only).

   CONFIG, one item a line (paths run to the end of the line):
     gravity GX GY GZ
     joint TYPE PARENT R(9, row-major) P(3) ARMATURE   TYPE: FF RX RY RZ PX PY PZ
     body M C(3) IC(9) R(9) P(3)      (appended to the last joint: mass, centre, inertia about
                                        the centre, placement in the joint frame)
     constraint 3|6 J1 R1(9) P1(3) J2 R2(9) P2(3)      (CONTACT_3D / CONTACT_6D, LOCAL)
     prox ABSOLUTE_ACCURACY RELATIVE_ACCURACY MU MAX_ITER    (ProximalSettings)
     n N | reps R | check K
     states PATH     float64 blocks of N x width, in this order: pin_q (nq), pin_v (nv),
                     pin_tau (nv), then ours: x 6, u 6, F NLEG, fE 3, mE 3, g 3, p NP
     ours NLEG NP NOUT SIZE_1..SIZE_NOUT     (our step's per-state sizes)
     accel NQ                                 (leg coordinates: step_accel gives xdot 12, qdd NQ)
   Timed (ns per state, best and median of R interleaved repetitions, after one warm-up; each
   repetition runs Pinocchio on another of seven copies of its Data and writes our single-state
   calls' outputs at another offset: see "Placements" in main()):
     pin_batch    constraintDynamics over the N states (initConstraintDynamics once before)
     pin_init     initConstraintDynamics + constraintDynamics per state over the N states
     pin_single   constraintDynamics N times on state 0
     ours_batch   <prefix>_step_batch over the N states
     ours_single  <prefix>_step N times on state 0
     accel_batch  <prefix>_step_accel_batch over the N states
     accel_single <prefix>_step_accel N times on state 0
   accel_vs_step: the largest difference of step_accel's xdot and qdd from step's over the N
   states, relative to the largest |value| of each.
   Prints one JSON object on stdout, with ddq of the first K states (for the driver's check). */

#include <stdint.h>

int ours_step(const double* const* in, double* const* out);
int64_t ours_step_batch(int64_t n, const double* const* in, double* const* out, int32_t* status);
int ours_accel(const double* const* in, double* const* out);
int64_t ours_accel_batch(int64_t n, const double* const* in, double* const* out, int32_t* status);

#ifdef MECHGEN_GLUE /* ------------------------------------------------------------------------- */

#define restrict __restrict__
extern "C" {
#include MECHGEN_HEADER
}

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

int ours_step(const double* const* in, double* const* out) {
  return CAT(MECHGEN_MECH, _step)(in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0],
                                  out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8]);
}

int64_t ours_step_batch(int64_t n, const double* const* in, double* const* out,
                        int32_t* status) {
  return CAT(MECHGEN_MECH, _step_batch)(n, in[0], in[1], in[2], in[3], in[4], in[5], in[6],
                                        out[0], out[1], out[2], out[3], out[4], out[5], out[6],
                                        out[7], out[8], status);
}

int ours_accel(const double* const* in, double* const* out) {
  return CAT(MECHGEN_MECH, _step_accel)(in[0], in[1], in[2], in[3], in[4], in[5], in[6], out[0],
                                        out[1]);
}

int64_t ours_accel_batch(int64_t n, const double* const* in, double* const* out,
                         int32_t* status) {
  return CAT(MECHGEN_MECH, _step_accel_batch)(n, in[0], in[1], in[2], in[3], in[4], in[5],
                                              in[6], out[0], out[1], status);
}

#else /* Pinocchio side and main() ------------------------------------------------------------ */

#include <pinocchio/algorithm/constrained-dynamics.hpp>
#include <pinocchio/algorithm/proximal.hpp>
#include <pinocchio/multibody.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using Vec = Eigen::VectorXd;
using pinocchio::SE3;
using CModel = pinocchio::RigidConstraintModel;
using CData = pinocchio::RigidConstraintData;
using CModels = PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(CModel);
using CDatas = PINOCCHIO_STD_VECTOR_WITH_EIGEN_ALLOCATOR(CData);

#include "harness_timing.hpp"

template <int N> static Eigen::Matrix<double, N, 1> read_vec(std::istringstream& ss) {
  Eigen::Matrix<double, N, 1> v;
  for (int i = 0; i < N; i++) ss >> v[i];
  return v;
}

static SE3 read_se3(std::istringstream& ss) {
  Eigen::Matrix3d R;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) ss >> R(i, j);
  return SE3(R, read_vec<3>(ss));
}

static pinocchio::JointIndex add_joint(pinocchio::Model& model, const std::string& type,
                                       pinocchio::JointIndex parent, const SE3& placement) {
  const std::string name = "j" + std::to_string(model.njoints);
  if (type == "FF") return model.addJoint(parent, pinocchio::JointModelFreeFlyer(), placement, name);
  if (type == "RX") return model.addJoint(parent, pinocchio::JointModelRX(), placement, name);
  if (type == "RY") return model.addJoint(parent, pinocchio::JointModelRY(), placement, name);
  if (type == "RZ") return model.addJoint(parent, pinocchio::JointModelRZ(), placement, name);
  if (type == "PX") return model.addJoint(parent, pinocchio::JointModelPX(), placement, name);
  if (type == "PY") return model.addJoint(parent, pinocchio::JointModelPY(), placement, name);
  if (type == "PZ") return model.addJoint(parent, pinocchio::JointModelPZ(), placement, name);
  throw std::runtime_error("unknown joint type " + type);
}

int main(int argc, char** argv) try {
  if (argc != 2) throw std::runtime_error("usage: pinocchio_constraint_harness CONFIG");
  std::ifstream cfg(argv[1]);
  std::string line, states_path;
  pinocchio::Model model;
  CModels cmodels;
  pinocchio::ProximalSettings prox(1e-12, 1e-10, 10);
  long n = 0, nleg = 0, np = 0, check = 0, nq_legs = -1;
  int reps = 7;
  std::vector<long> out_sizes;
  while (std::getline(cfg, line)) {
    std::istringstream ss(line);
    std::string key;
    if (!(ss >> key)) continue;
    if (key == "gravity") model.gravity.linear(read_vec<3>(ss));
    else if (key == "joint") {
      std::string type;
      long parent;
      double armature;
      ss >> type >> parent;
      SE3 placement = read_se3(ss);
      ss >> armature;
      if (parent < 0 || parent >= model.njoints) throw std::runtime_error("bad parent: " + line);
      auto id = add_joint(model, type, pinocchio::JointIndex(parent), placement);
      if (armature != 0.0) model.armature[model.joints[id].idx_v()] = armature;
    } else if (key == "body") {
      double m;
      ss >> m;
      Eigen::Vector3d c = read_vec<3>(ss);
      Eigen::Matrix3d I;
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) ss >> I(i, j);
      SE3 placement = read_se3(ss);
      model.appendBodyToJoint(pinocchio::JointIndex(model.njoints - 1),
                              pinocchio::Inertia(m, c, I), placement);
    } else if (key == "constraint") {
      int type;
      long j1, j2;
      ss >> type >> j1;
      SE3 p1 = read_se3(ss);
      ss >> j2;
      SE3 p2 = read_se3(ss);
      if (type != 3 && type != 6) throw std::runtime_error("constraint type 3 or 6: " + line);
      cmodels.emplace_back(type == 3 ? pinocchio::CONTACT_3D : pinocchio::CONTACT_6D, model,
                           pinocchio::JointIndex(j1), p1, pinocchio::JointIndex(j2), p2,
                           pinocchio::LOCAL);
    } else if (key == "prox")
      ss >> prox.absolute_accuracy >> prox.relative_accuracy >> prox.mu >> prox.max_iter;
    else if (key == "n") ss >> n;
    else if (key == "reps") ss >> reps;
    else if (key == "check") ss >> check;
    else if (key == "states") std::getline(ss >> std::ws, states_path);
    else if (key == "ours") {
      long nout;
      ss >> nleg >> np >> nout;
      out_sizes.resize(nout);
      for (auto& s : out_sizes) ss >> s;
    } else if (key == "accel") ss >> nq_legs;
    else throw std::runtime_error("unknown config line: " + line);
    if (ss.fail()) throw std::runtime_error("bad config line: " + line);
  }
  if (n < 1 || reps < 1 || out_sizes.size() != 9 || check > n || nq_legs != out_sizes[3])
    throw std::runtime_error("config needs n, reps >= 1, check <= n, 'ours' with 9 outputs and "
                             "'accel' with the size of qdd");

  // States: pin_q, pin_v, pin_tau, then our inputs, each a block of n x width.
  const long widths[] = {model.nq, model.nv, model.nv, 6, 6, nleg, 3, 3, 3, np};
  std::vector<std::vector<double>> blocks;
  std::ifstream sf(states_path, std::ios::binary);
  for (long w : widths) {
    blocks.emplace_back(size_t(n) * w);
    sf.read(reinterpret_cast<char*>(blocks.back().data()),
            std::streamsize(blocks.back().size() * sizeof(double)));
  }
  if (!sf || sf.peek() != EOF) throw std::runtime_error("states file size does not match config");
  std::vector<Vec> q(n), v(n), tau(n);
  for (long i = 0; i < n; i++) {
    q[i] = Eigen::Map<const Vec>(blocks[0].data() + i * model.nq, model.nq);
    v[i] = Eigen::Map<const Vec>(blocks[1].data() + i * model.nv, model.nv);
    tau[i] = Eigen::Map<const Vec>(blocks[2].data() + i * model.nv, model.nv);
  }

  // Placements (as in bench/pinocchio_harness.cpp): repetition r runs Pinocchio on its own
  // copy of Data and the constraints' datas, number r % PLACEMENTS, and our single-state calls
  // write their outputs at r % PLACEMENTS times PLACEMENT_STEP doubles into padded buffers, so
  // neither side's best or median time is that of the one place an allocation happened to land.
  constexpr int PLACEMENTS = 7;
  constexpr long PLACEMENT_STEP = 72;   // 576 bytes: seven places across a 4 KiB page
  std::vector<std::unique_ptr<pinocchio::Data>> datas;
  std::vector<CDatas> cdatas_at(PLACEMENTS);
  for (int p = 0; p < PLACEMENTS; p++) {
    datas.push_back(std::make_unique<pinocchio::Data>(model));
    for (auto& c : cmodels) cdatas_at[p].emplace_back(c);
    pinocchio::initConstraintDynamics(model, *datas[p], cmodels, cdatas_at[p]);
  }
  int placement = 0;

  double sink = 0;
  auto pin_batch = [&] {
    auto& data = *datas[placement];
    auto& cdatas = cdatas_at[placement];
    for (long i = 0; i < n; i++)
      sink += pinocchio::constraintDynamics(model, data, q[i], v[i], tau[i], cmodels, cdatas,
                                            prox)[0];
  };
  auto pin_init = [&] {
    auto& data = *datas[placement];
    auto& cdatas = cdatas_at[placement];
    for (long i = 0; i < n; i++) {
      pinocchio::initConstraintDynamics(model, data, cmodels, cdatas);
      sink += pinocchio::constraintDynamics(model, data, q[i], v[i], tau[i], cmodels, cdatas,
                                            prox)[0];
    }
  };
  auto pin_single = [&] {
    auto& data = *datas[placement];
    auto& cdatas = cdatas_at[placement];
    for (long i = 0; i < n; i++)
      sink += pinocchio::constraintDynamics(model, data, q[0], v[0], tau[0], cmodels, cdatas,
                                            prox)[0];
  };

  // Ours: inputs and outputs laid out state after state.
  std::vector<const double*> in;
  for (int b = 3; b < 10; b++) in.push_back(blocks[b].data());
  std::vector<std::vector<double>> outs;
  std::vector<double*> out;
  for (long s : out_sizes) outs.emplace_back(size_t(n) * s);
  for (auto& o : outs) out.push_back(o.data());
  std::vector<int32_t> status(n);
  int64_t failed = 0;
  int single_status = 0;
  auto ours_batch = [&] { failed = ours_step_batch(n, in.data(), out.data(), status.data()); };
  // the single-state calls' outputs: one state's worth each, at this repetition's placement
  std::vector<std::vector<double>> ones;
  for (long s : out_sizes) ones.emplace_back(size_t(s + PLACEMENT_STEP * (PLACEMENTS - 1)));
  auto placed = [&](std::vector<std::vector<double>>& bufs) {
    std::vector<double*> at;
    for (auto& b : bufs) at.push_back(b.data() + PLACEMENT_STEP * placement);
    return at;
  };
  auto ours_single = [&] {
    const std::vector<double*> at = placed(ones);
    for (long i = 0; i < n; i++) {
      single_status |= ours_step(in.data(), at.data());
      sink += at[0][6];
    }
  };

  std::vector<std::vector<double>> aouts = {std::vector<double>(size_t(n) * 12),
                                            std::vector<double>(size_t(n) * nq_legs)};
  std::vector<double*> aout = {aouts[0].data(), aouts[1].data()};
  std::vector<int32_t> astatus(n);
  int64_t accel_failed = 0;
  auto accel_batch = [&] {
    accel_failed = ours_accel_batch(n, in.data(), aout.data(), astatus.data());
  };
  std::vector<std::vector<double>> aones = {
      std::vector<double>(size_t(12 + PLACEMENT_STEP * (PLACEMENTS - 1))),
      std::vector<double>(size_t(nq_legs + PLACEMENT_STEP * (PLACEMENTS - 1)))};
  auto accel_single = [&] {
    const std::vector<double*> at = placed(aones);
    for (long i = 0; i < n; i++) {
      single_status |= ours_accel(in.data(), at.data());
      sink += at[0][6];
    }
  };

  std::vector<std::pair<std::string, std::function<void()>>> passes = {
      {"ours_batch", ours_batch},     {"pin_batch", pin_batch},
      {"ours_single", ours_single},   {"pin_single", pin_single},
      {"pin_init", pin_init},         {"accel_batch", accel_batch},
      {"accel_single", accel_single}};
  std::map<std::string, std::vector<double>> t;
  for (auto& [name, f] : passes) f();  // warm-up
  for (int r = 0; r < reps; r++, placement = r % PLACEMENTS) {   // interleaved, order
                                                                  // reversed every other one
    for (size_t j = 0; j < passes.size(); j++) {
      auto& [name, f] = passes[r % 2 ? passes.size() - 1 - j : j];
      t[name].push_back(ns_per_state(n, f));
    }
  }

  ours_batch();  // both batch outputs over all N states, compared
  accel_batch();
  double accel_vs_step = 0;
  for (int o = 0; o < 2; o++) {
    const std::vector<double>& a = aouts[o];
    const std::vector<double>& b = outs[o == 0 ? 0 : 3];
    double diff = 0, scale = 0;
    for (size_t i = 0; i < a.size(); i++) {
      diff = std::max(diff, std::abs(a[i] - b[i]));
      scale = std::max(scale, std::abs(b[i]));
    }
    accel_vs_step = std::max(accel_vs_step, diff / scale);
  }

  printf("{\"n\": %ld, \"reps\": %d, \"nq\": %d, \"nv\": %d, \"njoints\": %d, "
         "\"nconstraints\": %zu, \"ours_failed\": %ld, \"ours_single_status\": %d, "
         "\"accel_failed\": %ld, \"accel_vs_step\": %.3g, \"sink\": %.17g, \"times\": {",
         n, reps, model.nq, model.nv, model.njoints, cmodels.size(), long(failed),
         single_status, long(accel_failed), accel_vs_step, sink);
  bool first = true;
  for (auto& [name, ts] : t) {
    std::sort(ts.begin(), ts.end());
    printf("%s\"%s\": {\"best_ns\": %.2f, \"median_ns\": %.2f}", first ? "" : ", ", name.c_str(),
           ts[0], ts[ts.size() / 2]);
    first = false;
  }
  printf("}, \"ddq\": [");
  for (long i = 0; i < check; i++) {  // fresh Data: no state carried over from the timing
    pinocchio::Data fresh(model);
    CDatas fresh_c;
    for (auto& c : cmodels) fresh_c.emplace_back(c);
    pinocchio::initConstraintDynamics(model, fresh, cmodels, fresh_c);
    const Vec& a = pinocchio::constraintDynamics(model, fresh, q[i], v[i], tau[i], cmodels,
                                                 fresh_c, prox);
    printf("%s[", i ? ", " : "");
    for (long j = 0; j < model.nv; j++) printf("%s%.17g", j ? ", " : "", a[j]);
    printf("]");
  }
  printf("], \"prox_iter\": %d}\n", prox.iter);
  return 0;
} catch (const std::exception& e) {
  fprintf(stderr, "pinocchio_constraint_harness: %s\n", e.what());
  return 2;
}

#endif
