"""A PÜNCT entrant: places a piece whenever it can (a random placement),
otherwise moves one at random.

    python examples/punct_bot.py HOST:PORT ENTRANT_KEY
"""

import random
import sys

from punct_client.bot import Bot


class Placer(Bot):
    def choose(self, state, legal_moves, clock):
        placements = [m for m in legal_moves if "@" in m]
        pool = placements or legal_moves
        return random.choice(pool) if pool else None


if __name__ == "__main__":
    ended = Placer().run(sys.argv[1], sys.argv[2])
    print([(s.name, s.points) for s in ended.standings])
