# Sourced by setup steps: apt_install STEP PACKAGE… installs the Debian packages (as root, or
# through sudo), refreshing the package lists first since a fresh machine (CI) has none.
apt_install() {
  local step="$1"
  shift
  echo "$step: installing $*" >&2
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "$@"
}
