// The report page (html_page.h): escaping, tables of figures bound to their JSON, sections, and
// the document with its inline style and its Content-Security-Policy.
#include "profiler/report/html_page.h"

#include <nlohmann/json.hpp>

#include "profiler/formats/common/utf8.h"

namespace stepscope::report {

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = trace::Utf8SequenceLength(text, i);
      if (length == 0) {
        out += trace::kUtf8Replacement;
        ++i;
      } else {
        out.append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t':
      case '\n': out += static_cast<char>(c); break;
      default: out += (c < 0x20 || c == 0x7f) ? ' ' : static_cast<char>(c);
    }
    ++i;
  }
  return out;
}

Cell Text(std::string text) { return {.text = std::move(text)}; }

Cell Figure(std::string text, std::string pointer, std::string value, size_t command) {
  return {.text = std::move(text), .pointer = std::move(pointer), .value = std::move(value), .numeric = true,
          .command = command};
}

std::string Table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows) {
  std::string out = "<table><thead><tr>";
  for (const std::string& h : header) out += "<th>" + Escape(h) + "</th>";
  out += "</tr></thead><tbody>\n";
  for (const auto& row : rows) {
    out += "<tr>";
    for (const Cell& cell : row) {
      out += cell.numeric ? "<td class=\"num\"" : "<td";
      if (!cell.pointer.empty()) {
        out += " data-cmd=\"" + std::to_string(cell.command) + "\" data-ptr=\"" + Escape(cell.pointer) +
               "\" data-value=\"" + Escape(cell.value) + "\"";
      }
      out += ">" + Escape(cell.text) + "</td>";
    }
    out += "</tr>\n";
  }
  return out + "</tbody></table>\n";
}

std::string Paragraph(std::string_view text, std::string_view css_class) {
  return (css_class.empty() ? std::string("<p>") : "<p class=\"" + std::string(css_class) + "\">") + Escape(text) +
         "</p>\n";
}

std::string CommandLine(const std::vector<std::string>& args) {
  std::string line = "stepscope";
  for (const std::string& arg : args) {
    const bool plain = !arg.empty() && arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                             "0123456789-_./=,:+@%") == std::string::npos;
    if (plain) {
      line += " " + arg;
      continue;
    }
    // Single quotes keep everything but a single quote, written as '\''.
    line += " '";
    for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += "'";
  }
  return line;
}

namespace {

// Inline, so that the page needs nothing else; light and dark follow the reader's system.
constexpr std::string_view kStyle = R"(
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de; --bg: #ffffff;
  --panel: #f6f8fa; --accent: #0969da; --bad: #cf222e; --ok: #1a7f37; --warn: #9a6700; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --line: #30363d; --bg: #0d1117;
  --panel: #161b22; --accent: #4493f8; --bad: #f85149; --ok: #3fb950; --warn: #d29922; } }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
  margin: 0 auto; max-width: 1180px; padding: 16px 24px 48px; }
h1 { font-size: 22px; margin: 8px 0 2px; } h2 { font-size: 18px; margin: 0 0 8px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
.sub { color: var(--muted); margin: 0 0 12px; word-break: break-all; }
nav { display: flex; flex-wrap: wrap; gap: 4px 14px; padding: 8px 0 12px; border-bottom: 1px solid var(--line); }
nav a { color: var(--accent); text-decoration: none; }
section { padding: 16px 0; border-bottom: 1px solid var(--line); }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { padding: 3px 10px 3px 0; text-align: left; vertical-align: top; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; }
td { max-width: 560px; overflow-wrap: anywhere; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
pre.cmd { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px;
  margin: 4px 0; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap;
  overflow-wrap: anywhere; }
.repro { color: var(--muted); font-size: 12px; margin: 8px 0 2px; }
p.note { color: var(--muted); } p.warn { color: var(--warn); } p.ok { color: var(--ok); font-weight: 600; }
p.bad { color: var(--bad); font-weight: 600; }
svg { display: block; max-width: 100%; height: auto; margin: 6px 0; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
svg .axis { stroke: var(--line); } svg .muted { fill: var(--muted); }
)";

}  // namespace

std::string Page(std::string_view title, std::string_view subtitle, const std::vector<Section>& sections) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      // Nothing may be fetched: not a script, a font, an image or a frame; only the inline style.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "img-src data:; base-uri 'none'; form-action 'none'\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      Escape(title) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<h1>" + Escape(title) +
      "</h1>\n<p class=\"sub\">" + Escape(subtitle) + "</p>\n<nav>";
  for (const Section& s : sections) out += "<a href=\"#" + Escape(s.id) + "\">" + Escape(s.title) + "</a>";
  out += "</nav>\n";
  for (const Section& s : sections) {
    out += "<section id=\"" + Escape(s.id) + "\">\n<h2>" + Escape(s.title) + "</h2>\n" + s.body;
    if (!s.commands.empty()) {
      out += "<p class=\"repro\">The numbers above, as JSON:</p>\n";
      for (const auto& args : s.commands) {
        out += "<pre class=\"cmd\" data-argv=\"" + Escape(nlohmann::json(args).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) + "\">" +
               Escape(CommandLine(args)) + "</pre>\n";
      }
    }
    out += "</section>\n";
  }
  return out + "</body>\n</html>\n";
}

}  // namespace stepscope::report
