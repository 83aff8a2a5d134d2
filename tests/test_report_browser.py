"""The HTML report in a real browser (Debian's headless `chromium`, driven over the DevTools protocol):
every image decodes, no console errors, a screenshot saved as a test artifact.

The DevTools websocket client below is a minimal RFC 6455 client on the standard library (text frames,
client masking, fragmented and large server frames), so the test needs no extra Python package.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from support.workflow import REPO_ROOT, SMOKE_RESULTS

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars"]
ARTIFACTS = REPO_ROOT / "test-artifacts"
PHONE_HEIGHT = 844   # a phone's viewport, 390 x 844 CSS px
LEGIBLE_PX = 9.5     # the smallest text of a figure, in CSS px as shown, that a reader can still read


class DevTools:
    """One websocket to a page target; ``call`` sends a command and returns its result, keeping every
    event received meanwhile in ``events``."""

    def __init__(self, ws_url: str, timeout: float = 30.0):
        u = urlparse(ws_url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                          .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            head += chunk
        assert b" 101 " in head.split(b"\r\n", 1)[0], head
        self.next_id = 0
        self.events: list[dict] = []

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("DevTools connection closed")
            buf += chunk
        return bytes(buf)

    def _send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        header = bytes([0x81])
        if n < 126:
            header += bytes([0x80 | n])
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _recv_message(self) -> dict:
        data = bytearray()
        while True:
            b0, b1 = self._recv_exact(2)
            opcode, n = b0 & 0x0F, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._recv_exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._recv_exact(8))[0]
            mask = self._recv_exact(4) if b1 & 0x80 else None
            payload = self._recv_exact(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise ConnectionError("DevTools sent close")
            if opcode in (0x9, 0xA):  # ping / pong: not used by DevTools in practice
                continue
            data += payload
            if b0 & 0x80:
                return json.loads(data.decode())

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        my_id = self.next_id
        self._send(json.dumps({"id": my_id, "method": method, "params": params}))
        while True:
            msg = self._recv_message()
            if msg.get("id") == my_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        end = time.monotonic() + timeout
        for ev in self.events:
            if ev["method"] == method:
                return ev
        while time.monotonic() < end:
            msg = self._recv_message()
            if "method" in msg:
                self.events.append(msg)
                if msg["method"] == method:
                    return msg
        raise TimeoutError(f"no {method} within {timeout} s")

    def close(self):
        self.sock.close()


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("headless Chromium not found: install Debian's `chromium` package (apt-get install chromium; "
                    ".ci/apt-packages lists it), or deselect with -m 'not browser'")
    return exe


def open_in_chromium(html: Path, screenshot: Path | None, width: int = 1280) -> dict:
    """Load ``html`` in headless Chromium at a viewport ``width`` px wide (390: a phone, emulated as
    mobile); return images, links, console errors, headings, the first screen's layout and table
    geometry; save a screenshot (unless ``screenshot`` is None)."""
    profile = Path(tempfile.mkdtemp(prefix="chromium-profile-"))
    proc = subprocess.Popen([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             "--remote-debugging-port=0", "--window-size=1280,900", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port_file = profile / "DevToolsActivePort"
        end = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().count("\n") >= 1):
            if proc.poll() is not None:
                raise RuntimeError(f"chromium exited ({proc.returncode}): {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > end:
                raise TimeoutError("chromium did not open its DevTools port within 60 s")
            time.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        import urllib.request

        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t["type"] == "page")
        dt = DevTools(page["webSocketDebuggerUrl"])
        try:
            for domain in ("Page", "Runtime", "Log"):
                dt.call(f"{domain}.enable")
            height = PHONE_HEIGHT if width < 600 else 900
            dt.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                    mobile=width < 600)
            dt.events.clear()
            dt.call("Page.navigate", url=html.resolve().as_uri())
            dt.wait_event("Page.loadEventFired", timeout=60)
            state = dt.call("Runtime.evaluate", returnByValue=True, awaitPromise=True, expression="""
                (async () => {
                  const imgs = Array.from(document.images);
                  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
                  return {
                    images: imgs.map(i => ({alt: i.alt, complete: i.complete, w: i.naturalWidth, h: i.naturalHeight,
                                            shown: i.getBoundingClientRect().width, figure: i.dataset.figure || null})),
                    firstAnswer: (() => {  // the first effect stated in numbers in the answer in brief
                      const g = document.querySelector('.glance');
                      if (!g) return null;
                      const walk = document.createTreeWalker(g, NodeFilter.SHOW_TEXT);
                      const re = /-?[0-9.]+ ± [0-9.]+ [^ ]+ against the paper's -?[0-9.]+/;
                      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
                        const m = re.exec(n.data);
                        if (!m) continue;
                        const range = document.createRange();
                        range.setStart(n, m.index);
                        range.setEnd(n, m.index + m[0].length);
                        const r = range.getBoundingClientRect();
                        return {text: m[0], top: r.top, bottom: r.bottom};
                      }
                      return null;
                    })(),
                    headings: Array.from(document.querySelectorAll('h2')).map(h => h.textContent),
                    links: Array.from(document.querySelectorAll('a[href]')).map(a => a.getAttribute('href')),
                    ids: Array.from(document.querySelectorAll('[id]')).map(e => e.id),
                    glanceTop: (document.querySelector('.glance') || {getBoundingClientRect: () => ({top: -1})})
                                 .getBoundingClientRect().top,
                    tocTop: (Array.from(document.querySelectorAll('p')).find(p => p.textContent.trim() === 'Contents')
                             || {getBoundingClientRect: () => ({top: -1})}).getBoundingClientRect().top,
                    firstVerdict: (() => {
                      const td = document.querySelector('.verdicts tbody tr td[data-label="verdict"]');
                      if (!td) return null;
                      window.scrollTo(0, td.getBoundingClientRect().top + window.scrollY - 40);
                      const r = td.getBoundingClientRect();
                      const box = {left: r.left, right: r.right, top: r.top, bottom: r.bottom,
                                   text: td.textContent, height: window.innerHeight};
                      window.scrollTo(0, 0);
                      return box;
                    })(),
                    firstTableHead: Array.from((document.querySelector('table') || document.createElement('table'))
                                               .querySelectorAll('th')).map(h => h.textContent),
                    external: Array.from(document.querySelectorAll('[src],link[href]'))
                                 .map(e => e.getAttribute('src') || e.getAttribute('href'))
                                 .filter(u => !u.startsWith('data:')),
                    table6Valid: (() => {  // Press & Wolf Table 6's valid columns: where they lie, unscrolled
                      const h = document.getElementById('press--wolf-table-6-small-model-no-dropout');
                      let el = h && h.nextElementSibling;
                      while (el && el.tagName !== 'TABLE' && !el.querySelector('table')) el = el.nextElementSibling;
                      if (!el) return null;
                      const t = el.tagName === 'TABLE' ? el : el.querySelector('table');
                      const right = Math.min(t.parentElement.getBoundingClientRect().right, window.innerWidth);
                      return Array.from(t.querySelectorAll('th'))
                        .filter(th => /^valid (ours|paper)$/.test(th.textContent.trim()))
                        .map(th => ({text: th.textContent.trim(), left: th.getBoundingClientRect().left,
                                     right: th.getBoundingClientRect().right, visibleRight: right}));
                    })(),
                    compared: Array.from(document.querySelectorAll('table')).filter(t => !t.closest('.verdicts'))
                                   .map(t => {  // ours vs paper (the verdict table reads as cards)
                      const ths = Array.from(t.querySelectorAll('th'));
                      const right = Math.min(t.parentElement.getBoundingClientRect().right, window.innerWidth);
                      const first = re => ths.find(th => re.test(th.textContent.trim()));
                      return [first(/(^| )ours( |$)|^distance$/), first(/(^| )paper( |$)/)].filter(th => th)
                        .map(th => ({text: th.textContent.trim(), left: th.getBoundingClientRect().left,
                                     right: th.getBoundingClientRect().right, visibleRight: right,
                                     table: ths.map(h => h.textContent).join(' | ').slice(0, 80)}));
                    }).filter(cols => cols.length === 2),
                    height: document.documentElement.scrollHeight,
                    pageWidth: document.documentElement.scrollWidth,
                    viewportWidth: window.innerWidth,
                    tables: Array.from(document.querySelectorAll('table')).map(t => {
                      const box = t.parentElement.getBoundingClientRect();
                      const style = getComputedStyle(t.parentElement);
                      const right = box.right - parseFloat(style.paddingRight);
                      return {
                        head: Array.from(t.querySelectorAll('th')).map(h => h.textContent).join(' | ').slice(0, 120),
                        right: t.getBoundingClientRect().right, containerRight: right,
                        scrollWidth: t.scrollWidth, clientWidth: t.clientWidth,
                        tallestRow: Math.max(0, ...Array.from(t.rows).map(r => r.getBoundingClientRect().height)),
                      };
                    }),
                  };
                })()""")["result"]["value"]
            errors = []
            for ev in dt.events:
                p = ev.get("params", {})
                if ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                    errors.append(json.dumps(p.get("args"))[:500])
                elif ev["method"] == "Runtime.exceptionThrown":
                    errors.append(json.dumps(p.get("exceptionDetails"))[:500])
                elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                    errors.append(p["entry"].get("text", "")[:500])
            if screenshot is not None:
                shot = dt.call("Page.captureScreenshot", format="png", captureBeyondViewport=True,
                               clip={"x": 0, "y": 0, "width": width, "height": min(int(state["height"]), 16000),
                                     "scale": 1})
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
        finally:
            dt.close()
        state["console_errors"], state["screenHeight"] = errors, height
        return state
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _png(width: int, height: int) -> str:
    """A white PNG of this size, base64-encoded."""
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff" * width for _ in range(height))
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode()


def assert_table6_valid_columns_visible(state: dict) -> None:
    """Press & Wolf Table 6's "valid ours" and "valid paper" lie inside the page without scrolling sideways."""
    cols = state["table6Valid"]
    assert cols is not None and sorted(c["text"] for c in cols) == ["valid ours", "valid paper"], \
        f"Table 6's valid columns not found: {cols}"
    hidden = [c for c in cols if not 0 <= c["left"] < c["right"] <= c["visibleRight"]]
    assert not hidden, f"Table 6's valid columns need a sideways scroll at {state['viewportWidth']} px: {hidden}"


