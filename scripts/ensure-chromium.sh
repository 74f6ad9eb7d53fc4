#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed for the console's real-browser test
# (tests/console/test_browser.py drives it with Playwright through executable_path; Playwright's
# own browser download, `playwright install`, is never used). Installs the Debian package
# `chromium` when it is missing and we run as root with apt-get; otherwise says what to install
# and fails, so `make test` stops before a browser test that cannot run.
# Browser: $TASKFORGE_CHROMIUM, else /usr/bin/chromium.
set -euo pipefail
browser="${TASKFORGE_CHROMIUM:-/usr/bin/chromium}"
[[ -x "$browser" ]] && exit 0

if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null 2>&1 && [[ "$browser" == /usr/bin/chromium ]]; then
    echo "ensure-chromium: installing chromium (for the console's browser test)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq chromium >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null
    }
    [[ -x "$browser" ]] && exit 0
fi
echo "ensure-chromium: $browser not found. The console's browser test needs Chromium:" >&2
echo "  Debian/Ubuntu: sudo apt-get install chromium (or set TASKFORGE_CHROMIUM to a Chromium binary)," >&2
echo "  then run make test again." >&2
exit 1
