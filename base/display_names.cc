// Short kernel names and middle elision (display_names.h): a small scanner over demangled C++
// names that tracks bracket depth, so that namespaces, template arguments, parameter lists and
// lambdas nested to any depth are told apart without a full demangler's grammar.
#include "base/display_names.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

namespace stepscope {
namespace {

constexpr std::string_view kAnonymous = "(anonymous namespace)";

bool Opens(char c) { return c == '<' || c == '(' || c == '{' || c == '['; }
bool Closes(char c) { return c == '>' || c == ')' || c == '}' || c == ']'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Visits each character of `s` with the bracket depth before it. "operator<", "operator()" and
// the like would unbalance the count: their brackets are skipped as part of the name.
template <typename Visit>
void Scan(std::string_view s, Visit visit) {
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s.compare(i, 8, "operator") == 0 && (i == 0 || s[i - 1] == ':' || s[i - 1] == ' ')) {
      size_t end = i + 8;
      if (s.compare(end, 2, "()") == 0) {
        end += 2;
      } else {
        while (end < s.size() && std::string_view("<>=!+-*/%&|^~[],").find(s[end]) != std::string_view::npos) ++end;
      }
      for (; i < end; ++i) visit(i, depth);
      --i;
      continue;
    }
    const char c = s[i];
    if (Closes(c) && !(c == '>' && i > 0 && s[i - 1] == '-')) depth = std::max(0, depth - 1);
    visit(i, depth);
    if (Opens(c)) ++depth;
  }
}

// The pieces of `s` between top-level occurrences of `separator` (":: " or ",").
std::vector<std::string_view> SplitTop(std::string_view s, std::string_view separator) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  size_t skip_until = 0;
  Scan(s, [&](size_t i, int depth) {
    if (i < skip_until || depth != 0 || s.compare(i, separator.size(), separator) != 0) return;
    parts.push_back(Trim(s.substr(begin, i - begin)));
    begin = i + separator.size();
    skip_until = begin;
  });
  parts.push_back(Trim(s.substr(begin)));
  return parts;
}

// Where the parameter list starts: the last top-level "(" that is not "(anonymous namespace)";
// npos when the name has none.
size_t ParameterStart(std::string_view s) {
  size_t found = std::string_view::npos;
  Scan(s, [&](size_t i, int depth) {
    if (depth == 0 && s[i] == '(' && s.compare(i, kAnonymous.size(), kAnonymous) != 0) {
      if (i < 8 || s.compare(i - 8, 8, "operator") != 0) found = i;
    }
  });
  return found;
}

// A scope's name and its template arguments ("Array<char*, 3>" -> "Array", {"char*", "3"}); a
// scope that is a function ("launch_clamp_scalar(at::TensorIteratorBase&, ...)") loses its
// parameters.
struct Component {
  std::string_view base;
  std::vector<std::string_view> arguments;
  bool templated = false;
};

Component Parse(std::string_view c) {
  const size_t params = ParameterStart(c);
  if (params != std::string_view::npos && params > 0) c = Trim(c.substr(0, params));
  Component out;
  size_t open = std::string_view::npos;
  Scan(c, [&](size_t i, int depth) {
    if (depth == 0 && c[i] == '<' && open == std::string_view::npos) open = i;
  });
  if (open == std::string_view::npos || c.back() != '>') {
    out.base = c;
    return out;
  }
  out.base = Trim(c.substr(0, open));
  out.templated = true;
  const std::string_view inside = c.substr(open + 1, c.size() - open - 2);
  if (!Trim(inside).empty()) out.arguments = SplitTop(inside, ",");
  return out;
}

bool IsLambdaOrCall(std::string_view c) { return c.starts_with('{') || c.starts_with("operator()"); }

