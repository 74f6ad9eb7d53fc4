#!/usr/bin/env bash
# Refresh the console's vendored JavaScript and CSS from npm (no CDN, no JS build step).
#
#   scripts/vendor-console-assets.sh                 # the pinned versions below
#   HTMX_VERSION=2.0.12 UPLOT_VERSION=1.6.33 scripts/vendor-console-assets.sh
#
# Downloads the npm tarballs with `npm pack` into a temporary folder and copies the built files
# and each package's LICENSE into console/taskforge_console/static/vendor/, then rewrites
# README.md there. Commit the result; nothing is fetched at install or run time.
set -euo pipefail

HTMX_VERSION="${HTMX_VERSION:-2.0.11}"
UPLOT_VERSION="${UPLOT_VERSION:-1.6.32}"

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/console/taskforge_console/static/vendor"
command -v npm >/dev/null || { echo "npm is needed to refresh the vendored assets (apt-get install npm)" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm pack --silent "htmx.org@$HTMX_VERSION" "uplot@$UPLOT_VERSION" >/dev/null
mkdir htmx uplot
tar -xzf "htmx.org-$HTMX_VERSION.tgz" -C htmx
tar -xzf "uplot-$UPLOT_VERSION.tgz" -C uplot

mkdir -p "$dest"
cp htmx/package/dist/htmx.min.js "$dest/htmx.min.js"
cp htmx/package/LICENSE "$dest/htmx.LICENSE"
cp uplot/package/dist/uPlot.iife.min.js "$dest/uPlot.iife.min.js"
cp uplot/package/dist/uPlot.min.css "$dest/uPlot.min.css"
cp uplot/package/LICENSE "$dest/uPlot.LICENSE"
cat > "$dest/README.md" <<README
# Vendored front-end files of the console

- htmx.org $HTMX_VERSION from npm: \`dist/htmx.min.js\` (licence: \`htmx.LICENSE\`, 0BSD)
- uplot $UPLOT_VERSION from npm: \`dist/uPlot.iife.min.js\`, \`dist/uPlot.min.css\` (licence: \`uPlot.LICENSE\`, MIT)

Refresh with \`scripts/vendor-console-assets.sh\` (versions pinned at its top, or
\`HTMX_VERSION=... UPLOT_VERSION=... scripts/vendor-console-assets.sh\`), then commit.
README
echo "vendored htmx.org $HTMX_VERSION and uplot $UPLOT_VERSION into ${dest#"$root"/}"
