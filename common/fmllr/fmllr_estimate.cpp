#include "common/fmllr/fmllr_estimate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "common/fmllr/symmetric_eigen_range.h"

namespace gpuspeech {

namespace {

using Matrix = std::vector<double>;  // square, row-major

// Cholesky factor L (lower) of a; false if not positive definite.
bool cholesky(const Matrix& a, int n, Matrix& l) {
  l.assign(static_cast<size_t>(n) * n, 0.0);
  for (int j = 0; j < n; ++j) {
    double s = a[static_cast<size_t>(j) * n + j];
    for (int k = 0; k < j; ++k) s -= l[static_cast<size_t>(j) * n + k] * l[static_cast<size_t>(j) * n + k];
    if (!(s > 0.0) || !std::isfinite(s)) return false;
    const double d = std::sqrt(s);
    l[static_cast<size_t>(j) * n + j] = d;
    for (int i = j + 1; i < n; ++i) {
      double v = a[static_cast<size_t>(i) * n + j];
      for (int k = 0; k < j; ++k) v -= l[static_cast<size_t>(i) * n + k] * l[static_cast<size_t>(j) * n + k];
      l[static_cast<size_t>(i) * n + j] = v / d;
    }
  }
  return true;
}

// x = (L Lᵀ)⁻¹ b
void cholesky_solve(const Matrix& l, int n, const double* b, double* x) {
  std::vector<double> y(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    double v = b[i];
    for (int k = 0; k < i; ++k) v -= l[static_cast<size_t>(i) * n + k] * y[static_cast<size_t>(k)];
    y[static_cast<size_t>(i)] = v / l[static_cast<size_t>(i) * n + i];
  }
  for (int i = n - 1; i >= 0; --i) {
    double v = y[static_cast<size_t>(i)];
    for (int k = i + 1; k < n; ++k) v -= l[static_cast<size_t>(k) * n + i] * x[k];
    x[i] = v / l[static_cast<size_t>(i) * n + i];
  }
}

// inv = A⁻¹ (A = the d x d part of W, row-major) by LU with partial
// pivoting, one column of the identity at a time. False if A is singular.
bool invert_a(const FmllrTransform& t, Matrix& inv) {
  const int n = t.dim;
  Matrix a(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a[static_cast<size_t>(i) * n + j] = t.at(i, j);
  std::vector<int> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  // a = L U in place (L unit lower, below the diagonal), rows permuted.
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r)
      if (std::fabs(a[static_cast<size_t>(r) * n + c]) > std::fabs(a[static_cast<size_t>(piv) * n + c])) piv = r;
    const double p = a[static_cast<size_t>(piv) * n + c];
    if (p == 0.0 || !std::isfinite(p)) return false;
    if (piv != c) {
      for (int j = 0; j < n; ++j) std::swap(a[static_cast<size_t>(piv) * n + j], a[static_cast<size_t>(c) * n + j]);
      std::swap(perm[static_cast<size_t>(piv)], perm[static_cast<size_t>(c)]);
    }
    for (int r = c + 1; r < n; ++r) {
      double& f = a[static_cast<size_t>(r) * n + c];
      f /= p;
      if (f == 0.0) continue;
      for (int j = c + 1; j < n; ++j) a[static_cast<size_t>(r) * n + j] -= f * a[static_cast<size_t>(c) * n + j];
    }
  }
  inv.assign(static_cast<size_t>(n) * n, 0.0);
  std::vector<double> z(static_cast<size_t>(n));
  for (int col = 0; col < n; ++col) {
    // Solve A z = e_col: P A = L U, so L U z = P e_col.
    for (int i = 0; i < n; ++i) {
      double v = perm[static_cast<size_t>(i)] == col ? 1.0 : 0.0;
      for (int k = 0; k < i; ++k) v -= a[static_cast<size_t>(i) * n + k] * z[static_cast<size_t>(k)];
      z[static_cast<size_t>(i)] = v;
    }
    for (int i = n - 1; i >= 0; --i) {
      double v = z[static_cast<size_t>(i)];
      for (int k = i + 1; k < n; ++k) v -= a[static_cast<size_t>(i) * n + k] * z[static_cast<size_t>(k)];
      z[static_cast<size_t>(i)] = v / a[static_cast<size_t>(i) * n + i];
    }
    for (int i = 0; i < n; ++i) {
      if (!std::isfinite(z[static_cast<size_t>(i)])) return false;
      inv[static_cast<size_t>(i) * n + col] = z[static_cast<size_t>(i)];
    }
  }
  return true;
}

// After row `row` of A changed by delta (A' = A + e_row deltaᵀ), inv = A⁻¹
// becomes A'⁻¹ by the Sherman-Morrison formula:
//   A'⁻¹ = A⁻¹ - (A⁻¹ e_row)(deltaᵀ A⁻¹) / (1 + deltaᵀ A⁻¹ e_row),
// n² work where a new inverse is n³. The denominator is det A' / det A;
// false when it is too small or not finite to trust (the caller inverts
// afresh).
bool update_inverse_row(Matrix& inv, int n, int row, const double* delta, std::vector<double>& y) {
  double denom = 1.0;
  for (int r = 0; r < n; ++r) denom += delta[r] * inv[static_cast<size_t>(r) * n + row];
  if (!std::isfinite(denom) || std::fabs(denom) < 1e-8) return false;
  y.assign(static_cast<size_t>(n), 0.0);
  for (int r = 0; r < n; ++r) {
    const double dr = delta[r];
    if (dr == 0.0) continue;
    const double* ir = inv.data() + static_cast<size_t>(r) * n;
    for (int c = 0; c < n; ++c) y[static_cast<size_t>(c)] += dr * ir[c];
  }
  std::vector<double> u(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) u[static_cast<size_t>(r)] = inv[static_cast<size_t>(r) * n + row] / denom;
  for (int r = 0; r < n; ++r) {
    const double ur = u[static_cast<size_t>(r)];
    double* ir = inv.data() + static_cast<size_t>(r) * n;
    for (int c = 0; c < n; ++c) ir[c] -= ur * y[static_cast<size_t>(c)];
  }
  for (double v : inv)
    if (!std::isfinite(v)) return false;
  return true;
}

// Q(W) with the given G_i and k_i (rows of d + 1 in `k`).
double objective_with(double beta, const std::vector<Matrix>& g, const std::vector<double>& k,
                      const FmllrTransform& t) {
  const int d = t.dim, n = d + 1;
  double q = beta * t.log_abs_det();
  for (int i = 0; i < d; ++i) {
    const double* w = t.w.data() + static_cast<size_t>(i) * n;
    const double* ki = k.data() + static_cast<size_t>(i) * n;
    const Matrix& gi = g[static_cast<size_t>(i)];
    for (int p = 0; p < n; ++p) {
      double gw = 0.0;
      for (int r = 0; r < n; ++r) gw += gi[static_cast<size_t>(p) * n + r] * w[r];
      q += w[p] * ki[p] - 0.5 * w[p] * gw;
    }
  }
  return q;
}

std::vector<double> k_rows(const FmllrStats& st) {
  const int d = st.dim, n = d + 1;
  std::vector<double> k(static_cast<size_t>(d) * n);
  for (int i = 0; i < d; ++i) std::copy(st.k_row(i), st.k_row(i) + n, k.begin() + static_cast<size_t>(i) * n);
  return k;
}

// The diagonal or offset estimate: closed forms, the rows independent.
FmllrTransform restricted_estimate(FmllrUpdateType type, double beta, const std::vector<Matrix>& g,
                                   const std::vector<double>& kk, int d) {
  const int n = d + 1;
  FmllrTransform r = FmllrTransform::identity(d);
  for (int i = 0; i < d; ++i) {
    const Matrix& gi = g[static_cast<size_t>(i)];
    const double* k = kk.data() + static_cast<size_t>(i) * n;
    const double gii = gi[static_cast<size_t>(i) * n + i], gid = gi[static_cast<size_t>(i) * n + d],
                 gdd = gi[static_cast<size_t>(d) * n + d];
    if (type == FmllrUpdateType::kOffset) {
      r.at(i, d) = (k[d] - gid) / gdd;  // with a_ii = 1, the other a_ij = 0
      continue;
    }
    // left as identity when G2 is not positive definite (cannot happen for
    // a positive definite G_i)
    diagonal_row_estimate(beta, gii, gid, gdd, k[i], k[d], &r.at(i, i), &r.at(i, d));
  }
  return r;
}

}  // namespace

