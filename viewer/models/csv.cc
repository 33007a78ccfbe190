// CSV of a table view as shown (csv.h), RFC 4180 quoting.
#include "viewer/models/csv.h"

#include "viewer/models/roles.h"

namespace stepscope::viewer {
namespace {

QString CsvField(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) &&
      !text.contains(QLatin1Char('\n'))) {
    return text;
  }
  QString quoted = text;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

}  // namespace

QString TableToCsv(const QAbstractItemModel& model) {
  QString csv;
  const int columns = model.columnCount();
  for (int c = 0; c < columns; ++c) {
    if (c > 0) csv += QLatin1Char(',');
    csv += CsvField(model.headerData(c, Qt::Horizontal).toString());
  }
  csv += QLatin1Char('\n');
  for (int r = 0; r < model.rowCount(); ++r) {
    for (int c = 0; c < columns; ++c) {
      if (c > 0) csv += QLatin1Char(',');
      const QModelIndex index = model.index(r, c);
      QVariant value = model.data(index, kSortRole);
      if (!value.isValid()) value = model.data(index, Qt::DisplayRole);
      if (value.typeId() == QMetaType::Double) {
        // Fixed notation: spreadsheets and scripts read 1250000.5, not 1.25e+06.
        const double number = value.toDouble();
        csv += number == static_cast<double>(static_cast<qint64>(number))
                   ? QString::number(static_cast<qint64>(number))
                   : QString::number(number, 'f', 6);
      } else {
        csv += CsvField(value.toString());
      }
    }
    csv += QLatin1Char('\n');
  }
  return csv;
}

}  // namespace stepscope::viewer
