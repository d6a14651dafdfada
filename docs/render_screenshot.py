"""Render an SVG snapshot to PNG in headless Chromium, exactly as a browser (and the terminal) shows it.

``python docs/render_screenshot.py SNAPSHOT.svg OUT.png [--scale 2]`` (``make screenshot``). Textual's SVG
draws box borders and wide glyphs with the terminal's own font metrics; cairosvg spaced them wrongly,
so the README picture had broken borders. Needs Debian's ``chromium`` package.
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def render(svg: Path, out: Path, scale: float = 2.0) -> None:
    text = svg.read_text(encoding="utf-8")
    match = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', text)
    if match is None:
        raise SystemExit(f"{svg}: no viewBox")
    width, height = (math.ceil(float(value)) for value in match.groups())
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "page.html"
        page.write_text(
            f'<!doctype html><html><body style="margin:0;overflow:hidden">'
            f'<div style="width:{width}px;height:{height}px">{text}</div></body></html>',
            encoding="utf-8",
        )
        subprocess.run(
            [
                browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--force-device-scale-factor={scale}", f"--window-size={width},{height}",
                f"--screenshot={out.resolve()}", "--user-data-dir=" + str(Path(folder) / "profile"),
                page.as_uri(),
            ],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    if not out.exists() or out.stat().st_size == 0:
        raise SystemExit(f"chromium wrote no picture to {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("svg", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--scale", type=float, default=2.0)
    args = parser.parse_args()
    render(args.svg, args.png, args.scale)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    sys.exit(main())
