"""`run.py report`: the static HTML page per GPU, checked as a document (every machine) and as a
rendered page in headless Chromium (where it is installed)."""
import base64
import json
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fixtures_views import H200, entry, run, store

from harness import results

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Dom(HTMLParser):
    """Elements as (tag, attributes, text), each with the ids and classes of its enclosing elements."""

    def __init__(self):
        super().__init__()
        self.stack, self.elements = [], []

    def handle_starttag(self, tag, attrs):
        element = {"tag": tag, "attrs": dict(attrs), "text": "", "within": [dict(a) for _, a in self.stack]}
        self.elements.append(element)
        if tag not in ("img", "meta", "br"):
            self.stack.append((element, dict(attrs)))

    def handle_endtag(self, tag):
        while self.stack:
            element, _ = self.stack.pop()
            if element["tag"] == tag:
                break

    def handle_data(self, data):
        for element, _ in self.stack:
            element["text"] += data

    def find(self, tag, **attrs):
        return [e for e in self.elements if e["tag"] == tag and all(e["attrs"].get(k) == v for k, v in attrs.items())]

    def inside(self, element_id, tag, **attrs):
        return [e for e in self.find(tag, **attrs) if any(a.get("id") == element_id for a in e["within"])]


def report(results_dir, *args):
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), "report", "--json", *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def stored(results_dir):
    store(results_dir, run("gemv", "v0", "a", [400, 500, 600]) + run("gemv", "v1", "b", [90, 80, 70])
          + run("gemv", "v1", "c", [95, 85, 75])
          + [r | {"host_bound": r["index"] == 2} for r in run("gemm", "v0", "d", [50, 60, 70], host_us=55)]
          + run("gemm", "v1", "e", [40, 50, 60], gpu="NVIDIA H100 80GB HBM3")
          + run("gemv", "v0", "f", [1, 1, 1], timing="legacy"))
    results.append(results_dir / "leaderboard.jsonl", entry("gemv", "v1", 80.0))
    return results_dir


@pytest.mark.slow
def test_report_page_holds_standings_lineages_charts_and_flags(stored):
    pages = report(stored)
    assert sorted(p["gpu"] for p in pages) == ["NVIDIA H100 80GB HBM3", H200]  # one page per GPU
    page = next(p for p in pages if p["gpu"] == H200)
    assert Path(page["path"]).name == "h200-arena.html" and page["tasks"] == ["gemv", "gemm"]
    dom = Dom()
    dom.feed(Path(page["path"]).read_text())
    assert "NVIDIA H200" in dom.find("h1")[0]["text"] and "arena timing" in dom.find("p", **{"class": "meta"})[0]["text"]
    standings = dom.inside("standings", "tr", **{"data-task": "gemv"})
    assert "v1" in standings[0]["text"] and "v1@abababa (80.00 µs)" in standings[0]["text"]  # the entry's try
    entries = dom.inside("standings", "tr", **{"data-try": "v1@abababa"})
    assert [e["attrs"]["data-try"] for e in entries] == ["v1@abababa"]
    gemv = dom.inside("task-gemv", "tr")
    lineage = [e for e in gemv if "data-version" in e["attrs"]]
    assert [e["attrs"]["data-version"] for e in lineage] == ["v0", "v1"]  # versions with runs, lineage order
    assert [e["attrs"].get("class") for e in lineage] == [None, "best"]
    assert dom.inside("task-gemv", "table", **{"class": "shapes"})
    for css in ("chart lineage", "chart roofline"):
        images = dom.inside("task-gemv", "img", **{"class": css})
        assert len(images) == 1
        data = images[0]["attrs"]["src"].removeprefix("data:image/png;base64,")
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    flags = dom.inside("task-gemm", "td", **{"class": "host-bound"})
    assert [f["text"] for f in flags] == ["host-bound"]  # shape 2 of gemm v0 only
    assert dom.inside("task-dual_gemm", "p", **{"class": "note"})[0]["text"].startswith("no benchmark runs of dual_gemm")


@pytest.mark.slow
def test_report_for_one_gpu_and_timing(stored):
    pages = report(stored, "--gpu", "H200", "--timing", "legacy")
    assert [(p["gpu"], Path(p["path"]).name, p["tasks"]) for p in pages] == [(H200, "h200-legacy.html", ["gemv"])]
    out = subprocess.run([sys.executable, str(ROOT / "run.py"), "report", "--timing", "contest"], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 1 and "stored methods: arena, legacy" in " ".join(out.stderr.split())


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(stored, tmp_path):
    from matplotlib.image import imread
    page = next(p for p in report(stored) if p["gpu"] == H200)
    shot = tmp_path / "report.png"
    screenshot(Path(page["path"]), shot, 1400, 2400)
    pixels = imread(shot)
    assert pixels.shape[:2] == (2400, 1400)
    top = pixels[:120, :, :3].mean(axis=2)  # the heading: dark text on a white page
    assert top.min() < 0.3 and top.max() > 0.95
    assert pixels[:, :, :3].std() > 0.05  # tables and charts, not a blank page


def screenshot(page: Path, out: Path, width: int, height: int) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", f"--screenshot={out}", f"--window-size={width},{height}",
                        page.resolve().as_uri()], capture_output=True, timeout=120, check=True)
