/* Race of mechgen's generated C kernels against Pinocchio's C++ algorithms, both timed inside
   compiled loops over the same batch size, interleaved, in one process. Built and driven by
   bench/pinocchio_race.py, which documents what is measured; usage: pinocchio_harness CONFIG.

   This file is compiled twice:
   - without MECHGEN_GLUE: the Pinocchio side and main() (slow to compile, once per flag set);
     with -DMECHGEN_SERIALIZED_MODEL (the native build) it does not parse URDF (no
     libpinocchio_parsers): it loads the final model, saved by the Python driver with
     Model.saveToBinary, through Pinocchio's header-only serialization (config line "model");
   - with -DMECHGEN_GLUE -DMECHGEN_MECH=name -DMECHGEN_HEADER="path/name.h"
     -DMECHGEN_KERNELS="K(kernel_a)K(kernel_b)": ours_batch(), which calls
     <name>_<kernel>_batch of the generated C file (compiled as C and linked) with the arguments
     its prototype asks for, in order: inputs (const double*), outputs (double*), status; and
     ours_loop(), which calls the single-state <name>_<kernel> once per state, every output
     into one reused buffer (placed at another offset in each rep, as Pinocchio gets another
     copy of its Data: see "Placements" in main()).

   CONFIG, one item a line (paths run to the end of the line):
     urdf PATH | root fixed|free | lock JOINT VALUE | convention local|world | n N | reps R
     model PATH        (MECHGEN_SERIALIZED_MODEL only, instead of urdf/root/lock) the model,
                       root and locks already applied, as written by Model.saveToBinary
     states PATH       float64 blocks of n x width, one per "array" line, in that order
     array NAME WIDTH  Pinocchio's: pin_q, pin_v, pin_a, pin_tau; ours: any (q, qd, qdd, Q, p)
     kernel NAME NIN IN_1..IN_NIN NOUT SIZE_1..SIZE_NOUT   (ours, per state)
   Prints one JSON object on stdout. */

#include <stdint.h>

#include <string>

int64_t ours_batch(const std::string& kernel, int64_t n, const double* const* in, int nin,
                   double* const* out, int nout, int32_t* status);
/* The single-state kernel <name>_<kernel> called state after state: inputs of state s at
   in[k] + s * width[k], every output into the same buffer out[k] (reused, like Pinocchio's
   Data). Returns how many calls returned a nonzero status, or < 0 on an arity mismatch. */
int64_t ours_loop(const std::string& kernel, int64_t n, const double* const* in,
                  const long* width, int nin, double* const* out, int nout);

#ifdef MECHGEN_GLUE /* ------------------------------------------------------------------------- */

#define restrict __restrict__
extern "C" {
#include MECHGEN_HEADER
}
#include <tuple>

