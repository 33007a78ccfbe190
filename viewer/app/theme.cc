// The application's light and dark palettes and the Theme menu (theme.h).
#include "viewer/app/theme.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QMenu>
#include <QPalette>
#include <QSettings>
#include <QStyle>
#include <QStyleFactory>

namespace stepscope::viewer {
namespace {

// The palette the application started with: "system".
const QPalette& SystemPalette() {
  static const QPalette palette = QApplication::palette();
  return palette;
}

QPalette DarkPalette() {
  QPalette p;
  const QColor window(0x2b, 0x2d, 0x33), base(0x1e, 0x1f, 0x24), text(0xe8, 0xea, 0xf0);
  p.setColor(QPalette::Window, window);
  p.setColor(QPalette::WindowText, text);
  p.setColor(QPalette::Base, base);
  p.setColor(QPalette::AlternateBase, QColor(0x25, 0x27, 0x2d));
  p.setColor(QPalette::ToolTipBase, QColor(0x33, 0x36, 0x3f));
  p.setColor(QPalette::ToolTipText, text);
  p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0xa0, 0xb0));
  p.setColor(QPalette::Text, text);
  p.setColor(QPalette::Button, window);
  p.setColor(QPalette::ButtonText, text);
  p.setColor(QPalette::BrightText, QColor(0xff, 0x6b, 0x6b));
  p.setColor(QPalette::Link, QColor(0x6c, 0xa8, 0xff));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x6f, 0xc4));
  p.setColor(QPalette::HighlightedText, Qt::white);
  p.setColor(QPalette::Mid, QColor(0x50, 0x54, 0x60));
  p.setColor(QPalette::Dark, QColor(0x18, 0x19, 0x1d));
  p.setColor(QPalette::Light, QColor(0x3a, 0x3d, 0x46));
  for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText}) {
    p.setColor(QPalette::Disabled, role, QColor(0x7a, 0x7e, 0x88));
  }
  return p;
}

}  // namespace

QString ThemeName(Theme theme) {
  switch (theme) {
    case Theme::kLight: return QStringLiteral("light");
    case Theme::kDark: return QStringLiteral("dark");
    case Theme::kSystem: break;
  }
  return QStringLiteral("system");
}

Theme SavedTheme() {
  const QString name = QSettings().value(kThemeKey).toString();
  for (Theme theme : {Theme::kLight, Theme::kDark}) {
    if (name == ThemeName(theme)) return theme;
  }
  return Theme::kSystem;
}

void ApplyTheme(Theme theme, bool save) {
  const QPalette& system = SystemPalette();  // taken before the first change
  if (theme != Theme::kSystem) QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  switch (theme) {
    case Theme::kDark: QApplication::setPalette(DarkPalette()); break;
    case Theme::kLight: QApplication::setPalette(QApplication::style()->standardPalette()); break;
    case Theme::kSystem: QApplication::setPalette(system); break;
  }
  if (save) QSettings().setValue(kThemeKey, ThemeName(theme));
}

QMenu* AddThemeMenu(QMenu* view) {
  QMenu* menu = view->addMenu(QObject::tr("&Theme"));
  auto* group = new QActionGroup(menu);
  const Theme saved = SavedTheme();
  const std::pair<Theme, QString> choices[] = {
      {Theme::kLight, QObject::tr("&Light")}, {Theme::kDark, QObject::tr("&Dark")}, {Theme::kSystem, QObject::tr("&System")}};
  for (const auto& [theme, title] : choices) {
    QAction* action = menu->addAction(title);
    action->setCheckable(true);
    action->setChecked(theme == saved);
    action->setData(ThemeName(theme));
    group->addAction(action);
    QObject::connect(action, &QAction::triggered, menu, [theme] { ApplyTheme(theme); });
  }
  return menu;
}

}  // namespace stepscope::viewer
