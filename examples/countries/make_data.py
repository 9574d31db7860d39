"""Build data/examples.jsonl for the countries example from pycountry's ISO 3166-1 data.

Task: given a country's name in some surface form (short, common or official name; lowercased,
upper-cased, extra spaces, a "the" prefix, accents dropped, "Korea, Republic of" turned around,
a parenthetical dropped) or its alpha-3 code, print its ISO 3166-1 alpha-2 code.

Deterministic: countries in alpha-2 order, one seeded generator (SEED), lines sorted by
(alpha-2, form); the same pycountry version always writes the same bytes. The generated file is
committed, so running the example needs neither this script nor pycountry.

    python3 make_data.py            # writes data/examples.jsonl next to this file
"""

from __future__ import annotations

import json
import random
import re
import sys
import unicodedata
from pathlib import Path

import pycountry

SEED = 20240607
OUT = Path(__file__).resolve().parent / "data" / "examples.jsonl"
THE_WORDS = re.compile(
    r"\b(Republic|Kingdom|Islands|States|Federation|Commonwealth|Union|Principality|Emirates|"
    r"Netherlands|Bahamas|Gambia|Philippines|Sudan|Congo|Niger|Duchy|Sultanate|Confederation|State)\b"
)
INVERTED_SUFFIX = re.compile(r"^(?P<head>[^,]+), (?P<tail>(?:The )?[^,]*\bof(?: the)?|British|U\.S\.)$")


def strip_accents(text: str) -> str:
    """'Côte d'Ivoire' -> 'Cote d'Ivoire' (NFKD, combining marks dropped)."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def extra_spaces(text: str, rng: random.Random) -> str:
    """Pad with 1-2 spaces at each end and widen some inner spaces to 2-3."""
    inner = re.sub(" ", lambda _: " " * rng.choice((1, 2, 3)), text)
    return " " * rng.choice((1, 2)) + inner + " " * rng.choice((0, 1, 2))


def surface(text: str, kind: str, rng: random.Random) -> str:
    """One surface form of a name."""
    if kind == "lower":
        return text.lower()
    if kind == "upper":
        return text.upper()
    if kind == "spaces":
        return extra_spaces(text, rng)
    if kind == "the":
        return ("the " if rng.random() < 0.5 else "The ") + text
    if kind == "ascii":
        return strip_accents(text)
    return text


def kinds_for(text: str) -> list[str]:
    """Surface kinds that change `text` (plus 'as_is')."""
    kinds = ["as_is", "lower", "upper", "spaces"]
    if THE_WORDS.search(text) and "," not in text and not text.lower().startswith("the "):
        kinds.append("the")
    if strip_accents(text) != text:
        kinds.append("ascii")
    return kinds


def base_forms(country) -> list[tuple[str, str]]:
    """(form name, text) pairs of one country before surface changes."""
    forms = [("name", country.name)]
    for attr in ("common_name", "official_name"):
        value = getattr(country, attr, None)
        if value and value != country.name:
            forms.append((attr, value))
    match = INVERTED_SUFFIX.match(country.name)
    if match:
        forms.append(("inverted", f"{match['tail']} {match['head']}"))
    if "(" in country.name:
        forms.append(("no_parenthetical", re.sub(r"\s*\([^)]*\)", "", country.name)))
    return forms


def examples_of(country, rng: random.Random) -> list[tuple[str, str, str]]:
    """(alpha_2, form label, input) triples of one country."""
    out = []
    for label, text in base_forms(country):
        kinds = kinds_for(text)
        picks = rng.sample(kinds, 2) if label == "name" else [rng.choice(kinds)]
        out.extend((country.alpha_2, f"{label}:{kind}", surface(text, kind, rng)) for kind in picks)
    code = country.alpha_3 if rng.random() < 0.7 else country.alpha_3.lower()
    out.append((country.alpha_2, "alpha_3", code))
    return out


def build() -> list[dict[str, str]]:
    """The examples, deduplicated by input; raises SystemExit on an input with two codes."""
    rng = random.Random(SEED)
    rows = []
    for country in sorted(pycountry.countries, key=lambda c: c.alpha_2):
        rows.extend(examples_of(country, rng))
    by_input: dict[str, str] = {}
    lines = []
    for alpha_2, _label, text in sorted(rows):
        if text in by_input:
            if by_input[text] != alpha_2:
                sys.exit(f"input {text!r} maps to both {by_input[text]} and {alpha_2}")
            continue
        by_input[text] = alpha_2
        lines.append({"input": text, "expected_output": alpha_2})
    return lines


def main() -> None:
    lines = build()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    print(f"wrote {len(lines)} examples to {OUT}")


if __name__ == "__main__":
    main()
