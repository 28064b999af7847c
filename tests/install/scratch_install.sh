# shellcheck shell=bash disable=SC2034  # sets variables for the script that sources it
# Sourced by the install tests (bash): the build installed into a scratch
# DESTDIR, as a user's `meson install` would lay it out.
#   scratch_install BUILD_DIR
# `meson install --no-rebuild` (the test runs what was built; others may be
# editing sources) into $work/dest. Sets work (a scratch folder, removed
# when the script exits), dest (the DESTDIR), prefix and libdir as
# configured (libdir made absolute) and installed_lib ($dest$libdir).
scratch_install() {
  work=$(mktemp -d)
  # shellcheck disable=SC2064  # $work is fixed now
  trap "rm -rf '$work'" EXIT
  dest=$work/dest
  meson install -C "$1" --destdir "$dest" --no-rebuild --quiet
  read -r prefix libdir < <(meson introspect --buildoptions "$1" | python3 -c '
import json, sys
opts = {o["name"]: o["value"] for o in json.load(sys.stdin)}
print(opts["prefix"], opts["libdir"])')
  case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
  installed_lib=$dest$libdir
}
