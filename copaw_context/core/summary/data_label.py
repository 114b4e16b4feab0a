"""How an image, audio, video or file block reads in the compactor's transcript.

QwenPaw renders ``[image] <url>``; the compactor sees the same, so a summary can name the
picture the user sent. Inline (base64) data is never dumped: ``[image] data:image/png
(2048 bytes)``.
"""

from __future__ import annotations

__all__ = ["data_label"]

_KINDS = ("image", "audio", "video")
_MAX_URL = 500


def _kind(kind: str | None, media_type: str | None) -> str:
    if kind in _KINDS:
        return kind
    major = (media_type or "").split("/", 1)[0].strip().lower()
    return major if major in _KINDS else "file"


def _inline_size(data: str) -> int:
    """Decoded size of a base64 string (without decoding it)."""
    body = data.strip()
    return max(0, len(body) * 3 // 4 - (len(body) - len(body.rstrip("="))))


def data_label(
    *,
    kind: str | None = None,
    url: str | None = None,
    data: str | None = None,
    media_type: str | None = None,
    name: str | None = None,
) -> str:
    """``[image] https://...``, ``[audio] data:audio/wav (n bytes)`` or ``[file] name``."""
    label = f"[{_kind(kind, media_type)}]"
    parts: list[str] = []
    if isinstance(url, str) and url.strip():
        url = url.strip()
        if url.startswith("data:"):
            head, _, payload = url.partition(",")
            mime = head[5:].split(";", 1)[0] or media_type or "application/octet-stream"
            parts.append(f"data:{mime} ({_inline_size(payload)} bytes)")
        else:
            parts.append(url if len(url) <= _MAX_URL else url[:_MAX_URL] + "...")
    elif isinstance(data, str):
        mime = media_type or "application/octet-stream"
        parts.append(f"data:{mime} ({_inline_size(data)} bytes)")
    elif media_type:
        parts.append(media_type)
    if isinstance(name, str) and name.strip():
        parts.append(f"({name.strip()})" if parts else name.strip())
    return " ".join([label, *parts])
