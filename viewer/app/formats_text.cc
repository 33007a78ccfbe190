// The viewer's texts about formats (formats_text.h), built from the reader table.
#include "viewer/app/formats_text.h"

#include <QObject>
#include <string_view>

#include "profiler/formats/reader.h"

namespace stepscope::viewer {
namespace {

QString Text(std::string_view view) { return QString::fromUtf8(view.data(), static_cast<qsizetype>(view.size())); }

}  // namespace

QStringList TraceFilePatternList() {
  QStringList patterns;
  for (const std::string& pattern : trace::TraceFilePatterns()) patterns << QString::fromStdString(pattern);
  // Names no reader claims but traces often have (a gzipped file of any name, Android's and
  // profilers' `.trace`): offered too, since the format is told from the content.
  for (const QString& extra : {QStringLiteral("*.gz"), QStringLiteral("*.trace")}) {
    if (!patterns.contains(extra)) patterns << extra;
  }
  return patterns;
}

QString TraceFileFilter() {
  return QObject::tr("Traces (%1);;All files (*)").arg(TraceFilePatternList().join(' '));
}

QString FormatsHelpLines() {
  QString lines;
  for (const trace::TraceReaderEntry& entry : trace::TraceReaders()) {
    lines += "\n  " + Text(entry.name).leftJustified(16) + Text(entry.extensions);
  }
  return lines;
}

QString FormatsHtml() {
  QString rows;
  for (const trace::TraceReaderEntry& entry : trace::TraceReaders()) {
    rows += QStringLiteral("<tr><td><b>%1</b>&nbsp;&nbsp;</td><td>%2</td></tr>")
                .arg(Text(entry.extensions).toHtmlEscaped(), Text(entry.description).toHtmlEscaped());
  }
  return QStringLiteral("<table align='center'>%1</table><p>%2</p>")
      .arg(rows, QObject::tr("The format is told from the content; gzipped files are read as they are."));
}

}  // namespace stepscope::viewer
