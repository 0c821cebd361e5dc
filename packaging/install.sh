#!/usr/bin/env sh
# Linkwork desktop integration, for the current user only (no root needed):
#   ./install.sh            menu entry + icon, and `linkwork` on PATH via ~/.local/bin
#   ./install.sh --uninstall
# The bundle stays where it was unpacked; run this again after moving it.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
APPS=$DATA/applications
ICONS=$DATA/icons/hicolor/scalable/apps
BIN=$HOME/.local/bin

if [ "${1:-}" = "--uninstall" ]; then
  rm -f "$APPS/linkwork.desktop" "$ICONS/linkwork.svg"
  if [ -L "$BIN/linkwork" ]; then rm -f "$BIN/linkwork"; fi
  command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$APPS" || true
  echo "Linkwork's menu entry, icon and ~/.local/bin/linkwork removed (the bundle in $HERE is untouched)"
  exit 0
fi

EXE=$HERE/linkwork
[ -x "$EXE" ] || { echo "install.sh: $EXE not found: run install.sh from the unpacked bundle" >&2; exit 1; }
mkdir -p "$APPS" "$ICONS" "$BIN"
cp "$HERE/_internal/resources/icons/linkwork.svg" "$ICONS/linkwork.svg"
sed "s|@EXEC@|$EXE|g" "$HERE/share/linkwork.desktop" > "$APPS/linkwork.desktop.tmp"
mv "$APPS/linkwork.desktop.tmp" "$APPS/linkwork.desktop"
chmod 644 "$APPS/linkwork.desktop"
if [ -e "$BIN/linkwork" ] && [ ! -L "$BIN/linkwork" ]; then
  echo "install.sh: $BIN/linkwork exists and is not a link: left alone" >&2
else
  ln -sfn "$EXE" "$BIN/linkwork"
fi
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database -q "$APPS" || true
command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$DATA/icons/hicolor" 2>/dev/null || true
echo "Linkwork $("$EXE" --version | cut -d' ' -f2) installed for $(id -un):"
echo "  menu entry  $APPS/linkwork.desktop"
echo "  icon        $ICONS/linkwork.svg"
echo "  command     $BIN/linkwork -> $EXE"
case ":$PATH:" in *":$BIN:"*) ;; *) echo "  ($BIN is not on your PATH: add it, or run $EXE)";; esac
