// The output layer's row passes on the CPU (replicate/lstm/kernels.py, _OutputLoss): per row of the
// logits, one max and one pass that forms exp(z - max), its sum and, for Inan's augmented loss, the
// tempered exponentials, their sum and the dot product with the row's soft target; in the backward one
// pass writes the whole gradient. Rows stay in the cache between the passes of a row, so each
// (N, |V|) array crosses memory about once per direction instead of once per torch operation.
// Vectorised with ATen's Vectorized<T> (Sleef's exp, as torch's own kernels). Deterministic: rows are
// split into fixed chunks (one per thread, boundaries on whole soft-target words) and the bias gradient is
// summed chunk by chunk in order.
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>

#include <cmath>
#include <vector>

using at::vec::Vectorized;

namespace {

template <typename T>
T row_max(const T* x, int64_t n) {
  return at::vec::reduce_all<T>([](Vectorized<T>& a, Vectorized<T>& b) { return at::vec::maximum(a, b); }, x, n);
}

template <typename T>
T lanes_sum(const Vectorized<T>& v) {
  return at::vec::vec_reduce_all<T>([](Vectorized<T>& a, Vectorized<T>& b) { return a + b; }, v);
}

// out = exp(in - m) (``out`` may be ``in``); returns its sum.
template <typename T>
T exp_shifted(const T* in, T* out, T m, int64_t n) {
  using V = Vectorized<T>;
  const int64_t body = n - n % V::size();
  V vm(m), vs(0);
  int64_t j = 0;
  for (; j < body; j += V::size()) {
    V e = (V::loadu(in + j) - vm).exp();
    e.store(out + j);
    vs = vs + e;
  }
  T s = lanes_sum(vs);
  for (; j < n; ++j) s += (out[j] = std::exp(in[j] - m));
  return s;
}

// Chunk starts over the rows taken in ``order`` (a permutation, or null = 0..n-1): one chunk per thread,
// each start moved forward to the first row of a new word (``word`` of the row), so a word's rows share a
// chunk (its soft target row and its per-word sums are touched by one thread only).
std::vector<int64_t> chunk_starts(int64_t n, const int64_t* order, const int64_t* word) {
  int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n));
  std::vector<int64_t> starts{0};
  for (int64_t c = 1; c < chunks; ++c) {
    int64_t p = std::max(c * n / chunks, starts.back() + 1);
    while (word && p < n && word[order ? order[p] : p] == word[order ? order[p - 1] : p - 1]) ++p;
    if (p < n) starts.push_back(p);
  }
  starts.push_back(n);
  return starts;
}

template <typename F>
void for_chunks(const std::vector<int64_t>& starts, const F& body) {
  at::parallel_for(0, static_cast<int64_t>(starts.size()) - 1, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) body(c, starts[c], starts[c + 1]);
  });
}