def assert_compared_columns_visible(state: dict) -> None:
    """In every table that sets ours against the paper's, the first of our columns and the first of the
    paper's lie inside the page without scrolling sideways."""
    hidden = [c for cols in state["compared"] for c in cols if not 0 <= c["left"] < c["right"] <= c["visibleRight"]]
    assert not hidden, f"ours vs paper needs a sideways scroll at {state['viewportWidth']} px: {hidden}"


def assert_first_screen_answers_in_numbers(state: dict) -> None:
    """The answer in brief states an effect in numbers, ours ± our interval against the paper's, on the first
    screen (no scrolling)."""
    a = state["firstAnswer"]
    assert a is not None, "the answer in brief states no effect against the paper's"
    assert 0 <= a["top"] and a["bottom"] <= state["screenHeight"], \
        f"the first answer in numbers is below the first screen ({state['screenHeight']} px): {a}"


def assert_figures_legible(state: dict) -> None:
    """Each figure is shown large enough that its smallest text (MIN_FONT_PT at DPI, replicate/plotting.py)
    reads at LEGIBLE_PX or more."""
    from replicate.plotting import DPI, MIN_FONT_PT

    small = [(i["figure"], round(MIN_FONT_PT * DPI / 72 * i["shown"] / i["w"], 1)) for i in state["images"]
             if i["figure"] and i["w"] and MIN_FONT_PT * DPI / 72 * i["shown"] / i["w"] < LEGIBLE_PX]
    assert not small, f"figures whose text reads below {LEGIBLE_PX} px at {state['viewportWidth']} px: {small}"


