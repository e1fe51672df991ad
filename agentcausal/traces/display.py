"""Trace text made safe to show: control and bidi characters written out visibly.

Trace text comes from the traced system and from LLM replies, so it may hold terminal escape sequences
(ESC ``[2J`` clears a screen, OSC 8 writes links, OSC 52 sets the clipboard), NUL, backspaces and carriage
returns that overwrite what was printed, or bidirectional overrides (U+202E) that show text in another
order than it is stored (the "Trojan Source" attack). Every view of trace text (``agentcausal show``, the
console tables, ``report.md``, ``report.html``, the explanation annotated back to Phoenix) passes it
through :func:`visible` on the way out; the stored trace, its hash and the prompts sent to an LLM keep the
original characters.

:func:`visible` writes

* C0 controls but ``\\n`` and ``\\t`` (U+0000–U+001F), DEL (U+007F) and C1 controls (U+0080–U+009F) as
  ``\\xNN`` (``\\x1b``, ``\\x00``, ``\\x0d``),
* bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) as ``\\uNNNN`` (``\\u202e``),

and leaves every other character, backslashes included, as it is: the text ``\\x1b`` typed in a trace
and an ESC character look the same, the view never shows either raw. HTML views html-escape the result
(:func:`visible_html`).

References
----------
ECMA-48 (control functions, C0 and C1 sets). Unicode Standard Annex #9, "Unicode Bidirectional
Algorithm" (explicit formatting characters). Boucher and Anderson, "Trojan Source: Invisible
Vulnerabilities", arXiv:2111.00169.
"""

from __future__ import annotations

import html
import re

__all__ = ["BIDI_CONTROLS", "visible", "visible_html"]

#: the bidirectional formatting characters of UAX #9: ALM, LRM, RLM, LRE RLE PDF LRO RLO, LRI RLI FSI PDI
BIDI_CONTROLS = (
    "\u061c\u200e\u200f" + "".join(map(chr, range(0x202A, 0x202F))) + "".join(map(chr, range(0x2066, 0x206A)))
)

_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + BIDI_CONTROLS + "]")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: str) -> str:
    """``text`` with its control and bidi characters written as ``\\xNN`` / ``\\uNNNN``.

    Parameters
    ----------
    text : str, any text (``\\n`` and ``\\t`` are kept)

    Returns
    -------
    str, ``text`` itself when it holds none of them; idempotent (``visible(visible(s)) == visible(s)``).

    Examples
    --------
    >>> visible("ok\\x1b[2J \\u202eevil\\x00\\n")
    'ok\\\\x1b[2J \\\\u202eevil\\\\x00\\n'
    """
    return _HIDDEN.sub(_escape, text) if _HIDDEN.search(text) else text


def visible_html(text: str) -> str:
    """:func:`visible`, then html-escaped (``&``, ``<``, ``>``, quotes) for an HTML page.

    >>> visible_html("<b>\\x1b</b>")
    '&lt;b&gt;\\\\x1b&lt;/b&gt;'
    """
    return html.escape(visible(text))
