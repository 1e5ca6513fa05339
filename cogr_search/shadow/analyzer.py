"""A regex approximation of Lucene's `standard` analyzer, for BM25 parity with OpenSearch.

OpenSearch ranks the keyword-expanded query with BM25 over `cogr_keywords.text`, which
the `standard` analyzer tokenizes (Unicode UAX#29 word boundaries, then lowercase, no
stop words). The shadow index must produce the same tokens or its ranking drifts. This
module implements the UAX#29 rules that matter for product text:

- letters and digits glue together ("2x4", "3.5in", "mp3"), and so does "_";
- ".", "'", "’" join letters to letters ("u.s.a", "lowe's") and digits to digits
  ("3.5"); ":" and "·" join letters only; "," and ";" join digits only ("1,000");
- everything else splits: "-", "/", '"', "#", "(", whitespace, symbols;
- each CJK ideograph and each Hiragana character is a token of its own; Katakana runs
  stay together; combining marks stay on their base letter;
- tokens longer than 255 characters are cut into 255-character pieces.

- each emoji (Extended_Pictographic, with skin-tone modifiers and VS16) is a token,
  and so is a pair of regional indicators (a flag).

Known gaps (Lucene is the reference): emoji ZWJ sequences and keycaps (normalization
removes ZWJ anyway), Hebrew-specific quote rules, Southeast Asian scripts (Lucene
segments Thai/Lao/Khmer/Myanmar with a dictionary; here a run stays one token). Inputs are normalized keywords
(`cogr_search.keywords.normalize`), already lowercase; `str.lower` is applied again
for safety, which equals Lucene's per-code-point lowercasing on such input.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import cache, lru_cache
from itertools import chain

MAX_TOKEN_LENGTH = 255

_SINGLE_CHAR = (
    "\u3040-\u309f"  # Hiragana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\U00020000-\U0002fa1f"
)
_KATAKANA = "\u30a0-\u30ff\u31f0-\u31ff\u32d0-\u32fe\u3300-\u3357\uff66-\uff9d"
_MID_LETTER = ":\u00b7\u0387\u055f\u05f4\u2027\ufe13\ufe55\uff1a"
_MID_NUM = ",;\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
_MID_NUM_LET = ".'\u2018\u2019\u2024\ufe52\uff07\uff0e"
_EXTEND_NUM_LET = "_\u202f\u203f\u2040\u2054\ufe33\ufe34\ufe4d-\ufe4f\uff3f"
# Extended_Pictographic (emoji-data.txt), which Lucene emits as one token per emoji.
_PICTOGRAPHIC = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u2199\u21a9\u21aa\u231a\u231b\u2328\u2388"
    "\u23cf\u23e9-\u23f3\u23f8-\u23fa\u24c2\u25aa\u25ab\u25b6\u25c0\u25fb-\u25fe"
    "\u2600-\u2605\u2607-\u2612\u2614-\u2685\u2690-\u2705\u2708-\u2712\u2714\u2716"
    "\u271d\u2721\u2728\u2733\u2734\u2744\u2747\u274c\u274e\u2753-\u2755\u2757"
    "\u2763-\u2767\u2795-\u2797\u27a1\u27b0\u27bf\u2934\u2935\u2b05-\u2b07\u2b1b\u2b1c"
    "\u2b50\u2b55\u3030\u303d\u3297\u3299"
    "\U0001f000-\U0001f0ff\U0001f10d-\U0001f10f\U0001f12f\U0001f16c-\U0001f171\U0001f17e"
    "\U0001f17f\U0001f18e\U0001f191-\U0001f19a\U0001f1ad-\U0001f1e5\U0001f201-\U0001f20f"
    "\U0001f21a\U0001f22f\U0001f232-\U0001f23a\U0001f23c-\U0001f23f\U0001f249-\U0001f3fa"
    "\U0001f400-\U0001f53d\U0001f546-\U0001f64f\U0001f680-\U0001f6ff\U0001f774-\U0001f77f"
    "\U0001f7d5-\U0001f7ff\U0001f80c-\U0001f80f\U0001f848-\U0001f84f\U0001f85a-\U0001f85f"
    "\U0001f888-\U0001f88f\U0001f8ae-\U0001f8ff\U0001f90c-\U0001f93a\U0001f93c-\U0001f945"
    "\U0001f947-\U0001faff\U0001fc00-\U0001fffd"
)
_EMOJI_TAIL = "\U0001f3fb-\U0001f3ff\ufe0f\u20e3"
_REGIONAL = "\U0001f1e6-\U0001f1ff"


def _ranges(predicate) -> str:
    """A regex character-class body for all code points where `predicate(category)`."""
    parts: list[str] = []
    start = None
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and predicate(unicodedata.category(chr(cp)))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            end = cp - 1
            parts.append(re.escape(chr(start)) if start == end else f"{re.escape(chr(start))}-{re.escape(chr(end))}")
            start = None
    return "".join(parts)


@cache
def _token_pattern() -> re.Pattern[str]:
    """Compiled once, on first use: the code-point scan takes a fraction of a second."""
    marks = _ranges(lambda cat: cat in ("Mn", "Mc", "Me"))
    letter = f"(?:(?![{_SINGLE_CHAR}{_KATAKANA}])[^\\W\\d_])"
    digit = r"\d"
    unit = f"(?:{letter}|{digit}|[{_EXTEND_NUM_LET}])[{marks}]*"
    # A mid character joins only when the characters on both sides allow it.
    join_letters = f"(?:(?<=[^\\W\\d_])|(?<=[{marks}]))[{_MID_LETTER}{_MID_NUM_LET}](?={letter})"
    join_digits = f"(?<={digit})[{_MID_NUM}{_MID_NUM_LET}](?={digit})"
    word = f"(?:{unit})+(?:(?:{join_letters}|{join_digits})(?:{unit})+)*"
    katakana = f"[{_KATAKANA}](?:[{_KATAKANA}{_EXTEND_NUM_LET}]|[{marks}])*"
    single = f"[{_SINGLE_CHAR}][{marks}]*"
    emoji = f"[{_PICTOGRAPHIC}][{_EMOJI_TAIL}]*|[{_REGIONAL}]{{1,2}}"
    return re.compile(f"{word}|{katakana}|{single}|{emoji}")


_CONNECTORS = "_\u202f\u203f\u2040\u2054\ufe33\ufe34\ufe4d\ufe4e\ufe4f\uff3f"


def tokenize(text: str) -> list[str]:
    """Tokens of `text` as the `standard` analyzer would emit them (lowercased)."""
    tokens: list[str] = []
    for token in _token_pattern().findall(text.lower()):
        if not token.strip(_CONNECTORS):  # Lucene emits nothing for a run of "_"
            continue
        if len(token) <= MAX_TOKEN_LENGTH:
            tokens.append(token)
        else:
            tokens.extend(token[i : i + MAX_TOKEN_LENGTH] for i in range(0, len(token), MAX_TOKEN_LENGTH))
    return tokens


@lru_cache(maxsize=1 << 18)
def _word_tokens(word: str) -> tuple[str, ...]:
    return tuple(tokenize(word))


def keyword_tokens(keyword: str) -> tuple[str, ...]:
    """`tokenize` of a normalized keyword, cached per space-separated word.

    A plain space always separates tokens, and keywords share words far more than
    they share whole strings, so the cache hits almost always.
    """
    if " " not in keyword:
        return _word_tokens(keyword)
    return tuple(chain.from_iterable(map(_word_tokens, keyword.split(" "))))
