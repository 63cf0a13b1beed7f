#!/usr/bin/env python3
"""Opens every kind of `opcost report` page in headless Chromium and checks what a reader sees.

For each committed fixture (tests/data/report/<kind>.json, real GPU results):
  opcost report FIXTURE -o OUT/<kind>.html, then chromium --dump-dom (the DOM after the scripts ran)
  and --screenshot. It fails when
  - the page logs anything to the console (the page is silent by design: any message is an error,
    an uncaught exception included),
  - the embedded data is not the input document unchanged (kinds other than sweep),
  - a number in the DOM (data-value) differs from the JSON's value at its data-key (relative 1e-9), or a
    derived one (data-derived sum/diff/ratio over data-keys) differs from the same sum/difference/ratio,
  - a chart lacks its table, or its axes carry no unit in parentheses,
  - the screenshot is blank (fewer than 8 distinct colours),
  - the 10,000-row sweep's page is 10 MB or more, or takes 2 s or more from navigation to drawn,
    or draws no roofline from its summary's distinct calls.
Skips (exit 77) with a message when chromium is absent. Usage:
  report_browser_test.py --opcost build/opcost --fixtures tests/data/report --out build/report_browser
"""
import argparse
import html.parser
import json
import math
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

KINDS = ["validate", "predict", "model", "trace", "measure", "sweep", "compare"]
REQUIRED = ["validate", "trace", "measure", "sweep", "compare"]
SKIP = 77


class Failures:
    def __init__(self):
        self.items = []

    def add(self, where, what):
        self.items.append(f"{where}: {what}")


class DomScan(html.parser.HTMLParser):
    """Collects the numbers (data-value), the charts and their tables from the dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.numbers = []  # attribute dicts
        self.figures = []  # {"charts": n, "tables": n, "texts": [...]}
        self.stack = []
        self.body = {}
        self.in_svg_text = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if "data-value" in a:
            self.numbers.append(a)
        if tag == "figure":
            self.figures.append({"charts": 0, "tables": 0, "texts": []})
        if self.figures and "figure" in self.stack or tag == "figure":
            if tag == "svg" and a.get("role") == "img":
                self.figures[-1]["charts"] += 1
            if tag == "table":
                self.figures[-1]["tables"] += 1
        if tag == "text" and "svg" in self.stack:
            self.in_svg_text += 1
        if tag not in ("rect", "circle", "path", "line", "meta", "br", "input", "link", "img"):
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag == "text" and self.in_svg_text:
            self.in_svg_text -= 1
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass

    def handle_data(self, data):
        if self.in_svg_text and self.figures and "figure" in self.stack:
            self.figures[-1]["texts"].append(data)


def value_at(doc, pointer):
    cur = doc
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(cur, list):
            cur = cur[int(part)]
        else:
            cur = cur[part]
    return cur


def is_part_of(part, whole):
    """True when every value in `part` is at the same place in `whole` (objects may drop keys)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(k in whole and is_part_of(v, whole[k]) for k, v in part.items())
    return part == whole


def close(a, b):
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def embedded_envelope(page_path):
    text = open(page_path, encoding="utf-8").read()
    m = re.search(r'<script id="opcost-data" type="application/json">(.*?)</script>', text, re.S)
    if not m:
        raise ValueError("no opcost-data element")
    return json.loads(m.group(1)), text


