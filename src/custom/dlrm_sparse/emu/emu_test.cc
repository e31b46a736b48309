// Runs the host-emulated DlrmSparse kernels (emu/run.sh builds them) against the plain-loop oracle:
// each shape of shapes.h on random jagged bags, an index past the table, a negative index and
// decreasing offsets (the sample's row must be NaN and the error word set). Output starts poisoned.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "custom/dlrm_sparse/emu/emu_prelude.h"
#include "custom/dlrm_sparse/emu/shapes.h"
using namespace luminal;
using custom::TableFormat;
using sparse_test::Case;
std::map<std::string, EmuRun> emu_runs();

std::vector<unsigned char> floats(const std::vector<float>& v, DType dt) {
  std::vector<unsigned char> r;
  for (float f : v) {
    if (dt == DType::F32) {
      unsigned char x[4];
      std::memcpy(x, &f, 4);
      r.insert(r.end(), x, x + 4);
    } else if (dt == DType::BF16) {
      uint16_t h = f32_to_bf16_bits(f);
      unsigned char x[2];
      std::memcpy(x, &h, 2);
      r.insert(r.end(), x, x + 2);
    } else
      r.push_back((unsigned char)f);
  }
  r.push_back(0);  // never empty
  return r;
}
std::vector<unsigned char> ints(const std::vector<int64_t>& v, DType dt) {
  std::vector<unsigned char> r;
  for (int64_t i : v) {
    if (dt == DType::I64) {
      unsigned char x[8];
      std::memcpy(x, &i, 8);
      r.insert(r.end(), x, x + 8);
    } else {
      int32_t j = int32_t(i);
      unsigned char x[4];
      std::memcpy(x, &j, 4);
      r.insert(r.end(), x, x + 4);
    }
  }
  r.push_back(0);
  return r;
}

// Runs the kernel on c; returns output as floats and sets err.
std::vector<float> run(EmuRun fn, const Case& c, int& err) {
  const auto& s = c.s;
  const bool u8 = s.format == TableFormat::RowwiseU8;
  std::vector<std::vector<unsigned char>> bufs;
  std::vector<long long> ns;
  bufs.push_back(floats(c.x, s.dtype));
  ns.push_back((long long)c.x.size());
  for (size_t t = 0; t < c.tables.size(); ++t) {
    bufs.push_back(floats(c.tables[t], u8 ? DType::U8 : s.dtype));
    ns.push_back((long long)c.tables[t].size());
    if (u8) {
      bufs.push_back(floats(c.sb[t], DType::F32));
      ns.push_back((long long)c.sb[t].size());
    }
    bufs.push_back(ints(c.indices[t], s.index_dtype));
    ns.push_back((long long)c.indices[t].size());
    bufs.push_back(ints(c.offsets[t], s.index_dtype));
    ns.push_back((long long)c.offsets[t].size());
  }
  std::vector<const void*> ptrs;
  for (auto& b : bufs) ptrs.push_back(b.data());
  const size_t n_out = size_t(s.batch * s.padded_width());
  const size_t es = s.dtype == DType::BF16 ? 2 : 4;
  std::vector<unsigned char> out(n_out * es, 0xFF);  // poison
  const CustomKernel k = custom::emit_dlrm_sparse(s);
  err = 0;
  fn(ptrs.data(), ns.data(), out.data(), &err, k.grid[0], k.block[0]);
  std::vector<float> r(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    if (es == 4)
      std::memcpy(&r[i], out.data() + 4 * i, 4);
    else {
      uint16_t h;
      std::memcpy(&h, out.data() + 2 * i, 2);
      r[i] = bf16_bits_to_f32(h);
    }
  }
  return r;
}

int failures = 0;
void check(const char* what, EmuRun fn, const Case& c, bool expect_bad) {
  int err = 0;
  const std::vector<float> got = run(fn, c, err);
  const std::vector<double> want = sparse_test::loops(c);
  const double rtol = c.s.dtype == DType::BF16 ? 1.0 / 128 : 1e-5;
  int bad_rows = 0;
  const int64_t w = c.s.padded_width();
  for (int64_t b = 0; b < c.s.batch; ++b) {
    bool nan_row = true, ok_row = true;
    for (int64_t k = 0; k < w; ++k) {
      const float g = got[size_t(b * w + k)];
      const double e = want[size_t(b * w + k)];
      if (k >= c.s.out_width()) {  // pad columns: exact zeros, NaN row or not
        if (g != 0.f) nan_row = ok_row = false;
        continue;
      }
      nan_row &= std::isnan(g);
      ok_row &= std::abs(double(g) - e) <= 1e-4 + rtol * std::abs(e);
    }
    if (nan_row)
      ++bad_rows;
    else if (!ok_row) {
      std::printf("FAIL %s: row %lld wrong\n", what, (long long)b);
      ++failures;
      return;
    }
  }
  if (expect_bad != (bad_rows > 0) || expect_bad != (err != 0)) {
    std::printf("FAIL %s: %d NaN rows, err %d, expected bad %d\n", what, bad_rows, err, expect_bad);
    ++failures;
    return;
  }
  std::printf("ok %s (%d NaN rows, err %d)\n", what, bad_rows, err);
}

// The position of table t's first id that lies in a bag (closed offsets leave ids of other keys
// outside every bag, which the kernel must not read).
size_t id_in_a_bag(const Case& c, size_t t) {
  const std::vector<int64_t>& off = c.offsets[t];
  for (size_t b = 0; b + 1 < off.size(); ++b)
    if (off[b] < off[b + 1]) return size_t(off[b]);
  return size_t(off.back());  // open offsets: the last bag runs to nnz
}

int main() {
  const std::map<std::string, EmuRun> runs = emu_runs();
  for (const auto& k : sparse_emu::emu_shapes()) {
    const EmuRun fn = runs.at(k.tag);
    const Case good = sparse_test::random_case(k.s, 42, 5);
    check(k.tag, fn, good, false);
    Case c = good;
    const size_t t = c.s.tables() - 1;
    if (c.s.closed)
      c.indices[t][id_in_a_bag(c, t)] = c.s.rows[t] + 5;
    else
      c.indices[t].push_back(c.s.rows[t] + 5);
    check((std::string(k.tag) + " oob").c_str(), fn, c, true);
    c = good;
    c.indices[0][id_in_a_bag(c, 0)] = -1;
    check((std::string(k.tag) + " negative").c_str(), fn, c, true);
    c = good;
    c.offsets[0][3] = c.offsets[0][4] + 1;
    check((std::string(k.tag) + " decreasing").c_str(), fn, c, true);
  }
  std::printf("%d failures\n", failures);
  return failures != 0;
}
