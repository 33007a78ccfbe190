// Node names made unique within a graph the way TensorFlow's name scopes do ("MatMul_1").
#include "trainer/runtime/graph.h"

namespace stepscope::runtime {

std::string Graph::UniqueName(std::string_view name) {
  std::string base(name);
  auto [it, inserted] = used_.try_emplace(base, 1);
  if (inserted) return base;
  // TF appends _N with the first N whose name is not taken yet.
  for (int n = it->second;; ++n) {
    std::string candidate = base + "_" + std::to_string(n);
    if (used_.try_emplace(candidate, 1).second) {
      it = used_.find(base);
      it->second = n + 1;
      return candidate;
    }
  }
}

const Node& Graph::AddNode(std::string_view name, std::string_view op_type,
                           std::vector<std::string> inputs) {
  nodes_.push_back(Node{UniqueName(name), std::string(op_type), std::move(inputs)});
  return nodes_.back();
}

std::string Scoped(std::string_view scope, std::string_view name) {
  if (scope.empty()) return std::string(name);
  if (name.empty()) return std::string(scope);
  std::string out(scope);
  out += '/';
  out += name;
  return out;
}

}  // namespace stepscope::runtime