bool diagonal_row_estimate(double beta, double gii, double gid, double gdd, double ki, double kd, double* a,
                           double* b) {
  // Row (a, b) maximising beta ln|a| + a ki + b kd - ½ [a b] G2 [a b]ᵀ,
  // G2 = [[gii gid] [gid gdd]]: the full row update with p = [1 0] (the
  // cofactor direction of a diagonal A).
  const double det = gii * gdd - gid * gid;
  if (!(det > 0.0)) return false;
  const double inv00 = gdd / det, inv01 = -gid / det, inv11 = gii / det;
  const double pa = inv00, e = ki * inv00 + kd * inv01;  // p G2⁻¹ pᵀ, k2 G2⁻¹ pᵀ
  const double root = std::sqrt(e * e + 4.0 * pa * beta);
  const double a1 = (-e + root) / (2.0 * pa), a2 = (-e - root) / (2.0 * pa);
  auto q = [&](double al) { return beta * std::log(std::fabs(al * pa + e)) - 0.5 * al * al * pa; };
  const double alpha = q(a1) >= q(a2) ? a1 : a2;
  // [a b] = (alpha p + k2) G2⁻¹
  const double v0 = alpha + ki, v1 = kd;
  *a = v0 * inv00 + v1 * inv01;
  *b = v0 * inv01 + v1 * inv11;
  return true;
}