def png_distinct_colours(path, limit=64):
    """Decodes an 8-bit RGB/RGBA PNG with zlib (no Pillow needed) and counts colours up to `limit`."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if ctype == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            if depth != 8 or colour not in (2, 6):
                raise ValueError(f"unexpected PNG format (depth {depth}, colour type {colour})")
            bpp = 3 if colour == 2 else 4
        elif ctype == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    colours = set()
    i = 0
    while i < len(raw):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            left = line[x - bpp] if x >= bpp else 0
            up, ul = prev[x], (prev[x - bpp] if x >= bpp else 0)
            if f == 1:
                line[x] = (line[x] + left) & 255
            elif f == 2:
                line[x] = (line[x] + up) & 255
            elif f == 3:
                line[x] = (line[x] + (left + up) // 2) & 255
            elif f == 4:
                p = left + up - ul
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                line[x] = (line[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else ul)) & 255
        for x in range(0, stride, bpp * 7):  # every 7th pixel is plenty for "not blank"
            colours.add(bytes(line[x:x + 3]))
        if len(colours) >= limit:
            return len(colours)
        prev = line
    return len(colours)


def chromium(binary, profile, *args):
    cmd = [binary, "--headless=new", "--disable-gpu", "--no-sandbox", "--enable-logging=stderr", "--v=0",
           "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def check_page(kind, fixture, page, out, browser, fails, expect_input_unchanged=True, min_numbers=10):
    where = os.path.basename(page)
    env, text = embedded_envelope(page)
    if env.get("kind") not in KINDS:
        fails.add(where, f"embedded kind {env.get('kind')!r} is not one of {KINDS}")
    if expect_input_unchanged and env.get("data") is not None:
        with open(fixture, encoding="utf-8") as f:
            original = json.load(f)
        if kind == "measure" and not isinstance(original, list):
            original = [original]
        # A sweep's rows are embedded trimmed to what the page draws: each kept field must be the
        # input's, beside the work opcost counts for the roofline (sweep_summary.h: "work").
        def own(row):
            return {k: v for k, v in row.items() if k != "work"} if isinstance(row, dict) else row
        if kind == "sweep" and not (isinstance(original, list) and len(original) == len(env["data"]) and
                                    all(is_part_of(own(s), o) for s, o in zip(env["data"], original)) and
                                    any(isinstance(s, dict) and "work" in s for s in env["data"])):
            fails.add(where, "the embedded rows are not the input rows (trimmed), or none carries its work")
        elif kind != "sweep" and env["data"] != original:
            fails.add(where, "the embedded data is not the input document unchanged")

    profile = os.path.join(out, "profile-" + kind)
    url = "file://" + os.path.abspath(page)
    dom_run = chromium(browser, profile, "--dump-dom", url)
    console = [l for l in dom_run.stderr.splitlines() if ":CONSOLE" in l or "Uncaught" in l]
    for line in console:
        fails.add(where, "console: " + line.strip())
    if dom_run.returncode != 0:
        fails.add(where, f"chromium --dump-dom exited {dom_run.returncode}: {dom_run.stderr[-500:]}")
        return None
    with open(os.path.join(out, kind + ".dom.html"), "w", encoding="utf-8") as f:
        f.write(dom_run.stdout)
    scan = DomScan()
    scan.feed(dom_run.stdout)
    if scan.body.get("data-rendered") != env.get("kind"):
        fails.add(where, f"the page did not finish drawing (body data-rendered={scan.body.get('data-rendered')!r})")
    if len(scan.numbers) < min_numbers:
        fails.add(where, f"only {len(scan.numbers)} numbers carry data-value (expected at least {min_numbers})")
    checked = 0
    for a in scan.numbers:
        shown = float(a["data-value"])
        try:
            if "data-key" in a:
                want = value_at(env, a["data-key"])
            elif a.get("data-derived") in ("sum", "diff", "ratio"):
                vals = [float(value_at(env, k)) for k in a["data-keys"].split()]
                want = (sum(vals) if a["data-derived"] == "sum" else vals[0] - vals[1]
                        if a["data-derived"] == "diff" else vals[0] / vals[1])
            else:
                fails.add(where, f"a number with neither data-key nor a known data-derived: {a}")
                continue
        except (KeyError, IndexError, ValueError, TypeError) as e:
            fails.add(where, f"data-key {a.get('data-key') or a.get('data-keys')!r} does not resolve ({e!r})")
            continue
        if not isinstance(want, (int, float)) or isinstance(want, bool) or not close(shown, float(want)):
            fails.add(where, f"DOM shows {a['data-value']} at {a.get('data-key') or a.get('data-keys')}, JSON has {want!r}")
        checked += 1
    for i, fig in enumerate(scan.figures):
        if fig["charts"] and not fig["tables"]:
            fails.add(where, f"chart {i + 1} has no table of its values")
        if fig["charts"] and not any(re.search(r"\(.+\)", t) for t in fig["texts"]):
            fails.add(where, f"chart {i + 1}'s axes name no unit in parentheses")

    png = os.path.join(out, kind + ".png")
    shot = chromium(browser, profile, "--window-size=1280,1600", "--hide-scrollbars", f"--screenshot={png}", url)
    if shot.returncode != 0 or not os.path.exists(png):
        fails.add(where, f"no screenshot (chromium exited {shot.returncode})")
    else:
        colours = png_distinct_colours(png)
        if colours < 8:
            fails.add(where, f"the screenshot looks blank ({colours} distinct colours)")
    print(f"{kind}: {checked} numbers checked against the JSON, {len(scan.figures)} figures, "
          f"{os.path.getsize(page)} bytes, drawn in {scan.body.get('data-render-ms', '?')} ms")
    return scan


def drawn_text(dom_path):
    """A dumped DOM without its scripts and embedded data: what the page drew, not the code that
    could draw it (the template's script holds every message it may show)."""
    with open(dom_path, encoding="utf-8") as f:
        return re.sub(r"<script\b.*?</script>", "", f.read(), flags=re.S | re.I)


def check_timeline(fixture, scan, fails):
    """The trace fixture is a GPU trace with its timeline: the page draws its samples and lanes."""
    with open(fixture, encoding="utf-8") as f:
        timeline = json.load(f).get("timeline")
    if not isinstance(timeline, dict) or not timeline.get("counters") or not timeline.get("lanes"):
        fails.add(fixture, "no timeline with counters and lanes: record the fixture with `opcost trace --energy --json` on a GPU")
        return
    keys = [a["data-key"] for a in scan.numbers if a.get("data-key", "").startswith("/data/timeline/")]
    samples = sum(len(c["samples"]) for c in timeline["counters"][:6])
    # Each sample twice (its marker and its table row's value) plus its time in the table.
    if sum("/samples/" in k for k in keys) < 3 * samples:
        fails.add(fixture, f"the timeline's {samples} samples are not all drawn and tabled")
    if sum(k.endswith("/busy_us") for k in keys) < min(len(timeline["lanes"]), 32):
        fails.add(fixture, "a lane of the timeline has no busy time in its table")
    spans = sum(len(lane["spans_us"]) for lane in timeline["lanes"][:32])
    if sum("/spans_us/" in k for k in keys) < spans:
        fails.add(fixture, f"the timeline's {spans} busy spans are not all drawn")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--opcost", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chromium", default=os.environ.get("CHROMIUM") or shutil.which("chromium")
                    or shutil.which("chromium-browser"))
    args = ap.parse_args()
    if not args.chromium:
        print("SKIP: chromium is not installed (Debian: apt-get install chromium; scripts/bootstrap installs it)")
        return SKIP
    os.makedirs(args.out, exist_ok=True)
    fails = Failures()
    present = [k for k in KINDS if os.path.exists(os.path.join(args.fixtures, k + ".json"))]
    for k in REQUIRED:
        if k not in present:
            fails.add(args.fixtures, f"no {k}.json fixture")
    for kind in present:
        fixture = os.path.join(args.fixtures, kind + ".json")
        page = os.path.join(args.out, kind + ".html")
        run = subprocess.run([args.opcost, "report", fixture, "-o", page], capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            fails.add(fixture, f"opcost report exited {run.returncode}: {run.stderr.strip()}")
            continue
        scan = check_page(kind, fixture, page, args.out, args.chromium, fails)
        if kind == "trace" and scan is not None:
            check_timeline(fixture, scan, fails)

    # The large sweep: 10,000 rows copied from the real sweep fixture (make_big_sweep.py says how).
    if "sweep" in present:
        big = os.path.join(args.out, "sweep-10k.json")
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "make_big_sweep.py"),
                        os.path.join(args.fixtures, "sweep.json"), big, "10000"], check=True)
        page = os.path.join(args.out, "sweep-10k.html")
        run = subprocess.run([args.opcost, "report", big, "-o", page], capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            fails.add(big, f"opcost report exited {run.returncode}: {run.stderr.strip()}")
        else:
            size = os.path.getsize(page)
            if size >= 10 * 1024 * 1024:
                fails.add(page, f"{size} bytes: a 10,000-row sweep's report must stay under 10 MB")
            scan = check_page("sweep-10k", big, page, args.out, args.chromium, fails, expect_input_unchanged=False)
            if scan is not None:
                ms = float(scan.body.get("data-render-ms", "inf"))
                if not ms < 2000:
                    fails.add(page, f"took {ms:.0f} ms from navigation to drawn; issue 28 asks under 2 s")
                # Its rows are not embedded: the roofline is drawn from the summary's distinct calls
                # (their times, at aggregated/roofline_points, checked against the JSON above).
                with open(os.path.join(args.out, "sweep-10k.dom.html"), encoding="utf-8") as f:
                    dom = f.read()
                if "Roofline: achieved TFLOP/s against FLOP/byte" not in dom or "/aggregated/roofline_points/" not in dom:
                    fails.add(page, "no roofline drawn from the summary's distinct calls")

    # GPU time no call launched (a CUDA graph's replay): the validate fixture as validate writes
    # it when its trace ties half the step's GPU time to no call, and as a result written before
    # the `uncovered` key was (the figures alone). The page must say so, with the two figures
    # (checked against the JSON with every other number).
    if "validate" in present:
        said = "ran in kernels no operator call launched"
        with open(os.path.join(args.fixtures, "validate.json"), encoding="utf-8") as f:
            base = json.load(f)
        for name, extra in (("validate-uncovered", {"uncovered": True}), ("validate-uncovered-older", {})):
            doc = dict(base, traced_device_us=5000.0, untied_device_us=2500.0, complete=False, **extra)
            uncovered = os.path.join(args.out, name + ".json")
            with open(uncovered, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            page = os.path.join(args.out, name + ".html")
            run = subprocess.run([args.opcost, "report", uncovered, "-o", page], capture_output=True, text=True,
                                 timeout=120)
            if run.returncode != 0:
                fails.add(uncovered, f"opcost report exited {run.returncode}: {run.stderr.strip()}")
            elif check_page(name, uncovered, page, args.out, args.chromium, fails) is not None:
                dom = drawn_text(os.path.join(args.out, name + ".dom.html"))
                if (said not in dom or 'data-key="/data/untied_device_us"' not in dom
                        or 'data-key="/data/traced_device_us"' not in dom):
                    fails.add(page, "GPU time no call launched is not said, with its figures, on the page")
        # Pooled energies: counted on the page, the count checked against the JSON with every number.
        pooled = os.path.join(args.out, "validate-pooled.json")
        with open(pooled, "w", encoding="utf-8") as f:
            json.dump(dict(base, pooled_energy=523), f)
        page = os.path.join(args.out, "validate-pooled.html")
        run = subprocess.run([args.opcost, "report", pooled, "-o", page], capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            fails.add(pooled, f"opcost report exited {run.returncode}: {run.stderr.strip()}")
        elif check_page("validate-pooled", pooled, page, args.out, args.chromium, fails) is not None:
            dom = drawn_text(os.path.join(args.out, "validate-pooled.dom.html"))
            if "have pooled energies" not in dom or 'data-key="/data/pooled_energy"' not in dom:
                fails.add(page, "the pooled energies' count is not said, with its figure, on the page")
        covered_dom = os.path.join(args.out, "validate.dom.html")
        if not os.path.exists(covered_dom):
            fails.add(os.path.join(args.out, "validate.html"), "not dumped: its page cannot be checked for the flag")
        elif said in drawn_text(covered_dom):
            fails.add(os.path.join(args.out, "validate.html"), "the covered fixture's page says GPU time went untied")

    for f in fails.items:
        print("FAIL " + f)
    print(f"report_browser: {len(present)} kinds, {len(fails.items)} failures")
    return 1 if fails.items else 0


if __name__ == "__main__":
    sys.exit(main())
