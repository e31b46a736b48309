#include "cpu/weight_pack.h"

#include <atomic>
#include <stdexcept>

#include "cpu/onednn.h"

namespace luminal::cpu {

uint64_t next_input_version() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

WeightPacks::Pack* WeightPacks::find(const void* owner, const dnnl::memory::desc& packed) {
  for (Pack& p : packs_)
    if (p.owner == owner && p.desc == packed) return &p;
  return nullptr;
}

bool WeightPacks::reserve(const void* owner, const dnnl::memory::desc& packed) {
  if (Pack* p = find(owner, packed)) {
    ++p->users;
    return true;
  }
  if (bytes_ + packed.get_size() > limit_) return false;
  bytes_ += packed.get_size();
  packs_.push_back(Pack{owner, nullptr, packed, 0, dnnl::memory(packed, onednn_engine()), 1});
  return true;
}

void WeightPacks::release(const void* owner, const dnnl::memory::desc& packed) {
  Pack* p = find(owner, packed);
  if (p == nullptr || --p->users > 0) return;
  bytes_ -= packed.get_size();
  packs_.erase(packs_.begin() + (p - packs_.data()));
}

dnnl::memory& WeightPacks::get(const void* owner, const std::byte* data, uint64_t version,
                               const dnnl::memory::desc& plain, const dnnl::memory::desc& packed) {
  Pack* p = find(owner, packed);
  if (p == nullptr) throw std::logic_error("[cpu] packed weights used without reserve()");
  if (p->data != data || p->version != version) {
    dnnl::memory src(plain, onednn_engine(), const_cast<std::byte*>(data));
    dnnl::stream& stream = onednn_stream();
    dnnl::reorder(src, p->mem).execute(stream, src, p->mem);
    stream.wait();
    p->data = data;
    p->version = version;
  }
  return p->mem;
}

}  // namespace luminal::cpu
