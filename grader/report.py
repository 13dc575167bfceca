"""How a verdict reads: plain text for the terminal, HTML for the notebook."""
from __future__ import annotations

import html

from .grade import Result


def _shape(s) -> str:
    return "x".join(map(str, s))


def text(r: Result) -> str:
    head = "PASSED" if r.passed else "FAILED"
    lines = [f"{head}  {r.exercise} [{r.backend}]: {r.message}"]
    if r.shapes and not r.passed:
        for s in r.shapes:
            lines.append(f"  {'ok ' if s.correct else 'BAD'} {_shape(s.shape)}"
                         + (f"  {s.detail.splitlines()[0]}" if s.detail else ""))
    if r.timing:
        lines.append("  times (median ms): " + ", ".join(f"{k} {v:.3f}" for k, v in r.timing.items()))
    if r.hint:
        lines.append(f"  hint: {r.hint}")
    if r.output and not r.passed:
        lines.append("  kernel output (tail):\n    " + r.output[-1500:].replace("\n", "\n    "))
    return "\n".join(lines)


def speed_bar(speedup: float | None, threshold: float | None, width: int = 240) -> str:
    """An HTML bar: the speed-up against the threshold line."""
    if not speedup or not threshold:
        return ""
    scale = max(speedup, threshold) * 1.15
    fill = "#2e7d32" if speedup >= threshold else "#c62828"
    return (f'<div style="position:relative;width:{width}px;height:14px;background:#eee;display:inline-block">'
            f'<div style="width:{speedup / scale * width:.0f}px;height:14px;background:{fill}"></div>'
            f'<div style="position:absolute;left:{threshold / scale * width:.0f}px;top:-2px;width:2px;'
            f'height:18px;background:#000" title="threshold {threshold:.2f}x"></div></div>'
            f' {speedup:.2f}x (needs {threshold:.2f}x)')


def html_report(r: Result) -> str:
    color = "#2e7d32" if r.passed else "#c62828"
    rows = "".join(
        f"<tr><td>{_shape(s.shape)}</td><td style='color:{'#2e7d32' if s.correct else '#c62828'}'>"
        f"{'ok' if s.correct else 'wrong'}</td><td><pre style='margin:0'>{html.escape(s.detail)}</pre></td></tr>"
        for s in r.shapes)
    parts = [f"<div><b style='color:{color}'>{'PASSED' if r.passed else 'FAILED'}</b> "
             f"<code>{r.exercise}</code> on {r.backend}: <pre style='display:inline'>{html.escape(r.message)}</pre></div>"]
    if rows:
        parts.append(f"<table><tr><th>shape</th><th></th><th>detail</th></tr>{rows}</table>")
    bar = speed_bar(r.speedup, r.threshold)
    if bar:
        parts.append(f"<div>speed-up {bar}</div>")
    if r.hint:
        parts.append(f"<div><b>hint:</b> {html.escape(r.hint)}</div>")
    if r.output:
        parts.append(f"<details><summary>kernel output</summary><pre>{html.escape(r.output)}</pre></details>")
    return "\n".join(parts)