namespace {
struct Args {
  const double* const* in;
  double* const* out;
  int32_t* status;
  int nin, nout, i = 0, o = 0;
};
template <class T> struct Pick;
template <> struct Pick<const double*> {
  static const double* get(Args& a) { return a.i < a.nin ? a.in[a.i++] : (a.i++, nullptr); }
};
template <> struct Pick<double*> {
  static double* get(Args& a) { return a.o < a.nout ? a.out[a.o++] : (a.o++, nullptr); }
};
template <> struct Pick<int32_t*> {
  static int32_t* get(Args& a) { return a.status; }
};

template <class... A>
int64_t call(int64_t (*f)(int64_t, A...), int64_t n, Args a) {
  std::tuple<A...> args{Pick<A>::get(a)...};  // a braced list is evaluated left to right
  if (a.i != a.nin || a.o != a.nout) return -1;
  return std::apply([&](A... x) { return f(n, x...); }, args);
}
}  // namespace

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define K(k) \
  if (kernel == #k) \
    return call(CAT(MECHGEN_MECH, CAT(_##k, _batch)), n, {in, out, status, nin, nout});

int64_t ours_batch(const std::string& kernel, int64_t n, const double* const* in, int nin,
                   double* const* out, int nout, int32_t* status) {
  MECHGEN_KERNELS
  return -2;
}

namespace {
struct LoopArgs {
  const double* const* in;
  const long* width;
  double* const* out;
  int nin, nout;
  int64_t s = 0;
  int i = 0, o = 0;
};
template <class T> struct PickOne;
template <> struct PickOne<const double*> {
  static const double* get(LoopArgs& a) {
    int k = a.i++;
    return k < a.nin ? a.in[k] + a.s * a.width[k] : nullptr;
  }
};
template <> struct PickOne<double*> {
  static double* get(LoopArgs& a) { int k = a.o++; return k < a.nout ? a.out[k] : nullptr; }
};

template <class... A>
int64_t loop(int (*f)(A...), int64_t n, LoopArgs a) {
  LoopArgs check = a;
  std::tuple<A...> probe{PickOne<A>::get(check)...};  // braced: picked left to right
  (void)probe;
  if (check.i != a.nin || check.o != a.nout) return -1;
  int64_t failed = 0;
  for (int64_t s = 0; s < n; s++) {
    LoopArgs c = a;
    c.s = s;
    failed += std::apply(f, std::tuple<A...>{PickOne<A>::get(c)...}) != 0;
  }
  return failed;
}
}  // namespace

#undef K
#define K(k) \
  if (kernel == #k) \
    return loop(CAT(MECHGEN_MECH, _##k), n, LoopArgs{in, width, out, nin, nout});

int64_t ours_loop(const std::string& kernel, int64_t n, const double* const* in,
                  const long* width, int nin, double* const* out, int nout) {
  MECHGEN_KERNELS
  return -2;
}

#else /* Pinocchio side and main() ------------------------------------------------------------ */

#include <pinocchio/algorithm/aba-derivatives.hpp>
#include <pinocchio/algorithm/aba.hpp>
#include <pinocchio/algorithm/crba.hpp>
#include <pinocchio/algorithm/joint-configuration.hpp>
#include <pinocchio/algorithm/kinematics.hpp>
#include <pinocchio/algorithm/model.hpp>
#include <pinocchio/algorithm/rnea-derivatives.hpp>
#include <pinocchio/algorithm/rnea.hpp>
#ifdef MECHGEN_SERIALIZED_MODEL
#include <pinocchio/serialization.hpp>
#else
#include <pinocchio/parsers/urdf.hpp>
#endif

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <vector>

using Vec = Eigen::VectorXd;

#include "harness_timing.hpp"

struct Kernel {
  std::string name;
  std::vector<std::string> in;
  std::vector<long> out_sizes;
};

int main(int argc, char** argv) try {
  if (argc != 2) throw std::runtime_error("usage: pinocchio_harness CONFIG");
  std::ifstream cfg(argv[1]);
  std::string line, urdf, model_path, root = "fixed", states_path, conv_name = "local";
  std::vector<std::pair<std::string, double>> locks;
  std::vector<std::pair<std::string, long>> arrays;
  std::vector<Kernel> kernels;
  long n = 0;
  int reps = 7;
  while (std::getline(cfg, line)) {
    std::istringstream ss(line);
    std::string key;
    if (!(ss >> key)) continue;
    if (key == "urdf") std::getline(ss >> std::ws, urdf);
    else if (key == "model") std::getline(ss >> std::ws, model_path);
    else if (key == "states") std::getline(ss >> std::ws, states_path);
    else if (key == "root") ss >> root;
    else if (key == "convention") ss >> conv_name;
    else if (key == "n") ss >> n;
    else if (key == "reps") ss >> reps;
    else if (key == "lock") {
      locks.emplace_back();
      ss >> locks.back().first >> locks.back().second;
    } else if (key == "array") {
      arrays.emplace_back();
      ss >> arrays.back().first >> arrays.back().second;
    } else if (key == "kernel") {
      Kernel k;
      int nin, nout;
      ss >> k.name >> nin;
      k.in.resize(nin);
      for (auto& s : k.in) ss >> s;
      ss >> nout;
      k.out_sizes.resize(nout);
      for (auto& s : k.out_sizes) ss >> s;
      kernels.push_back(k);
    } else throw std::runtime_error("unknown config line: " + line);
    if (ss.fail()) throw std::runtime_error("bad config line: " + line);
  }
  if (n < 1 || reps < 1) throw std::runtime_error("n and reps must be positive");
  const auto conv =
      conv_name == "world" ? pinocchio::Convention::WORLD : pinocchio::Convention::LOCAL;

  pinocchio::Model model;
#ifdef MECHGEN_SERIALIZED_MODEL
  // Model: built by the Python driver (URDF, root, locks) and saved in binary form.
  if (model_path.empty() || !urdf.empty() || !locks.empty())
    throw std::runtime_error("this build reads a saved model: config needs 'model', no urdf/lock");
  model.loadFromBinary(model_path);
#else
  // Model: URDF (+ free-flyer root), then the locked joints fixed at their values.
  if (!model_path.empty()) throw std::runtime_error("this build reads urdf, not a saved model");
  pinocchio::Model full;
  if (root == "free") pinocchio::urdf::buildModel(urdf, pinocchio::JointModelFreeFlyer(), full);
  else if (root == "fixed") pinocchio::urdf::buildModel(urdf, full);
  else throw std::runtime_error("root must be fixed or free");
  Vec q_ref = pinocchio::neutral(full);
  std::vector<pinocchio::JointIndex> locked;
  for (auto& [name, value] : locks) {
    if (!full.existJointName(name)) throw std::runtime_error("no joint " + name + " to lock");
    auto id = full.getJointId(name);
    if (full.joints[id].nq() != 1) throw std::runtime_error("locked joint " + name + ": nq != 1");
    q_ref[full.joints[id].idx_q()] = value;
    locked.push_back(id);
  }
  pinocchio::buildReducedModel(full, locked, q_ref, model);
#endif
  // Placements: rep r runs Pinocchio on its own copy of Data, datas[r % PLACEMENTS], and our
  // single-state loop writes its outputs at r % PLACEMENTS times PLACEMENT_STEP doubles into a
  // padded buffer, so neither side's best or median time is that of the one place an
  // allocation happened to land (a kernel's stack against its buffers, 4 KiB apart: in a plain
  // driver the offset of the arrays alone moved HyQ's forward dynamics from 309 to 402 ns).
  constexpr int PLACEMENTS = 7;
  constexpr long PLACEMENT_STEP = 72;   // 576 bytes: seven places across a 4 KiB page
  std::vector<std::unique_ptr<pinocchio::Data>> datas;
  for (int p = 0; p < PLACEMENTS; p++) datas.push_back(std::make_unique<pinocchio::Data>(model));
  int placement = 0;

  // States: every array is a block of n x width float64.
  std::map<std::string, std::vector<double>> arr;
  std::map<std::string, long> width;
  std::ifstream sf(states_path, std::ios::binary);
  for (auto& [name, w] : arrays) {
    auto& a = arr[name];
    a.resize(size_t(n) * w);
    width[name] = w;
    sf.read(reinterpret_cast<char*>(a.data()), std::streamsize(a.size() * sizeof(double)));
  }
  if (!sf || sf.peek() != EOF) throw std::runtime_error("states file size does not match config");
  auto pin_states = [&](const std::string& name, long w) {
    if (width[name] != w) throw std::runtime_error(name + ": width does not match the model");
    std::vector<Vec> v(n);
    for (long i = 0; i < n; i++) v[i] = Eigen::Map<const Vec>(arr[name].data() + i * w, w);
    return v;
  };
  const auto q = pin_states("pin_q", model.nq), v = pin_states("pin_v", model.nv),
             a = pin_states("pin_a", model.nv), tau = pin_states("pin_tau", model.nv);

  // Pinocchio's loops; sink keeps every result alive.
  double sink = 0;
  const auto last = model.njoints - 1;
  std::map<std::string, std::function<void()>> pin = {
      {"forward_kinematics", [&] {
         auto& data = *datas[placement];
         for (long i = 0; i < n; i++) {
           pinocchio::forwardKinematics(model, data, q[i]);
           sink += data.oMi[last].translation()[0]; } }},
      {"mass_matrix", [&] {
         auto& data = *datas[placement];
         for (long i = 0; i < n; i++)
           sink += pinocchio::crba(model, data, q[i], conv)(0, model.nv - 1); }},
      {"inverse_dynamics", [&] {
         auto& data = *datas[placement];
         for (long i = 0; i < n; i++)
           sink += pinocchio::rnea(model, data, q[i], v[i], a[i])[0]; }},
      {"forward_dynamics", [&] {
         auto& data = *datas[placement];
         for (long i = 0; i < n; i++)
           sink += pinocchio::aba(model, data, q[i], v[i], tau[i], conv)[0]; }},
      // analytical derivatives (Carpentier & Mansard 2018): data.dtau_dq, dtau_dv, M;
      // data.ddq, ddq_dq, ddq_dv, Minv (its upper triangle)
      {"inverse_dynamics_derivatives", [&] {
         auto& data = *datas[placement];
         for (long i = 0; i < n; i++) {
           pinocchio::computeRNEADerivatives(model, data, q[i], v[i], a[i]);
           sink += data.dtau_dq(0, model.nv - 1) + data.dtau_dv(0, model.nv - 1); } }},
      {"forward_dynamics_derivatives", [&] {
         auto& data = *datas[placement];
         for (long i = 0; i < n; i++) {
           pinocchio::computeABADerivatives(model, data, q[i], v[i], tau[i]);
           sink += data.ddq_dq(0, model.nv - 1) + data.ddq_dv(0, model.nv - 1)
                   + data.Minv(0, model.nv - 1); } }},
  };

  // Our batch calls: inputs and outputs laid out state after state.
  std::vector<int32_t> status(n);
  std::map<std::string, std::vector<std::vector<double>>> outs;
  std::map<std::string, std::vector<const double*>> ins;
  std::map<std::string, std::vector<double*>> out_ptrs;
  std::map<std::string, std::vector<long>> in_width;
  // the single-state loop's outputs: one state's worth, overwritten by every call
  std::map<std::string, std::vector<std::vector<double>>> one;
  std::map<std::string, int64_t> failed, failed_loop;
  for (auto& k : kernels) {
    if (!pin.count(k.name)) throw std::runtime_error("no Pinocchio counterpart for " + k.name);
    for (auto& s : k.in) {
      if (!arr.count(s)) throw std::runtime_error(k.name + ": no array " + s);
      ins[k.name].push_back(arr[s].data());
      in_width[k.name].push_back(width[s]);
    }
    for (long s : k.out_sizes) {
      outs[k.name].emplace_back(size_t(n) * s);
      one[k.name].emplace_back(size_t(s + PLACEMENT_STEP * (PLACEMENTS - 1)));
    }
    for (auto& o : outs[k.name]) out_ptrs[k.name].push_back(o.data());
  }
  auto ours = [&](const Kernel& k) {
    return [&] {
      failed[k.name] = ours_batch(k.name, n, ins[k.name].data(), int(k.in.size()),
                                  out_ptrs[k.name].data(), int(k.out_sizes.size()), status.data());
      if (failed[k.name] < 0) throw std::runtime_error(k.name + ": arguments do not match header");
    };
  };
  auto ours1 = [&](const Kernel& k) {
    return [&] {
      std::vector<double*> at;         // the outputs at this rep's placement
      for (auto& o : one[k.name]) at.push_back(o.data() + PLACEMENT_STEP * placement);
      failed_loop[k.name] = ours_loop(k.name, n, ins[k.name].data(), in_width[k.name].data(),
                                      int(k.in.size()), at.data(), int(k.out_sizes.size()));
      if (failed_loop[k.name] < 0)
        throw std::runtime_error(k.name + ": arguments do not match header");
      sink += at[0][0];
    };
  };

  // Warm-up pass, then reps interleaved (the three orders rotating), kernel by kernel.
  std::map<std::string, std::vector<double>> t_ours, t_loop, t_pin;
  for (auto& k : kernels) { ours(k)(); ours1(k)(); pin[k.name](); }
  for (int r = 0; r < reps; r++, placement = r % PLACEMENTS)
    for (auto& k : kernels)
      for (int j = 0; j < 3; j++) switch ((r + j) % 3) {
          case 0: t_ours[k.name].push_back(ns_per_state(n, ours(k))); break;
          case 1: t_loop[k.name].push_back(ns_per_state(n, ours1(k))); break;
          default: t_pin[k.name].push_back(ns_per_state(n, pin[k.name]));
        }

  auto best = [](std::vector<double> t) { std::sort(t.begin(), t.end()); return t[0]; };
  auto median = [](std::vector<double> t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  printf("{\"n\": %ld, \"reps\": %d, \"nq\": %d, \"nv\": %d, \"njoints\": %d, "
         "\"convention\": \"%s\", \"sink\": %.17g, \"kernels\": {",
         n, reps, model.nq, model.nv, model.njoints,
         conv == pinocchio::Convention::WORLD ? "WORLD" : "LOCAL", sink);
  for (size_t j = 0; j < kernels.size(); j++) {
    const auto& name = kernels[j].name;
    printf("%s\"%s\": {\"ours_ns\": %.2f, \"ours_loop_ns\": %.2f, \"pinocchio_ns\": %.2f, "
           "\"ours_ns_median\": %.2f, \"ours_loop_ns_median\": %.2f, "
           "\"pinocchio_ns_median\": %.2f, \"ours_failed\": %ld, \"ours_loop_failed\": %ld}",
           j ? ", " : "", name.c_str(), best(t_ours[name]), best(t_loop[name]),
           best(t_pin[name]), median(t_ours[name]), median(t_loop[name]),
           median(t_pin[name]), long(failed[name]), long(failed_loop[name]));
  }
  printf("}}\n");
  return 0;
} catch (const std::exception& e) {
  fprintf(stderr, "pinocchio_harness: %s\n", e.what());
  return 2;
}

#endif
