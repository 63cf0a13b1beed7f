#!/usr/bin/env bash
# `opcost report` and --html end to end: each committed result kind (tests/data/report) becomes one
# HTML page whose embedded data is the result (the page itself is tested in a browser by
# tests/report); predict and trace write the page of the result they print; bad input, an output
# over the input and a hostile file are refused in one line naming the file.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
python=${OPCOST_PYTHON:-python3}
data=$(cd "$(dirname "$0")" && pwd)/data/report

# The page's embedded envelope, checked against the kind and the document it came from.
cat >"$dir/check_page.py" <<'PY'
import json, re, sys
page, kind, source = open(sys.argv[1], encoding="utf-8").read(), sys.argv[2], sys.argv[3]
m = re.search(r'<script id="opcost-data" type="application/json">(.*?)</script', page, re.S)
assert m, "no data element"
assert page.count('id="opcost-data"') == 1
env = json.loads(m.group(1))
assert env["kind"] == kind, env["kind"]
doc = json.load(open(source))
if kind == "sweep":
    agg = env["aggregated"]
    assert agg["rows"] == len(doc) and len(env["data"]) == len(doc), agg["rows"]
    assert [r["time_us"]["mean"] for r in env["data"]] == [r["time_us"]["mean"] for r in doc]
elif kind == "measure" and isinstance(doc, dict):
    assert env["data"] == [doc]
else:
    assert env["data"] == doc, "the document goes in unchanged"
assert "/*OPCOST_DATA*/" not in page
PY

for kind in validate predict trace measure sweep; do
  "$bin" report "$data/$kind.json" -o "$dir/$kind.html" 2>"$dir/e-$kind"
  check "report $kind exits 0" test $? -eq 0
  check "report $kind says what it wrote" has "$dir/e-$kind" "opcost: $kind report of .*$kind.json written to $dir/$kind.html"
  check "the $kind page embeds the result" "$python" "$dir/check_page.py" "$dir/$kind.html" "$kind" "$data/$kind.json"
done
"$bin" report - -o "$dir/stdin.html" <"$data/trace.json" 2>/dev/null
check "report reads standard input (-)" "$python" "$dir/check_page.py" "$dir/stdin.html" trace "$data/trace.json"

# --html: the page of the very result printed.
"$bin" predict mnist-cnn --device cpu --db "$dir/empty.db" --json --html "$dir/p.html" >"$dir/p.json" 2>"$dir/ep"
check "predict --html writes its page whatever the prediction lacks" test -s "$dir/p.html"
check "predict's page holds the JSON it printed" "$python" "$dir/check_page.py" "$dir/p.html" predict "$dir/p.json"
"$bin" trace mnist-cnn --device cpu --steps 1 --warmup 0 --group-by layer --table --json --html "$dir/t.html" \
  >"$dir/t.json" 2>"$dir/et"
check "trace --html exits 0" test $? -eq 0
check "trace's page holds the table it printed" "$python" "$dir/check_page.py" "$dir/t.html" trace "$dir/t.json"
"$bin" trace mnist-cnn --device cpu --steps 1 --warmup 0 --html "$dir/t2.html" >"$dir/t2.out" 2>/dev/null
check "with --html and no --table, no table is printed" lines "$dir/t2.out" 0
check "... and the page is written" test -s "$dir/t2.html"

# Refusals: one line on standard error naming the file, exit 2, nothing written.
one_line_error() {  # NAME FILE PATTERN
  check "$1: one line" lines "$2" 1
  check "$1: names it" has "$2" "$3"
}
"$bin" report "$dir/missing.json" -o "$dir/x.html" 2>"$dir/e1"
check "a missing file exits 2" test $? -eq 2
one_line_error "missing" "$dir/e1" "missing.json: cannot open the result file"
printf '{"a": 1,\n oops' >"$dir/bad.json"
"$bin" report "$dir/bad.json" -o "$dir/x.html" 2>"$dir/e2"
check "not JSON exits 2" test $? -eq 2
one_line_error "not JSON" "$dir/e2" "bad.json: not JSON (.*); expected the JSON of opcost validate/predict/model/trace/measure"
echo '{"hello": "world"}' >"$dir/other.json"
"$bin" report "$dir/other.json" -o "$dir/x.html" 2>"$dir/e3"
one_line_error "another JSON" "$dir/e3" "other.json: not a result opcost writes; expected"
"$python" -c "print('[' * 100000 + ']' * 100000)" >"$dir/deep.json"
"$bin" report "$dir/deep.json" -o "$dir/x.html" 2>"$dir/e4"
one_line_error "deep nesting" "$dir/e4" "deep.json: JSON nested deeper than 64 levels"
check "nothing was written for bad input" test ! -e "$dir/x.html"
cp "$data/trace.json" "$dir/in.json"
"$bin" report "$dir/in.json" -o "$dir/in.json" 2>"$dir/e5"
check "the input as output exits 2" test $? -eq 2
one_line_error "output over input" "$dir/e5" "-o"
check "... and the input is untouched" cmp -s "$data/trace.json" "$dir/in.json"
"$bin" report "$data/trace.json" 2>"$dir/e6"
check "without -o: a usage error" test $? -ne 0
check "... naming -o" has "$dir/e6" "output"
finish
