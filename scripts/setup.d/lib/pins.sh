# Sourced by setup steps: pip_install_pins VENV PIN… installs the `name==version` pins a venv lacks.
# One interpreter start reads every installed version from package metadata (`pip show` costs
# ~2 s a package, and importing a package to check it can cost seconds).
pip_install_pins() {
  local venv="$1"
  shift
  local missing
  mapfile -t missing < <("$venv/bin/python" - "$@" <<'PY'
import sys
from importlib.metadata import PackageNotFoundError, version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    try:
        ok = version(name) == want
    except PackageNotFoundError:
        ok = False
    if not ok:
        print(pin)
PY
  )
  if [ ${#missing[@]} -gt 0 ]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
  fi
}
