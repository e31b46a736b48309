// The CUDA runtime when built without CUDA: nothing is available and every entry point throws.
#include <stdexcept>

#include "luminal/cuda.h"

namespace luminal::cuda {
namespace {
[[noreturn]] void no_cuda() { throw std::runtime_error("[cuda] built without CUDA"); }
}  // namespace

bool available() { return false; }

std::string device_description() { return "built without CUDA"; }

struct CudaRuntime::Impl {};
struct CudaRuntime::Buckets {};
struct CudaRuntime::Registered {};

CudaRuntime::CudaRuntime(const Graph& g, CudaOptions opts) : Runtime(g) {
  (void)opts;
  no_cuda();
}

CudaRuntime::~CudaRuntime() = default;

void CudaRuntime::set_device_ptr(const GraphTensor&, void*, size_t) { no_cuda(); }
void CudaRuntime::set_output_device_ptr(const GraphTensor&, void*, size_t) { no_cuda(); }
void CudaRuntime::set_stream(void*) { no_cuda(); }
void CudaRuntime::use_own_stream() { no_cuda(); }
void CudaRuntime::check_errors() { no_cuda(); }
void CudaRuntime::execute(const DynMap&) { no_cuda(); }
std::vector<std::byte> CudaRuntime::get_bytes(const GraphTensor&) { no_cuda(); }
Buffer CudaRuntime::remove_buffer(const GraphTensor&) { no_cuda(); }
void CudaRuntime::set_buffer(const GraphTensor&, Buffer) { no_cuda(); }
std::vector<std::string> CudaRuntime::host_ops() const { no_cuda(); }
size_t CudaRuntime::kernel_count() const { no_cuda(); }
int CudaRuntime::graph_streams() const { no_cuda(); }
int CudaRuntime::gemv_launches_saved() const { no_cuda(); }
void CudaRuntime::synchronize() { no_cuda(); }
std::vector<double> CudaRuntime::execute_timed(const DynMap&, int) { no_cuda(); }
const SearchReport& CudaRuntime::search_report() const { no_cuda(); }
int CudaRuntime::active_bucket() const { no_cuda(); }
int CudaRuntime::buckets_built() const { no_cuda(); }
void CudaRuntime::upload(NodeId, std::span<const std::byte>, bool) { no_cuda(); }
bool CudaRuntime::load_items(const std::vector<LoadItem>&, const LoadOptions&) { no_cuda(); }
std::span<std::byte> CudaRuntime::host_input(const GraphTensor&, size_t) { no_cuda(); }

}  // namespace luminal::cuda