@pytest.mark.browser
def test_devtools_client_sees_console_errors_and_broken_images(tmp_path):
    """The checks can fail: a page with a broken image and a console error is reported as such."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><h2>x</h2><img alt='broken' src='data:image/png;base64,AAAA'>"
                    "<script>console.error('boom')</script></body></html>")
    state = open_in_chromium(page, tmp_path / "bad.png")
    assert state["images"] and state["images"][0]["w"] == 0
    assert any("boom" in e for e in state["console_errors"])


def assert_tables_fit(state: dict, max_row_px: float = 240) -> None:
    """At 1280 px no table is wider than the text column or scrolls sideways, the page does not
    scroll sideways, and no table row is taller than ``max_row_px``."""
    assert state["viewportWidth"] == 1280
    assert_no_sideways_scroll(state)
    assert state["tables"], "no table in the report"
    for t in state["tables"]:
        assert t["right"] <= t["containerRight"] + 0.5, f"table wider than the page: {t}"
        assert t["scrollWidth"] <= t["clientWidth"] + 1, f"table scrolls sideways: {t}"
        assert t["tallestRow"] <= max_row_px, f"table row {t['tallestRow']:.0f} px tall: {t}"


def assert_no_sideways_scroll(state: dict) -> None:
    """The page itself never scrolls sideways (a wide table scrolls inside its own wrapper)."""
    assert state["pageWidth"] <= state["viewportWidth"], \
        f"the page scrolls sideways: {state['pageWidth']} px wide at a {state['viewportWidth']} px viewport"


def assert_first_verdict_visible(state: dict) -> None:
    """The verdict of the first claim in the verdict table lies inside the viewport once the page is scrolled
    down to it (no sideways scrolling of the table needed)."""
    v = state["firstVerdict"]
    assert v is not None, "no verdict cell in the verdict table"
    assert 0 <= v["left"] and v["right"] <= state["viewportWidth"] and 0 <= v["top"] and v["bottom"] <= v["height"], \
        f"the first verdict ({v['text']!r}) lies outside the {state['viewportWidth']} px viewport: {v}"


def assert_links_resolve(state: dict, html: Path) -> None:
    """Every link: an anchor on the page, a file that exists (relative to the report), or an arXiv page."""
    ids = set(state["ids"])
    for href in state["links"]:
        if href.startswith("#"):
            assert href[1:] in ids, f"link to a missing anchor {href}"
        elif href.startswith(("http://", "https://")):
            assert href.startswith("https://arxiv.org/abs/"), f"unexpected external link {href}"
        else:
            assert (html.parent / unquote(href)).exists(), f"link to a missing file {href}"


@pytest.mark.browser
def test_tables_fit_1280_on_results_as_wide_as_the_default_run(tmp_path):
    """Seven widths of the initial-loss pivot, a Press & Wolf ablation cell, URL sources: still no
    table wider than the page (and the check can fail: a 40-column table does not fit)."""
    from support.report_results import TEMPLATE, add_wide_results, make_results

    from replicate.report.build import build

    res = add_wide_results(make_results(tmp_path))
    build(res, TEMPLATE, tmp_path / "out/report.md", tmp_path / "out/index.html")
    assert_tables_fit(open_in_chromium(tmp_path / "out/index.html", None))
    wide = tmp_path / "too_wide.html"
    cells = "".join(f"<td>{1000000 + i:,}</td>" for i in range(40))
    wide.write_text((tmp_path / "out/index.html").read_text().replace(
        "<main>", f"<main><table><tr>{cells}</tr></table>", 1).replace(
        "td[style*=\"right\"]", "td"))  # every cell a nowrap number
    with pytest.raises(AssertionError, match="wider than the page|scrolls sideways"):
        assert_tables_fit(open_in_chromium(wide, None))


@pytest.mark.slow
@pytest.mark.browser
def test_report_in_headless_chromium(smoke_run):
    html = smoke_run / SMOKE_RESULTS / "report/index.html"
    state = open_in_chromium(html, ARTIFACTS / "report.png")
    assert state["images"], "the smoke report shows no figure"
    broken = [i for i in state["images"] if not (i["complete"] and i["w"] > 0 and i["h"] > 0)]
    assert not broken, f"images that do not decode: {broken}"
    assert state["console_errors"] == [], state["console_errors"]
    assert state["external"] == [], f"the report must be self-contained, but loads {state['external']}"
    for section in ("Summary", "Compute", "Provenance"):
        assert any(section in h for h in state["headings"]), state["headings"]
    assert_tables_fit(state)
    shot = (ARTIFACTS / "report.png").read_bytes()
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000


BUNDLE = REPO_ROOT / "paper" / "measured"


@pytest.fixture(scope="module")
def bundle_report(tmp_path_factory) -> Path:
    """The published bundle's report as the current code builds it (into a copy; the bundle is not touched)."""
    from replicate.publish.bundle import build_report

    copy = tmp_path_factory.mktemp("bundle") / "measured"
    shutil.copytree(BUNDLE, copy, ignore=shutil.ignore_patterns("report"))
    build_report(copy)
    return copy / "report" / "index.html"


