// Weights and tensor constants of a .pt2 archive (internal): payload configs -> Pt2Tensor views.
#pragma once

#include <string>
#include <vector>

#include "io/zip_reader.h"
#include "luminal/pt2.h"

namespace luminal::io::pt2 {

/// Reads one payload config ({"config": {fqn: {path_name, is_param, use_pickle, tensor_meta}}})
/// and the raw storage entries it names.
struct PayloadLoader {
  const ZipReader& zip;
  const std::string& prefix;
  /// Receives inflated entries so the returned spans stay valid.
  std::vector<ZipBytes>& held;

  /// The tensors of "<prefix><dir><model>_<kind>_config.json" (none when it is absent). Throws
  /// "[pt2] <path>: ..." for pickled payloads, unsupported dtypes, symbolic or negative layouts and
  /// storage entries too small for the strided extent.
  std::vector<Pt2Tensor> load(const std::string& dir, const std::string& model,
                              const std::string& kind) const;
};

/// Why the archive's signature does not fit its tensors ("" when it does): every parameter, buffer
/// and constant the signature lifts needs a tensor whose dtype and shape match the graph's
/// tensor_values.
std::string signature_problem(const Pt2Archive& archive);

}  // namespace luminal::io::pt2
