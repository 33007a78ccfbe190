// The names of a model's ops, fixed when the model is built, as TensorFlow fixes them when it
// builds a graph: a node has a scoped name made unique the way TF's name scopes do it
// ("MatMul", "MatMul_1", ...), an op type, and the names of its inputs ("node" or "node:slot").
// Models keep `const Node*` handles and run each op under its node, so a step costs no string
// work and the profiler sees exactly TF's names.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace stepscope::runtime {

struct Node {
  std::string name;
  std::string op_type;
  std::vector<std::string> inputs;
};

class Graph {
 public:
  // Adds a node named `name`, or `name_N` with the smallest N that is still free (TF's
  // unique_name). The returned reference stays valid for the graph's lifetime.
  const Node& AddNode(std::string_view name, std::string_view op_type,
                      std::vector<std::string> inputs = {});
  // The name AddNode would give, reserving it.
  std::string UniqueName(std::string_view name);

  const std::deque<Node>& nodes() const { return nodes_; }

 private:
  std::deque<Node> nodes_;
  std::unordered_map<std::string, int> used_;  // name -> next suffix to try
};

// Joins scope parts with '/', skipping empty ones: Scoped("Train/Model", "RNN") = "Train/Model/RNN".
std::string Scoped(std::string_view scope, std::string_view name);

}  // namespace stepscope::runtime
