"""Command-line tools (``python -m pictura <tool>``); shared argument parsing lives here."""

from __future__ import annotations


def parse_resolution(text: str | None) -> tuple[int, int]:
    """``"WxH"`` -> (W, H); None -> the default 96x54 (Table 3)."""
    if text is None:
        return 96, 54
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--resolution must look like 96x54, got {text!r}") from None
    return w, h
