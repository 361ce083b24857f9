#!/usr/bin/env python3
"""An external bot for `punct-referee tournament` (docs/BOTS.md): it plays a
uniformly random legal move, seeded by the game id so a game replays."""

import random
import sys

rng = random.Random()
legal = []
for line in sys.stdin:
    word, *rest = line.split()
    if word == "game":
        rng.seed(rest[0])
    elif word == "legal":
        legal = rest
    elif word == "go":
        print(rng.choice(legal) if legal else "resign", flush=True)
    elif word == "result":
        break