template <typename T>
void forward_impl(at::Tensor z, const at::Tensor& targets, at::Tensor top, at::Tensor total, at::Tensor target_logit,
                  const c10::optional<at::Tensor>& soft_opt, const c10::optional<at::Tensor>& idx_opt,
                  const c10::optional<at::Tensor>& shift_opt, double tau, const c10::optional<at::Tensor>& q_opt,
                  const c10::optional<at::Tensor>& total_q_opt, const c10::optional<at::Tensor>& soft_dot_opt,
                  const c10::optional<at::Tensor>& order_opt, const c10::optional<at::Tensor>& agg_opt) {
  using V = Vectorized<T>;
  const int64_t n = z.size(0), v = z.size(1), w = V::size(), body = v - v % w;
  T* zp = z.data_ptr<T>();
  const int64_t* tp = targets.data_ptr<int64_t>();
  T *topp = top.data_ptr<T>(), *totp = total.data_ptr<T>(), *tlp = target_logit.data_ptr<T>();
  const bool al = soft_opt.has_value();
  const T* softp = al ? soft_opt->data_ptr<T>() : nullptr;
  const int64_t* idxp = al ? idx_opt->data_ptr<int64_t>() : nullptr;
  const T* shiftp = shift_opt.has_value() ? shift_opt->data_ptr<T>() : nullptr;
  T* qp = al ? q_opt->data_ptr<T>() : nullptr;
  T* tqp = al ? total_q_opt->data_ptr<T>() : nullptr;
  T* sdp = al ? soft_dot_opt->data_ptr<T>() : nullptr;
  const int64_t* orderp = order_opt.has_value() ? order_opt->data_ptr<int64_t>() : nullptr;
  T* aggp = agg_opt.has_value() ? agg_opt->data_ptr<T>() : nullptr;
  const T inv_tau = static_cast<T>(1.0 / tau);
  for_chunks(chunk_starts(n, orderp, idxp), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t pos = begin; pos < end; ++pos) {
      const int64_t i = orderp ? orderp[pos] : pos;
      T* row = zp + i * v;
      tlp[i] = row[tp[i]];
      const T m = row_max(row, v);
      topp[i] = m;
      if (!al) {
        totp[i] = exp_shifted(row, row, m, v);
        continue;
      }
      V vm(m), vs(0);
      const T* srow = softp + idxp[i] * v;
      T* qrow = qp + i * v;
      T* arow = aggp ? aggp + idxp[i] * v : nullptr;
      V vinv(inv_tau), vsq(0), vsd(0);
      int64_t j = 0;
      for (; j < body; j += w) {
        V zc = V::loadu(row + j) - vm;
        V q = zc * vinv;
        if (shiftp) q = q + V::loadu(shiftp + j);
        vsd = at::vec::fmadd(V::loadu(srow + j), q, vsd);
        if (arow) (V::loadu(arow + j) + q).store(arow + j);
        V eq = q.exp();
        eq.store(qrow + j);
        vsq = vsq + eq;
        V e = zc.exp();
        e.store(row + j);
        vs = vs + e;
      }
      T s = lanes_sum(vs), sq = lanes_sum(vsq), sd = lanes_sum(vsd);
      for (; j < v; ++j) {
        T zc = row[j] - m, q = zc * inv_tau + (shiftp ? shiftp[j] : T(0));
        sd += srow[j] * q;
        if (arow) arow[j] += q;
        sq += (qrow[j] = std::exp(q));
        s += (row[j] = std::exp(zc));
      }
      totp[i] = s;
      tqp[i] = sq;
      sdp[idxp[i]] += sd;  // the word's rows are in this chunk only
    }
  });
}

template <typename T>
void backward_impl(at::Tensor grad, const at::Tensor& total, const at::Tensor& targets, double d_nll,
                   const c10::optional<at::Tensor>& q_opt, const c10::optional<at::Tensor>& total_q_opt,
                   const c10::optional<at::Tensor>& soft_opt, const c10::optional<at::Tensor>& idx_opt, double c,
                   const c10::optional<at::Tensor>& order_opt, const c10::optional<at::Tensor>& d_bias_opt,
                   bool bias_from_nll_only) {
  using V = Vectorized<T>;
  const int64_t n = grad.size(0), v = grad.size(1), w = V::size(), body = v - v % w;
  T* gp = grad.data_ptr<T>();
  const T* totp = total.data_ptr<T>();
  const int64_t* tp = targets.data_ptr<int64_t>();
  const bool al = soft_opt.has_value();
  const T* qp = al ? q_opt->data_ptr<T>() : nullptr;
  const T* tqp = al ? total_q_opt->data_ptr<T>() : nullptr;
  const T* softp = al ? soft_opt->data_ptr<T>() : nullptr;
  const int64_t* idxp = al ? idx_opt->data_ptr<int64_t>() : nullptr;
  const int64_t* orderp = order_opt.has_value() ? order_opt->data_ptr<int64_t>() : nullptr;
  const bool want_bias = d_bias_opt.has_value();
  const T dn = static_cast<T>(d_nll), ct = static_cast<T>(c);
  const auto starts = chunk_starts(n, orderp, idxp);
  const int64_t chunks = static_cast<int64_t>(starts.size()) - 1;
  std::vector<T> partial(want_bias ? chunks * v : 0, T(0));
  for_chunks(starts, [&](int64_t chunk, int64_t begin, int64_t end) {
    T* bsum = want_bias ? partial.data() + chunk * v : nullptr;
    for (int64_t pos = begin; pos < end; ++pos) {
      const int64_t i = orderp ? orderp[pos] : pos;
      T* row = gp + i * v;
      const T scale = dn / totp[i];
      V vscale(scale);
      int64_t j = 0;
      if (!al) {
        for (; j < body; j += w) {
          V g = V::loadu(row + j) * vscale;
          g.store(row + j);
          if (bsum) (V::loadu(bsum + j) + g).store(bsum + j);
        }
        for (; j < v; ++j) {
          row[j] *= scale;
          if (bsum) bsum[j] += row[j];
        }
        row[tp[i]] -= dn;
        if (bsum) bsum[tp[i]] -= dn;
        continue;
      }
      const T* qrow = qp + i * v;
      const T* srow = softp + idxp[i] * v;
      const T cq = ct / tqp[i];
      V vcq(cq), vc(ct);
      for (; j < body; j += w) {
        V g = V::loadu(row + j) * vscale;
        if (bsum && bias_from_nll_only) (V::loadu(bsum + j) + g).store(bsum + j);
        g = at::vec::fmadd(V::loadu(qrow + j), vcq, g) - V::loadu(srow + j) * vc;
        g.store(row + j);
        if (bsum && !bias_from_nll_only) (V::loadu(bsum + j) + g).store(bsum + j);
      }
      for (; j < v; ++j) {
        T g = row[j] * scale;
        if (bsum && bias_from_nll_only) bsum[j] += g;
        g += qrow[j] * cq - srow[j] * ct;
        row[j] = g;
        if (bsum && !bias_from_nll_only) bsum[j] += g;
      }
      row[tp[i]] -= dn;  // the one-hot term of the NLL gradient
      if (bsum) bsum[tp[i]] -= dn;
    }
  });
  if (want_bias) {
    T* dbp = d_bias_opt->data_ptr<T>();
    for (int64_t j = 0; j < v; ++j) {
      T s = 0;
      for (int64_t k = 0; k < chunks; ++k) s += partial[k * v + j];
      dbp[j] = s;
    }
  }
}

