// The offline HTML report's page: escaping of every text that comes from a trace, tables whose
// figures carry the JSON value they show, and sections that name the command reproducing them.
// The page is one file with nothing to fetch: inline CSS, inline SVG, no script, and a
// Content-Security-Policy that forbids the browser any request, so that it opens from disk, a CI
// artifact or an air-gapped machine alike.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stepscope::report {

// `text` as HTML text or a quoted attribute value: & < > " ' as entities, control characters
// (other than tab and newline) as spaces, and bytes that are not UTF-8 as U+FFFD, so that no name
// from a trace can open a tag, close an attribute or break the document's encoding.
std::string Escape(std::string_view text);

// A table cell. A figure keeps the JSON number it shows (`value`, as the JSON writes it) and where
// it sits in its command's document (`pointer`, an RFC 6901 JSON pointer), as the attributes
// data-value and data-ptr: a reader, or a test, checks the page against `stepscope ... --json`.
struct Cell {
  std::string text;     // plain text, escaped when written
  std::string pointer;  // empty: not a figure
  std::string value;
  bool numeric = false;  // right-aligned
  size_t command = 0;    // which of its section's commands writes that document
};
Cell Text(std::string text);
Cell Figure(std::string text, std::string pointer, std::string value, size_t command = 0);

std::string Table(const std::vector<std::string>& header, const std::vector<std::vector<Cell>>& rows);
// A paragraph of plain text (escaped); `css_class` one of the page's: "note", "warn", "ok", "bad".
std::string Paragraph(std::string_view text, std::string_view css_class = "");

// One section of the page: its anchor id, title, the command lines that print its numbers as JSON
// (each an argument list after `stepscope`, shown as shell words) and its body (HTML built with the
// helpers above). Each command is shown, and kept as the attribute data-argv (a JSON array).
struct Section {
  std::string id;
  std::string title;
  std::vector<std::vector<std::string>> commands;
  std::string body;
};

// The whole document: title, a line under it, the table of contents and the sections.
std::string Page(std::string_view title, std::string_view subtitle, const std::vector<Section>& sections);

// An argument list as one shell command line after "stepscope", each word quoted when it must be.
std::string CommandLine(const std::vector<std::string>& args);

}  // namespace stepscope::report
