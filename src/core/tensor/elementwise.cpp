// Broadcasting and the elementwise arithmetic operators (Add, Mul, Mod and their decompositions).
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {
namespace detail {

std::pair<GraphTensor, GraphTensor> broadcast_pair(std::string_view op, const GraphTensor& a,
                                                   const GraphTensor& b) {
  const int ra = a.rank(), rb = b.rank(), r = std::max(ra, rb);
  std::vector<Expr> target(r);
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - ra), ib = i - (r - rb);
    if (ia < 0) {
      target[i] = b.dims()[ib];
    } else if (ib < 0) {
      target[i] = a.dims()[ia];
    } else {
      const Expr &da = a.dims()[ia], &db = b.dims()[ib];
      if (da.same(db) || db.as_const() == 1) {
        target[i] = da;
      } else if (da.as_const() == 1) {
        target[i] = db;
      } else {
        throw std::invalid_argument(fmt::format("[{}] shape mismatch: {} vs {}", op,
                                                shape_string(a.dims()), shape_string(b.dims())));
      }
    }
  }
  return {broadcast_to(op, a, target), broadcast_to(op, b, target)};
}

GraphTensor broadcast_to(std::string_view op, const GraphTensor& t,
                         const std::vector<Expr>& shape) {
  const int r = static_cast<int>(shape.size()), lead = r - t.rank();
  auto fail = [&] {
    return std::invalid_argument(fmt::format("[{}] cannot broadcast {} to {}", op,
                                             shape_string(t.dims()), shape_string(shape)));
  };
  if (lead < 0) throw fail();
  GraphTensor out = t;
  bool needs_copy = false;  // a padded size-1 dim cannot be stretched by setting its stride to 0
  for (int i = 0; i < t.rank(); ++i) {
    const Expr& d = t.dims()[i];
    if (d.same(shape[lead + i])) continue;
    if (d.as_const() != 1) throw fail();
    needs_copy |= dim_padded(t.view, i);
  }
  if (needs_copy) out = t.contiguous();
  for (int i = 0; i < t.rank(); ++i) {
    if (out.view.dims[i].same(shape[lead + i])) continue;
    out.view.dims[i] = shape[lead + i];
    out.view.strides[i] = 0;
  }
  for (int i = 0; i < lead; ++i) out.view = out.view.expand(i, shape[i]);
  return out;
}

GraphTensor binary(OpKind kind, std::string_view op, const GraphTensor& a, const GraphTensor& b,
                   DType out_dtype) {
  check_same_graph(op, a, b);
  check_same_dtype(op, a, b);
  auto [x, y] = broadcast_pair(op, a, b);
  return make_node(kind, out_dtype, {x, y}, x.dims());
}

}  // namespace detail

namespace {

using detail::scalar_like;

// -1 in t's dtype; for U8 the modular equivalent 255 so that a + 255 * b == a - b (mod 256).
double minus_one(DType dt) { return dt == DType::U8 ? 255.0 : -1.0; }

void reject_bool(std::string_view op, const GraphTensor& t) {
  if (t.dtype == DType::Bool) {
    throw std::invalid_argument(fmt::format("[{}] not supported for bool; cast first", op));
  }
}

void reject_integer_div(const GraphTensor& t) {
  if (!is_float(t.dtype)) {
    throw std::invalid_argument(fmt::format(
        "[div] integer division is not supported; use float (got {})", dtype_name(t.dtype)));
  }
}

}  // namespace

GraphTensor GraphTensor::operator+(const GraphTensor& o) const {
  return detail::binary(OpKind::Add, "add", *this, o, dtype);
}

GraphTensor GraphTensor::operator*(const GraphTensor& o) const {
  return detail::binary(OpKind::Mul, "mul", *this, o, dtype);
}

GraphTensor GraphTensor::operator%(const GraphTensor& o) const {
  return detail::binary(OpKind::Mod, "mod", *this, o, dtype);
}

// a - b = a + (-1 * b).
GraphTensor GraphTensor::operator-(const GraphTensor& o) const {
  detail::check_same_graph("sub", *this, o);
  detail::check_same_dtype("sub", *this, o);
  reject_bool("sub", *this);
  auto [x, y] = detail::broadcast_pair("sub", *this, o);
  return x + y * minus_one(dtype);
}

// a / b = a * recip(b); float dtypes only.
GraphTensor GraphTensor::operator/(const GraphTensor& o) const {
  detail::check_same_graph("div", *this, o);
  detail::check_same_dtype("div", *this, o);
  reject_integer_div(*this);
  auto [x, y] = detail::broadcast_pair("div", *this, o);
  return x * y.recip();
}

GraphTensor GraphTensor::operator-() const {
  reject_bool("neg", *this);
  return *this * minus_one(dtype);
}

GraphTensor GraphTensor::operator+(double s) const { return *this + scalar_like(*this, s); }

GraphTensor GraphTensor::operator-(double s) const { return *this + scalar_like(*this, -s); }

GraphTensor GraphTensor::operator*(double s) const { return *this * scalar_like(*this, s); }

GraphTensor GraphTensor::operator/(double s) const {
  reject_integer_div(*this);
  return *this * scalar_like(*this, 1.0 / s);
}

GraphTensor operator+(double s, const GraphTensor& t) { return scalar_like(t, s) + t; }

GraphTensor operator-(double s, const GraphTensor& t) { return scalar_like(t, s) + (-t); }

GraphTensor operator*(double s, const GraphTensor& t) { return scalar_like(t, s) * t; }

GraphTensor operator/(double s, const GraphTensor& t) {
  reject_integer_div(t);
  return scalar_like(t, s) * t.recip();
}

}  // namespace luminal
