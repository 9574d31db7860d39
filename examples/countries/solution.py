"""Baseline: print the ISO 3166-1 alpha-2 code of the country named on stdin.

Mediocre on purpose: a table of a few dozen well-known English names, looked up after strip()
and lower(); anything else falls back to the first two letters, upper-cased (right for France,
wrong for Germany). Stdlib only; reads the input on stdin, prints the code.
"""

import sys

KNOWN = {
    "argentina": "AR", "australia": "AU", "austria": "AT", "belgium": "BE", "brazil": "BR",
    "canada": "CA", "chile": "CL", "china": "CN", "denmark": "DK", "egypt": "EG",
    "finland": "FI", "france": "FR", "germany": "DE", "greece": "GR", "india": "IN",
    "indonesia": "ID", "ireland": "IE", "italy": "IT", "japan": "JP", "mexico": "MX",
    "netherlands": "NL", "new zealand": "NZ", "nigeria": "NG", "norway": "NO", "poland": "PL",
    "portugal": "PT", "south africa": "ZA", "spain": "ES", "sweden": "SE", "switzerland": "CH",
    "united kingdom": "GB", "united states": "US",
}


def code_for(text: str) -> str:
    name = text.strip().lower()
    if name in KNOWN:
        return KNOWN[name]
    return name[:2].upper()


if __name__ == "__main__":
    print(code_for(sys.stdin.read()))
