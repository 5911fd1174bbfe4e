"""Hurried typing: a word one slip away from a word the planner reads ("evalaute", "statistcs",
"scrubed") is read as that word, so a typo does not turn a plannable request into a refusal.

One slip is two neighbouring letters swapped, one letter left out, or one letter doubled or
added; a substituted letter is not corrected (it turns real words into others: "trainer" is one
letter from "trained"). Only long words (6 letters or more) that are not themselves known are
corrected, and only to a single candidate; an inflection ("evaluates") is never a slip. A few
short step words ("train", "clean", "stats", "plot", "split") are corrected from a swap of two neighbouring
letters only ("trian", "claen").
"""

from __future__ import annotations

from functools import lru_cache

# the words of step phrases, metrics and constructs that users misspell; each >= 6 letters
KEYWORDS = frozenset("""
evaluate evaluated evaluating evaluation statistics statistic summary descriptive validation
validate accuracy precision normalize normalise normalized normalised standardize standardise
standardized standardised deduplicate deduplicated duplicates duplicate impute imputed imputing
missing regression logistic classifier regressor pretrain pretrained pretraining finetune
fine-tune fine-tuned adapters adapter aggregate aggregated notify notification message deploy
deployed export exported report scrubbed scrub cleaned checkpoint retries iterations iteration
rounds sample subsample samples split training trained dataset generate synthetic separately
parallel concurrently simultaneously otherwise whichever maximum minimum histogram plotted
select selected choose remove removed temporary cleanup workers memory trials scheduler search
average summarize summarise calculate compute""".split()) - {"split", "scrub"}


# short step words (4-5 letters), corrected from two neighbouring letters swapped only ("trian",
# "claen", "stast", "polt"): a dropped or added letter in a short word is too often another word
# ("spilt", split's past, is no word a workflow asks for: "spilt it 80/20" is the split)
SHORT_KEYWORDS = frozenset("train trains clean stats plot plots dedup model split splits".split())
# real words a swap of a short keyword makes, read as written
SHORT_REAL = frozenset("""lpot""".split())

# real words one slip from a keyword ("retrain" is "pretrain" less a letter)
REAL_WORDS = frozenset("retrain retrains retrained retraining refine refined".split())


def _swaps(word: str) -> set[str]:
    """``word`` with two neighbouring (different) letters swapped, each way."""
    return {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1) if word[i] != word[i + 1]}


def _slips(word: str) -> set[str]:
    """Words one slip from ``word`` in the other direction: a letter removed, or neighbours swapped."""
    out = {word[:i] + word[i + 1:] for i in range(len(word))}
    out |= {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}
    return out


@lru_cache(maxsize=1)
def _index() -> dict[str, set[str]]:
    """slip form -> the keywords it could come from (a keyword with a letter dropped, or swapped)."""
    index: dict[str, set[str]] = {}
    for k in KEYWORDS:
        for s in _slips(k) - {k}:
            index.setdefault(s, set()).add(k)
    return index


def corrected(word: str, known: frozenset[str] | set[str] = frozenset()) -> str | None:
    """The keyword ``word`` is a slip of, or None. ``known``: words that are right as written
    (a hyphenated word is one: "de-duplicate" is a spelling, not a slip)."""
    w = word.lower()
    if 4 <= len(w) < 6 and w.isalpha() and w not in known and w not in SHORT_KEYWORDS and w not in SHORT_REAL:
        swapped = {k for k in SHORT_KEYWORDS if len(k) == len(w) and w in _swaps(k)}
        return swapped.pop() if len(swapped) == 1 else None
    if len(w) < 6 or w in KEYWORDS or w in REAL_WORDS or w in known or not w.isalpha():
        return None
    cands = set(_index().get(w, ()))          # a letter left out of a keyword, or two swapped
    cands |= {k for k in _slips(w) if k in KEYWORDS}   # a letter added (doubled) to a keyword
    cands = {k for k in cands if not (w.startswith(k) or k.startswith(w))}   # inflections are not slips
    return cands.pop() if len(cands) == 1 else None
