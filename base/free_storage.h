// Frees a container's storage now. `v = {}` does not: for a std::vector or an unordered_map it
// picks the initializer-list assignment, which empties the container and keeps its capacity, so
// memory a big import meant to hand back stays resident until the container dies.
#pragma once

namespace stepscope {

template <typename Container>
void FreeStorage(Container& container) {
  Container().swap(container);
}

}  // namespace stepscope