const char* to_string(FmllrOutcome outcome) {
  switch (outcome) {
    case FmllrOutcome::kUpdated: return "updated";
    case FmllrOutcome::kTooFewFrames: return "too few frames";
    case FmllrOutcome::kRefused: return "refused";
  }
  return "?";
}

const char* to_string(FmllrUpdateType type) {
  switch (type) {
    case FmllrUpdateType::kFull: return "full";
    case FmllrUpdateType::kBlock: return "block";
    case FmllrUpdateType::kDiag: return "diag";
    case FmllrUpdateType::kOffset: return "offset";
  }
  return "?";
}

bool parse_fmllr_update_type(const std::string& name, FmllrUpdateType* type) {
  for (FmllrUpdateType t : {FmllrUpdateType::kFull, FmllrUpdateType::kBlock, FmllrUpdateType::kDiag,
                            FmllrUpdateType::kOffset})
    if (name == to_string(t)) {
      *type = t;
      return true;
    }
  return false;
}

double fmllr_objective(const FmllrStats& stats, const FmllrTransform& t) {
  if (t.dim != stats.dim) throw std::invalid_argument("fMLLR: transform and statistics differ in dimension");
  const int n = stats.dim + 1;
  std::vector<Matrix> g(static_cast<size_t>(stats.dim));
  for (int i = 0; i < stats.dim; ++i)
    g[static_cast<size_t>(i)].assign(stats.g_matrix(i), stats.g_matrix(i) + n * n);
  return objective_with(stats.beta, g, k_rows(stats), t);
}

