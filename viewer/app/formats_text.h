// What the viewer says about the formats it reads, all from the reader table
// (profiler/formats/reader.h), so that the welcome text, --help and the file dialogs cannot
// drift from what the readers take.
#pragma once

#include <QString>
#include <QStringList>

namespace stepscope::viewer {

// The file dialogs' patterns: every reader's file names, then *.gz and *.trace (any trace may
// be so named; the content tells the format).
QStringList TraceFilePatternList();
// "Traces (*.json ...);;All files (*)".
QString TraceFileFilter();
// One line per reader: its name and file names, for --help ("\n  chrome-json     .json ...").
QString FormatsHelpLines();
// The welcome page's list of formats (HTML): each reader's description and file names.
QString FormatsHtml();

}  // namespace stepscope::viewer