// A function name that says nothing alone ("Kernel2", "device_kernel": CUTLASS, CUB): its
// namespace and first template argument stay.
bool IsGeneric(std::string_view base) {
  if (base == "device_kernel" || base == "global_kernel") return true;
  if (!base.starts_with("Kernel") && !base.starts_with("kernel")) return false;
  return std::all_of(base.begin() + 6, base.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A launcher whose first template argument is the work it runs (our kernels' ForEachKernel<Fn>).
bool NamesWorkInArgument(std::string_view base) { return base == "ForEachKernel" || IsGeneric(base); }

std::string Folded(const Component& c) { return std::string(c.base) + (c.templated ? "<" + std::string(kEllipsis) + ">" : ""); }

// A type or value among template arguments, short: "at::detail::Array<char*, 3>" -> "Array<…>";
// a lambda names the function it lives in: "launch_clamp_scalar::{lambda}".
std::string ShortType(std::string_view type) {
  const std::vector<std::string_view> scopes = SplitTop(Trim(type), "::");
  size_t i = scopes.size() - 1;
  while (i > 0 && IsLambdaOrCall(scopes[i])) --i;
  std::string out = Folded(Parse(scopes[i]));
  if (i + 1 < scopes.size()) out += "::{lambda}";
  return out;
}

std::string Join(const std::vector<std::string_view>& arguments, size_t count) {
  std::string out;
  for (size_t i = 0; i < count && i < arguments.size(); ++i) out += (i ? ", " : "") + ShortType(arguments[i]);
  return out;
}

// A C++ identifier, or an operator: what a function's own name is. Python frames
// ("module.py(1501): _call_impl") and other text with brackets are not.
bool IsIdentifier(std::string_view s) {
  if (s.starts_with("operator")) return true;
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '_' || c == '~' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

bool LooksLikeSignature(std::string_view name) {
  return name.find('(') != std::string_view::npos || name.find('<') != std::string_view::npos;
}

}  // namespace

std::string DemangleName(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  int status = 0;
  const std::string mangled(name);
  std::unique_ptr<char, void (*)(void*)> demangled(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                   std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : mangled;
}

std::string ShortKernelName(std::string_view name, KernelNameDetail detail) {
  const std::string demangled = DemangleName(name);
  const std::string_view s = Trim(demangled);
  if (!LooksLikeSignature(s)) return demangled.empty() ? std::string(name) : demangled;
  std::string_view qualified = s;
  const size_t params = ParameterStart(s);
  if (params != std::string_view::npos) qualified = Trim(s.substr(0, params));
  // The return type ends at the last top-level space ("void", "unsigned int").
  size_t space = std::string_view::npos;
  Scan(qualified, [&](size_t i, int depth) {
    if (depth == 0 && qualified[i] == ' ') space = i;
  });
  if (space != std::string_view::npos) {
    // A kernel returns void: other text before a space is no return type but words of a name
    // ("Memcpy HtoD (Pageable -> Device)", "Memset (Device)").
    if (!Trim(qualified.substr(0, space)).ends_with("void")) return demangled;
    qualified = Trim(qualified.substr(space + 1));
  } else if (params != std::string_view::npos && qualified.find("::") == std::string_view::npos &&
             qualified.find('<') == std::string_view::npos) {
    return demangled;  // "Memset (Device)": a word and a remark, no function of a namespace or template
  }
  if (qualified.empty()) return demangled;
  const std::vector<std::string_view> scopes = SplitTop(qualified, "::");
  if (IsLambdaOrCall(scopes.back())) return ShortType(qualified);
  const Component own = Parse(scopes.back());
  if (!IsIdentifier(own.base)) return demangled;
  const bool full = detail == KernelNameDetail::kArguments;
  if (NamesWorkInArgument(own.base)) {
    std::string out;
    if (IsGeneric(own.base) && scopes.size() > 1 && scopes[scopes.size() - 2] != kAnonymous) out = std::string(scopes[scopes.size() - 2]) + "::";
    out += own.base;
    if (!own.templated) return out;
    const size_t shown = full ? own.arguments.size() : 1;
    out += "<" + Join(own.arguments, shown);
    if (own.arguments.size() > shown) out += ", " + std::string(kEllipsis);
    return out + ">";
  }
  if (!full || !own.templated) return Folded(own);
  return std::string(own.base) + "<" + Join(own.arguments, own.arguments.size()) + ">";
}

std::vector<std::string> DistinctShortKernelNames(const std::vector<std::string>& names) {
  std::vector<std::string> out(names.size());
  // Which distinct full names each short text stands for.
  std::map<std::string, std::set<std::string>> owners;
  for (size_t i = 0; i < names.size(); ++i) {
    out[i] = ShortKernelName(names[i]);
    owners[out[i]].insert(names[i]);
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (owners[out[i]].size() > 1) out[i] = ShortKernelName(names[i], KernelNameDetail::kArguments);
  }
  owners.clear();
  for (size_t i = 0; i < names.size(); ++i) owners[out[i]].insert(names[i]);
  std::vector<std::string> numbered = out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::set<std::string>& same = owners[out[i]];
    if (same.size() < 2) continue;
    const auto rank = std::distance(same.begin(), same.find(names[i]));
    numbered[i] = out[i] + " #" + std::to_string(rank + 1);
  }
  return numbered;
}

size_t Utf8Length(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

namespace {

// Byte offset of code point `n` (text.size() past the end).
size_t ByteOfChar(std::string_view text, size_t n) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (chars++ == n) return i;
  }
  return text.size();
}

// A third of the head and the rest of the tail around "…".
std::string ElidePlain(std::string_view text, size_t max_chars) {
  const size_t n = Utf8Length(text);
  if (n <= max_chars) return std::string(text);
  if (max_chars < 2) return std::string(kEllipsis);
  const size_t keep = max_chars - 1;
  const size_t head = keep / 3;
  const size_t tail = keep - head;
  return std::string(text.substr(0, ByteOfChar(text, head))) + std::string(kEllipsis) +
         std::string(text.substr(ByteOfChar(text, n - tail)));
}

}  // namespace

std::string ElideMiddle(std::string_view text, size_t max_chars, ElidePath path) {
  const size_t length = Utf8Length(text);
  if (length <= max_chars) return std::string(text);
  if (path == ElidePath::kTailText) {
    return max_chars < 2 ? std::string(kEllipsis)
                         : std::string(kEllipsis) + std::string(text.substr(ByteOfChar(text, length - (max_chars - 1))));
  }
  std::vector<size_t> slashes;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '/') slashes.push_back(i);
  }
  if (slashes.empty() || slashes.back() + 1 == text.size()) return ElidePlain(text, max_chars);
  // Result: head + "/…" + tail, head = text before a slash, tail = text from a later slash.
  const auto tail_length = [&](size_t k) { return Utf8Length(text.substr(slashes[k])); };
  // A track path's " / " joins a lane to its device ("/job:localhost/replica:0/task:0/device:GPU:0
  // / stream:14"): the tail kept whole starts at the last slash that is not such a joint, where
  // it fits ("…/device:GPU:0 / stream:14").
  const auto joint = [&](size_t k) {
    const size_t i = slashes[k];
    return i > 0 && i + 1 < text.size() && text[i - 1] == ' ' && text[i + 1] == ' ';
  };
  size_t tail_from = slashes.size() - 1;
  while (tail_from > 0 && joint(tail_from)) --tail_from;
  if (joint(tail_from) || tail_length(tail_from) + 1 > max_chars) tail_from = slashes.size() - 1;
  if (tail_length(tail_from) + 1 > max_chars) {
    // Not even "…/" and the last component fit: the last component alone, cut in its middle.
    return ElidePlain(text.substr(slashes.back() + 1), max_chars);
  }
  // The first non-empty component ("/job:localhost" for a path from the root).
  size_t head_to = slashes[0] == 0 && slashes.size() > 1 ? 1 : 0;
  size_t head_length = head_to < tail_from ? Utf8Length(text.substr(0, slashes[head_to])) : 0;
  if (path == ElidePath::kTail || head_to >= tail_from || head_length + 2 + tail_length(tail_from) > max_chars) {
    head_length = 0;
  }
  const size_t room = max_chars - (head_length > 0 ? head_length + 1 : 0) - 1;  // "/" after the head, "…"
  while (tail_from > (head_length > 0 ? head_to + 1 : 0) && tail_length(tail_from - 1) <= room) --tail_from;
  std::string out;
  if (head_length > 0) out = std::string(text.substr(0, slashes[head_to])) + "/";
  return out + std::string(kEllipsis) + std::string(text.substr(slashes[tail_from]));
}

}  // namespace stepscope
