"""Words for the ranked recall search: what the index stores for each chunk, and the words of a
question, cut the same way.

Private to :mod:`copaw_context.core.memory`. The words table's tokenizer (FTS5 ``porter
unicode61`` with ``_`` a word character) splits on anything else that is not a letter or a
digit, folds case and stems English. A name joined by ``-`` or ``_`` (``billing-api``,
``pool_size``) is indexed as one word (``billing_api``: rare, so a question naming it finds it
first) and as its parts (``billing``, ``api``: a question may say them apart). The tokenizer
would keep a run of Chinese characters as one word, so each run is cut here into its
overlapping two-character pieces (at the function characters that glue words together:
``的``, ``了``, ...). A question then shares pieces with a message that says the same in other
words. Function words (``what``, ``did``, ``什么``, ``时候``, ...) are left out of a question:
they match nearly everything.

Changing what :func:`index_words` returns changes the index: bump the schema version with it.
"""

from __future__ import annotations

import re

__all__ = ["TOKENIZER", "index_words", "question_words"]

TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars _"
"""The words table's FTS5 tokenizer (the question's words are stemmed by the same)."""

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_GLUE = re.compile("[的了是在吗呢吧啊把被和与及或就都也还又给对]")
_PART = f"[^\\W_{_CJK}]+"
_COMPOUND = re.compile(f"{_PART}(?:[-_]{_PART})+")
_WORD = re.compile(f"{_PART}(?:[-_]{_PART})*|[{_CJK}]+")
_LOOSE_UNDERSCORE = re.compile(r"(?<![^\W_])_+|_+(?![^\W_])")
_MAX_WORDS = 32


def _split(text: str) -> list[str]:
    return text.split()


_STOP_EN = frozenset(
    _split(
        """a an the and or but if then so of to in on at by for with from into onto about as is are
    was were be been being am do does did done have has had having i me my we us our you your he she
    it its they them their this that these those there here what which who whom whose when where
    why how can could would should will shall may might must not no yes any some all just also
    very too than again ever now up out off over please tell find show know remember let s t"""
    )
)
_STOP_ZH = frozenset(
    _split(
        """什么 为什 么时 时候 哪个 哪些 哪里 哪儿 多少 怎么 怎样 如何 我们 你们 他们 这个 那个
    这些 那些 一下 一个 有没 没有 是不 不是 可以 能不 请问 知道 记得 当初 后来 之前 以前"""
    )
)


_STOP_ZH_SPLIT = re.compile(
    "|".join(
        sorted(("什么时候", "为什么", "怎么样", *(w for w in _STOP_ZH)), key=len, reverse=True)
    )
)


def _pieces(run: str, glue: re.Pattern[str] = _GLUE) -> list[str]:
    """A run of Chinese characters as its two-character pieces (a lone character as itself),
    cut first where ``glue`` matches."""
    parts: list[str] = []
    for part in glue.split(run):
        if not part:
            continue
        if len(part) == 1:
            parts.append(part)
        else:
            parts += [part[i : i + 2] for i in range(len(part) - 1)]
    return parts


def _compound(match: re.Match[str]) -> str:
    name = match.group()
    return f" {name.replace('-', '_')} {name.replace('-', ' ').replace('_', ' ')} "


def index_words(text: str) -> str:
    """The text the words table indexes for ``text``: its words, a joined name also whole,
    Chinese cut into pieces."""
    text = _LOOSE_UNDERSCORE.sub(" ", _COMPOUND.sub(_compound, text))
    return _CJK_RUN.sub(lambda run: " " + " ".join(_pieces(run.group())) + " ", text)


_STOP_GLUE = re.compile(f"{_GLUE.pattern}|{_STOP_ZH_SPLIT.pattern}")


def question_words(query: str) -> list[str]:
    """The distinct words of a question worth ranking by (case folded; Chinese in pieces;
    function words left out unless nothing else is left), at most 32."""
    words: list[str] = []
    for token in _WORD.findall(query.casefold()):
        if _CJK_RUN.fullmatch(token):
            words += _pieces(token, _STOP_GLUE)
        elif _COMPOUND.fullmatch(token):
            words += [re.sub("[-_]", "_", token), *re.split("[-_]", token)]
        else:
            words.append(token)
    kept = [w for w in words if w not in _STOP_EN and w not in _STOP_ZH]
    distinct: list[str] = []
    for word in kept or words:
        if word not in distinct:
            distinct.append(word)
    return distinct[:_MAX_WORDS]
