"""The content words a summary line is judged by (:mod:`.rules`): stemmed words of three
letters or more and Chinese character pairs, stop words aside. A line is read in
:func:`.core`'s form (:func:`.rules.item_words`: a bullet, a lead-in such as "Note:" drop
their words); the conversation's megabytes in one pass (:func:`text_words`)."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

__all__ = ["content_words", "text_words"]

CJK_RUN_RE = re.compile(r"[\u3400-\u9fff]+")
_TOKEN_RE = re.compile(r"[^\W_]+")  # core()'s words: runs of letters and digits
_STOPWORDS = frozenset(
    {
        *("the", "and", "for", "with", "must", "should", "please", "that", "this", "are"),
        *("was", "were", "has", "have", "been", "will", "can", "its", "also", "you", "your"),
        *("our", "not", "use", "from", "into", "all", "any", "was", "but", "then", "user"),
        *("用户", "我们", "一个", "这个", "需要", "可以"),
    }
)


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """``word`` without an inflection, cut to 6 ("added", "adds" -> "add")."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:6]


def text_words(texts: Iterable[str]) -> set[str]:
    """The content words of all of ``texts`` read as one, in one pass (the conversation's
    megabytes): :func:`.core`'s form without its line-start rules, which only drop words."""
    folded = unicodedata.normalize("NFKC", "\n".join(texts))
    folded = folded.replace("`", "").replace("*", "").casefold()
    return content_words(set(_TOKEN_RE.findall(folded)), CJK_RUN_RE.findall(folded))


def content_words(tokens: set[str], cjk_runs: list[str]) -> set[str]:
    """The content words among ``tokens`` (a text's words, :func:`.core`'s form) and the
    character pairs of its Chinese runs."""
    words = {
        stem(w)
        for w in tokens  # a long tool output repeats its words: each is judged once
        if len(w) >= 3 and w not in _STOPWORDS and not CJK_RUN_RE.search(w)
    }
    for run in cjk_runs:
        words.update(map(str.__add__, run[:-1], run[1:]) if len(run) > 1 else (run,))
    return words - _STOPWORDS