FmllrEstimate estimate_fmllr(const FmllrStats& st, const FmllrOptions& opt,
                             const FmllrTransform* start) {
  const int d = st.dim, n = d + 1;
  FmllrEstimate out;
  out.transform = start ? *start : FmllrTransform::identity(d);
  if (out.transform.dim != d || out.transform.w.size() != static_cast<size_t>(d) * n ||
      !out.transform.all_finite())
    throw std::invalid_argument("fMLLR: start transform of dimension " +
                                std::to_string(out.transform.dim) + " (or non-finite) for statistics of dimension " +
                                std::to_string(d));
  const FmllrTransform kept = out.transform;
  std::ostringstream msg;
  if (!(st.beta >= opt.min_frames) || d == 0) {
    out.outcome = FmllrOutcome::kTooFewFrames;
    msg << "fMLLR: " << st.beta << " frames of statistics, fewer than the " << opt.min_frames
        << " required; keeping the " << (start ? "previous" : "identity") << " transform";
    out.message = msg.str();
    return out;
  }
  const bool block = opt.update == FmllrUpdateType::kBlock;
  if (block && d % kFmllrBlocks != 0) {
    out.outcome = FmllrOutcome::kRefused;
    msg << "fMLLR: a block-diagonal transform needs a dimension divisible by " << kFmllrBlocks
        << " (static, delta, acceleration), not " << d << "; keeping the "
        << (start ? "previous" : "identity") << " transform";
    out.message = msg.str();
    return out;
  }
  if (!std::isfinite(out.transform.log_abs_det())) {
    out.outcome = FmllrOutcome::kRefused;
    out.message = "fMLLR: the start transform is singular; keeping it";
    return out;
  }
  // Per dimension: G_i (regularised where needed) and its Cholesky factor.
  std::vector<Matrix> g(static_cast<size_t>(d)), chol(static_cast<size_t>(d));
  std::vector<int> regularised;
  for (int i = 0; i < d; ++i) {
    Matrix& gi = g[static_cast<size_t>(i)];
    gi.assign(st.g_matrix(i), st.g_matrix(i) + n * n);
    double trace = 0.0;
    bool finite = true;
    for (int p = 0; p < n; ++p) trace += gi[static_cast<size_t>(p) * n + p];
    for (double v : gi) finite = finite && std::isfinite(v);
    if (!finite || !(trace > 0.0)) {
      out.outcome = FmllrOutcome::kRefused;
      msg << "fMLLR: the statistics of dimension " << i
          << " are zero or not finite; keeping the " << (start ? "previous" : "identity")
          << " transform";
      out.message = msg.str();
      return out;
    }
    double lo = 0.0, hi = 0.0;
    symmetric_eigen_range(gi, n, lo, hi);
    const bool pd = cholesky(gi, n, chol[static_cast<size_t>(i)]);
    if (!pd || !(lo > 0.0) || hi / lo > opt.max_condition) {
      const double ridge = opt.ridge * trace / n;
      for (int p = 0; p < n; ++p) gi[static_cast<size_t>(p) * n + p] += ridge;
      regularised.push_back(i);
      if (!cholesky(gi, n, chol[static_cast<size_t>(i)])) {
        out.outcome = FmllrOutcome::kRefused;
        msg << "fMLLR: the statistics of dimension " << i
            << " are singular even after regularisation; keeping the "
            << (start ? "previous" : "identity") << " transform";
        out.message = msg.str();
        return out;
      }
    }
  }
  out.regularised_dims = static_cast<int>(regularised.size());

  std::vector<double> kk = k_rows(st);
  const bool row_updates = opt.update == FmllrUpdateType::kFull || block;
  if (row_updates && opt.prior_frames > 0.0) {
    // The prior towards the diagonal estimate (top of fmllr_estimate.h):
    // G_i + tau G_i / beta, k_i + tau v_i G_i / beta.
    const FmllrTransform v = restricted_estimate(FmllrUpdateType::kDiag, st.beta, g, kk, d);
    const double c = opt.prior_frames / st.beta;
    for (int i = 0; i < d; ++i) {
      Matrix& gi = g[static_cast<size_t>(i)];
      const double* vi = v.w.data() + static_cast<size_t>(i) * n;
      double* ki = kk.data() + static_cast<size_t>(i) * n;
      for (int p = 0; p < n; ++p) {
        double vg = 0.0;
        for (int r = 0; r < n; ++r) vg += vi[r] * gi[static_cast<size_t>(r) * n + p];
        ki[p] += c * vg;
      }
      for (double& x : gi) x *= 1.0 + c;
      for (double& x : chol[static_cast<size_t>(i)]) x *= std::sqrt(1.0 + c);  // of (1 + c) G_i
    }
  }

  FmllrTransform& t = out.transform;
  out.objective.push_back(objective_with(st.beta, g, kk, t) / st.beta);
  if (opt.update != FmllrUpdateType::kFull) {
    // The block update starts from the diagonal estimate: block-diagonal
    // itself, and independent of the start transform, as diag and offset are.
    t = restricted_estimate(block ? FmllrUpdateType::kDiag : opt.update, st.beta, g, kk, d);
    out.objective.push_back(objective_with(st.beta, g, kk, t) / st.beta);
  }
  // The entries each row estimates: all of them (full), or its block's
  // columns and the offset (block), with G_i's Cholesky factor over them.
  std::vector<std::vector<int>> support(static_cast<size_t>(d));
  if (block) {
    const int size = d / kFmllrBlocks;
    for (int i = 0; i < d; ++i) {
      std::vector<int>& idx = support[static_cast<size_t>(i)];
      const int lo = i / size * size;
      for (int j = lo; j < lo + size; ++j) idx.push_back(j);
      idx.push_back(d);
      const int m = static_cast<int>(idx.size());
      Matrix sub(static_cast<size_t>(m) * m);
      for (int r = 0; r < m; ++r)
        for (int c = 0; c < m; ++c)
          sub[static_cast<size_t>(r) * m + c] =
              g[static_cast<size_t>(i)][static_cast<size_t>(idx[static_cast<size_t>(r)]) * n + idx[static_cast<size_t>(c)]];
      // A principal block of a positive definite matrix is positive
      // definite; only rounding could fail here.
      if (!cholesky(sub, m, chol[static_cast<size_t>(i)])) {
        out.outcome = FmllrOutcome::kRefused;
        msg << "fMLLR: the statistics of dimension " << i << " are singular within its block; keeping the "
            << (start ? "previous" : "identity") << " transform";
        out.message = msg.str();
        out.transform = kept;
        out.objective.clear();
        return out;
      }
    }
  } else {
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < n; ++j) support[static_cast<size_t>(i)].push_back(j);
  }
  // Row i of A⁻ᵀ (the cofactor direction) is column i of A⁻¹. A⁻¹ is
  // inverted afresh at each sweep and kept up to date through the sweep's
  // row updates by Sherman-Morrison (n² a row instead of an n³ inverse).
  Matrix inv;
  std::vector<double> p(static_cast<size_t>(n)), k(static_cast<size_t>(n)), gp(static_cast<size_t>(n)),
      gk(static_cast<size_t>(n)), delta(static_cast<size_t>(d)), y;
  for (int iter = 0; row_updates && iter < opt.iterations; ++iter) {
    bool have_inverse = invert_a(t, inv);
    for (int i = 0; i < d; ++i) {
      if (!have_inverse) break;  // caught below as non-finite / singular
      // p and k_i over the row's entries; p's offset entry is 0.
      const std::vector<int>& idx = support[static_cast<size_t>(i)];
      const int m = static_cast<int>(idx.size());
      const double* ki = kk.data() + static_cast<size_t>(i) * n;
      for (int r = 0; r < m; ++r) {
        const int c = idx[static_cast<size_t>(r)];
        p[static_cast<size_t>(r)] = c < d ? inv[static_cast<size_t>(c) * d + i] : 0.0;
        k[static_cast<size_t>(r)] = ki[c];
      }
      const Matrix& l = chol[static_cast<size_t>(i)];
      cholesky_solve(l, m, p.data(), gp.data());  // G⁻¹ pᵀ
      cholesky_solve(l, m, k.data(), gk.data());  // G⁻¹ kᵀ
      double a = 0.0, e = 0.0;
      for (int r = 0; r < m; ++r) {
        a += p[static_cast<size_t>(r)] * gp[static_cast<size_t>(r)];
        e += k[static_cast<size_t>(r)] * gp[static_cast<size_t>(r)];
      }
      if (!(a > 0.0) || !std::isfinite(a) || !std::isfinite(e)) continue;
      const double root = std::sqrt(e * e + 4.0 * a * st.beta);
      const double a1 = (-e + root) / (2.0 * a), a2 = (-e - root) / (2.0 * a);
      auto q = [&](double al) { return st.beta * std::log(std::fabs(al * a + e)) - 0.5 * al * al * a; };
      const double alpha = q(a1) >= q(a2) ? a1 : a2;
      double* w = t.w.data() + static_cast<size_t>(i) * n;
      // Entries outside the support stay as they are (zero: the block
      // update starts from the diagonal estimate).
      std::fill(delta.begin(), delta.end(), 0.0);
      for (int r = 0; r < m; ++r) {
        const int c = idx[static_cast<size_t>(r)];
        const double v = alpha * gp[static_cast<size_t>(r)] + gk[static_cast<size_t>(r)];
        if (c < d) delta[static_cast<size_t>(c)] = v - w[c];
        w[c] = v;
      }
      if (!update_inverse_row(inv, d, i, delta.data(), y)) have_inverse = invert_a(t, inv);
    }
    out.objective.push_back(objective_with(st.beta, g, kk, t) / st.beta);
  }
  const double logdet = t.log_abs_det();
  if (!t.all_finite() || !std::isfinite(logdet) || std::fabs(logdet) > opt.max_log_det ||
      !std::isfinite(out.objective.back())) {
    out.outcome = FmllrOutcome::kRefused;
    msg << "fMLLR: the estimate is not usable (ln|det A| = " << logdet
        << "); keeping the " << (start ? "previous" : "identity") << " transform";
    out.message = msg.str();
    out.transform = kept;
    out.objective.clear();
    return out;
  }
  if (!regularised.empty()) {
    msg << "fMLLR: regularised the ill-conditioned statistics of " << regularised.size()
        << " dimension(s):";
    for (int i : regularised) msg << ' ' << i;
    out.message = msg.str();
  }
  return out;
}

}  // namespace gpuspeech
