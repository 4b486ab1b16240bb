#!/usr/bin/env python3
"""Renders HTML reports in headless Chromium and fails when a chart is missing,
empty or not drawn.

usage: check_report_in_browser.py OUT_DIR FILE.html:CHARTS [FILE.html:CHARTS ...]

For each page: the DOM Chromium builds (--dump-dom) must hold exactly CHARTS
<svg class="chart"> elements, each with at least one mark (class="mark") and
as many as its data-marks attribute says; and a screenshot
(--screenshot, kept in OUT_DIR) must not be blank: its pixels are decoded
with a small PNG reader (zlib + the five PNG filters) and must vary, with a
share of them neither white nor near-white. And no two point labels
(<text class="label">) of a chart may overprint: a copy of the page with a
script that measures every label's box as Chromium lays it out (getBBox)
must report no pair that intersects. Exit 77 (skipped) when Chromium is
absent, except under CI=1, where that fails.
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium_args(binary):
    # Root (CI, containers) needs --no-sandbox; no GPU on test machines.
    return [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--no-first-run", "--disable-dev-shm-usage", "--user-data-dir=" + PROFILE_DIR]


def png_pixels(data):
    """Returns (width, height, channels, rows of bytes) of an 8-bit RGB(A) PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError("unsupported PNG: depth %d colour type %d" % (depth, color))
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        prev = line
    return width, height, channels, rows


def check_screenshot(path):
    with open(path, "rb") as f:
        width, height, channels, rows = png_pixels(f.read())
    total, inked, s, s2 = 0, 0, 0.0, 0.0
    for line in rows[::2]:
        for x in range(0, width * channels, channels * 2):
            lum = (line[x] * 299 + line[x + 1] * 587 + line[x + 2] * 114) / 1000
            total += 1
            s += lum
            s2 += lum * lum
            if lum < 235:
                inked += 1
    mean = s / total
    stddev = max(s2 / total - mean * mean, 0) ** 0.5
    share = inked / total
    if stddev < 5 or share < 0.01:
        return "screenshot %s looks blank (luminance stddev %.1f, %.2f%% inked)" % (
            path, stddev, 100 * share)
    print("  screenshot %s: %dx%d, luminance stddev %.1f, %.1f%% inked" % (
        os.path.basename(path), width, height, stddev, 100 * share))
    return None


def check_dom(dom, expected_charts):
    errors = []
    charts = re.findall(r"<svg\b[^>]*\bclass=\"chart\"[^>]*>.*?</svg>", dom, re.S)
    if len(charts) != expected_charts:
        errors.append("expected %d charts in the DOM, found %d" % (expected_charts, len(charts)))
    for i, chart in enumerate(charts):
        label = re.search(r"aria-label=\"([^\"]*)\"", chart)
        name = label.group(1) if label else "chart %d" % i
        marks = len(re.findall(r"class=\"mark\"", chart))
        declared = re.search(r"data-marks=\"(\d+)\"", chart)
        if marks == 0:
            errors.append("chart '%s' is empty (no marks)" % name)
        elif declared is None or int(declared.group(1)) != marks:
            errors.append("chart '%s': %d marks drawn, data-marks says %s" % (
                name, marks, declared.group(1) if declared else "nothing"))
        else:
            print("  chart '%s': %d marks" % (name, marks))
    return errors


# Appended to a copy of the page: writes the label count and the pairs of
# intersecting label boxes (chart:label/label) into attributes of <body>,
# which --dump-dom then shows.
LABEL_PROBE = """<script>
(function () {
  var overlaps = [], labels = 0;
  document.querySelectorAll('svg.chart').forEach(function (svg, i) {
    var boxes = Array.prototype.map.call(svg.querySelectorAll('text.label'),
                                         function (t) { return t.getBBox(); });
    labels += boxes.length;
    for (var a = 0; a < boxes.length; ++a) {
      for (var b = a + 1; b < boxes.length; ++b) {
        var p = boxes[a], q = boxes[b];
        if (p.x < q.x + q.width && q.x < p.x + p.width && p.y < q.y + q.height &&
            q.y < p.y + p.height) {
          overlaps.push(i + ':' + a + '/' + b);
        }
      }
    }
  });
  document.body.setAttribute('data-labels', String(labels));
  document.body.setAttribute('data-label-overlaps', overlaps.join(' ') || 'none');
})();
</script>"""


def check_labels(binary, page, out_dir):
    probe = os.path.join(out_dir, os.path.basename(page) + ".labels.html")
    with open(page) as f:
        html = f.read()
    with open(probe, "w") as f:
        f.write(html.replace("</body>", LABEL_PROBE + "</body>") if "</body>" in html
                else html + LABEL_PROBE)
    dom = subprocess.run(chromium_args(binary) + ["--dump-dom", "file://" + os.path.abspath(probe)],
                         capture_output=True, text=True, timeout=120).stdout
    labels = re.search(r"data-labels=\"(\d+)\"", dom)
    overlaps = re.search(r"data-label-overlaps=\"([^\"]*)\"", dom)
    if labels is None or overlaps is None:
        return ["the label probe did not run"]
    if overlaps.group(1) != "none":
        return ["point labels overprint (chart:label/label): " + overlaps.group(1)]
    print("  %s point labels, none overprinting" % labels.group(1))
    return []


def main():
    global PROFILE_DIR
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    PROFILE_DIR = os.path.join(out_dir, "chromium-profile")
    binary = find_chromium()
    if binary is None:
        print("chromium is not installed (deploy/install-deps.sh installs it)")
        return 1 if os.environ.get("CI") == "1" else 77
    failures = []
    for spec in sys.argv[2:]:
        page, charts = spec.rsplit(":", 1)
        url = "file://" + os.path.abspath(page)
        print(page)
        dom = subprocess.run(chromium_args(binary) + ["--dump-dom", url], capture_output=True,
                             text=True, timeout=120)
        if dom.returncode != 0 or "<html" not in dom.stdout:
            failures.append("%s: chromium --dump-dom failed: %s" % (page, dom.stderr[-500:]))
            continue
        failures += ["%s: %s" % (page, e) for e in check_dom(dom.stdout, int(charts))]
        failures += ["%s: %s" % (page, e) for e in check_labels(binary, page, out_dir)]
        shot = os.path.join(out_dir, os.path.basename(page) + ".png")
        if os.path.exists(shot):
            os.remove(shot)
        run = subprocess.run(chromium_args(binary) + ["--window-size=1280,2000",
                                                      "--screenshot=" + shot, url],
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0 or not os.path.exists(shot):
            failures.append("%s: no screenshot: %s" % (page, run.stderr[-500:]))
            continue
        error = check_screenshot(shot)
        if error:
            failures.append("%s: %s" % (page, error))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
