# Sourced by setup steps: apt_install STEP PACKAGE… installs the Debian packages (as root, or
# through sudo). The package lists are refreshed first unless they are less than an hour old: a
# fresh machine (CI) has none, and several steps refreshing them one after another cost ~10 s each.
apt_install() {
  local step="$1"
  shift
  echo "$step: installing $*" >&2
  local sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' -mmin -60 -print -quit 2>/dev/null)" ]; then
    "${sudo_cmd[@]}" apt-get update -qq
  fi
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@"
}
