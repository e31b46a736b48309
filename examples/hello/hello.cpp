// luminal's C++ hello world: y = relu(x W^T + b), compiled for the best device present.
#include <cstdio>
#include <vector>

#include "luminal/luminal.h"

int main() {
  luminal::Graph g;
  const luminal::GraphTensor x = g.named_tensor("x", {2, 3});
  const luminal::nn::Linear fc(g, "fc", 3, 2);  // weight "fc.weight" (2, 3), bias "fc.bias"
  const luminal::GraphTensor y = fc(x).relu().output();

  luminal::Executable rt(g, luminal::backend_for("auto"));
  rt.set_data(x, std::vector<float>{1, 2, 3, -1, -2, -3});
  rt.set_data(fc.weight, std::vector<float>{0.5f, 0.5f, 0.5f, 1, 0, -1});
  rt.set_data(*fc.bias, std::vector<float>{0, 1});
  rt.execute();
  // relu is x * (x > 0): a negative x gives -0, which + 0.0f prints as 0.
  for (float v : rt.get_f32(y)) std::printf("%g ", v + 0.0f);  // 3 0 0 3
  std::printf("on %s\n", rt.backend().description().c_str());
}