template <typename T>
void softmax_impl(const at::Tensor& a, at::Tensor soft, at::Tensor log_norm, at::Tensor neg_entropy) {
  using V = Vectorized<T>;
  const int64_t n = a.size(0), v = a.size(1), w = V::size(), body = v - v % w;
  const T* ap = a.data_ptr<T>();
  T *sp = soft.data_ptr<T>(), *lp = log_norm.data_ptr<T>(), *hp = neg_entropy.data_ptr<T>();
  for_chunks(chunk_starts(n, nullptr, nullptr), [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const T* arow = ap + i * v;
      T* srow = sp + i * v;
      const T m = row_max(arow, v);
      const T s = exp_shifted(arow, srow, m, v);
      const T inv = T(1) / s;
      V vinv(inv), vd(0);
      int64_t j = 0;
      for (; j < body; j += w) {
        V p = V::loadu(srow + j) * vinv;
        p.store(srow + j);
        vd = at::vec::fmadd(p, V::loadu(arow + j), vd);
      }
      T d = lanes_sum(vd);
      for (; j < v; ++j) d += (srow[j] *= inv) * arow[j];
      lp[i] = m + std::log(s);
      hp[i] = d - lp[i];
    }
  });
}

}  // namespace

void rows_forward(at::Tensor z, at::Tensor targets, at::Tensor top, at::Tensor total, at::Tensor target_logit,
                  c10::optional<at::Tensor> soft, c10::optional<at::Tensor> idx, c10::optional<at::Tensor> shift,
                  double tau, c10::optional<at::Tensor> q, c10::optional<at::Tensor> total_q,
                  c10::optional<at::Tensor> soft_dot, c10::optional<at::Tensor> order, c10::optional<at::Tensor> agg) {
  AT_DISPATCH_FLOATING_TYPES(z.scalar_type(), "rows_forward", [&] {
    forward_impl<scalar_t>(z, targets, top, total, target_logit, soft, idx, shift, tau, q, total_q, soft_dot, order, agg);
  });
}

void rows_backward(at::Tensor grad, at::Tensor total, at::Tensor targets, double d_nll, c10::optional<at::Tensor> q,
                   c10::optional<at::Tensor> total_q, c10::optional<at::Tensor> soft, c10::optional<at::Tensor> idx,
                   double c, c10::optional<at::Tensor> order, c10::optional<at::Tensor> d_bias, bool bias_from_nll_only) {
  AT_DISPATCH_FLOATING_TYPES(grad.scalar_type(), "rows_backward", [&] {
    backward_impl<scalar_t>(grad, total, targets, d_nll, q, total_q, soft, idx, c, order, d_bias, bias_from_nll_only);
  });
}

void softmax_rows(at::Tensor a, at::Tensor soft, at::Tensor log_norm, at::Tensor neg_entropy) {
  AT_DISPATCH_FLOATING_TYPES(a.scalar_type(), "softmax_rows", [&] { softmax_impl<scalar_t>(a, soft, log_norm, neg_entropy); });
}