@pytest.mark.browser
@pytest.mark.skipif(not (BUNDLE / "MANIFEST.json").is_file(), reason="nothing published yet")
@pytest.mark.parametrize("width", [1280, 390])
def test_published_report_reads_at_desktop_and_phone_width(width, bundle_report):
    """The bundle's report at 1280 px and at phone width: no sideways scroll, the plain answer above the
    contents and an effect in numbers against the paper's on the first screen, one verdict and the paper's
    effect in the verdict table, the first claim's verdict inside the viewport, ours vs the paper's columns
    visible in every table that compares them (Table 6's valid columns among them), figures whose text reads,
    every image decodes and every link resolves."""
    state = open_in_chromium(bundle_report, ARTIFACTS / f"published_report_{width}.png", width=width)
    assert state["viewportWidth"] == width
    assert_no_sideways_scroll(state)
    assert 0 < state["glanceTop"] < state["tocTop"], "the answer in brief is not above the table of contents"
    assert "verdict" in state["firstTableHead"] and "paper" in state["firstTableHead"], state["firstTableHead"]
    assert_first_verdict_visible(state)
    assert_table6_valid_columns_visible(state)
    assert_compared_columns_visible(state)
    assert_first_screen_answers_in_numbers(state)
    assert_figures_legible(state)
    broken = [i for i in state["images"] if not (i["complete"] and i["w"] > 0 and i["h"] > 0)]
    assert state["images"] and not broken, broken
    assert state["links"], "no link in the report"
    assert_links_resolve(state, bundle_report)
    assert state["console_errors"] == [] and state["external"] == []


