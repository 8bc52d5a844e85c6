"""Generate the research corpus: datasets/research/corpus.jsonl (a fictional world).

    .venv/bin/python examples/scripts/generate_research_corpus.py

Companies, their founders and headquarters, and the cities' countries and populations,
invented so that no model can answer from memory: every fact must be searched. Fixed
seed: re-running gives the same file. Reference trajectories are recorded separately by
examples/scripts/record_research_trajectories.py.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITIES = {
    "Velmora": "Ostrava Republic",
    "Quenholt": "Ostrava Republic",
    "Tarsine": "Kalvia",
    "Brightwater Falls": "Kalvia",
    "Oskaland": "Merovia",
    "Lune Harbor": "Merovia",
    "Pellingham": "Durnland",
    "Corvassa": "Durnland",
    "Ystrad Vale": "Norvenia",
    "Halcyon Point": "Norvenia",
}
COMPANIES = [
    "Arcwell Systems",
    "Brindle Foods",
    "Copperleaf Energy",
    "Driftmark Logistics",
    "Emberline Textiles",
    "Foxglove Robotics",
    "Greyhaven Pharma",
    "Hollowpine Games",
    "Ironbark Mining",
    "Juniper Optics",
    "Kestrel Aerospace",
    "Lanternfish Media",
    "Marrow & Finch Bank",
    "Northwind Ceramics",
    "Obsidian Data",
]
FIRST = [
    "Ada",
    "Bram",
    "Cora",
    "Dmitri",
    "Elin",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kaia",
    "Lio",
    "Mira",
    "Nils",
    "Oona",
]
LAST = [
    "Voss",
    "Okafor",
    "Lindqvist",
    "Marchetti",
    "Haddad",
    "Brennan",
    "Sato",
    "Novak",
    "Ferreira",
    "Adeyemi",
    "Kowalski",
    "Dubois",
    "Ruiz",
    "Holm",
    "Tanaka",
]
INDUSTRIES = [
    "software",
    "food",
    "energy",
    "logistics",
    "textile",
    "robotics",
    "pharmaceutical",
    "video game",
    "mining",
    "optics",
    "aerospace",
    "media",
    "banking",
    "ceramics",
    "data",
]


def main() -> None:
    rng = random.Random(404)
    docs = []
    for city, country in CITIES.items():
        population = rng.randrange(40, 2400) * 1000
        docs.append(
            {
                "title": city,
                "text": f"{city} is a city in {country} with a population of {population:,}.",
            }
        )
    cities = list(CITIES)
    for n, company in enumerate(COMPANIES):
        founder = f"{FIRST[n]} {LAST[(n * 7) % len(LAST)]}"
        year = rng.randrange(1921, 2019)
        city = cities[(n * 3) % len(cities)]
        article = "an" if INDUSTRIES[n][0] in "aeiou" else "a"
        text = (
            f"{company} is {article} {INDUSTRIES[n]} company founded in {year} by "
            f"{founder}. Its headquarters are in {city}."
        )
        docs.append({"title": company, "text": text})
        docs.append(
            {
                "title": founder,
                "text": f"{founder} is an entrepreneur best known for founding {company}.",
            }
        )
    path = ROOT / "datasets" / "research" / "corpus.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for i, doc in enumerate(docs):
            handle.write(json.dumps({"doc_id": f"doc-{i:03d}", **doc}) + "\n")
    print(f"{path}: {len(docs)} documents")


if __name__ == "__main__":
    main()
