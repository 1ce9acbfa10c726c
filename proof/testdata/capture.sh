#!/usr/bin/env bash
# capture.sh OUT runs the real test tools on the small projects in src/ and
# writes their outputs to OUT/, laid out as this directory is. The tests
# never run it: they read the outputs committed here. Run it when a tool
# changes its format, compare OUT with what is committed, copy over what
# changed, and run go test -update for the golden files.
#
# Versions of the committed captures: go 1.26.8; pytest 7.2.1 (Debian's
# python3-pytest, Python 3.11.2); jest 30.5.2 and vitest 4.1.12 with vite
# 8.3.8 on Node 20 (npm, which needs the registry); cargo 1.95.0; Maven
# 3.8.7 offline with Debian's repository (surefire 2.22.3, JUnit 4.13.2 and
# 5.9.2: apt-get install libsurefire-java junit4 junit5
# libmaven-compiler-plugin-java libmaven-resources-plugin-java).
#
# The projects are copied to /tmp/fx/<name>, the directories the captures
# were made in: the tests pass those as Input.Dir, since some outputs print
# absolute paths.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:?usage: capture.sh OUT}" && cd "$1" && pwd)
fx=/tmp/fx
rm -rf "$fx" && mkdir -p "$fx"
cp -r "$here/src/go" "$here/src/go2" "$here/src/jest" "$here/src/vitest" "$fx/"
cp -r "$here/src/pytest" "$fx/py"
cp -r "$here/src/cargo" "$fx/rust"
cp -r "$here/src/maven4" "$fx/mvn"
cp -r "$here/src/maven5" "$fx/mvn5"
mkdir -p "$out"/{go,pytest,jest,vitest,cargo,surefire/junit4,surefire/junit5,surefire/compile}

# go test: plain, -v, -json; a test binary that exits and one that times
# out; go vet for a run no parser reads.
(cd "$fx/go" &&
	go test -count=1 ./... >"$out/go/plain.txt" 2>&1
	go test -count=1 -v ./... >"$out/go/v.txt" 2>&1
	go test -count=1 -json ./... >"$out/go/json.txt" 2>&1
	go vet ./... >"$out/go/vet.txt" 2>&1)
(cd "$fx/go2" &&
	go test -count=1 -timeout 1s ./... >"$out/go/exit_plain.txt" 2>&1
	go test -count=1 -json -timeout 1s ./... >"$out/go/exit_json.txt" 2>&1)
# Go before 1.24 printed build errors as plain text beside the JSON: the
# build events of json.txt turned back into that form.
python3 - "$out/go/json.txt" "$out/go/json_oldbuild.txt" <<'PY'
import json, sys
out = []
for l in open(sys.argv[1]).read().splitlines():
    ev = json.loads(l)
    if ev.get("Action") == "build-output":
        out.append(ev["Output"].rstrip("\n"))
        continue
    if ev.get("Action") == "build-fail":
        continue
    ev.pop("FailedBuild", None)
    out.append(json.dumps(ev, separators=(",", ":")))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY

# pytest: default, -v, -rA, -q, -s -v, collection errors.
(cd "$fx/py" &&
	pytest -p no:cacheprovider tests >"$out/pytest/default.txt" 2>&1
	pytest -p no:cacheprovider -v tests >"$out/pytest/v.txt" 2>&1
	pytest -p no:cacheprovider -rA tests >"$out/pytest/rA.txt" 2>&1
	pytest -p no:cacheprovider -q tests >"$out/pytest/q.txt" 2>&1
	pytest -p no:cacheprovider -s -v tests/test_other.py tests/test_calc.py::test_add >"$out/pytest/s_v.txt" 2>&1
	pytest -p no:cacheprovider tests tests2 >"$out/pytest/collect.txt" 2>&1
	pytest -p no:cacheprovider -v tests tests2 >"$out/pytest/collect_v.txt" 2>&1)

# Jest: default (several files), --verbose, one file (verbose by default),
# --json (the report on stdout after the reporter's stderr).
(cd "$fx/jest" && npm i -D -E jest@30.5.2 >/dev/null 2>&1 &&
	npx jest >"$out/jest/default.txt" 2>&1
	npx jest --verbose >"$out/jest/verbose.txt" 2>&1
	npx jest src/calc.test.js >"$out/jest/single.txt" 2>&1
	npx jest --json >stdout.txt 2>stderr.txt
	cat stderr.txt stdout.txt >"$out/jest/json.txt")

# Vitest: default reporter in colour, verbose, json.
(cd "$fx/vitest" && npm i -D -E vite@8.3.8 vitest@4.1.12 >/dev/null 2>&1 &&
	FORCE_COLOR=1 npx vitest run >"$out/vitest/default.txt" 2>&1
	FORCE_COLOR=1 npx vitest run --reporter=verbose >"$out/vitest/verbose.txt" 2>&1
	npx vitest run --reporter=json >stdout.txt 2>stderr.txt
	cat stderr.txt stdout.txt >"$out/vitest/json.txt")

# cargo test: --no-fail-fast over a workspace (unit, integration and doc
# tests), stopping at the first failing binary, with backtraces, and a
# test that does not compile.
(cd "$fx/rust" &&
	env -u RUST_BACKTRACE cargo test --offline --no-fail-fast >"$out/cargo/no_fail_fast.txt" 2>&1
	env -u RUST_BACKTRACE cargo test --offline >"$out/cargo/stop.txt" 2>&1
	RUST_BACKTRACE=1 cargo test --offline -p calc --lib >"$out/cargo/backtrace.txt" 2>&1
	printf '\n#[test]\nfn subtracts() {\n    assert_eq!(calc::subtract(3, 1), 2);\n}\n' >>calc/tests/integration.rs
	env -u RUST_BACKTRACE cargo test --offline --no-fail-fast >"$out/cargo/build.txt" 2>&1)

# Maven Surefire: JUnit 4 (full output), JUnit 5 (-q), and a test class
# that does not compile. Reports lose their <property> lines (the
# machine's system properties).
m2=$(mktemp -d)
cp -as /usr/share/maven-repo/. "$m2/"
reports() {
	for f in target/surefire-reports/TEST-*.xml; do
		grep -v '<property name=' "$f" >"$1/$(basename "$f")"
	done
}
(cd "$fx/mvn" &&
	mvn -o -B -Dmaven.repo.local="$m2" test >"$out/surefire/junit4/output.txt" 2>&1
	reports "$out/surefire/junit4"
	printf 'package com.example;\n\nimport static org.junit.Assert.assertEquals;\nimport org.junit.Test;\n\npublic class SubTest {\n    @Test\n    public void subtracts() {\n        assertEquals(2, Calc.subtract(3, 1));\n    }\n}\n' >src/test/java/com/example/SubTest.java
	rm -rf target
	mvn -o -B -Dmaven.repo.local="$m2" test >"$out/surefire/compile/output.txt" 2>&1)
(cd "$fx/mvn5" &&
	mvn -o -q -B -Dmaven.repo.local="$m2" test >"$out/surefire/junit5/output.txt" 2>&1
	reports "$out/surefire/junit5")
echo "captured into $out"
