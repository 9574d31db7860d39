"""Print the ISO 3166-1 alpha-2 code of the country named on stdin.

The baseline's table and first-two-letters fallback, plus a lookup of three-letter inputs as
ISO alpha-3 codes. Its alpha-3 table is short and the lookup is strict: an alpha-3 code it does
not know raises KeyError (a crash). Stdlib only.
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

ALPHA_3 = {
    "ARG": "AR", "AUS": "AU", "AUT": "AT", "BEL": "BE", "BRA": "BR", "CAN": "CA", "CHL": "CL",
    "CHN": "CN", "DEU": "DE", "DNK": "DK", "EGY": "EG", "ESP": "ES", "FIN": "FI", "FRA": "FR",
    "GBR": "GB", "GRC": "GR", "IND": "IN", "IDN": "ID", "IRL": "IE", "ITA": "IT", "JPN": "JP",
    "MEX": "MX", "NLD": "NL", "NGA": "NG", "NOR": "NO", "NZL": "NZ", "POL": "PL", "PRT": "PT",
    "SWE": "SE", "CHE": "CH", "USA": "US", "ZAF": "ZA",
}


def code_for(text: str) -> str:
    name = text.strip()
    if len(name) == 3 and name.isalpha():
        return ALPHA_3[name.upper()]  # strict: an unknown code is a KeyError
    name = name.lower()
    if name in KNOWN:
        return KNOWN[name]
    return name[:2].upper()


if __name__ == "__main__":
    print(code_for(sys.stdin.read()))
