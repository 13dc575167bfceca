"""How a verdict reads: plain text for the terminal, HTML for the notebook."""

from __future__ import annotations

import html

from grader.spec import exercises
from grader.judge.grade import Result


def _shape(s) -> str:
    return "x".join(map(str, s))


def text(r: Result) -> str:
    head = "PASSED" if r.passed else "FAILED"
    lines = [f"{head}  {r.exercise} [{r.backend}]: {r.message}"]
    if r.shapes and not r.passed:
        for shape, ok, n, detail in _by_shape(r):
            lines.append(
                f"  {'ok ' if ok == n else 'BAD'} {_shape(shape)} ({ok}/{n} inputs)"
                + (f"  {detail.splitlines()[0]}" if detail else "")
            )
    if r.timing:
        lines.append("  times (median ms): " + ", ".join(f"{k} {v:.3f}" for k, v in r.timing.items()))
    if r.compiled and r.correct:
        lines.append(f"  evidence: {r.evidence}" + (f"; access profile: {profile_line(r)}" if r.profile else ""))
    if r.hint:
        lines.append(f"  hint: {r.hint}")
    if r.output and not r.passed:
        lines.append("  kernel output (tail):\n    " + r.output[-1500:].replace("\n", "\n    "))
    return "\n".join(lines)


def profile_line(r: Result) -> str:
    """The access figures of the verdict's profile, in one line (grader.judge.profile.summary)."""
    from grader.judge.profile import Profile, summary

    p = r.profile or {}
    return summary(
        Profile(
            p.get("exercise", r.exercise),
            tuple(p.get("shape", ())),
            p.get("sampled", ""),
            p.get("metrics", {}),
            p.get("derived", {}),
        )
    )


def speed_bar(speedup: float | None, threshold: float | None, width: int = 240) -> str:
    """An HTML bar: the speed-up against the threshold line."""
    if not speedup or not threshold:
        return ""
    scale = max(speedup, threshold) * 1.15
    fill = "#2e7d32" if speedup >= threshold else "#c62828"
    return (
        f'<div style="position:relative;width:{width}px;height:14px;background:#eee;display:inline-block">'
        f'<div style="width:{speedup / scale * width:.0f}px;height:14px;background:{fill}"></div>'
        f'<div style="position:absolute;left:{threshold / scale * width:.0f}px;top:-2px;width:2px;'
        f'height:18px;background:#000" title="threshold {threshold:.2f}x"></div></div>'
        f" {speedup:.2f}x (needs {threshold:.2f}x)"
    )


def _by_shape(r: Result) -> list[tuple[list[int], int, int, str]]:
    """(shape, inputs right, inputs tried, first problem) per distinct shape, in order."""
    out: dict[tuple, list] = {}
    for s in r.shapes:
        row = out.setdefault(tuple(s.shape), [list(s.shape), 0, 0, ""])
        row[1] += s.correct
        row[2] += 1
        if not s.correct and not row[3]:
            row[3] = s.detail
    return [tuple(v) for v in out.values()]


def html_report(r: Result) -> str:
    """A compact verdict for the notebook: head line, per-shape table, speed-up bar, hint."""
    color = "#2e7d32" if r.passed else "#c62828"
    esc = html.escape
    head = r.message.split("\n", 1)
    parts = [
        f"<div style='font-family:sans-serif;font-size:13px;line-height:1.4'>"
        f"<div><b style='color:{color}'>{'PASSED' if r.passed else 'FAILED'}</b> "
        f"<code>{esc(r.exercise)}</code> <span style='color:#666'>[{esc(r.backend)}]</span> "
        f"{esc(head[0])}</div>"
    ]
    if len(head) > 1:
        parts.append(f"<pre style='margin:2px 0;font-size:12px'>{esc(head[1])}</pre>")
    rows = _by_shape(r)
    if rows:
        cells = "".join(
            f"<tr><td style='padding:0 8px'>{_shape(shape)}</td>"
            f"<td style='padding:0 8px;color:{'#2e7d32' if ok == n else '#c62828'}'>{'ok' if ok == n else 'wrong'}"
            f" ({ok}/{n})</td><td style='padding:0 8px;font-size:12px'>{esc(detail.splitlines()[0]) if detail else ''}"
            f"</td></tr>"
            for shape, ok, n, detail in rows
        )
        parts.append(
            "<table style='border-collapse:collapse;margin:4px 0'><tr><th style='text-align:left;"
            "padding:0 8px'>shape (MxNxK)</th><th style='text-align:left;padding:0 8px'>inputs</th>"
            f"<th></th></tr>{cells}</table>"
        )
    bar = speed_bar(r.speedup, r.threshold)
    if bar:
        extra = f" &middot; {r.pct_cublas:.0f}% of cuBLAS" if r.pct_cublas else ""
        parts.append(f"<div>speed-up {bar}{extra}</div>")
    elif exercises.is_host(r.exercise) and r.compiled:  # host C++: timed on this CPU, whatever GPU there is
        parts.append("<div style='color:#666'>Not timed: host code is timed on this CPU once it is correct.</div>")
    elif r.backend == "cpu" and r.compiled:
        parts.append(
            "<div style='color:#666'>CPU backend: no timing; "
            + ("the verdict rests on access counts" if r.profile else "correctness only")
            + "; speed is graded on a GPU.</div>"
        )
    if r.profile and r.correct:
        parts.append(
            f"<div style='color:#444'>evidence: {esc(r.evidence)}; access profile "
            f"({'x'.join(map(str, r.profile.get('shape', [])))}): {esc(profile_line(r))}</div>"
        )
    if r.hint:
        parts.append(f"<div><b>hint:</b> {esc(r.hint)}</div>")
    if r.output:
        parts.append(f"<details><summary>kernel output</summary><pre>{esc(r.output)}</pre></details>")
    parts.append("</div>")
    return "\n".join(parts)
