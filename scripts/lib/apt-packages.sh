# Sourced by scripts/install-test-packages.sh and scripts/cluster/install-packages.sh.
# install_missing_packages LABEL PKG...: installs the Debian packages of the list that dpkg does not
# know, when this runs as root on a machine with apt-get; elsewhere it says what is missing and
# returns 2 (an install that fails returns apt-get's status). With everything installed it only asks dpkg (idempotent). Never starts a service
# (policy-rc.d while installing: containerd's unit would start on a systemd machine) and never
# makes room by removing a package (--no-remove: Docker's containerd.io conflicts with containerd
# and runc; fail instead and let the operator decide).
install_missing_packages() {
  local label=$1
  shift
  if ! command -v dpkg >/dev/null 2>&1; then
    echo "$label: not a Debian system; install the equivalents of: $*" >&2
    return 2
  fi
  local need=() pkg
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
  done
  [ "${#need[@]}" -eq 0 ] && return 0
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$label: missing ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
    return 2
  fi
  echo "$label: installing ${need[*]}" >&2
  apt-get update -qq
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    # An EXIT trap (the caller is a script of its own): removed even when the install is cut short.
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends --no-remove "${need[@]}"
}
