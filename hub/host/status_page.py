"""The status page as HTML: the snapshot of `hub.observe.status` rendered on the server, for a person to read.

No external asset: the style and the one small script are inline, under the response's CSP nonce. Every value is
escaped: child names, tool names, identities and error messages come from configurations, hosts and children, and
none of them is trusted. Without JavaScript the page is complete as served; with it, the script swaps in the page's
`#status` element every `REFRESH_S` seconds (parsed, never executed: a DOMParser document runs no script).
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

REFRESH_S = 2
# A call's arguments (when the call log carries them) are shown cut to this many characters.
ARGUMENT_CHARS = 200
NONE = "-"  # in a cell with no value
_SPARK = " ▁▂▃▄▅▆▇█"
_STATES = {"ready": "good", "starting": "warn", "restarting": "warn", "failed": "bad", "stopped": "dim"}
_READINESS = {"draining": "warn", "ready": "good", "not ready": "bad"}
_MILD = frozenset({"tool_error", "cancelled", "input_required"})

_STYLE = """
:root{color-scheme:light dark;--fg:#1d2125;--dim:#6b7280;--bg:#fff;--line:#e5e7eb;--head:#f6f7f9;
--good:#137333;--warn:#9a6700;--bad:#b3261e}
@media (prefers-color-scheme:dark){:root{--fg:#e6e6e6;--dim:#9aa0a6;--bg:#16181c;--line:#2c3036;--head:#1f2227;
--good:#5bd27a;--warn:#e3b341;--bad:#ff7b72}}
*{box-sizing:border-box}
body{margin:0;padding:1rem;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
background:var(--bg)}
h1{font-size:1.3rem;margin:0 0 .25rem}h2{font-size:1.05rem;margin:1.4rem 0 .5rem}
.summary{margin:0;color:var(--dim)}.summary b{color:var(--fg)}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;border:1px solid var(--line);border-radius:6px}
table{border-collapse:collapse;width:100%}
th,td{padding:.4rem .6rem;text-align:left;white-space:nowrap;border-bottom:1px solid var(--line);vertical-align:top}
th{background:var(--head);font-weight:600;font-size:.85rem}
tr:last-child td{border-bottom:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.text{white-space:normal;min-width:14rem;max-width:36rem;overflow-wrap:anywhere}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
.spark{white-space:pre;letter-spacing:-1px;color:var(--dim);border-bottom:1px solid var(--dim)}
.good{color:var(--good)}.warn{color:var(--warn)}.bad{color:var(--bad)}.dim{color:var(--dim)}
.badge{display:inline-block;padding:0 .45rem;border-radius:999px;border:1px solid currentColor;font-size:.85rem}
.empty{color:var(--dim);padding:.6rem}
footer{margin-top:1.5rem;color:var(--dim);font-size:.85rem}
footer form{display:inline}
button,input{font:inherit}
#conn{min-height:1.2em;color:var(--bad);margin:.25rem 0 0}
body.stale #status{opacity:.6}
@media (max-width:600px){body{padding:.6rem;font-size:14px}th,td{padding:.35rem .45rem}}
form.login{display:grid;gap:.6rem;max-width:28rem}
form.login input{padding:.5rem;border:1px solid var(--line);border-radius:6px;width:100%;background:var(--bg);
color:var(--fg)}
"""

# Fetch the page's #status again (`?part=live`) and swap it in; say when that fails. Polls only while the page is
# visible, one request at a time; stops once refused (401, 403), so that a tab left open does not knock for ever.
_SCRIPT = """
(() => {
  const note = document.getElementById("conn");
  let busy = false, timer = 0;
  async function tick() {
    if (busy || !timer || document.hidden) return;
    busy = true;
    try {
      const url = new URL(location.href);
      url.searchParams.set("part", "live");
      const answer = await fetch(url, {cache: "no-store", credentials: "same-origin",
                                       signal: AbortSignal.timeout(10000)});
      if (answer.status === 401 || answer.status === 403) {
        clearInterval(timer);
        timer = 0;
        throw new Error("HTTP " + answer.status + ": reload the page to sign in");
      }
      if (!answer.ok) throw new Error("HTTP " + answer.status);
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = page.getElementById("status"), old = document.getElementById("status");
      if (!fresh || !old) throw new Error("unexpected answer");
      const kept = Array.from(old.querySelectorAll(".scroll"), (e) => e.scrollLeft);
      old.replaceWith(fresh);
      fresh.querySelectorAll(".scroll").forEach((e, i) => { e.scrollLeft = kept[i] || 0; });
      note.textContent = "";
      document.body.classList.remove("stale");
    } catch (error) {
      note.textContent = "Not updating (" + error.message + ")" + (timer ? "; retrying." : ".");
      document.body.classList.add("stale");
    } finally {
      busy = false;
    }
  }
  timer = setInterval(tick, REFRESH_MS);
  document.addEventListener("visibilitychange", tick);
})();
""".replace("REFRESH_MS", str(REFRESH_S * 1000))


def _e(value: Any) -> str:
    return "" if value is None else html.escape(str(value), quote=True)


def _ms(value: float | None) -> str:
    if value is None:
        return NONE
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return NONE
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def _clock(iso: str) -> str:
    """HH:MM:SS of an ISO time (UTC)."""
    return iso[11:19]


def _spark(counts: list[int]) -> str:
    top = max(counts, default=0)
    if not top:
        return " " * len(counts)
    return "".join(_SPARK[0 if not c else max(1, round(c / top * (len(_SPARK) - 1)))] for c in counts)


def _table(head: Iterable[tuple[str, str]], rows: list[str], empty: str) -> str:
    cells = "".join(f'<th class="{cls}" scope="col">{_e(title)}</th>' for title, cls in head)
    body = "".join(rows) if rows else f'<tr><td class="empty" colspan="99">{_e(empty)}</td></tr>'
    return f'<div class="scroll"><table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table></div>'


def _servers(servers: list[dict[str, Any]]) -> str:
    rows = []
    for s in servers:
        state = str(s["state"])
        failure = s.get("last_failure")
        if s.get("last_error"):
            error = _e(s["last_error"])
        elif failure:
            error = f'{_e(failure["error"])} <span class="dim">({_e(_clock(failure["at"]))} UTC)</span>'
        else:
            error = ""
        hidden = f' <span class="dim">(+{int(s["hidden_tools"])} hidden)</span>' if s.get("hidden_tools") else ""
        rows.append(
            f'<tr data-server="{_e(s["name"])}" data-state="{_e(state)}">'
            f"<td><b>{_e(s['name'])}</b></td>"
            f'<td><span class="badge state {_STATES.get(state, "dim")}">{_e(state)}</span></td>'
            f'<td class="num restarts">{int(s["restarts"])}</td>'
            f'<td class="num">{int(s["tools"])}{hidden}</td>'
            f'<td class="num">{int(s["tokens"])}</td>'
            f'<td class="num">{_age(s.get("uptime_s"))}</td>'
            f'<td class="text error">{error}</td></tr>'
        )
    head = [("server", ""), ("state", ""), ("restarts", "num"), ("tools", "num"), ("~tokens", "num")]
    return _table([*head, ("up", "num"), ("last error", "")], rows, "No servers are configured.")


def _activity(activity: list[dict[str, Any]]) -> str:
    rows = []
    for a in activity:
        rate = float(a["error_rate"])
        level = "bad" if rate >= 0.1 else "warn" if rate > 0 else ""
        rows.append(
            f'<tr data-activity="{_e(a["child"])}"><td><b>{_e(a["child"])}</b></td>'
            f'<td class="num calls">{int(a["calls"])}</td>'
            f'<td class="num">{float(a["per_minute"]):g}</td>'
            f'<td class="num errors {level}">{int(a["errors"])} ({rate:.0%})</td>'
            f'<td class="num">{_ms(a["p50_ms"])}</td><td class="num">{_ms(a["p95_ms"])}</td>'
            f'<td class="mono"><span class="spark" title="calls in each of the last 60 minutes">'
            f"{_spark(a['minutes'])}</span></td></tr>"
        )
    head = [("server", ""), ("calls", "num"), ("per min", "num"), ("errors", "num"), ("p50", "num")]
    return _table([*head, ("p95", "num"), ("each minute", "")], rows, "No calls in the last hour.")


def _outcome(outcome: str) -> str:
    return "good" if outcome == "ok" else "warn" if outcome in _MILD else "bad"


def _calls(calls: list[dict[str, Any]]) -> str:
    with_arguments = any("arguments" in c for c in calls)
    rows = []
    for c in calls:
        arguments = ""
        if with_arguments:
            text = str(c.get("arguments") or "")
            cut = text if len(text) <= ARGUMENT_CHARS else text[: ARGUMENT_CHARS - 3] + "..."
            arguments = f'<td class="text mono">{_e(cut)}</td>'
        rows.append(
            f'<tr data-call="{_e(c["name"])}" data-outcome="{_e(c["outcome"])}">'
            f'<td class="mono" title="{_e(c["at"])}">{_e(_clock(c["at"]))}</td><td>{_e(c["name"])}</td>'
            f'<td class="{_outcome(str(c["outcome"]))}">{_e(c["outcome"])}</td>'
            f'<td class="num">{_ms(c["duration_ms"])}</td>'
            f"<td>{_e(c['child'] or NONE)}</td><td>{_e(c['identity'])}</td>{arguments}"
            f'<td class="text">{_e(c.get("error"))}</td></tr>'
        )
    head = [("time (UTC)", ""), ("name", ""), ("outcome", ""), ("duration", "num"), ("server", ""), ("identity", "")]
    if with_arguments:
        head.append(("arguments", ""))
    return _table([*head, ("error", "")], rows, "No calls yet.")


def _document(nonce: str, title: str, body: str, script: bool) -> str:
    tail = f'<script nonce="{_e(nonce)}">{_SCRIPT}</script>' if script else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{_e(title)}</title><link rel="icon" href="data:,">'
        f'<style nonce="{_e(nonce)}">{_STYLE}</style></head><body>{body}{tail}</body></html>'
    )


def render_status(snapshot: dict[str, Any], nonce: str, signed_in: bool) -> str:
    """The whole page; `signed_in`: the viewer came with the sign-in cookie (a sign-out button is shown)."""
    body = render_live(snapshot, signed_in) + '<p id="conn" role="status"></p>'
    return _document(nonce, "hub status", body, script=True)


def render_live(snapshot: dict[str, Any], signed_in: bool) -> str:
    """The page's `#status` element alone: what the script swaps in (no style in it, so nothing for the CSP to
    refuse when the script parses it)."""
    servers = snapshot["servers"]
    up = sum(1 for s in servers if s["state"] == "ready")
    state = "draining" if snapshot["draining"] else "ready" if snapshot["ready"] else "not ready"
    badge = f'<span class="badge {_READINESS[state]}">{state}</span>'
    summary = (
        f'<p class="summary">{badge} <b>{up}/{len(servers)}</b> servers ready · hub {_e(snapshot["version"])} · '
        f'up {_age(snapshot["uptime_s"])} · <span class="updated">as of {_e(_clock(snapshot["at"]))} UTC</span></p>'
    )
    sign_out = (
        '<form method="post" action="logout"><button type="submit">Sign out</button></form> · ' if signed_in else ""
    )
    return (
        f'<main id="status"><h1>hub status</h1>{summary}'
        f"<section><h2>Servers</h2>{_servers(servers)}</section>"
        f"<section><h2>Last hour</h2>{_activity(snapshot['activity'])}</section>"
        f"<section><h2>Last {len(snapshot['calls'])} calls</h2>{_calls(snapshot['calls'])}</section>"
        f"<footer>{sign_out}~tokens: the listing's cost in the model's context ({_e(snapshot['token_method'])}) · "
        f'<a href="status.json">status.json</a></footer></main>'
    )


def render_login(nonce: str, hours: int, message: str = "") -> str:
    """The sign-in form: a token (`hub token create`, or a JWT) that becomes the page's cookie for `hours`."""
    note = f'<p class="bad">{_e(message)}</p>' if message else ""
    body = (
        f'<main id="status"><h1>hub status</h1>{note}'
        '<form class="login" method="post" action="login">'
        '<label for="token">Access token</label>'
        '<input id="token" name="token" type="password" autocomplete="current-password" required>'
        '<button type="submit">Sign in</button></form>'
        f"<footer>The token is kept in a cookie that only this page accepts, for {hours} hours.</footer></main>"
    )
    return _document(nonce, "hub status: sign in", body, script=False)


def render_refused(nonce: str, message: str) -> str:
    """Signed in, but not allowed to see the page."""
    body = (
        f'<main id="status"><h1>hub status</h1><p class="bad">{_e(message)}</p>'
        '<form method="post" action="logout"><button type="submit">Sign in as someone else</button></form></main>'
    )
    return _document(nonce, "hub status", body, script=False)