@pytest.mark.browser
def test_phone_width_check_can_fail(tmp_path):
    """A table outside a wrapper wider than the phone makes the page scroll sideways: caught; a verdict in
    the last column of a wide table: caught; Table 6's valid columns behind ten others: caught; the answer in
    numbers below the first screen: caught; a 1,100 px figure shrunk to the phone's width: caught; a link to a
    missing file: caught."""
    page = tmp_path / "wide.html"
    cells = "".join(f"<td style='white-space:nowrap'>{1000000 + i:,}</td>" for i in range(30))
    verdict = "<td data-label='verdict'>holds</td>"
    figure = f"<img data-figure='x' style='max-width:100%' src='data:image/png;base64,{_png(1100, 20)}'>"
    page.write_text(f"<!DOCTYPE html><html><head><meta name='viewport' content='width=device-width'></head><body>"
                    f"<div class='glance'><div style='height:2000px'></div>tying: 3.47 ± 1.31 ppl against the "
                    f"paper's 3.2 ppl</div>{figure}"
                    f"<a href='missing.csv'>x</a><table><tr>{cells}</tr></table>"
                    f"<div class='verdicts' style='overflow-x:auto'><table><tbody><tr>{cells}{verdict}</tr></tbody>"
                    f"</table></div><h3 id='press--wolf-table-6-small-model-no-dropout'>Table 6</h3>"
                    f"<div class='table-wrap'><table><tr>{'<th>train (running) ours</th>' * 10}<th>valid ours</th>"
                    f"<th>valid paper</th></tr></table></div></body></html>")
    state = open_in_chromium(page, None, width=390)
    with pytest.raises(AssertionError, match="Table 6's valid columns need a sideways scroll"):
        assert_table6_valid_columns_visible(state)
    with pytest.raises(AssertionError, match="ours vs paper needs a sideways scroll"):
        assert_compared_columns_visible(state)
    with pytest.raises(AssertionError, match="below the first screen"):
        assert_first_screen_answers_in_numbers(state)
    with pytest.raises(AssertionError, match="figures whose text reads below"):
        assert_figures_legible(state)
    with pytest.raises(AssertionError, match="the first verdict .* lies outside the"):
        assert_first_verdict_visible(state)
    with pytest.raises(AssertionError, match="scrolls sideways"):
        assert_no_sideways_scroll(state)
    with pytest.raises(AssertionError, match="missing file"):
        assert_links_resolve(state, page)
