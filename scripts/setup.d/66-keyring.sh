#!/usr/bin/env bash
# needed-by: tests
# A real OS keyring for the token-store test: GNOME Keyring's Secret Service daemon on a private
# D-Bus session bus (dbus-daemon), and `secret-tool` (libsecret) to look into it independently
# of rkmcp. The test starts both itself; nothing here runs a daemon.
set -euo pipefail
# shellcheck source=lib/apt.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/apt.sh"
need=()
command -v dbus-daemon >/dev/null 2>&1 || need+=(dbus-daemon)
command -v dbus-send >/dev/null 2>&1 || need+=(dbus-bin)
command -v gnome-keyring-daemon >/dev/null 2>&1 || need+=(gnome-keyring)
command -v secret-tool >/dev/null 2>&1 || need+=(libsecret-tools)
if [ ${#need[@]} -gt 0 ]; then
  apt_install 66-keyring "${need[@]}"
else
  echo "66-keyring: dbus-daemon, gnome-keyring-daemon and secret-tool are present" >&2
fi
